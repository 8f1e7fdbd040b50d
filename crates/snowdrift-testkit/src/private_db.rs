//! A PostgreSQL or MariaDB server of a test's own: a fresh data directory in a scratch
//! directory, a port from the system and a socket of its own, so a test can crash it
//! (an immediate stop, `kill -9`) and start it again on the same data without disturbing
//! the shared servers other tests use. Dropped, it is killed and its directory removed.
//!
//! Both expect the server packages `scripts/services` installs; the test runs as root
//! (PostgreSQL runs as the `postgres` user, MariaDB as root), as CI does.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port no one listens on now, from the system.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a port from the system")
}

fn scratch(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(crate::unique_name(prefix));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (the server packages, from scripts/services)"));
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A PostgreSQL of the test's own (initdb, `pg_ctl`, run as the `postgres` user).
pub struct PrivatePostgres {
    dir: PathBuf,
    port: u16,
    bin: PathBuf,
}

impl PrivatePostgres {
    fn tool(&self, tool: &str, args: &[&str]) {
        run(
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(self.bin.join(tool))
                .args(args),
            tool,
        );
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// Makes the cluster (no fsync: a crash here is a process's, not the machine's) and
    /// starts it.
    pub fn new() -> Self {
        let bindir = Command::new("pg_config")
            .arg("--bindir")
            .output()
            .expect("pg_config (PostgreSQL's server packages, from scripts/services)");
        let bin = PathBuf::from(String::from_utf8_lossy(&bindir.stdout).trim());
        let pg = Self {
            dir: scratch("snowdrift_pg"),
            port: free_port(),
            bin,
        };
        run(
            Command::new("chown").arg("postgres:postgres").arg(&pg.dir),
            "chown",
        );
        pg.tool(
            "initdb",
            &[
                "-D",
                &pg.data(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        pg.start();
        pg
    }

    /// Starts it (again) on its data directory, waiting until it takes connections.
    pub fn start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("log").display().to_string();
        self.tool(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        );
    }

    /// Stops it as a crash does: no checkpoint, what is not in the WAL on disk is lost.
    pub fn crash(&self) {
        self.tool(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        );
    }

    /// Its URL, as the `postgres` superuser, database `postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Default for PrivatePostgres {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .args(["-D", &self.data(), "-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A MariaDB of the test's own (`mariadb-install-db`, then `mariadbd` on a port from the
/// system and a socket in its directory), whose `root@127.0.0.1` has no password.
pub struct PrivateMariaDb {
    dir: PathBuf,
    port: u16,
    server: Option<Child>,
}

/// `mariadbd`, which Debian puts in /usr/sbin (not on every user's PATH).
fn mariadbd() -> PathBuf {
    ["/usr/sbin/mariadbd", "/usr/local/sbin/mariadbd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("mariadbd"))
}

/// The options the server runs with, the same at install and at every start. InnoDB
/// writes its log at each commit but syncs it once a second (a killed process loses
/// nothing of it; a machine's crash is not what these tests make); Aria is left as it
/// ships, since its sync is what the tests check.
fn server_options(dir: &Path) -> Vec<String> {
    let data = dir.join("data");
    let mut options = vec![
        "--no-defaults".to_string(),
        format!("--datadir={}", data.display()),
        "--skip-name-resolve".into(),
        "--innodb-log-file-size=8M".into(),
        "--innodb-buffer-pool-size=32M".into(),
        "--innodb-flush-log-at-trx-commit=2".into(),
        "--innodb-doublewrite=0".into(),
    ];
    // mariadbd refuses root unless told to run as it.
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if root {
        options.push("--user=root".into());
    }
    options
}

impl PrivateMariaDb {
    /// Makes the data directory and starts the server.
    pub fn new() -> Self {
        let dir = scratch("snowdrift_mariadb");
        run(
            Command::new("mariadb-install-db")
                .args(server_options(&dir))
                .args(["--auth-root-authentication-method=normal", "--skip-test-db"]),
            "mariadb-install-db",
        );
        let mut db = Self {
            dir,
            port: free_port(),
            server: None,
        };
        db.start();
        db
    }

    /// Starts it (again) on its data directory, waiting (up to 30 s) until it takes
    /// connections; after a crash, that is after Aria's and InnoDB's recovery.
    pub fn start(&mut self) {
        assert!(self.server.is_none(), "the server is running already");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("log"))
            .expect("the server's log");
        let child = Command::new(mariadbd())
            .args(server_options(&self.dir))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", self.dir.join("sock").display()))
            .arg(format!("--pid-file={}", self.dir.join("pid").display()))
            .arg("--skip-log-bin")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("mariadbd (MariaDB's server package, from scripts/services)");
        self.server = Some(child);
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(Some(status)) = self.server.as_mut().map(|c| c.try_wait().ok().flatten()) {
                panic!("mariadbd ended ({status}): {}", self.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "mariadbd took no connection within 30 s: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills it (`SIGKILL`): what it had not written out of its own memory is lost.
    pub fn crash(&mut self) {
        if let Some(mut child) = self.server.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Its URL as root, database `db`.
    pub fn url(&self, db: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{db}", self.port)
    }

    /// The server's error log, for a failure's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }
}

impl Default for PrivateMariaDb {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PrivateMariaDb {
    fn drop(&mut self) {
        self.crash();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
