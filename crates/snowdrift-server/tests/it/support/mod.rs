//! What every server test needs: a scratch directory, a config written into it and loaded
//! (SQLite store and worker lease files inside it), and `snowdrift_server::run` on port 0.

// Each test binary that includes this module uses a different part of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde_json::Value;
use snowdrift_server::{Config, Server, StartError};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A directory for one test, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh directory named after `prefix`.
    pub fn new(prefix: &str) -> Self {
        let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name(prefix));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `toml` as `dir/snowdrift.toml` (adding a SQLite store in `dir` unless it has a
/// `[store]`) and loads it. Worker leases go to `dir/workers`, so parallel tests never
/// contend for one lock file.
pub fn try_load(dir: &Path, toml: &str) -> Result<Config, snowdrift_server::ConfigError> {
    let store = if toml.contains("[store]") {
        String::new()
    } else {
        format!(
            "\n[store]\nurl = \"sqlite://{}\"\n",
            dir.join("ids.db").display()
        )
    };
    let file = dir.join("snowdrift.toml");
    std::fs::write(&file, format!("{toml}{store}")).unwrap();
    let config = Config::load(
        Some(&file),
        [(
            "SNOWDRIFT_WORKER__PATH".to_string(),
            dir.join("workers").display().to_string(),
        )],
    )?;
    // Refused here, as `snowdrift serve` refuses it before starting.
    config.plan()?;
    Ok(config)
}

/// [`try_load`] that must succeed.
pub fn load(dir: &Path, toml: &str) -> Config {
    try_load(dir, toml).unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

/// A server running on a loopback port.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Where its RESP listener listens, when `server.resp_listen` is set.
    pub resp: Option<SocketAddr>,
    /// Shuts it down when sent (or dropped).
    pub stop: Option<oneshot::Sender<()>>,
    /// `run`'s result, once it has shut down.
    pub task: JoinHandle<Result<(), StartError>>,
    /// Reloads its tokens.
    pub reloader: snowdrift_server::Reloader,
}

impl Running {
    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Shuts the server down and waits for `run` to return.
    pub async fn shutdown(mut self) -> Result<(), StartError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.unwrap()
    }
}

/// Starts a server for `config` on port 0.
pub async fn try_spawn(config: &Config) -> Result<Running, StartError> {
    let server = Server::start(config).await?;
    let resp = server.resp_addr();
    let reloader = server.reloader();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(snowdrift_server::run(listener, server, async move {
        let _ = stopped.await;
    }));
    Ok(Running {
        addr,
        resp,
        stop: Some(stop),
        task,
        reloader,
    })
}

/// [`try_spawn`] that must succeed.
pub async fn spawn(config: &Config) -> Running {
    try_spawn(config).await.unwrap()
}

/// A running server with the default generators, its directory and a client.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// A client with a generous timeout (a loaded CI machine is slow, never stuck).
    pub client: reqwest::Client,
    /// The temporary directory (the store), for helpers that need scratch files.
    pub dir: PathBuf,
    running: Running,
    _dir: TempDir,
}

/// Starts a server with the default generators and `extra_toml` in its config.
pub async fn start(prefix: &str, extra_toml: &str) -> TestServer {
    let dir = TempDir::new(prefix);
    let config = load(
        &dir.0,
        &format!("[server]\nlisten = \"127.0.0.1:0\"\n{extra_toml}"),
    );
    let running = spawn(&config).await;
    TestServer {
        base: running.base(),
        client: reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .unwrap(),
        dir: dir.0.clone(),
        running,
        _dir: dir,
    }
}

impl TestServer {
    /// Where its RESP listener listens, when the config sets `server.resp_listen` (an
    /// `extra_toml` starting with `resp_listen = ...` adds it to `[server]`).
    pub fn resp(&self) -> Option<SocketAddr> {
        self.running.resp
    }

    /// GET `path`, as JSON; panics (naming the path) unless it answers `want`.
    pub async fn json(&self, path: &str, want: u16) -> Value {
        let text = self.text(path, want).await;
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {path}: {e}: {text}"))
    }

    /// GET `path`, as text; panics (naming the path) unless it answers `want`.
    pub async fn text(&self, path: &str, want: u16) -> String {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        assert_eq!(status, want, "GET {path}: {text}");
        text
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

/// A gRPC request carrying `authorization: Bearer <token>`.
/// The `ids` of an answer (`{"ids": ["1", "2"]}`), each parsed as `T`; panics naming the
/// answer when it has none.
pub fn ids_of<T: std::str::FromStr>(v: &Value) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    v["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("no ids: {v}"))
        .iter()
        .map(|id| id.as_str().unwrap().parse().unwrap())
        .collect()
}

pub fn with_token<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}
