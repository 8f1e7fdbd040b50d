//! `snowdrift serve` as a child process for the command-line tests.
#![allow(dead_code)] // each test binary uses a different part

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};

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
}

impl Served {
    /// Starts `cmd` and waits for the address it listens on.
    pub fn start(mut cmd: Command) -> Self {
        let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("serve exited before listening")
                .unwrap();
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest.trim().to_string();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Served { child, addr }
    }

    /// `http://HOST:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops it with SIGTERM and returns how it exited.
    pub fn stop(mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
