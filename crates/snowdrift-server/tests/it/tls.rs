//! TLS listeners: a certificate from PEM files, HTTP/1.1 and HTTP/2 (ALPN) over TLS, plain
//! HTTP refused on the TLS port, and bad certificate settings refused at start.

use std::path::Path;
use std::process::Command;

use snowdrift_server::{Config, Server};
use snowdrift_testkit::unique_name;

fn write_pair(dir: &Path) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), cert.key_pair.serialize_pem()).unwrap();
}

fn load(dir: &Path, server_toml: &str) -> Result<Config, snowdrift_server::ConfigError> {
    crate::support::try_load(dir, &format!("[server]\n{server_toml}\n"))
}

/// The config as written, not planned: what `Server::start` checks itself.
fn unchecked(dir: &Path, server_toml: &str) -> Config {
    let file = dir.join("unchecked.toml");
    let store = format!(
        "[store]\nurl = \"sqlite://{}\"\n",
        dir.join("ids.db").display()
    );
    std::fs::write(&file, format!("[server]\n{server_toml}\n{store}")).unwrap();
    let workers = dir.join("workers").display().to_string();
    Config::load(
        Some(&file),
        [("SNOWDRIFT_WORKER__PATH".to_string(), workers)],
    )
    .unwrap()
}

/// `curl` over TLS trusting only the test's certificate: (status, HTTP version, body).
fn curl(dir: &Path, url: &str, extra: &[&str]) -> (String, String, String) {
    let out = Command::new("curl")
        .args(["-sS", "--cacert"])
        .arg(dir.join("cert.pem"))
        .args(["-w", "\n%{http_code} %{http_version}"])
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, last) = text.rsplit_once('\n').unwrap_or(("", &text));
    let (code, version) = last.split_once(' ').unwrap_or((last, ""));
    (code.to_string(), version.to_string(), body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_http1_and_http2_over_tls() {
    let dir = std::env::temp_dir().join(unique_name("snowdrift-tls"));
    std::fs::create_dir_all(&dir).unwrap();
    write_pair(&dir);
    let config = load(
        &dir,
        &format!(
            "tls_cert = \"{}\"\ntls_key = \"{}\"",
            dir.join("cert.pem").display(),
            dir.join("key.pem").display()
        ),
    )
    .unwrap();
    let server = Server::start(&config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(snowdrift_server::run(
        listener,
        server,
        std::future::pending(),
    ));
    let url = format!("https://localhost:{port}/v1/ids/snowflake?count=3");
    let resolve = format!("localhost:{port}:127.0.0.1");
    let d = dir.clone();
    let (url2, resolve2) = (url.clone(), resolve.clone());
    let (h1, h2) = tokio::task::spawn_blocking(move || {
        (
            curl(&d, &url2, &["--http1.1", "--resolve", &resolve2]),
            curl(&d, &url2, &["--http2", "--resolve", &resolve2]),
        )
    })
    .await
    .unwrap();
    assert_eq!((h1.0.as_str(), h1.1.as_str()), ("200", "1.1"), "{h1:?}");
    assert!(h1.2.contains("\"ids\""), "{h1:?}");
    assert_eq!((h2.0.as_str(), h2.1.as_str()), ("200", "2"), "{h2:?}");
    // A client that does not speak TLS gets no answer it could mistake for IDs.
    let plain = format!("http://127.0.0.1:{port}/v1/ids/snowflake");
    let d = dir.clone();
    let refused = tokio::task::spawn_blocking(move || curl(&d, &plain, &["--max-time", "5"]))
        .await
        .unwrap();
    assert_ne!(refused.0, "200", "{refused:?}");
}

#[test]
fn bad_tls_settings_are_refused_with_the_key_named() {
    let dir = std::env::temp_dir().join(unique_name("snowdrift-tls-bad"));
    std::fs::create_dir_all(&dir).unwrap();
    let e = load(&dir, "tls_cert = \"cert.pem\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("go together"), "{e}");
    // Unreadable certificates are refused by the plan, before anything starts (so
    // `--check-config` catches them too), and by a start from an unchecked config alike.
    std::fs::write(dir.join("junk.pem"), "not a certificate").unwrap();
    let junk = format!(
        "tls_cert = \"{0}\"\ntls_key = \"{0}\"",
        dir.join("junk.pem").display()
    );
    let e = load(&dir, &junk).unwrap_err().to_string();
    assert!(e.contains("server.tls_cert"), "{e}");
    let config = unchecked(&dir, &junk);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let e = runtime
        .block_on(Server::start(&config))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("server.tls_cert"), "{e}");
    let missing = format!(
        "tls_cert = \"{0}\"\ntls_key = \"{0}\"",
        dir.join("missing.pem").display()
    );
    let e = load(&dir, &missing).unwrap_err().to_string();
    assert!(e.contains("missing.pem"), "{e}");
    let missing = unchecked(&dir, &missing);
    let e = runtime
        .block_on(Server::start(&missing))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.pem"), "{e}");
}
