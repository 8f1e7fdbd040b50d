//! `snowdrift serve --check-config` refuses every class of configuration error that a start
//! would refuse, with the same message, before anything is connected: both build the same
//! plan. One case per class; each config is otherwise valid, so only the mistake is named.

use std::path::Path;
use std::process::Output;

use snowdrift_testkit::unique_name;

/// A minimal valid config around `toml`, in `dir`: a SQLite store and lease files there.
fn config(dir: &Path, toml: &str) -> std::path::PathBuf {
    let store = if toml.contains("[store]") {
        String::new()
    } else {
        format!(
            "[store]\nurl = \"sqlite://{}\"\n",
            dir.join("ids.db").display()
        )
    };
    let worker = if toml.contains("[worker]") {
        String::new()
    } else {
        format!("[worker]\npath = \"{}\"\n", dir.join("workers").display())
    };
    let file = dir.join("snowdrift.toml");
    std::fs::write(&file, format!("{store}{worker}{toml}")).unwrap();
    file
}

fn serve(file: &Path, check: bool) -> Output {
    let mut cmd = crate::common::serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--config"]).arg(file);
    if check {
        cmd.arg("--check-config");
    }
    cmd.output().unwrap()
}

const KEY: &str = "5f1e0c9a27b34d6e8a91c2d3e4f50617";

#[test]
fn every_class_of_configuration_error_is_caught_by_the_check_as_by_the_start() {
    let dir = std::env::temp_dir().join(unique_name("check-config"));
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "not a certificate").unwrap();
    let generator = |kind: &str, keys: &str| {
        format!("[[generator]]\nname = \"g\"\nkind = \"{kind}\"\n{keys}\n")
    };
    let cases: Vec<(&str, String, &str)> = vec![
        ("limits", "[limits]\nmax_count = 0\n".into(), "limits.max_count"),
        (
            "head limit",
            "[limits]\nmax_head = 1000\n".into(),
            "limits.max_head",
        ),
        (
            "timeouts",
            "[limits]\nidle_timeout = \"0s\"\n".into(),
            "limits.idle_timeout",
        ),
        (
            "exposure",
            "[server]\nresp_listen = \"0.0.0.0:0\"\n".into(),
            "insecure_bind",
        ),
        (
            "tls pair",
            format!("[server]\ntls_cert = \"{}\"\n", junk.display()),
            "go together",
        ),
        (
            "tls files",
            format!(
                "[server]\ntls_cert = \"{0}\"\ntls_key = \"{0}\"\n",
                junk.display()
            ),
            "server.tls_cert",
        ),
        (
            "token",
            "[[auth.token]]\nname = \"a\"\nhash = \"sd_plain\"\ngenerators = [\"*\"]\nrole = \"read\"\n"
                .into(),
            "auth.token[0]",
        ),
        (
            "store url",
            "[store]\nurl = \"oracle://db/ids\"\n".into(),
            "sqlite://FILE",
        ),
        (
            "store table",
            format!(
                "[store]\nurl = \"sqlite://{}\"\ntable = \"leaf alloc; drop\"\n",
                dir.join("ids.db").display()
            ),
            "table",
        ),
        (
            "striping",
            "[store]\nurls = [\"sqlite://one.db\"]\n".into(),
            "at least 2 stores",
        ),
        ("preload", "[store]\npreload = [\"a b\"]\n".into(), "store.preload"),
        (
            "worker registry",
            "[worker]\nregistry = \"etcd\"\n".into(),
            "needs worker.url",
        ),
        (
            "worker mode",
            "[worker]\nregistry = \"raft\"\n".into(),
            "not one of file, static, derived",
        ),
        (
            "lease timings",
            format!(
                "[worker]\npath = \"{}\"\nttl = \"50ms\"\n{}",
                dir.join("workers").display(),
                generator("snowflake", "")
            ),
            "ttl",
        ),
        (
            "generator name",
            "[[generator]]\nname = \"a/b\"\nkind = \"uuid7\"\n".into(),
            "generator[0]",
        ),
        (
            "duplicate name",
            format!("{}{}", generator("uuid7", ""), generator("ulid", "")),
            "already used",
        ),
        (
            "keys of another kind",
            generator("uuid7", "layout = \"twitter\""),
            "does not apply",
        ),
        (
            "layout",
            generator("snowflake", "bits = \"time:50,worker:10,seq:12\""),
            "bits:",
        ),
        (
            "preset",
            generator("snowflake", "layout = \"tweeter\""),
            "known presets",
        ),
        (
            "counter template",
            generator(
                "counter",
                "url = \"redis://127.0.0.1:1\"\ntemplate = \"ORD{seq:08\"",
            ),
            "template",
        ),
        (
            "counter batch",
            generator("counter", "url = \"redis://127.0.0.1:1\"\nbatch = 0"),
            "batch",
        ),
        (
            "ticket servers",
            generator("ticket", "servers = [\"oracle://db/x\"]"),
            "generator[0]",
        ),
        (
            "obfuscation",
            generator("segment", &format!("obfuscate_key = \"{}\"", &KEY[..30])),
            "generator[0].obfuscate_key",
        ),
        (
            "uuid namespace",
            generator("uuid5", "namespace = \"example.com\""),
            "generator[0].namespace",
        ),
        (
            "uuid namespace missing",
            generator("uuid3", ""),
            "needs namespace",
        ),
        (
            "uuid node",
            generator("uuid1", "node = \"01:23:45:67:89\""),
            "generator[0].node",
        ),
        (
            "uuid node digits",
            generator("uuid6", "node = \"0123456789xy\""),
            "generator[0].node",
        ),
        (
            "uuid node on another kind",
            generator("uuid4", "node = \"0123456789ab\""),
            "key \"node\" does not apply",
        ),
        (
            "uuid domain",
            generator("uuid2", "domain = \"user\""),
            "generator[0].domain",
        ),
        (
            "uuid org without an id",
            generator("uuid2", "domain = \"org\""),
            "generator[0].local_id",
        ),
    ];
    for (class, toml, says) in &cases {
        let file = config(&dir, toml);
        let checked = serve(&file, true);
        let check_err = String::from_utf8_lossy(&checked.stderr).to_string();
        assert!(
            !checked.status.success(),
            "{class}: --check-config passed\n{toml}\n{}",
            String::from_utf8_lossy(&checked.stdout)
        );
        assert!(check_err.contains(says), "{class}: {check_err}");
        assert!(!check_err.contains(&KEY[..8]), "{class}: shows the key");
        // The start refuses it the same way, before listening.
        let started = serve(&file, false);
        let start_err = String::from_utf8_lossy(&started.stderr).to_string();
        assert!(!started.status.success(), "{class}: the start went ahead");
        assert!(!start_err.contains("listening on"), "{class}: {start_err}");
        assert_eq!(
            start_err.lines().last(),
            check_err.lines().last(),
            "{class}: the start and the check say different things"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--check-config=connect` reaches the store, the worker registry (etcd), each ticket
/// server and the Redis counter, lists them after the config as TOML comments,
/// and fails naming those that did not answer; plain `--check-config` connects to nothing.
#[test]
fn check_config_connect_reaches_everything_and_names_what_did_not_answer() {
    let dir = std::env::temp_dir().join(unique_name("check-connect"));
    std::fs::create_dir_all(&dir).unwrap();
    let namespace = unique_name("cc_workers").replace('-', "_");
    // A table per config: the first check creates it for a pool of one, which a pool of two
    // would refuse (another class).
    let body = |ticket_servers: &str| {
        let table = unique_name("cc_tickets").replace('-', "_");
        format!(
            "[worker]\nregistry = \"etcd\"\nurl = \"{etcd}\"\nnamespace = \"{namespace}\"\n\n\
             [[generator]]\nname = \"sf\"\nkind = \"snowflake\"\n\n\
             [[generator]]\nname = \"t\"\nkind = \"ticket\"\ntable = \"{table}\"\nservers = [{ticket_servers}]\n\n\
             [[generator]]\nname = \"c\"\nkind = \"counter\"\nurl = \"{redis}\"\n",
            etcd = snowdrift_testkit::urls::etcd(),
            redis = snowdrift_testkit::urls::redis(),
        )
    };
    let run = |file: &Path, level: &str| {
        crate::common::serve_command()
            .args(["--listen", "127.0.0.1:0", "--config"])
            .arg(file)
            .arg(level)
            .output()
            .unwrap()
    };

    let pg = snowdrift_testkit::urls::postgres();
    let good = config(&dir, &body(&format!("\"{pg}\"")));
    let out = run(&good, "--check-config=connect");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for what in [
        "# reached: store sqlite://",
        "# reached: worker registry of generator \"sf\" etcd://",
        "# reached: ticket server of generator \"t\" postgres://",
        "# reached: Redis of counter \"c\" redis://",
    ] {
        assert!(stdout.contains(what), "{what}:\n{stdout}");
    }
    assert!(
        !stdout.contains(":root@"),
        "passwords are masked:\n{stdout}"
    );

    // A second ticket server on a closed port: named, and the exit says how many.
    let bad = config(
        &dir,
        &body(&format!("\"{pg}\", \"mysql://root@127.0.0.1:1/test\"")),
    );
    let out = run(&bad, "--check-config=connect");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("1 of 5 could not be reached")
            && stderr.contains("ticket server of generator \"t\" mysql://root@127.0.0.1:1/test"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("# NOT reached: ticket server"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Without =connect nothing is reached, so the same config passes.
    let out = run(&bad, "--check-config");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("# reached"));
    // Any other level is refused by the command line.
    let out = run(&bad, "--check-config=everything");
    assert!(!out.status.success());
    std::fs::remove_dir_all(&dir).ok();
}

/// `--check-config` prints the effective config back: a password in the URL's user part or
/// in a password-like query parameter must not be in it.
#[test]
fn check_config_prints_no_password_of_a_url() {
    let dir = std::env::temp_dir().join(unique_name("check-config-mask"));
    std::fs::create_dir_all(&dir).unwrap();
    for (url, shown) in [
        (
            "postgres://h/db?password=secret",
            "postgres://h/db?password=***",
        ),
        (
            "postgres://app:secret@h/db?sslmode=disable&sslpassword=secret",
            "postgres://app:***@h/db?sslmode=disable&sslpassword=***",
        ),
    ] {
        let file = config(&dir, &format!("[store]\nurl = \"{url}\"\n"));
        let out = serve(&file, true);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{url}: {stdout}\n{stderr}");
        assert!(stdout.contains(shown), "{url}:\n{stdout}");
        assert!(
            !stdout.contains("secret") && !stderr.contains("secret"),
            "{url}: the password is printed:\n{stdout}\n{stderr}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
