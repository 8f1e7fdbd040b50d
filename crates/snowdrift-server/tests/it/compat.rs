//! Compatibility fixtures of the wire (issue 39): the answers clients parse, as a released
//! server gave them (`tests/fixtures/<VERSION>/wire/`, see `tests/fixtures/README.md`).
//!
//! For every version's recording: (a) each recorded answer parses with today's parsers
//! (the HTTP bodies into `snowdrift_proto::http`'s shapes, the gRPC messages into today's
//! generated types, the RESP replies with the `redis` crate's parser, as Rust clients read
//! them); (b) today's server answers the same requests in the same shape (the same JSON
//! keys and value types, the same gRPC fields and codes, the same RESP reply types and
//! error prefixes), so a client written against the old answers reads today's. The Rust
//! client's own reading of the recorded gRPC answers is in snowdrift-client's
//! `tests/it/compat.rs`.
//!
//! `write_fixtures` (ignored; `scripts/write-fixtures VERSION`) recorded them.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use prost::Message;
use serde_json::{Value, json};
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use snowdrift_proto::grpc::{
    DecodeRequest, DecodeResponse, ERROR_CODE_KEY, IdBatch, NextRequest, StreamRequest,
};
use snowdrift_proto::http;

use crate::support::TestServer;

/// The HTTP requests recorded: path and the body shape it answers.
const HTTP: [(&str, &str); 9] = [
    ("/v1/ids/snowflake?count=3", "ids"),
    ("/v1/ids/snowflake?count=100&form=runs", "runs"),
    ("/v1/ids/order?count=5&form=runs", "runs"),
    ("/v1/ids/uuid7?count=2", "ids"),
    ("/v1/ids/nosuch?count=1", "error"),
    ("/v1/ids/snowflake?count=0", "error"),
    ("/v1/tags/order", "tag"),
    ("/v1/tags", "tags"),
    ("/v1/ids/snowflake/decode/2126810611772817408", "decode"),
];

/// The RESP commands recorded.
const RESP: [&[&str]; 8] = [
    &["PING"],
    &["INCR", "order"],
    &["INCRBY", "order", "100"],
    &["INCR", "snowflake"],
    &["SNOWFLAKE"],
    &["INCR", "uuid7"],
    &["INCR", "nosuch"],
    &["INCRBY", "snowflake", "5"],
];

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every version directory holding `file`, oldest first; fails when none does.
fn versions_with(file: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures_root())
        .expect("tests/fixtures exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(file).exists())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no fixture {file} under tests/fixtures");
    dirs
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A server as the recordings were made from: the default generators, a RESP listener,
/// and the segment tag `order` (step 1000).
async fn server() -> TestServer {
    let s = crate::support::start("snowdrift-compat", "resp_listen = \"127.0.0.1:0\"\n").await;
    s.post("/v1/tags", r#"{"tag": "order", "step": 1000}"#, 201)
        .await;
    s
}

async fn get(s: &TestServer, path: &str) -> (u16, String, String) {
    let r = s
        .client
        .get(format!("{}{path}", s.base))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, content_type, r.text().await.unwrap())
}

/// The shape of a JSON value: its keys (recursively) and the types of its values, not the
/// values themselves (IDs differ at every call). Arrays show their first element's shape.
fn shape(v: &Value) -> Value {
    match v {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        Value::Array(a) => json!([a.first().map(shape)]),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
    }
}

/// Parses a recorded HTTP body into today's type for its shape.
fn parse_http(what: &str, body: &str) {
    let parsed = match what {
        "ids" => serde_json::from_str::<http::Ids>(body).map(|_| ()),
        "runs" => serde_json::from_str::<http::Runs>(body).map(|_| ()),
        "error" => serde_json::from_str::<http::ErrorBody>(body).map(|_| ()),
        "tag" => serde_json::from_str::<http::Tag>(body).map(|_| ()),
        "tags" => serde_json::from_str::<http::Tags>(body).map(|_| ()),
        // The decoded fields: a JSON object (no shared type; the shape check keeps it).
        "decode" => serde_json::from_str::<serde_json::Map<String, Value>>(body).map(|_| ()),
        other => unreachable!("no shape {other}"),
    };
    parsed.unwrap_or_else(|e| panic!("a recorded {what} answer no longer parses: {e}: {body}"));
}

// ---- RESP -----------------------------------------------------------------------------

fn resp_command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend(format!("${}\r\n{a}\r\n", a.len()).bytes());
    }
    out
}

/// Reads one whole reply, as its raw bytes.
fn read_reply(r: &mut impl BufRead, out: &mut Vec<u8>) {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).unwrap();
    out.extend(&line);
    let head = String::from_utf8_lossy(&line[1..line.len() - 2]).to_string();
    match line[0] {
        b'$' | b'=' | b'!' => {
            if let Ok(n) = head.parse::<usize>() {
                let mut body = vec![0; n + 2];
                r.read_exact(&mut body).unwrap();
                out.extend(body);
            }
        }
        b'*' | b'~' | b'>' => {
            for _ in 0..head.parse::<i64>().unwrap_or(0).max(0) {
                read_reply(r, out);
            }
        }
        b'%' => {
            for _ in 0..2 * head.parse::<i64>().unwrap_or(0).max(0) {
                read_reply(r, out);
            }
        }
        _ => {}
    }
}

/// Each command's raw reply, in order, on one connection.
async fn resp_replies(addr: SocketAddr, commands: Vec<Vec<String>>) -> Vec<String> {
    tokio::task::spawn_blocking(move || {
        let stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let mut writer = stream.try_clone().unwrap();
        let mut reader = BufReader::new(stream);
        commands
            .iter()
            .map(|c| {
                let args: Vec<&str> = c.iter().map(String::as_str).collect();
                writer.write_all(&resp_command(&args)).unwrap();
                let mut reply = Vec::new();
                read_reply(&mut reader, &mut reply);
                String::from_utf8(reply).unwrap()
            })
            .collect()
    })
    .await
    .unwrap()
}

/// A reply's type and, for an error, its prefix (`-WRONGTYPE`): what clients branch on.
fn resp_kind(reply: &str) -> String {
    match reply.as_bytes().first() {
        Some(b'-') => reply
            .split([' ', '\r'])
            .next()
            .unwrap_or_default()
            .to_string(),
        Some(c) => (*c as char).to_string(),
        None => String::new(),
    }
}

// ---- gRPC -----------------------------------------------------------------------------

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

async fn grpc(s: &TestServer) -> IdServiceClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(s.base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    IdServiceClient::new(channel)
}

/// The recorded gRPC calls: `Next` for a segment tag, a snowflake generator and a text
/// kind, and one for a name that does not exist.
fn next_requests() -> Vec<NextRequest> {
    [
        ("order", 100),
        ("snowflake", 100),
        ("uuid7", 2),
        ("nosuch", 1),
    ]
    .into_iter()
    .map(|(name, count)| NextRequest {
        name: name.into(),
        count: Some(count),
        ..Default::default()
    })
    .collect()
}

async fn record_next(
    client: &mut IdServiceClient<tonic::transport::Channel>,
    r: &NextRequest,
) -> Value {
    match client.next(r.clone()).await {
        Ok(answer) => json!({
            "call": "Next",
            "request": hex(&r.encode_to_vec()),
            "response": hex(&answer.into_inner().encode_to_vec()),
        }),
        Err(status) => json!({
            "call": "Next",
            "request": hex(&r.encode_to_vec()),
            "code": status.code() as i32,
            "error_code": status
                .metadata()
                .get(ERROR_CODE_KEY)
                .map(|v| v.to_str().unwrap().to_string()),
            "message": status.message(),
        }),
    }
}

/// Checks one recorded gRPC exchange against today's types and today's server.
async fn check_grpc(
    what: &str,
    record: &Value,
    client: &mut IdServiceClient<tonic::transport::Channel>,
) {
    let call = record["call"].as_str().unwrap();
    let request_bytes = unhex(record["request"].as_str().unwrap());
    match call {
        "Next" => {
            let request = NextRequest::decode(request_bytes.as_slice())
                .unwrap_or_else(|e| panic!("{what}: the recorded request: {e}"));
            let today = client.next(request.clone()).await;
            if let Some(response) = record["response"].as_str() {
                // (a) the recorded answer decodes into today's type, every field read.
                let old = IdBatch::decode(unhex(response).as_slice())
                    .unwrap_or_else(|e| panic!("{what}: the recorded IdBatch: {e}"));
                assert_eq!(old.name, request.name, "{what}: name");
                assert!(!old.kind.is_empty(), "{what}: kind");
                assert_ne!(old.kind_code, 0, "{what}: kind_code");
                let held: u64 =
                    old.runs.iter().map(|r| r.count).sum::<u64>() + old.text.len() as u64;
                assert_eq!(held, old.count, "{what}: count {old:?}");
                assert_eq!(old.count, request.count.unwrap(), "{what}: count");
                // (b) today's answer fills the same fields.
                let new = today
                    .unwrap_or_else(|e| panic!("{what}: today's server: {e}"))
                    .into_inner();
                assert_eq!(
                    (&new.name, &new.kind, new.kind_code, new.count),
                    (&old.name, &old.kind, old.kind_code, old.count),
                    "{what}"
                );
                assert_eq!(new.runs.is_empty(), old.runs.is_empty(), "{what}: runs");
                assert_eq!(new.text.len(), old.text.len(), "{what}: text");
            } else {
                let status = today.expect_err(what);
                assert_eq!(
                    status.code() as i64,
                    record["code"].as_i64().unwrap(),
                    "{what}: {status:?}"
                );
                assert_eq!(
                    status
                        .metadata()
                        .get(ERROR_CODE_KEY)
                        .map(|v| v.to_str().unwrap()),
                    record["error_code"].as_str(),
                    "{what}: {status:?}"
                );
            }
        }
        "Stream" => {
            let request = StreamRequest::decode(request_bytes.as_slice())
                .unwrap_or_else(|e| panic!("{what}: the recorded request: {e}"));
            let old: Vec<IdBatch> = record["responses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    IdBatch::decode(unhex(m.as_str().unwrap()).as_slice())
                        .unwrap_or_else(|e| panic!("{what}: a recorded IdBatch: {e}"))
                })
                .collect();
            let total: u64 = old.iter().map(|b| b.count).sum();
            assert_eq!(total, request.count, "{what}: {old:?}");
            for b in &old {
                let held: u64 = b.runs.iter().map(|r| r.count).sum();
                assert_eq!(held, b.count, "{what}: {b:?}");
                assert_eq!(b.name, request.name, "{what}");
            }
            let mut stream = client
                .stream(request)
                .await
                .unwrap_or_else(|e| panic!("{what}: today's server: {e}"))
                .into_inner();
            let mut new = Vec::new();
            while let Some(m) = stream.message().await.unwrap() {
                new.push(m);
            }
            assert_eq!(new.len(), old.len(), "{what}: messages");
            for (n, o) in new.iter().zip(&old) {
                assert_eq!(
                    (&n.name, &n.kind, n.kind_code, n.count),
                    (&o.name, &o.kind, o.kind_code, o.count),
                    "{what}"
                );
            }
        }
        "Decode" => {
            let request = DecodeRequest::decode(request_bytes.as_slice())
                .unwrap_or_else(|e| panic!("{what}: the recorded request: {e}"));
            let old =
                DecodeResponse::decode(unhex(record["response"].as_str().unwrap()).as_slice())
                    .unwrap_or_else(|e| panic!("{what}: the recorded DecodeResponse: {e}"));
            assert_eq!(old.id, request.id, "{what}");
            assert!(
                old.time_ms.is_some() && !old.fields.is_empty(),
                "{what}: {old:?}"
            );
            let new = client
                .decode(request)
                .await
                .unwrap_or_else(|e| panic!("{what}: today's server: {e}"))
                .into_inner();
            assert_eq!(new, old, "{what}: the same ID decodes the same");
        }
        other => panic!("{what}: no call {other}"),
    }
}

// ---- the tests ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_http_answers_parse_and_todays_server_answers_in_their_shape() {
    let s = server().await;
    for version in versions_with("wire/http.json") {
        for record in read_json(&version.join("wire/http.json"))
            .as_array()
            .unwrap()
        {
            let path = record["path"].as_str().unwrap();
            let what = format!("{} GET {path}", version.display());
            let shape_name = record["shape"].as_str().unwrap();
            let body = record["body"].as_str().unwrap();
            // (a)
            parse_http(shape_name, body);
            // (b)
            let (status, content_type, today) = get(&s, path).await;
            assert_eq!(
                status as u64,
                record["status"].as_u64().unwrap(),
                "{what}: {today}"
            );
            assert_eq!(
                content_type,
                record["content_type"].as_str().unwrap(),
                "{what}"
            );
            parse_http(shape_name, &today);
            let old: Value = serde_json::from_str(body).unwrap();
            let new: Value = serde_json::from_str(&today).unwrap();
            assert_eq!(shape(&new), shape(&old), "{what}: today's answer {today}");
        }
    }
    drop(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_resp_replies_parse_and_todays_server_replies_in_their_type() {
    let s = server().await;
    let addr = s.resp().unwrap();
    for version in versions_with("wire/resp.json") {
        let records = read_json(&version.join("wire/resp.json"));
        let records = records.as_array().unwrap();
        let commands: Vec<Vec<String>> = records
            .iter()
            .map(|r| {
                r["command"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_string())
                    .collect()
            })
            .collect();
        let today = resp_replies(addr, commands.clone()).await;
        for ((record, command), new) in records.iter().zip(&commands).zip(today) {
            let what = format!("{} {}", version.display(), command.join(" "));
            let old = record["reply"].as_str().unwrap();
            // (a) a Rust Redis client's parser reads the recorded reply.
            let parsed = redis::parse_redis_value(old.as_bytes())
                .unwrap_or_else(|e| panic!("{what}: {e}: {old:?}"));
            if command[0] == "INCR" && command[1] == "order" {
                assert!(
                    matches!(parsed, redis::Value::Int(n) if n > 0),
                    "{what}: {parsed:?}"
                );
            }
            // (b) today's reply is of the same type (an error with the same prefix).
            assert_eq!(
                resp_kind(&new),
                resp_kind(old),
                "{what}: today {new:?}, then {old:?}"
            );
            redis::parse_redis_value(new.as_bytes()).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
    drop(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_grpc_messages_decode_and_todays_server_answers_the_same_fields() {
    let s = server().await;
    let mut client = grpc(&s).await;
    for version in versions_with("wire/grpc.json") {
        for (i, record) in read_json(&version.join("wire/grpc.json"))
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let what = format!("{} gRPC call {i}", version.display());
            check_grpc(&what, record, &mut client).await;
        }
    }
    drop(s);
}

/// Records this version's wire answers into `tests/fixtures/<version>/wire/`, which must
/// not exist (`scripts/write-fixtures VERSION`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes the fixtures of a release, once: scripts/write-fixtures"]
async fn write_fixtures() {
    let version = std::env::var("SNOWDRIFT_FIXTURE_VERSION")
        .unwrap_or_else(|_| env!("CARGO_PKG_VERSION").to_string());
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    let only = std::env::var("SNOWDRIFT_FIXTURE_ONLY").unwrap_or_default();
    if !(only.is_empty() || only.split(',').any(|p| p == "wire")) {
        return;
    }
    let out = fixtures_root().join(&version).join("wire");
    assert!(
        !out.exists(),
        "{} exists: old fixtures are never edited",
        out.display()
    );
    std::fs::create_dir_all(&out).unwrap();
    let s = server().await;

    let mut records = Vec::new();
    for (path, shape_name) in HTTP {
        let (status, content_type, body) = get(&s, path).await;
        parse_http(shape_name, &body);
        records.push(json!({
            "path": path,
            "shape": shape_name,
            "status": status,
            "content_type": content_type,
            "body": body,
        }));
    }
    write(&out.join("http.json"), &Value::Array(records));

    let commands: Vec<Vec<String>> = RESP
        .iter()
        .map(|c| c.iter().map(|a| a.to_string()).collect())
        .collect();
    let replies = resp_replies(s.resp().unwrap(), commands.clone()).await;
    let records: Vec<Value> = commands
        .iter()
        .zip(replies)
        .map(|(c, reply)| json!({"command": c, "reply": reply}))
        .collect();
    write(&out.join("resp.json"), &Value::Array(records));

    let mut client = grpc(&s).await;
    let mut records = Vec::new();
    let mut snowflake_id = None;
    for r in next_requests() {
        let record = record_next(&mut client, &r).await;
        if r.name == "snowflake" {
            let batch =
                IdBatch::decode(unhex(record["response"].as_str().unwrap()).as_slice()).unwrap();
            snowflake_id = Some(batch.runs[0].first);
        }
        records.push(record);
    }
    let stream_request = StreamRequest {
        name: "order".into(),
        count: 25,
        batch: Some(10),
        ..Default::default()
    };
    let mut stream = client
        .stream(stream_request.clone())
        .await
        .unwrap()
        .into_inner();
    let mut responses = Vec::new();
    while let Some(m) = stream.message().await.unwrap() {
        responses.push(json!(hex(&m.encode_to_vec())));
    }
    records.push(json!({
        "call": "Stream",
        "request": hex(&stream_request.encode_to_vec()),
        "responses": responses,
    }));
    let decode = DecodeRequest {
        name: "snowflake".into(),
        id: snowflake_id.unwrap().to_string(),
        format: None,
    };
    let answer = client.decode(decode.clone()).await.unwrap().into_inner();
    records.push(json!({
        "call": "Decode",
        "request": hex(&decode.encode_to_vec()),
        "response": hex(&answer.encode_to_vec()),
    }));
    write(&out.join("grpc.json"), &Value::Array(records));
    drop(s);
}

fn write(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap() + "\n").unwrap();
}
