//! A snowdrift server in this process, on a SQLite store shared by every server of a test.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use snowdrift_server::{Config, StartError};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A fresh directory for one test.
pub fn dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name(prefix));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), StartError>>,
}

impl Server {
    /// A server with the default generators under worker ID `worker`, its tags in `dir`'s
    /// SQLite file, on `addr` (or a free port).
    pub async fn start(dir: &Path, worker: u64, addr: Option<SocketAddr>) -> Self {
        Self::start_with(dir, worker, addr, "").await
    }

    /// As [`Server::start`], with `server_toml` in the config's `[server]` section.
    pub async fn start_with(
        dir: &Path,
        worker: u64,
        addr: Option<SocketAddr>,
        server_toml: &str,
    ) -> Self {
        let file = dir.join(format!("snowdrift-{worker}.toml"));
        std::fs::write(
            &file,
            format!(
                "[server]\n{server_toml}\n[store]\nurl = \"sqlite://{}\"\n[worker]\nregistry = \"file\"\nid = {worker}\npath = \"{}\"\n",
                dir.join("ids.db").display(),
                dir.join("workers").display()
            ),
        )
        .unwrap();
        let config = Config::load(Some(&file), Vec::new()).unwrap();
        let server = snowdrift_server::Server::start(&config).await.unwrap();
        let listener = match addr {
            Some(addr) => bind_again(addr).await,
            None => tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        };
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(snowdrift_server::run(listener, server, async move {
            let _ = stopped.await;
        }));
        Self { addr, stop, task }
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops it and waits until it has.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap();
    }
}

/// The address a stopped server had; its port may take a moment to be free.
async fn bind_again(addr: SocketAddr) -> tokio::net::TcpListener {
    for _ in 0..100 {
        if let Ok(l) = tokio::net::TcpListener::bind(addr).await {
            return l;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{addr} stayed taken");
}

/// Creates segment tag `tag` with `step` through the HTTP API.
pub async fn create_tag(base: &str, tag: &str, step: u64) {
    let r = reqwest::Client::new()
        .post(format!("{base}/v1/tags"))
        .json(&serde_json::json!({"tag": tag, "step": step}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap());
}
