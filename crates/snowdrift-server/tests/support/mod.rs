//! A real server for the OpenAPI and dashboard tests: `snowdrift_server::run` on port 0 over
//! a fresh SQLite store in a temporary directory, removed when the test ends.

// Each test binary that includes this module uses a different part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;
use snowdrift_server::{Config, Server};

/// A running server and a client for it.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// A client with a generous timeout (a loaded CI machine is slow, never stuck).
    pub client: reqwest::Client,
    /// The temporary directory (the store), for helpers that need scratch files.
    pub dir: PathBuf,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts a server with the default generators and `extra_toml` appended to its config.
pub async fn start(prefix: &str, extra_toml: &str) -> TestServer {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name(prefix));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("snowdrift.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = \"sqlite://{}\"\n{extra_toml}",
            dir.join("ids.db").display()
        ),
    )
    .unwrap();
    let config = Config::load(
        Some(&file),
        // Each server leases its worker ID in its own directory, so parallel tests don't
        // contend for one lock file.
        [(
            "SNOWDRIFT_WORKER__PATH".to_string(),
            file.with_file_name("workers").display().to_string(),
        )],
    )
    .unwrap();
    let server = Server::start(&config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(snowdrift_server::run(
        listener,
        server,
        std::future::pending(),
    ));
    TestServer {
        base: format!("http://{addr}"),
        client: reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .unwrap(),
        dir,
    }
}

impl TestServer {
    /// GET `path`, as JSON; panics (naming the path) unless it answers `want`.
    pub async fn json(&self, path: &str, want: u16) -> Value {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        assert_eq!(status, want, "GET {path}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {path}: {e}: {text}"))
    }

    /// POST `body` (JSON) to `path`; panics unless it answers `want`.
    pub async fn post(&self, path: &str, body: &str, want: u16) -> Value {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        assert_eq!(status, want, "POST {path} {body}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("POST {path}: {e}: {text}"))
    }
}
