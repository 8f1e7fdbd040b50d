//! `snowdrift token create`: its printed config lines, pasted into a real server's config,
//! let exactly that token in, for exactly its generators.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::Served;
use snowdrift_server::auth::TokenHash;

fn snowdrift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = snowdrift(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let out = snowdrift(args);
    assert!(!out.status.success(), "{args:?} should fail");
    String::from_utf8(out.stderr).unwrap()
}

/// The token and the `[[auth.token]]` lines of `token create`'s output.
fn created(args: &[&str]) -> (String, String) {
    let out = ok(&[&["token", "create"], args].concat());
    let token = out
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("sd_"))
        .unwrap_or_else(|| panic!("no token in: {out}"))
        .to_string();
    let toml: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "[[auth.token]]")
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(!toml.is_empty(), "no [[auth.token]] in: {out}");
    assert!(
        !toml.join("\n").contains(&token),
        "the token itself never goes into the config lines"
    );
    // As README says: a reload (SIGHUP) puts tokens in force, no restart needed.
    assert!(
        out.contains("kill -HUP") && !out.contains("restart it"),
        "{out}"
    );
    (token, toml.join("\n") + "\n")
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A config in a new directory: port-0 listeners (plus `more_server` lines in `[server]`),
/// a SQLite store beside it, then `tokens` (`[[auth.token]]` blocks from `token create`).
fn config_file(more_server: &str, tokens: &str) -> (TempDir, PathBuf) {
    let dir = TempDir(std::env::temp_dir().join(snowdrift_testkit::unique_name("snowdrift-token")));
    std::fs::create_dir_all(&dir.0).unwrap();
    let config = dir.0.join("snowdrift.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n{more_server}[store]\nurl = \"sqlite://{}\"\n\n{tokens}",
            dir.0.join("ids.db").display()
        ),
    )
    .unwrap();
    (dir, config)
}

/// A `snowdrift bench` run (`what` names it) that succeeded without an error.
fn assert_clean_run(out: &Output, what: &str) {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(", 0 error(s)"), "{what}: {text}");
}

/// `snowdrift serve --config FILE`, its store beside the config, once it is ready (the
/// machine-wide worker registry may hand it an ID whose mark is still ahead).
fn serve(config: &Path) -> Served {
    let mut cmd = crate::common::serve_command();
    cmd.arg("--config")
        .arg(config)
        .current_dir(config.parent().unwrap());
    let served = Served::start(cmd);
    let tls = std::fs::read_to_string(config).is_ok_and(|c| c.contains("tls_cert"));
    if !tls {
        served.wait_ready();
    }
    served
}

/// The status of `GET path` on `served` with `token` as the bearer token, if any.
fn status(served: &Served, path: &str, token: Option<&str>) -> u16 {
    served.get(path, token).0
}

#[test]
fn created_tokens_pasted_into_the_config_let_in_what_they_name() {
    let (reader, reader_toml) = created(&["--name", "ci", "--generators", "snowflake"]);
    let (admin, admin_toml) = created(&["--name", "ops", "--role", "admin"]);
    assert!(reader.len() == 46 && reader != admin, "{reader} {admin}");
    assert!(
        reader_toml.contains(&TokenHash::of(&reader).to_string()),
        "{reader_toml}"
    );
    assert!(admin_toml.contains("generators = [\"*\"]"), "{admin_toml}");

    let (_dir, config) = config_file("", &format!("{reader_toml}\n{admin_toml}"));
    // --check-config accepts the pasted lines and prints them back.
    let checked = ok(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--check-config",
    ]);
    assert_eq!(checked.matches("[[auth.token]]").count(), 2, "{checked}");

    let served = serve(&config);
    assert_eq!(status(&served, "/v1/ids/snowflake", None), 401);
    assert_eq!(status(&served, "/v1/ids/snowflake", Some(&reader)), 200);
    assert_eq!(status(&served, "/v1/ids/uuid7", Some(&reader)), 403);
    assert_eq!(status(&served, "/v1/tags", Some(&reader)), 403);
    assert_eq!(status(&served, "/v1/ids/uuid7", Some(&admin)), 200);
    assert_eq!(status(&served, "/v1/tags", Some(&admin)), 200);
    let (stranger, _) = created(&[]);
    assert_eq!(status(&served, "/v1/ids/snowflake", Some(&stranger)), 401);
    assert_eq!(status(&served, "/healthz", None), 200);
}

#[test]
fn create_refuses_what_the_server_would_refuse() {
    let e = fails(&["token", "create", "--generators", "*,orders"]);
    assert!(e.contains("give it alone"), "{e}");
    let e = fails(&["token", "create", "--generators", "bad name"]);
    assert!(e.contains("bad name"), "{e}");
    let e = fails(&["token", "create", "--rate", "0"]);
    assert!(e.contains("rate is 0"), "{e}");
    let e = fails(&["token", "create", "--role", "write"]);
    assert!(e.contains("read") && e.contains("admin"), "{e}");
    let (_, toml) = created(&["--rate", "100", "--burst", "200"]);
    assert!(toml.contains("rate = 100\nburst = 200\n"), "{toml}");
}

#[test]
fn bench_loads_a_server_with_auth_on_through_its_token() {
    let (token, toml) = created(&["--name", "load", "--generators", "snowflake"]);
    let (_dir, config) = config_file("resp_listen = \"127.0.0.1:0\"\n", &toml);
    let served = serve(&config);
    let http = format!("{}/v1/ids/snowflake?count=1", served.url());
    let resp = served.resp_url.clone().expect("resp_listen is set");
    let load = ["--connections", "2", "--duration", "1s", "--rate", "50"];
    let bench = |target: &[&str], token: Option<&str>| {
        let mut args = vec!["bench", "--target"];
        args.extend_from_slice(target);
        args.extend_from_slice(&load);
        if let Some(token) = token {
            args.extend_from_slice(&["--token", token]);
        }
        snowdrift(&args)
    };

    for target in [
        &[http.as_str()][..],
        &[resp.as_str(), "--incr", "snowflake"],
    ] {
        assert_clean_run(&bench(target, Some(&token)), &format!("{target:?}"));
    }
    let grpc = [
        "bench",
        "--target",
        &served.url(),
        "--grpc",
        "snowflake",
        "--connections",
        "1",
        "--per-stream",
        "1000",
        "--duration",
        "500ms",
    ];
    assert_clean_run(
        &snowdrift(&[&grpc[..], &["--token", &token]].concat()),
        "gRPC",
    );
    let err = String::from_utf8(snowdrift(&grpc).stderr).unwrap();
    assert!(
        err.contains("was refused") && err.contains("needs a token"),
        "{err}"
    );
    // Without the token, or with a wrong one: refused before any load, saying why.
    let err = String::from_utf8(bench(&[&http], None).stderr).unwrap();
    assert!(err.contains("status 401"), "{err}");
    let wrong = format!("{token}x");
    let err =
        String::from_utf8(bench(&[&resp, "--incr", "snowflake"], Some(&wrong)).stderr).unwrap();
    assert!(
        err.contains("refused the token") && err.contains("WRONGPASS"),
        "{err}"
    );
}

/// `bench` against a server as deployed beyond loopback: TLS and a token. The handshake is
/// checked against the CA given with --ca (here the server's self-signed certificate); without
/// it the system's roots do not trust the server and the run says so before any load.
#[test]
fn bench_speaks_tls_with_a_token_and_checks_the_certificate() {
    let (token, toml) = created(&["--name", "tls", "--generators", "snowflake"]);
    let dir = TempDir(std::env::temp_dir().join(snowdrift_testkit::unique_name("snowdrift-tls")));
    std::fs::create_dir_all(&dir.0).unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert_file, key_file) = (dir.0.join("cert.pem"), dir.0.join("key.pem"));
    std::fs::write(&cert_file, cert.cert.pem()).unwrap();
    std::fs::write(&key_file, cert.key_pair.serialize_pem()).unwrap();
    // A worker registry of its own, so its first request does not wait for a mark another
    // server on this machine left (wait_ready speaks plain HTTP, not TLS).
    let toml = format!(
        "{toml}\n[worker]\npath = \"{}\"\n",
        dir.0.join("workers").display()
    );
    let (_config_dir, config) = config_file(
        &format!(
            "tls_cert = \"{}\"\ntls_key = \"{}\"\n",
            cert_file.display(),
            key_file.display()
        ),
        &toml,
    );
    let served = serve(&config);
    let port = served.addr.rsplit(':').next().unwrap();
    let target = format!("https://localhost:{port}/v1/ids/snowflake?count=2");
    let ca = cert_file.to_str().unwrap();
    let run = |extra: &[&str]| {
        let base = [
            "bench",
            "--target",
            &target,
            "--connections",
            "3",
            "--duration",
            "1s",
        ];
        snowdrift(&[&base[..], extra].concat())
    };

    let out = run(&["--ca", ca, "--token", &token]);
    assert_clean_run(&out, "https with --ca and --token");
    let text = String::from_utf8_lossy(&out.stdout);
    let ids_line = text.lines().find(|l| l.starts_with("ids")).unwrap();
    let ids: u64 = ids_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("{ids_line}: {e}"));
    assert!(ids >= 2, "{text}");

    // The token still counts over TLS.
    let err = String::from_utf8(run(&["--ca", ca]).stderr).unwrap();
    assert!(err.contains("status 401"), "{err}");
    // A certificate nobody vouches for is refused before any load.
    let err = String::from_utf8(run(&["--token", &token]).stderr).unwrap();
    assert!(
        err.contains("TLS handshake") || err.contains("no trusted root"),
        "{err}"
    );
    // --ca without TLS is a mistake worth saying.
    let plain = format!("http://localhost:{port}/v1/ids/snowflake");
    let err = String::from_utf8(
        snowdrift(&["bench", "--target", &plain, "--ca", ca, "--duration", "1s"]).stderr,
    )
    .unwrap();
    assert!(err.contains("--ca is for https://"), "{err}");
}
