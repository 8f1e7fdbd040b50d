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
    // Issue 28's strict configuration: each refused naming the key and the line it is on
    // (the second text: that line as written).
    let token = "[[auth.token]]\nname = \"a\"\nhash = \"sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"\ngenerators = [\"*\"]\nrole = \"read\"\n";
    let placed: Vec<(&str, String, &str, &str)> = vec![
        (
            "a switch for a number",
            generator("snowflake", "random_sequence_start = true"),
            "generator[0].random_sequence_start: true is true or false (a switch); this key takes a whole number",
            "random_sequence_start = true",
        ),
        (
            "a fraction for a number",
            generator("snowflake", "random_sequence_start = 1.9"),
            "generator[0].random_sequence_start: 1.9 is a number with a fraction",
            "random_sequence_start = 1.9",
        ),
        (
            "text for a number",
            "[limits]\nmax_count = \"500\"\n".into(),
            "limits.max_count: \"500\" is text (in quotes); this key takes a whole number (0 or more): write 500 without quotes",
            "max_count = \"500\"",
        ),
        (
            "text for a switch",
            "[server]\ninsecure_bind = \"yes\"\n".into(),
            "server.insecure_bind: \"yes\" is text (in quotes); this key takes true or false",
            "insecure_bind = \"yes\"",
        ),
        (
            "a number for a switch",
            "[server]\ninsecure_bind = 1\n".into(),
            "server.insecure_bind: 1 is a whole number; this key takes true or false",
            "insecure_bind = 1",
        ),
        (
            "a fraction for a worker ID",
            "[worker]\nregistry = \"static\"\nid = 1.9\n".into(),
            "worker.id: 1.9 is a number with a fraction",
            "id = 1.9",
        ),
        (
            "text for a rate",
            format!("{token}rate = \"5\"\n"),
            "auth.token[0].rate: \"5\" is text",
            "rate = \"5\"",
        ),
        (
            "a switch for a connection cap",
            "[limits]\nmax_connections = true\n".into(),
            "limits.max_connections: true is true or false",
            "max_connections = true",
        ),
        (
            "store.url beside store.urls",
            "[store]\nurl = \"sqlite://one.db\"\nurls = [\"sqlite://a.db\", \"sqlite://b.db\"]\n"
                .into(),
            "store.url: has no effect when store.urls is set",
            "url = \"sqlite://one.db\"",
        ),
        (
            "derive without registry = derived",
            "[worker]\nregistry = \"file\"\nderive = \"hostname\"\n".into(),
            "worker.derive applies to registry = \"derived\"",
            "derive = \"hostname\"",
        ),
        (
            "forward_token with auth off",
            format!(
                "[server]\nadvertise = \"http://127.0.0.1:8080\"\n{}",
                generator(
                    "tso",
                    "url = \"etcd://127.0.0.1:1\"\nforward_token = \"sd_x\""
                )
            ),
            "generator[0].forward_token (\"g\"): applies only with auth on",
            "forward_token = \"sd_x\"",
        ),
        (
            "an empty body limit",
            "[limits]\nmax_body = 0\n".into(),
            "limits.max_body: 0 bytes is below 1024",
            "max_body = 0",
        ),
        (
            "an hour's mark window",
            "[worker]\nwindow = \"1h\"\n".into(),
            "worker.window: 1h is above 1m",
            "window = \"1h\"",
        ),
        (
            "a worker ID beyond the node field",
            format!(
                "[worker]\nregistry = \"static\"\nid = 5000\n{}",
                generator("snowflake", "layout = \"twitter\"")
            ),
            "worker.id: static worker ID 5000 does not fit the layout's node space (0..1024)",
            "id = 5000",
        ),
        (
            "a namespace that is a path",
            "[worker]\nnamespace = \"../../x\"\n".into(),
            "worker.namespace: worker namespace \"../../x\" is not valid",
            "namespace = \"../../x\"",
        ),
        (
            "an empty worker directory",
            "[worker]\npath = \"\"\n".into(),
            "worker.path: \"\" names no directory",
            "path = \"\"",
        ),
    ];
    let cases = cases
        .into_iter()
        .map(|(class, toml, says)| (class, toml, says, ""))
        .chain(placed);
    for (class, toml, says, line) in cases {
        let file = config(&dir, &toml);
        if !line.is_empty() {
            let text = std::fs::read_to_string(&file).unwrap();
            let n = text
                .lines()
                .position(|l| l == line)
                .unwrap_or_else(|| panic!("{class}: no line {line:?}"))
                + 1;
            let checked = serve(&file, true);
            let err = String::from_utf8_lossy(&checked.stderr).to_string();
            assert!(
                err.contains(&format!("{} line {n}: ", file.display())),
                "{class}: not placed at line {n}: {err}"
            );
        }
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

/// The environment and the flags are checked as the file is, and named in the message: a
/// value of the wrong type, a `SNOWDRIFT_` variable that names no key (the issue's
/// `SNOWDRIFT_LISTEN`), a flag whose value the plan refuses. The variables snowdrift reads
/// for other purposes do not get in the way.
#[test]
fn the_environment_and_the_flags_are_checked_and_named() {
    let dir = std::env::temp_dir().join(unique_name("check-config-env"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = config(&dir, "");
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let mut cmd = crate::common::serve_command();
        cmd.arg("--config")
            .arg(&file)
            .args(args)
            .arg("--check-config");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).to_string(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    for (env, says) in [
        (
            ("SNOWDRIFT_LIMITS__MAX_COUNT", "true"),
            "environment variable SNOWDRIFT_LIMITS__MAX_COUNT: limits.max_count: \"true\" is not a whole number",
        ),
        (
            ("SNOWDRIFT_LISTEN", "127.0.0.1:9000"),
            "environment variable SNOWDRIFT_LISTEN: listen: no such key",
        ),
        (
            ("SNOWDRIFT_SERVER__INSECURE_BIND", "on"),
            "environment variable SNOWDRIFT_SERVER__INSECURE_BIND: server.insecure_bind: \"on\" is not true or false",
        ),
    ] {
        let (ok, stderr, _) = run(&[env], &[]);
        assert!(!ok && stderr.contains(says), "{env:?}: {stderr}");
    }
    let (ok, stderr, _) = run(&[], &["--listen", "0.0.0.0:0"]);
    assert!(
        !ok && stderr.contains("flag --listen: server.listen: 0.0.0.0:0 is reachable"),
        "{stderr}"
    );
    // Values of the right type work, and the variables read for other purposes are passed
    // over.
    let (ok, stderr, stdout) = run(
        &[
            ("SNOWDRIFT_LIMITS__MAX_COUNT", "77"),
            ("SNOWDRIFT_SERVER__INSECURE_BIND", "true"),
            ("SNOWDRIFT_TOKEN", "sd_exported"),
            ("SNOWDRIFT_LOG", "debug"),
            ("SNOWDRIFT_OBFUSCATE_KEY", KEY),
        ],
        &["--listen", "0.0.0.0:0"],
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("max_count = 77"), "{stdout}");
    std::fs::remove_dir_all(&dir).ok();
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
