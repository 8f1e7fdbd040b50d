//! The Rust client's conformance program: speaks `clients/conformance/PROTOCOL.md` on
//! stdin/stdout and turns each request into calls on the blocking client's public API, so the
//! runner (`clients/conformance/run`) holds this client to the same scenarios as the clients
//! in other languages. Built and started by `clients/rust/conformance/{build,run}`.
//!
//! It never talks to a server itself: whatever the runner sees is what the client did.

use std::io::{BufRead, Write};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use snowdrift_client::blocking::Client;
use snowdrift_client::{Error, ErrorKind};

/// A request the runner sent that this program cannot carry out (the protocol's
/// `bad_request`, raised here rather than by the client).
struct BadRequest(String);

type Reply = Result<Map<String, Value>, Value>;

fn main() {
    let stdin = std::io::stdin();
    let mut client: Option<Client> = None;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let request: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                // Without an id there is nothing to answer to; say why on stderr.
                eprintln!("conformance: a request that is not JSON ({e}): {line}");
                continue;
            }
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let op = request.get("op").and_then(Value::as_str).unwrap_or("");
        let reply = match op {
            "open" => open(&request).map(|c| {
                // The old client goes first: its caches close, its watchers end.
                client = Some(c);
                Map::new()
            }),
            "close" => {
                write(&json!({"id": id, "ok": true}));
                return;
            }
            _ => match &client {
                None => Err(bad(format!(
                    "op {op:?} before \"open\": open a client first"
                ))),
                Some(c) => call(c, op, &request),
            },
        };
        let mut answer = Map::new();
        answer.insert("id".into(), id);
        match reply {
            Ok(fields) => {
                answer.insert("ok".into(), true.into());
                answer.extend(fields);
            }
            Err(error) => {
                answer.insert("ok".into(), false.into());
                answer.insert("error".into(), error);
            }
        }
        write(&Value::Object(answer));
    }
}

fn write(value: &Value) {
    let mut out = std::io::stdout().lock();
    // The runner reads line by line: a reply is one line, sent at once.
    let _ = serde_json::to_writer(&mut out, value);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

fn bad(message: String) -> Value {
    json!({"kind": "bad_request", "message": message})
}

/// The protocol's error object for a client error: its kind mapped, its message unchanged.
fn client_error(e: &Error) -> Value {
    let kind = match e.kind() {
        ErrorKind::NotFound => "unknown_name",
        ErrorKind::Unauthorized | ErrorKind::Forbidden => "unauthorized",
        ErrorKind::InvalidRequest | ErrorKind::InvalidInput => "bad_request",
        ErrorKind::Unavailable => "unavailable",
        _ => "other",
    };
    json!({"kind": kind, "message": e.message()})
}

fn field<'a>(request: &'a Value, key: &str) -> Option<&'a Value> {
    request.get(key).filter(|v| !v.is_null())
}

fn uint(request: &Value, key: &str) -> Result<Option<u64>, BadRequest> {
    match field(request, key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| BadRequest(format!("{key} is {v}: give a whole number of at least 0"))),
    }
}

fn text<'a>(request: &'a Value, key: &str) -> Result<&'a str, BadRequest> {
    field(request, key)
        .and_then(Value::as_str)
        .ok_or_else(|| BadRequest(format!("{key} is missing or not a string")))
}

fn millis(request: &Value, key: &str) -> Result<Option<Duration>, BadRequest> {
    Ok(uint(request, key)?.map(Duration::from_millis))
}

fn open(request: &Value) -> Result<Client, Value> {
    let settings = || -> Result<_, BadRequest> {
        let endpoints: Vec<String> = match field(request, "endpoints") {
            Some(Value::Array(list)) => list
                .iter()
                .map(|e| e.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| BadRequest("endpoints must be strings".into()))?,
            _ => return Err(BadRequest("endpoints: give a list of URLs".into())),
        };
        let token = field(request, "token").and_then(Value::as_str);
        let ca = match field(request, "ca_file").and_then(Value::as_str) {
            Some(path) => {
                Some(std::fs::read(path).map_err(|e| BadRequest(format!("ca_file {path}: {e}")))?)
            }
            None => None,
        };
        let prefetch_at = match field(request, "prefetch_at") {
            None => None,
            Some(v) => Some(
                v.as_f64()
                    .ok_or_else(|| BadRequest(format!("prefetch_at is {v}: give 0 to 1")))?,
            ),
        };
        let batch = (uint(request, "batch_min")?, uint(request, "batch_max")?);
        Ok((
            endpoints,
            token.map(str::to_string),
            ca,
            prefetch_at,
            millis(request, "hold_ms")?,
            batch,
            millis(request, "max_age_ms")?,
            millis(request, "deadline_ms")?,
        ))
    };
    let (endpoints, token, ca, prefetch_at, hold, (min, max), max_age, deadline) =
        settings().map_err(|BadRequest(m)| bad(m))?;
    let mut builder = Client::builder().endpoints(endpoints);
    if let Some(token) = token {
        builder = builder.token(token);
    }
    let builder = builder.with(|mut b| {
        if let Some(pem) = ca {
            b = b.ca_certificate(pem);
        }
        if let Some(share) = prefetch_at {
            b = b.prefetch_at(share);
        }
        if let Some(hold) = hold {
            b = b.hold(hold);
        }
        if min.is_some() || max.is_some() {
            // One bound given: the other keeps the client's default, as far as it fits.
            let (dmin, dmax) = (100, 1_000_000);
            let min = min.unwrap_or(dmin.min(max.unwrap_or(dmax)));
            let max = max.unwrap_or(dmax.max(min));
            b = b.batch(min, max);
        }
        if let Some(age) = max_age {
            b = b.max_age(age);
        }
        if let Some(deadline) = deadline {
            b = b.deadline(deadline);
        }
        b
    });
    builder.build().map_err(|e| client_error(&e))
}

fn call(client: &Client, op: &str, request: &Value) -> Reply {
    let name = || text(request, "name").map_err(|BadRequest(m)| bad(m));
    match op {
        "next" => next(client, request).map_err(|BadRequest(m)| bad(m)),
        "next_n" => {
            let n = uint(request, "n")
                .map_err(|BadRequest(m)| bad(m))?
                .ok_or_else(|| bad("next_n needs n".into()))?;
            let ids = client
                .next_n(name()?, n as usize)
                .map_err(|e| client_error(&e))?;
            Ok(ids_reply(ids.iter().map(u64::to_string)))
        }
        "next_text" => {
            let count = uint(request, "count")
                .map_err(|BadRequest(m)| bad(m))?
                .unwrap_or(1);
            let name = name()?;
            let ids = (0..count)
                .map(|_| client.next_text(name))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| client_error(&e))?;
            Ok(ids_reply(ids))
        }
        "next_named" => {
            let input = text(request, "input").map_err(|BadRequest(m)| bad(m))?;
            let id = client
                .next_named(name()?, input)
                .map_err(|e| client_error(&e))?;
            Ok(ids_reply([id]))
        }
        "endpoints" => {
            let list: Vec<Value> = client
                .endpoints()
                .into_iter()
                .map(|e| {
                    // Avoided while left out after failures, or while its health service
                    // says it cannot issue.
                    let healthy = e.up && e.serving != Some(false);
                    json!({"url": e.url, "healthy": healthy, "last_error": e.last_error})
                })
                .collect();
            let mut m = Map::new();
            m.insert("endpoints".into(), list.into());
            Ok(m)
        }
        _ => Err(bad(format!(
            "unknown op {op:?}: open, next, next_n, next_text, next_named, endpoints, close"
        ))),
    }
}

fn ids_reply(ids: impl IntoIterator<Item = String>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "ids".into(),
        ids.into_iter()
            .map(Value::String)
            .collect::<Vec<_>>()
            .into(),
    );
    m
}

/// What one thread of a `next` got.
#[derive(Default)]
struct Drawn {
    ids: Vec<u64>,
    errors: Vec<Value>,
    timing: Vec<(u128, u128)>,
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn next(client: &Client, request: &Value) -> Result<Map<String, Value>, BadRequest> {
    let name = text(request, "name")?.to_string();
    let threads = uint(request, "threads")?.unwrap_or(1).max(1) as usize;
    let count = uint(request, "count")?;
    let duration = millis(request, "duration_ms")?;
    if count.is_none() && duration.is_none() {
        return Err(BadRequest(
            "next needs count, duration_ms or both".to_string(),
        ));
    }
    let timing = field(request, "timing").and_then(Value::as_bool) == Some(true);
    let stop_on_error = field(request, "stop_on_error").and_then(Value::as_bool) == Some(true);
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (client, name, barrier) = (client.clone(), name.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut got = Drawn::default();
                if let Some(n) = count {
                    got.ids.reserve(n as usize);
                }
                barrier.wait();
                let until = duration.map(|d| Instant::now() + d);
                loop {
                    if count.is_some_and(|n| got.ids.len() as u64 >= n)
                        || until.is_some_and(|u| Instant::now() >= u)
                    {
                        break;
                    }
                    let invoked = if timing { now_ns() } else { 0 };
                    match client.next(&name) {
                        Ok(id) => {
                            got.ids.push(id);
                            if timing {
                                got.timing.push((invoked, now_ns()));
                            }
                        }
                        Err(e) => {
                            got.errors.push(client_error(&e));
                            if stop_on_error {
                                break;
                            }
                        }
                    }
                }
                got
            })
        })
        .collect();
    let drawn: Vec<Value> = handles
        .into_iter()
        .map(|h| {
            let got = h.join().unwrap_or_default();
            let mut t = Map::new();
            t.insert(
                "ids".into(),
                got.ids
                    .iter()
                    .map(|id| Value::String(id.to_string()))
                    .collect::<Vec<_>>()
                    .into(),
            );
            t.insert("errors".into(), got.errors.into());
            if timing {
                t.insert(
                    "timing".into(),
                    got.timing
                        .iter()
                        .map(|&(a, b)| json!([a as u64, b as u64]))
                        .collect::<Vec<_>>()
                        .into(),
                );
            }
            Value::Object(t)
        })
        .collect();
    let mut m = Map::new();
    m.insert("threads".into(), drawn.into());
    Ok(m)
}
