//! `snowdrift serve` as a child process for the command-line tests.
#![allow(dead_code)] // each test binary uses a different part

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A port nothing listens on now (the system's choice for port 0).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `snowdrift serve` with no store from the environment; add arguments, then [`Served::start`].
pub fn serve_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_snowdrift"));
    cmd.arg("serve").env_remove("SNOWDRIFT_STORE__URL");
    cmd
}

/// A running `snowdrift serve`, killed when dropped.
pub struct Served {
    child: Child,
    /// `HOST:PORT` it listens on, from its "listening on" line.
    pub addr: String,
    /// `redis://HOST:PORT` of its RESP listener, if `server.resp_listen` is set.
    pub resp_url: Option<String>,
    /// Every line it wrote to stderr.
    log: Arc<Mutex<Vec<String>>>,
}

impl Served {
    /// Starts `cmd` and waits for the address it listens on.
    pub fn start(mut cmd: Command) -> Self {
        let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let mut resp_url = None;
        let mut before = Vec::new();
        let addr = loop {
            let Some(line) = lines.next() else {
                panic!("serve exited before listening:\n{}", before.join("\n"));
            };
            let line = line.unwrap();
            before.push(line.clone());
            if let Some(rest) = line.split("RESP listening on ").nth(1) {
                resp_url = Some(rest.trim().to_string());
            } else if let Some(rest) = line
                .split("listening on http://")
                .nth(1)
                .or_else(|| line.split("listening on https://").nth(1))
            {
                break rest.trim().to_string();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe, keeping the lines
        // (those before the address too: start's warnings) for tests that wait for one.
        let log = Arc::new(Mutex::new(before));
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        Served {
            child,
            addr,
            resp_url,
            log,
        }
    }

    /// How many lines it has logged so far: pass to [`Served::wait_for_log`] to wait only
    /// for lines written after now.
    pub fn log_len(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    /// Every line it has logged so far (after its "listening on" line), as written.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The first line from the `from`th on that contains `needle`; panics with the log after
    /// 60 s without one.
    pub fn wait_for_log(&self, from: usize, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            {
                let log = self.log.lock().unwrap();
                if let Some(line) = log.iter().skip(from).find(|l| l.contains(needle)) {
                    return line.clone();
                }
                assert!(
                    Instant::now() < deadline,
                    "no log line with {needle:?} after line {from}:\n{}",
                    log.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends it `signal` (`HUP`, `TERM`, ...) with kill(1).
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid}: {status}");
    }

    /// `http://HOST:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits until `/readyz` is 200: after a restart within the high-water mark's window the
    /// snowflake generators wait for the clock to pass the mark (everything else is served).
    pub fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (status, body) = self.get("/readyz", None);
            if status == 200 {
                return;
            }
            assert!(Instant::now() < deadline, "never ready: {body}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `GET path` (with `token` as the bearer token, if any): the status and the body.
    pub fn get(&self, path: &str, token: Option<&str>) -> (u16, String) {
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\n{auth}Connection: close\r\n\r\n",
            self.addr
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {response}"));
        let body = response
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string();
        (status, body)
    }

    /// The `worker` section of snowflake generator `name` in `/v1/generators`.
    pub fn worker_of(&self, name: &str) -> serde_json::Value {
        let (status, body) = self.get("/v1/generators", None);
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["generators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap_or_else(|| panic!("no generator {name:?}: {v}"))["worker"]
            .clone()
    }

    /// Stops it with SIGTERM and returns how it exited.
    pub fn stop(mut self) -> ExitStatus {
        self.signal("TERM");
        let status = self.child.wait().unwrap();
        if !status.success() {
            // The caller asserts on the status; what the server said is the why. The reader
            // thread may still hold the last lines: give it a moment.
            std::thread::sleep(std::time::Duration::from_millis(100));
            eprintln!(
                "snowdrift serve exited with {status} after SIGTERM; its log:\n{}",
                self.log.lock().unwrap().join("\n")
            );
        }
        status
    }

    /// Its process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server on a SQLite store in a fresh directory (named after `prefix`), with segment tag
/// `tag` created with `step`: the directory, for the caller to remove, and the server.
pub fn served_with_tag(prefix: &str, tag: &str, step: u64) -> (std::path::PathBuf, Served) {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name(prefix));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--store"])
        .arg(format!("sqlite://{}", dir.join("ids.db").display()))
        .env("SNOWDRIFT_WORKER__PATH", dir.join("workers"));
    let served = Served::start(cmd);
    let created = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args([
            "tags",
            "create",
            tag,
            "--step",
            &step.to_string(),
            "--server",
        ])
        .arg(served.url())
        .output()
        .unwrap();
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    (dir, served)
}
