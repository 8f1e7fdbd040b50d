//! Strict configuration (issue 28, item 6): every example the issue lists, tried as a new
//! user would, is refused by loading and planning a config (what `--check-config` and start
//! both do), with a message naming the key, the file and its line (or the environment
//! variable), and what is allowed. Values of the right type, from the file or the
//! environment, keep working.

use std::path::{Path, PathBuf};

use snowdrift_server::{Config, ConfigError};
use snowdrift_testkit::unique_name;

/// A directory for one test's config file, removed at the end.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(unique_name("strict-config"));
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    fn file(&self, toml: &str) -> PathBuf {
        let file = self.0.join("snowdrift.toml");
        std::fs::write(&file, toml).unwrap();
        file
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Loads `toml` (exactly as given: line numbers count from its first line) with `env` and
/// plans it, as `snowdrift serve` does.
fn check(toml: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let dir = Dir::new();
    let file = dir.file(toml);
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    let config = Config::load(Some(&file), env)?;
    config.plan()?;
    Ok(config)
}

/// The message of refusing `toml` with `env`, which must name `key` and `place` (`line N`
/// of the file, or the variable) and say `says`.
fn refused(toml: &str, env: &[(&str, &str)], key: &str, place: &str, says: &str) -> String {
    let e = match check(toml, env) {
        Ok(_) => panic!("accepted:\n{toml}\n{env:?}"),
        Err(e) => e,
    };
    let text = e.to_string();
    assert!(text.contains(key), "does not name {key}: {text}\n{toml}");
    assert!(text.contains(says), "does not say {says:?}: {text}\n{toml}");
    let where_ = e.place().unwrap_or_default();
    if place.starts_with("line ") {
        assert!(
            where_.ends_with(&format!("snowdrift.toml {place}")),
            "not placed at snowdrift.toml {place}: {text}\n{toml}"
        );
    } else {
        assert_eq!(where_, place, "{text}");
    }
    assert!(
        text.starts_with(&format!("invalid configuration: {where_}: ")),
        "{text}"
    );
    text
}

const SNOWFLAKE: &str =
    "[[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nlayout = \"twitter\"\n";

#[test]
fn a_value_of_another_type_is_not_coerced() {
    // The examples, each on a known line.
    let whole = "takes a whole number";
    let switch = "takes true or false";
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "[[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nrandom_sequence_start = true\n",
            "generator[0].random_sequence_start",
            "line 4",
            "true is true or false (a switch); this key takes a whole number",
        ),
        (
            "[[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nrandom_sequence_start = 1.9\n",
            "generator[0].random_sequence_start",
            "line 4",
            "1.9 is a number with a fraction",
        ),
        (
            "[limits]\nmax_count = \"500\"\n",
            "limits.max_count",
            "line 2",
            "write 500 without quotes",
        ),
        (
            "[limits]\nmax_count = 500.7\n",
            "limits.max_count",
            "line 2",
            whole,
        ),
        (
            "[limits]\nmax_count = true\n",
            "limits.max_count",
            "line 2",
            whole,
        ),
        (
            "[server]\ninsecure_bind = \"yes\"\n",
            "server.insecure_bind",
            "line 2",
            switch,
        ),
        (
            "[server]\ninsecure_bind = \"on\"\n",
            "server.insecure_bind",
            "line 2",
            switch,
        ),
        (
            "[server]\ninsecure_bind = 1\n",
            "server.insecure_bind",
            "line 2",
            "1 is a whole number; this key takes true or false",
        ),
        (
            "[server]\nlisten = \"127.0.0.1:8080\"\n\n[worker]\nid = 1.9\n",
            "worker.id",
            "line 5",
            whole,
        ),
        (
            "[[auth.token]]\nname = \"ci\"\nhash = \"sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"\n\
             generators = [\"*\"]\nrole = \"read\"\nrate = \"5\"\n",
            "auth.token[0].rate",
            "line 6",
            "write 5 without quotes",
        ),
        (
            "[limits]\nmax_connections = true\n",
            "limits.max_connections",
            "line 2",
            whole,
        ),
        // And the same for text: a number where text is expected is not made text.
        (
            "[store]\ntable = 5\n",
            "store.table",
            "line 2",
            "5 is a whole number; this key takes text in quotes: write it in quotes",
        ),
        (
            "[worker]\nttl = 10\n",
            "worker.ttl",
            "line 2",
            "a duration in quotes, such as \"10s\"",
        ),
        (
            "[server]\nlisten = 8080\n",
            "server.listen",
            "line 2",
            "takes a socket address",
        ),
        (
            "[[generator]]\nname = \"sf\"\nkind = \"snowflake\"\non_backward = 1\n",
            "generator[0].on_backward",
            "line 4",
            "one of \"extension\", \"wait\", \"refuse\"",
        ),
        (
            "[[generator]]\nname = \"o\"\nkind = \"segment\"\nobfuscate_bits = 300\n",
            "generator[0].obfuscate_bits",
            "line 4",
            "300 is out of range; this key takes a whole number from 0 to 255",
        ),
    ];
    for (toml, key, line, says) in cases {
        refused(toml, &[], key, line, says);
    }
}

#[test]
fn an_environment_value_is_read_as_its_key_takes_it() {
    // The example: `true` for an integer key.
    refused(
        "",
        &[("SNOWDRIFT_LIMITS__MAX_COUNT", "true")],
        "limits.max_count",
        "environment variable SNOWDRIFT_LIMITS__MAX_COUNT",
        "\"true\" is not a whole number (0 or more)",
    );
    for bad in ["yes", "on", "1", "TRUE"] {
        refused(
            "",
            &[("SNOWDRIFT_SERVER__INSECURE_BIND", bad)],
            "server.insecure_bind",
            "environment variable SNOWDRIFT_SERVER__INSECURE_BIND",
            &format!("{bad:?} is not true or false"),
        );
    }
    refused(
        "",
        &[("SNOWDRIFT_WORKER__ID", "1.9")],
        "worker.id",
        "environment variable SNOWDRIFT_WORKER__ID",
        "not a whole number",
    );
    refused(
        "",
        &[("SNOWDRIFT_STORE", "sqlite://x.db")],
        "store",
        "environment variable SNOWDRIFT_STORE",
        "names a table, not a value: set its keys one by one as SNOWDRIFT_STORE__<KEY>",
    );
    // Digits stay text for a text key (the plan then says why this one is no table name).
    let dir = Dir::new();
    let file = dir.file("");
    let env = [("SNOWDRIFT_STORE__TABLE".to_string(), "12345".to_string())];
    let c = Config::load(Some(&file), env).unwrap();
    assert_eq!(c.store.table, "12345");
    refused(
        "",
        &[("SNOWDRIFT_STORE__TABLE", "12345")],
        "table name \"12345\"",
        "environment variable SNOWDRIFT_STORE__TABLE",
        "not starting with a digit",
    );
    // The environment wins over the file, each value as its key takes it: text for a text
    // key, `true` is a switch, a number a number, a list is written as in TOML
    // or entry by entry.
    let c = check(
        "[server]\nlisten = \"127.0.0.1:1\"\n",
        &[
            ("SNOWDRIFT_SERVER__LISTEN", "127.0.0.1:9"),
            ("SNOWDRIFT_SERVER__INSECURE_BIND", "true"),
            ("SNOWDRIFT_STORE__TABLE", "ids_2024"),
            ("SNOWDRIFT_LIMITS__MAX_COUNT", "77"),
            ("SNOWDRIFT_STORE__PREFETCH_AT", "1"),
            ("SNOWDRIFT_STORE__PRELOAD", "[\"a\", \"b\"]"),
            ("SNOWDRIFT_AUTH__TOKEN__0__NAME", "ci"),
            (
                "SNOWDRIFT_AUTH__TOKEN__0__HASH",
                "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            ("SNOWDRIFT_AUTH__TOKEN__0__GENERATORS__0", "*"),
            ("SNOWDRIFT_AUTH__TOKEN__0__ROLE", "read"),
            ("SNOWDRIFT_AUTH__TOKEN__0__RATE", "5"),
            // Not config keys, read for other purposes: passed over.
            ("SNOWDRIFT_TOKEN", "sd_x"),
            ("SNOWDRIFT_LOG", "debug"),
            ("SNOWDRIFT_TEST_CLOCK_OFFSET_MS", "5"),
        ],
    )
    .unwrap();
    assert_eq!(c.server.listen.port(), 9);
    assert!(c.server.insecure_bind);
    assert_eq!(c.store.table, "ids_2024");
    assert_eq!(c.limits.max_count, 77);
    assert_eq!(c.store.prefetch_at, 1.0);
    assert_eq!(c.store.preload, ["a", "b"]);
    assert_eq!(c.auth.tokens[0].rate, Some(5));
    assert_eq!(c.auth.tokens[0].generators, ["*"]);
    // A list entry after a missing one is refused rather than filled with a default.
    refused(
        "",
        &[("SNOWDRIFT_STORE__PRELOAD__1", "b")],
        "store.preload[0]",
        "environment variable SNOWDRIFT_STORE__PRELOAD__1",
        "numbered from 0 without gaps",
    );
}

#[test]
fn a_variable_that_names_no_key_is_refused() {
    // The example: no `__`, so it names no key of any section.
    let text = refused(
        "",
        &[("SNOWDRIFT_LISTEN", "127.0.0.1:9000")],
        "listen",
        "environment variable SNOWDRIFT_LISTEN",
        "SNOWDRIFT_<SECTION>__<KEY>, such as SNOWDRIFT_SERVER__LISTEN",
    );
    assert!(text.contains("the keys here are server, store"), "{text}");
    refused(
        "",
        &[("SNOWDRIFT_SERVER__LISTN", "127.0.0.1:9000")],
        "server.listn",
        "environment variable SNOWDRIFT_SERVER__LISTN",
        "did you mean listen?",
    );
    refused(
        "",
        &[("SNOWDRIFT_SERVER__", "x")],
        "SNOWDRIFT_SERVER__",
        "environment variable SNOWDRIFT_SERVER__",
        "is not a config key",
    );
}

#[test]
fn a_key_without_effect_where_it_is_set_is_refused() {
    let urls = "urls = [\"sqlite://a.db\", \"sqlite://b.db\"]";
    refused(
        &format!("[store]\nurl = \"sqlite://one.db\"\n{urls}\n"),
        &[],
        "store.url",
        "line 2",
        "has no effect when store.urls is set",
    );
    // From --store, or its variable, too: it would be as silently ignored.
    refused(
        &format!("[store]\n{urls}\n"),
        &[("SNOWDRIFT_STORE__URL", "sqlite://one.db")],
        "store.url",
        "environment variable SNOWDRIFT_STORE__URL",
        "has no effect",
    );
    check(&format!("[store]\n{urls}\n"), &[]).unwrap();
    refused(
        "[worker]\nregistry = \"file\"\nderive = \"hostname\"\n",
        &[],
        "worker.derive",
        "line 3",
        "applies to registry = \"derived\"",
    );
    refused(
        "[worker]\nregistry = \"static\"\nid = 3\nderive = \"ip\"\n",
        &[],
        "worker.derive",
        "line 4",
        "registry is \"static\", which takes worker.id",
    );
    let tso = "[[generator]]\nname = \"ts\"\nkind = \"tso\"\nurl = \"etcd://127.0.0.1:2379\"\n";
    refused(
        &format!("{tso}forward_token = \"sd_token\"\n"),
        &[],
        "generator[0].forward_token",
        "line 5",
        "applies only with auth on",
    );
    // Issue 40: plain http nodes give followers no way to check that the node named in
    // etcd's leader key is a member: refused without the opt-in, which says what it risks.
    refused(
        tso,
        &[],
        "generator[0].insecure_coordinator (\"ts\")",
        "line 1",
        "nothing lets them check that a leader is a member of the cluster",
    );
    refused(
        &format!("{tso}forward_plaintext = true\n"),
        &[],
        "generator[0].forward_plaintext",
        "line 5",
        "no [[auth.token]] is configured",
    );
    check(&format!("{tso}insecure_coordinator = true\n"), &[]).unwrap();
    refused(
        "[limits]\nresp_max_frame = 2048\n",
        &[],
        "limits.resp_max_frame",
        "line 2",
        "server.resp_listen is not set",
    );
    check(
        "[server]\nresp_listen = \"127.0.0.1:0\"\n[limits]\nresp_max_frame = 2048\n",
        &[],
    )
    .unwrap();
}

#[test]
fn a_limit_or_duration_outside_its_range_is_refused() {
    // The examples.
    refused(
        "[limits]\nmax_body = 0\n",
        &[],
        "limits.max_body",
        "line 2",
        "0 bytes is below 1024, too small for a tag admin request's JSON body; give 1024 to 16777216 bytes",
    );
    refused(
        "[worker]\nwindow = \"1h\"\n",
        &[],
        "worker.window",
        "line 2",
        "1h is above 1m: a node restarted after a crash must wait",
    );
    // Every other limit and duration, one step past each end of its range.
    let cases: &[(&str, &str, &str)] = &[
        ("limits", "max_count = 0", "is below 1"),
        ("limits", "max_count = 10000001", "is above 10000000"),
        ("limits", "max_stream = 0", "is below 1"),
        ("limits", "max_body = 16777217", "is above 16777216"),
        ("limits", "grpc_max_message = 1023", "is below 1024"),
        ("limits", "grpc_max_message = 4194305", "is above 4194304"),
        ("limits", "max_head = 8191", "is below 8192"),
        ("limits", "max_head = 1048577", "is above 1048576"),
        ("limits", "max_streams = 0", "is below 1"),
        ("limits", "max_streams = 1000001", "is above 1000000"),
        ("limits", "header_timeout = \"0s\"", "must be above zero"),
        ("limits", "header_timeout = \"99ms\"", "is below 100ms"),
        ("limits", "header_timeout = \"11m\"", "is above 10m"),
        ("limits", "body_timeout = \"50ms\"", "is below 100ms"),
        ("limits", "body_timeout = \"1h\"", "is above 10m"),
        ("limits", "idle_timeout = \"500ms\"", "is below 1s"),
        ("limits", "idle_timeout = \"25h\"", "is above 24h"),
        ("server", "shutdown_timeout = \"2h\"", "is above 1h"),
        ("store", "wait = \"2m\"", "is above 1m"),
        ("store", "max_step = 0", "is not a step"),
        ("store", "prefetch_at = 1.5", "use 0 to 1"),
        ("store", "prefetch_at = nan", "use 0 to 1"),
        ("worker", "ttl = \"50ms\"", "is below 100ms"),
        ("worker", "ttl = \"11m\"", "is above 10m"),
        ("worker", "window = \"10ms\"", "is below 20ms"),
        ("worker", "max_mark_wait = \"11m\"", "is above 10m"),
        ("worker", "clock_bound = \"0s\"", "is below 1ms"),
        ("worker", "clock_bound = \"2m\"", "is above 1m"),
    ];
    for (section, line, says) in cases {
        let key = format!("{section}.{}", line.split(' ').next().unwrap_or_default());
        refused(&format!("[{section}]\n{line}\n"), &[], &key, "line 2", says);
    }
    // Each end itself is allowed.
    for (section, line) in [
        ("limits", "max_count = 10000000"),
        ("limits", "max_body = 1024"),
        ("limits", "header_timeout = \"100ms\""),
        ("limits", "idle_timeout = \"24h\""),
        ("server", "shutdown_timeout = \"0s\""),
        ("store", "wait = \"0s\""),
        ("worker", "window = \"1m\""),
        ("worker", "max_mark_wait = \"0s\""),
    ] {
        check(&format!("[{section}]\n{line}\n"), &[])
            .unwrap_or_else(|e| panic!("{section} {line}: {e}"));
    }
}

#[test]
fn what_start_would_refuse_the_check_refuses() {
    // The three examples. Twitter's layout has 10 node bits: worker IDs 0 to 1023.
    for registry in ["static", "file"] {
        refused(
            &format!("[worker]\nregistry = \"{registry}\"\nid = 5000\n\n{SNOWFLAKE}"),
            &[],
            "worker.id",
            "line 3",
            "static worker ID 5000 does not fit the layout's node space (0..1024)",
        );
    }
    refused(
        "[worker]\nnamespace = \"../../x\"\n",
        &[],
        "worker.namespace",
        "line 2",
        "use 1 to 64 letters, digits or '_', not starting with a digit",
    );
    refused(
        "[worker]\npath = \"\"\n",
        &[],
        "worker.path",
        "line 2",
        "names no directory",
    );
    refused(
        "[worker]\nregistry = \"static\"\nverify_with = \"file://\"\n",
        &[],
        "worker.verify_with",
        "line 3",
        "names no directory",
    );
    // The largest ID that fits is fine.
    check(
        &format!("[worker]\nregistry = \"static\"\nid = 1023\n{SNOWFLAKE}"),
        &[],
    )
    .unwrap();
}

#[test]
fn unknown_keys_misspellings_and_duplicates_stay_refused_and_are_placed() {
    refused(
        "[server]\nlisten = \"127.0.0.1:1\"\nlsten = \"127.0.0.1:1\"\n",
        &[],
        "server.lsten",
        "line 3",
        "no such key (did you mean listen?)",
    );
    refused(
        "[server]\nlisten = \"127.0.0.1:1\"\nlisten = \"127.0.0.1:2\"\n",
        &[],
        "listen",
        "line 3",
        "is given twice",
    );
    refused(
        "[server]\n[limits]\n[server]\n",
        &[],
        "server",
        "line 3",
        "is given twice",
    );
    refused(
        "[[generator]]\nname = \"a\"\nkind = \"uuid7\"\n\n[[generator]]\nname = \"a\"\nkind = \"ulid\"\n",
        &[],
        "generator[1]",
        "line 6",
        "the name is already used by generator[0]",
    );
    refused(
        "[[generator]]\nname = \"a\"\nkind = \"uuid7\"\n\n[[generator]]\nname = \"b\"\n",
        &[],
        "generator[1]",
        "line 5",
        "missing field `kind`",
    );
    refused("[server\nlisten = 1\n", &[], "", "line 1", "not valid TOML");
}

#[test]
fn a_plan_error_names_where_its_key_was_set() {
    // Found by the plan, after reading: still placed at the key's line.
    refused(
        "[server]\nlisten = \"0.0.0.0:8080\"\n",
        &[],
        "server.listen",
        "line 2",
        "reachable from other machines",
    );
    refused(
        "",
        &[("SNOWDRIFT_SERVER__LISTEN", "0.0.0.0:8080")],
        "server.listen",
        "environment variable SNOWDRIFT_SERVER__LISTEN",
        "reachable from other machines",
    );
    refused(
        "[[generator]]\nname = \"u\"\nkind = \"uuid4\"\n\nnode = \"0123456789ab\"\n",
        &[],
        "node",
        "line 5",
        "does not apply to kind uuid4",
    );
    // A config built in code has no place to name.
    let mut config = Config::default();
    config.limits.max_count = 0;
    let e = config.plan().unwrap_err();
    assert_eq!(e.place(), None, "{e}");
    assert!(
        e.to_string()
            .starts_with("invalid configuration: limits.max_count: "),
        "{e}"
    );
}

#[test]
fn flags_are_named_as_flags() {
    let dir = Dir::new();
    let file = dir.file("[server]\nlisten = \"127.0.0.1:1\"\n");
    let config = Config::load_with_flags(
        Some(Path::new(&file)),
        Vec::new(),
        [snowdrift_server::config::Flag::new(
            "--listen",
            "server.listen",
            "0.0.0.0:1",
        )],
    )
    .unwrap();
    let e = config.plan().unwrap_err();
    assert_eq!(e.place(), Some("flag --listen"), "{e}");
}

/// Each kind checks its own keys as start would use them, and a misplaced key is placed at
/// its line and names the kinds it belongs to.
#[test]
fn each_kind_checks_its_own_keys_and_places_them() {
    let generator = |body: &str| format!("[[generator]]\nname = \"g\"\n{body}\n");
    refused(
        &generator("kind = \"snowflake\"\nwindow = \"3s\""),
        &[],
        "generator[0] (\"g\")",
        "line 4",
        "key \"window\" does not apply to kind snowflake; it is a key of kind tso",
    );
    refused(
        &generator("kind = \"counter\"\nurl = \"postgres://h/db\""),
        &[],
        "generator[0].url",
        "line 4",
        "redis://HOST:6379",
    );
    refused(
        &generator("kind = \"zk-version\"\nurl = \"zookeeper://127.0.0.1:2181\"\nznode = \"x\""),
        &[],
        "generator[0].znode",
        "line 5",
        "an absolute path",
    );
    refused(
        &generator("kind = \"tso\"\nurl = \"etcd://127.0.0.1:2379\"\nttl = \"2m\""),
        &[],
        "generator[0].ttl",
        "line 5",
        "from 1 s to 60s",
    );
    refused(
        &generator("kind = \"tso\"\nurl = \"etcd://127.0.0.1:2379\"\nwindow = \"2m\""),
        &[],
        "generator[0].window",
        "line 5",
        "IDs jump forward",
    );
    refused(
        &generator("kind = \"snowflake\"\nbackward_wait = \"11m\""),
        &[],
        "generator[0].backward_wait",
        "line 4",
        "looks hung",
    );
    // The ends of those ranges are accepted.
    for body in [
        "kind = \"tso\"\nurl = \"etcd://127.0.0.1:2379\"\nttl = \"60s\"\nwindow = \"60s\"\ninsecure_coordinator = true",
        "kind = \"snowflake\"\nbackward_wait = \"10m\"",
        "kind = \"counter\"\nurl = \"redis://h:6380/2\"",
        "kind = \"zk-version\"\nurl = \"zookeeper://h:2181\"\nznode = \"/a/b\"",
    ] {
        if let Err(e) = check(&generator(body), &[]) {
            panic!("refused {body:?}: {e}");
        }
    }
}
