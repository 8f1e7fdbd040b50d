//! `/openapi.json` against the router, so the two cannot drift: every route of the route
//! table (`snowdrift_proto::http::Route`, which the router is built from) is described,
//! every described operation is routed, the router answers 405 to every other method, and
//! a real server
//! answers each with a status and content type the document lists, also when a path
//! parameter is not UTF-8. (Schemathesis, in scripts/schemathesis, then fuzzes every
//! operation against the same document.)

use std::collections::BTreeSet;

use serde_json::Value;
use snowdrift_proto::http::Route;

const SPEC: &str = include_str!("../../openapi.json");
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn spec() -> Value {
    serde_json::from_str(SPEC).expect("openapi.json is JSON")
}

/// `(path, method)` of every operation the document describes.
fn described(spec: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in spec["paths"].as_object().expect("paths") {
        for (method, _) in item.as_object().expect("path item") {
            if METHODS.contains(&method.as_str()) {
                out.insert((path.clone(), method.clone()));
            }
        }
    }
    out
}

/// `(path, method)` of every route of the route table the router is built from.
fn routed() -> BTreeSet<(String, String)> {
    Route::ALL
        .into_iter()
        .flat_map(|route| {
            route
                .methods()
                .iter()
                .map(move |m| (route.pattern().to_string(), m.to_ascii_lowercase()))
        })
        .collect()
}

#[test]
fn every_route_is_described_and_every_description_is_routed() {
    let described = described(&spec());
    let routed = routed();
    let missing: Vec<_> = routed.difference(&described).collect();
    let extra: Vec<_> = described.difference(&routed).collect();
    assert!(
        missing.is_empty(),
        "routes missing from openapi.json: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "openapi.json describes operations the router lacks: {extra:?}"
    );
}

#[test]
fn every_operation_documents_its_errors_and_content() {
    let spec = spec();
    for (path, method) in described(&spec) {
        let op = &spec["paths"][&path][&method];
        let responses = op["responses"].as_object().expect("responses");
        assert!(
            responses.keys().any(|s| s.starts_with('2')),
            "{method} {path}: no success response"
        );
        for (status, response) in responses {
            let response = resolve(&spec, response);
            let content = response["content"].as_object();
            assert!(
                content.is_some_and(|c| !c.is_empty()),
                "{method} {path} {status}: no content type"
            );
        }
        // Operations that take a bearer token when auth is on say how it can be refused.
        if op.get("security").is_some() {
            for status in ["401", "403", "429"] {
                assert!(
                    responses.contains_key(status),
                    "{method} {path}: has security but no {status}"
                );
            }
        }
        // Every operation with a path parameter can get a 400 (a bad or non-UTF-8 value).
        if path.contains('{') {
            assert!(
                responses.contains_key("400"),
                "{method} {path}: no 400 documented"
            );
        }
    }
    let error = &spec["components"]["schemas"]["Error"];
    assert_eq!(error["required"][0], "error");
    assert_eq!(
        error["properties"]["error"]["required"],
        serde_json::json!(["code", "message"])
    );
}

/// Follows a local `$ref`.
fn resolve<'a>(spec: &'a Value, v: &'a Value) -> &'a Value {
    match v["$ref"].as_str() {
        Some(r) => {
            let pointer = r.strip_prefix('#').expect("local $ref");
            resolve(spec, spec.pointer(pointer).expect("$ref target exists"))
        }
        None => v,
    }
}

/// The media types the document lists for `status` of an operation.
fn documented_types(spec: &Value, op: &Value, status: u16) -> Option<Vec<String>> {
    let response = op["responses"].get(status.to_string())?;
    let content = resolve(spec, response)["content"].as_object()?;
    Some(content.keys().cloned().collect())
}

struct Answer {
    status: u16,
    content_type: String,
    body: String,
}

async fn call(
    s: &crate::support::TestServer,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Answer {
    let mut req = s.client.request(
        method.to_uppercase().parse().unwrap(),
        format!("{}{path}", s.base),
    );
    if let Some(body) = body {
        req = req.json(body);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = r.text().await.unwrap();
    Answer {
        status,
        content_type,
        body,
    }
}

/// `answer` is a status the operation documents, with a documented content type, and (for
/// JSON errors) the contract's error shape.
fn check(spec: &Value, op: &Value, what: &str, answer: &Answer) {
    let types = documented_types(spec, op, answer.status).unwrap_or_else(|| {
        panic!(
            "{what}: status {} is not documented: {}",
            answer.status, answer.body
        )
    });
    let media = answer
        .content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim();
    assert!(
        types.iter().any(|t| t == media),
        "{what}: content type {:?} not among {types:?} for {}",
        answer.content_type,
        answer.status
    );
    if answer.status >= 400 && media == "application/json" {
        let v: Value = serde_json::from_str(&answer.body).unwrap();
        assert!(
            v["error"]["code"].is_string() && v["error"]["message"].is_string(),
            "{what}: not the error shape: {v}"
        );
    }
}

/// The operation's path with each path parameter replaced by `value(parameter)`, and each
/// required query parameter added with its example.
fn fill(spec: &Value, path: &str, op: &Value, value: impl Fn(&Value) -> String) -> String {
    let mut out = path.to_string();
    let mut query = Vec::new();
    for p in op["parameters"].as_array().into_iter().flatten() {
        let p = resolve(spec, p);
        let name = p["name"].as_str().unwrap();
        if p["in"] == "path" {
            out = out.replace(&format!("{{{name}}}"), &value(p));
        } else if p["in"] == "query" && p["required"] == true {
            let example = p["example"].as_str().unwrap_or_else(|| {
                panic!("{path}: required query parameter {name} has no example")
            });
            query.push(format!("{name}={example}"));
        }
    }
    assert!(
        !out.contains('{'),
        "{path}: a path parameter is not declared"
    );
    if !query.is_empty() {
        out = format!("{out}?{}", query.join("&"));
    }
    out
}

fn example_body(spec: &Value, op: &Value) -> Option<Value> {
    let schema = &op["requestBody"]["content"]["application/json"]["schema"];
    (!schema.is_null()).then(|| resolve(spec, schema)["example"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_answers_every_operation_as_documented() {
    let spec = spec();
    let s = crate::support::start("snowdrift-openapi", "").await;

    // /openapi.json is this very file, with this server's count limit (the default) put in.
    let served = s.json("/openapi.json", 200).await;
    let mut expected = spec.clone();
    let count = &mut expected["components"]["parameters"]["Count"];
    count["schema"]["maximum"] = 10_000.into();
    count["description"] =
        "How many IDs, 1 to 10000 (this server's limits.max_count). Default 1.".into();
    assert_eq!(served, expected);

    // The examples are a working session: the tag the examples name is created first, so
    // every other example succeeds.
    let create = &spec["paths"]["/v1/tags"]["post"];
    let body = example_body(&spec, create).expect("createTag has an example body");
    let answer = call(&s, "post", "/v1/tags", Some(&body)).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    check(&spec, create, "POST /v1/tags (example)", &answer);

    for (path, method) in described(&spec) {
        if (path.as_str(), method.as_str()) == ("/v1/tags", "post") {
            continue;
        }
        let op = &spec["paths"][&path][&method];
        let body = example_body(&spec, op);
        let url = fill(&spec, &path, op, |p| {
            p["example"]
                .as_str()
                .unwrap_or_else(|| {
                    panic!("{method} {path}: parameter {} has no example", p["name"])
                })
                .to_string()
        });
        let what = format!("{method} {url}");
        let answer = call(&s, &method, &url, body.as_ref()).await;
        assert!(
            (200..300).contains(&answer.status),
            "{what}: the documented examples should succeed, got {}: {}",
            answer.status,
            answer.body
        );
        check(&spec, op, &what, &answer);

        // A path parameter that is not UTF-8 gets a documented error, in the documented
        // content type (JSON's error shape, or text on Leaf's routes).
        if path.contains('{') {
            let url = fill(&spec, &path, op, |_| "%FF".to_string());
            let what = format!("{method} {url}");
            let answer = call(&s, &method, &url, body.as_ref()).await;
            assert!(answer.status >= 400, "{what}: {}", answer.body);
            check(&spec, op, &what, &answer);
        }
    }

    // The router answers exactly the table's methods on each route: every other one is a
    // 405 in the contract's shape (HEAD comes with GET).
    for route in Route::ALL {
        let url = route
            .pattern()
            .replace("{name}", "snowflake")
            .replace("{tag}", "openapi")
            .replace("{key}", "snowflake")
            .replace("{id}", "1");
        for method in ["get", "post", "put", "patch", "delete"] {
            let answer = call(&s, method, &url, None).await;
            let allowed = route
                .methods()
                .iter()
                .any(|m| m.eq_ignore_ascii_case(method));
            assert_eq!(
                answer.status == 405,
                !allowed,
                "{method} {url}: {} {}",
                answer.status,
                answer.body
            );
            if !allowed {
                assert!(
                    answer.body.contains("method_not_allowed"),
                    "{}",
                    answer.body
                );
            }
        }
    }

    // What the router answers for anything else is in the contract's shape too.
    let answer = call(&s, "get", "/v1/no-such-route", None).await;
    assert_eq!(answer.status, 404);
    assert!(answer.body.contains("/openapi.json"), "{}", answer.body);
}
