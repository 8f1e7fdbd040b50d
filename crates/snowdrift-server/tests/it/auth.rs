//! Auth end to end: a real server on port 0 with `[[auth.token]]`s, driven over HTTP: 401
//! without or with a wrong token, 403 outside a token's scope, 429 over its rate, and the
//! routes that stay open (and `/v1/generators`, which does not).

use std::time::Duration;

use crate::support::TempDir;
use serde_json::{Value, json};
use snowdrift_server::auth::{TokenHash, generate_token};

/// The tokens of a test server, by what they may do.
struct Tokens {
    /// `read` on `snowflake` and `orders`.
    reader: String,
    /// `admin` on `orders`.
    orders_admin: String,
    /// `admin` on `*`.
    root: String,
    /// `read` on `*`, 1 request/s with a burst of 2.
    limited: String,
}

struct TestServer {
    base: String,
    client: reqwest::Client,
    tokens: Tokens,
    _running: crate::support::Running,
    _dir: TempDir,
}

fn token_toml(name: &str, token: &str, generators: &str, role: &str, extra: &str) -> String {
    format!(
        "[[auth.token]]\nname = \"{name}\"\nhash = \"{}\"\ngenerators = {generators}\nrole = \
         \"{role}\"\n{extra}",
        TokenHash::of(token)
    )
}

async fn start() -> TestServer {
    let tokens = Tokens {
        reader: generate_token().unwrap(),
        orders_admin: generate_token().unwrap(),
        root: generate_token().unwrap(),
        limited: generate_token().unwrap(),
    };
    let dir = TempDir::new("snowdrift-auth");
    let toml = [
        "[server]\nlisten = \"127.0.0.1:0\"\n".to_string(),
        token_toml(
            "reader",
            &tokens.reader,
            r#"["snowflake", "orders"]"#,
            "read",
            "",
        ),
        token_toml(
            "orders-admin",
            &tokens.orders_admin,
            r#"["orders"]"#,
            "admin",
            "",
        ),
        token_toml("root", &tokens.root, r#"["*"]"#, "admin", ""),
        token_toml(
            "limited",
            &tokens.limited,
            r#"["*"]"#,
            "read",
            "rate = 1\nburst = 2\n",
        ),
    ]
    .concat();
    let running = crate::support::spawn(&crate::support::load(&dir.0, &toml)).await;
    TestServer {
        base: running.base(),
        client: reqwest::Client::new(),
        tokens,
        _running: running,
        _dir: dir,
    }
}

/// A response: status, headers and the body as JSON (or `{"raw": text}`).
struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

impl Reply {
    fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("")
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

impl TestServer {
    async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut request = self
            .client
            .request(method.parse().unwrap(), format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let r = request.send().await.unwrap();
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(json!({ "raw": text }));
        Reply {
            status,
            headers,
            body,
        }
    }

    async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.call("GET", path, token, None).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_known_token_protected_routes_are_401_and_open_routes_stay_open() {
    let s = start().await;
    let unknown = generate_token().unwrap();
    for path in [
        "/v1/ids/snowflake",
        "/v1/ids/snowflake/decode/1",
        "/api/segment/get/orders",
        "/api/snowflake/get/x",
        "/api/snowflake/decode/1",
        "/v1/tags",
        "/v1/tags/orders",
        "/v1/generators",
    ] {
        for token in [None, Some(unknown.as_str()), Some("")] {
            let r = s.get(path, token).await;
            assert_eq!(
                (r.status, r.code()),
                (401, "unauthorized"),
                "{path} {token:?}: {}",
                r.body
            );
            assert!(r.header("www-authenticate").starts_with("Bearer"), "{path}");
            assert!(!r.message().is_empty(), "{path}");
        }
    }
    // A token sent under another scheme is no bearer token.
    let r = s
        .client
        .get(format!("{}/v1/ids/snowflake", s.base))
        .header("authorization", format!("Basic {}", s.tokens.root))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    for path in [
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
        "/ui",
        "/ui/app.js",
        "/ui/style.css",
    ] {
        let r = s.get(path, None).await;
        assert_eq!(r.status, 200, "{path} is open: {}", r.body);
    }
    // No route, nothing to guard: still the 404.
    let r = s.get("/v1/nothing-here", None).await;
    assert_eq!((r.status, r.code()), (404, "not_found"), "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_reach_only_their_generators_and_role() {
    let s = start().await;
    let (reader, orders_admin, root) = (
        s.tokens.reader.as_str(),
        s.tokens.orders_admin.as_str(),
        s.tokens.root.as_str(),
    );
    // A read token cannot create a tag; an admin token for every name can.
    let new_tag = json!({"tag": "orders", "step": 10});
    let r = s
        .call("POST", "/v1/tags", Some(reader), Some(new_tag.clone()))
        .await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.body);
    assert!(r.message().contains("role admin"), "{}", r.message());
    assert!(r.header("www-authenticate").contains("insufficient_scope"));
    // An admin token for some names cannot: creating takes a name from the namespace all
    // generators share.
    let r = s
        .call(
            "POST",
            "/v1/tags",
            Some(orders_admin),
            Some(new_tag.clone()),
        )
        .await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.body);
    assert!(r.message().contains("\"*\""), "{}", r.message());
    let r = s.call("POST", "/v1/tags", Some(root), Some(new_tag)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = s
        .call(
            "POST",
            "/v1/tags",
            Some(root),
            Some(json!({"tag": "users"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);

    // Read: the token's own generators, by every route that issues or decodes.
    for path in [
        "/v1/ids/snowflake?count=3",
        "/v1/ids/orders?count=3",
        "/api/segment/get/orders",
        "/api/snowflake/get/anything",
        "/api/snowflake/decode/1",
    ] {
        let r = s.get(path, Some(reader)).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
    }
    let r = s.get("/v1/ids/snowflake/decode/1", Some(reader)).await;
    assert_ne!(r.status, 401);
    assert_ne!(r.status, 403);
    // ...and nothing else: 403 naming what the token lacks.
    for path in [
        "/v1/ids/uuid7",
        "/v1/ids/users",
        "/api/segment/get/users",
        "/v1/ids/ulid/decode/1",
    ] {
        let r = s.get(path, Some(reader)).await;
        assert_eq!(
            (r.status, r.code()),
            (403, "forbidden"),
            "{path}: {}",
            r.body
        );
        assert!(r.message().contains("reader"), "{}", r.message());
    }
    let r = s.get("/v1/ids/users", Some(reader)).await;
    assert!(r.message().contains("\"users\""), "{}", r.message());
    // Reading tags is admin.
    let r = s.get("/v1/tags/orders", Some(reader)).await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.body);

    // A scoped admin token administers its own tags, not others, and cannot list them all.
    let r = s.get("/v1/tags/orders", Some(orders_admin)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = s
        .call(
            "PATCH",
            "/v1/tags/orders",
            Some(orders_admin),
            Some(json!({"step": 20})),
        )
        .await;
    assert_eq!(
        (r.status, r.body["step"].as_i64()),
        (200, Some(20)),
        "{}",
        r.body
    );
    let r = s
        .call(
            "PATCH",
            "/v1/tags/users",
            Some(orders_admin),
            Some(json!({"step": 20})),
        )
        .await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.body);
    let r = s.get("/v1/tags", Some(orders_admin)).await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.body);
    let r = s.get("/v1/ids/orders", Some(orders_admin)).await;
    assert_eq!(r.status, 200, "admin includes read: {}", r.body);
    let r = s.get("/v1/tags", Some(root)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["tags"].as_array().map(Vec::len),
        Some(2),
        "{}",
        r.body
    );

    // The status of every generator (names, leases, holders) needs read on every name: a
    // token for some names gets 403 saying so, whatever its role.
    for token in [reader, orders_admin] {
        let r = s.get("/v1/generators", Some(token)).await;
        assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.body);
        assert!(
            r.message().contains("every generator") && r.message().contains("\"*\""),
            "{}",
            r.message()
        );
    }
    for token in [root, s.tokens.limited.as_str()] {
        let r = s.get("/v1/generators", Some(token)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.body["generators"].is_array(), "{}", r.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_over_its_rate_gets_429_with_retry_after_and_recovers() {
    let s = start().await;
    let limited = s.tokens.limited.as_str();
    // rate = 1, burst = 2: the first two pass at once. On a slow machine one more may pass as
    // a second goes by, so keep asking until refused.
    for i in 0..2 {
        let r = s.get("/v1/ids/uuid7", Some(limited)).await;
        assert_eq!(r.status, 200, "request {i} is within the burst: {}", r.body);
    }
    let mut refused = None;
    for _ in 0..50 {
        let r = s.get("/v1/ids/uuid7", Some(limited)).await;
        if r.status != 200 {
            refused = Some(r);
            break;
        }
    }
    let r = refused.expect("a token limited to 1 request/s is refused within 50 requests");
    assert_eq!((r.status, r.code()), (429, "rate_limited"), "{}", r.body);
    let retry: u64 = r.header("retry-after").parse().unwrap_or_else(|_| {
        panic!(
            "Retry-After is whole seconds: {:?}",
            r.header("retry-after")
        )
    });
    assert_eq!(retry, 1, "a 1/s token waits at most a second");
    assert!(
        r.message().contains("limited"),
        "names the token: {}",
        r.message()
    );
    // Other tokens are not held back by it.
    let r = s.get("/v1/ids/uuid7", Some(&s.tokens.root)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // After Retry-After it may send again.
    tokio::time::sleep(Duration::from_secs(retry)).await;
    let r = s.get("/v1/ids/uuid7", Some(limited)).await;
    assert_eq!(r.status, 200, "after Retry-After: {}", r.body);
}
