//! The config as a user writes it, read and planned: every class of mistake is refused
//! with a message naming the key, and the masked output parses back. The configuration
//! reference the book prints is rendered and checked here too ([`reference`]): it is test
//! code, not part of the server.

use crate::config::Config;
use crate::error::ConfigError;

mod reference;

fn load(toml: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let dir = std::env::temp_dir().join(format!(
        "snowdrift-config-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| ConfigError::new(e.to_string()))?;
    let path = dir.join("snowdrift.toml");
    std::fs::write(&path, toml).map_err(|e| ConfigError::new(e.to_string()))?;
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    let loaded = Config::load(Some(&path), env).and_then(|c| c.plan().map(|_| c));
    let _ = std::fs::remove_dir_all(&dir);
    loaded
}

fn rand_suffix() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b)
        .map(|()| u64::from_le_bytes(b))
        .unwrap_or(0)
}

#[test]
fn defaults_without_a_file() {
    let c = Config::load(None, Vec::new()).unwrap();
    assert_eq!(c.server.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(c.store.url, "sqlite://snowdrift.db");
    let names: Vec<_> = c
        .effective_generators()
        .iter()
        .map(|g| g.name.clone())
        .collect();
    assert_eq!(names, ["snowflake", "uuid7", "ulid", "objectid"]);
}

#[test]
fn unknown_keys_name_their_path() {
    let e = load("[server]\nlsten = \"127.0.0.1:1\"\n", &[]).unwrap_err();
    assert!(e.to_string().contains("lsten"), "{e}");
    assert!(e.to_string().contains("server"), "{e}");
    let e = load(
        "[[generator]]\nname = \"a\"\nkind = \"snowflake\"\nlayuot = \"twitter\"\n",
        &[],
    )
    .unwrap_err();
    assert!(e.to_string().contains("layuot"), "{e}");
}

#[test]
fn environment_overrides_the_file() {
    let c = load(
        "[server]\nlisten = \"127.0.0.1:1\"\n[[generator]]\nname = \"a\"\nkind = \"snowflake\"\n",
        &[
            ("SNOWDRIFT_SERVER__LISTEN", "127.0.0.1:9999"),
            ("SNOWDRIFT_LIMITS__MAX_COUNT", "5"),
            ("SNOWDRIFT_GENERATOR__0__LAYOUT", "sonyflake"),
            ("SNOWDRIFT_TEST_CLOCK_OFFSET_MS", "5"),
        ],
    )
    .unwrap();
    assert_eq!(c.server.listen.port(), 9999);
    assert_eq!(c.limits.max_count, 5);
    assert_eq!(c.generators[0].layout.as_deref(), Some("sonyflake"));
}

#[test]
fn bad_values_say_what_is_allowed() {
    let e = load("[worker]\nttl = \"soon\"\n", &[]).unwrap_err();
    assert!(e.to_string().contains("worker.ttl"), "{e}");
    assert!(e.to_string().contains("10s"), "{e}");
    let e = load("[[generator]]\nname = \"a\"\nkind = \"snowflak\"\n", &[]).unwrap_err();
    assert!(e.to_string().contains("snowflak"), "{e}");
    let e = load("[limits]\nmax_count = 0\n", &[]).unwrap_err();
    assert!(e.to_string().contains("max_count"), "{e}");
    let e = load("[limits]\nmax_stream = 0\n", &[]).unwrap_err();
    assert!(e.to_string().contains("limits.max_stream"), "{e}");
    for (toml, says) in [
        (
            "body_timeout = \"0s\"",
            "limits.body_timeout: must be above zero",
        ),
        (
            "resp_max_frame = 100",
            "limits.resp_max_frame: 100 bytes is below 1024",
        ),
        (
            "grpc_max_message = 10",
            "limits.grpc_max_message: 10 bytes is below 1024",
        ),
    ] {
        let e = load(&format!("[limits]\n{toml}\n"), &[]).unwrap_err();
        assert!(e.to_string().contains(says), "{toml}: {e}");
    }
    let e = load("[server]\nlisten = \"0.0.0.0:8080\"\n", &[]).unwrap_err();
    assert!(e.to_string().contains("insecure_bind"), "{e}");
    let c = load(
        "[server]\nlisten = \"0.0.0.0:8080\"\ninsecure_bind = true\n",
        &[],
    )
    .unwrap();
    assert!(c.server.insecure_bind);
}

#[test]
fn resp_listen_is_off_by_default_and_loopback_only_without_auth() {
    assert_eq!(
        Config::load(None, Vec::new()).unwrap().server.resp_listen,
        None
    );
    let c = load("[server]\nresp_listen = \"127.0.0.1:6380\"\n", &[]).unwrap();
    assert_eq!(c.server.resp_listen.map(|a| a.port()), Some(6380));
    assert!(
        c.to_masked_toml()
            .contains("resp_listen = \"127.0.0.1:6380\"")
    );
    let c = load("", &[("SNOWDRIFT_SERVER__RESP_LISTEN", "127.0.0.1:7000")]).unwrap();
    assert_eq!(c.server.resp_listen.map(|a| a.port()), Some(7000));
    let e = load("[server]\nresp_listen = \"0.0.0.0:6380\"\n", &[]).unwrap_err();
    assert!(
        e.to_string().contains("server.resp_listen") && e.to_string().contains("insecure_bind"),
        "{e}"
    );
    let e = load("[server]\nresp_listen = \"localhost\"\n", &[]).unwrap_err();
    assert!(e.to_string().contains("resp_listen"), "{e}");
    let c = load(
        "[server]\nresp_listen = \"0.0.0.0:6380\"\ninsecure_bind = true\n",
        &[],
    )
    .unwrap();
    assert!(c.server.resp_listen.is_some_and(|a| !a.ip().is_loopback()));
}

#[test]
fn keys_of_another_kind_and_duplicate_names_are_refused() {
    let e = load(
        "[[generator]]\nname = \"a\"\nkind = \"uuid7\"\nlayout = \"twitter\"\n",
        &[],
    )
    .unwrap_err();
    assert!(e.to_string().contains("does not apply"), "{e}");
    let e = load(
        "[[generator]]\nname = \"a\"\nkind = \"uuid7\"\n[[generator]]\nname = \"a\"\nkind = \"ulid\"\n",
        &[],
    )
    .unwrap_err();
    assert!(e.to_string().contains("already used"), "{e}");
}

const HASH: &str = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

#[test]
fn auth_tokens_turn_auth_on_and_allow_other_machines() {
    let token = format!(
        "[[auth.token]]\nname = \"ci\"\nhash = \"{HASH}\"\ngenerators = [\"orders\"]\n\
         role = \"read\"\nrate = 100\nburst = 200\n"
    );
    let c = load(
        &format!("[server]\nlisten = \"0.0.0.0:8080\"\n{token}"),
        &[],
    )
    .unwrap();
    let t = &c.auth.tokens[0];
    assert_eq!((t.name.as_str(), t.role), ("ci", crate::auth::Role::Read));
    assert_eq!((t.rate, t.burst), (Some(100), Some(200)));
    assert_eq!(t.generators, ["orders"]);
    let e = load("[server]\nlisten = \"0.0.0.0:8080\"\n", &[]).unwrap_err();
    assert!(e.to_string().contains("[[auth.token]]"), "{e}");
    // Unknown keys and bad values are named by path, down to the token.
    let e = load(&format!("{token}scopes = [\"x\"]\n"), &[]).unwrap_err();
    assert!(
        e.to_string().contains("auth.token[0]") && e.to_string().contains("scopes"),
        "{e}"
    );
    let e = load("[auth]\nenabled = true\n", &[]).unwrap_err();
    assert!(
        e.to_string().contains("auth") && e.to_string().contains("enabled"),
        "{e}"
    );
    let e = load(&token.replace("\"read\"", "\"write\""), &[]).unwrap_err();
    assert!(e.to_string().contains("auth.token[0].role"), "{e}");
    let e = load(&token.replace(HASH, "sd_abc"), &[]).unwrap_err();
    assert!(e.to_string().contains("auth.token[0] (\"ci\")"), "{e}");
    // A token's keys can come from the environment as well.
    let c = load(&token, &[("SNOWDRIFT_AUTH__TOKEN__0__RATE", "7")]).unwrap();
    assert_eq!(c.auth.tokens[0].rate, Some(7));
}

#[test]
fn masked_output_keeps_tokens_and_parses_back() {
    let c = load(
        &format!(
            "[[auth.token]]\nname = \"a\"\nhash = \"{HASH}\"\ngenerators = [\"*\"]\n\
             role = \"admin\"\n[[auth.token]]\nname = \"b\"\nhash = \"{}\"\n\
             generators = [\"x\", \"y\"]\nrole = \"read\"\nrate = 5\n",
            HASH.replace("ba78", "0000")
        ),
        &[],
    )
    .unwrap();
    let text = c.to_masked_toml();
    assert_eq!(text.matches("[[auth.token]]").count(), 2, "{text}");
    let again = load(&text, &[]).unwrap();
    assert_eq!(again.auth.tokens.len(), 2);
    assert_eq!(again.auth.tokens[1].generators, ["x", "y"]);
    assert_eq!(again.auth.tokens[1].rate, Some(5));
    assert_eq!(again.auth.tokens[0].hash, HASH);
}

#[test]
fn obfuscation_keys_from_file_or_environment_are_checked_and_masked() {
    let key = "5f1e0c9a27b34d6e8a91c2d3e4f50617";
    let segment = "[[generator]]\nname = \"o\"\nkind = \"segment\"\n";
    let c = load(&format!("{segment}obfuscate_key = \"{key}\"\n"), &[]).unwrap();
    let bits = |c: &Config, i: usize| {
        c.plan().unwrap().generators()[i]
            .obfuscator
            .as_ref()
            .map(|o| o.bits())
    };
    assert_eq!(bits(&c, 0), Some(63));
    let text = c.to_masked_toml();
    assert!(text.contains("obfuscate_key = \"***\""), "{text}");
    assert!(!text.contains(key), "{text}");
    // From the environment, digits only: still text, not a number.
    let c = load(
        "[[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nlayout = \"discord\"\n\
         [[generator]]\nname = \"js\"\nkind = \"snowflake\"\nlayout = \"js53\"\n\
         obfuscate_key = \"00112233445566778899001122334455\"\n",
        &[
            (
                "SNOWDRIFT_GENERATOR__0__OBFUSCATE_KEY",
                "00112233445566778899001122334455",
            ),
            ("SNOWDRIFT_GENERATOR__1__OBFUSCATE_BITS", "60"),
        ],
    )
    .unwrap();
    assert_eq!(
        c.generators[0].obfuscate_key.as_deref().map(str::len),
        Some(32)
    );
    assert_eq!((bits(&c, 0), bits(&c, 1)), (Some(64), Some(60)));
    assert!(!c.to_masked_toml().contains("0011223344"));
    for (toml, path, why) in [
        (
            format!("{segment}obfuscate_bits = 53\n"),
            "generator[0].obfuscate_bits",
            "only with obfuscate_key",
        ),
        (
            format!("{segment}obfuscate_key = \"{}\"\n", key.replace('5', "g")),
            "generator[0].obfuscate_key",
            "character 1 of this one is not a hex digit",
        ),
        (
            format!("{segment}obfuscate_key = \"{key}\"\nobfuscate_bits = 0\n"),
            "generator[0].obfuscate_bits",
            "use 1 to 64 bits",
        ),
        (
            format!(
                "[[generator]]\nname = \"c\"\nkind = \"counter\"\nurl = \"redis://x\"\n\
                 template = \"A{{seq:04}}\"\nobfuscate_key = \"{key}\"\n"
            ),
            "generator[0]",
            "a counter with a template issues text",
        ),
        (
            "[[generator]]\nname = \"u\"\nkind = \"ulid\"\nobfuscate_bits = 53\n".to_string(),
            "generator[0]",
            "does not apply to kind ulid",
        ),
    ] {
        let e = load(&toml, &[]).unwrap_err().to_string();
        assert!(e.contains(path) && e.contains(why), "{toml}: {e}");
        assert!(!e.contains("f1e0c9a27b34"), "{e} shows the key");
    }
}

#[test]
fn masked_output_hides_passwords_and_parses_back() {
    let c = load(
        "[store]\nurl = \"postgres://app:hunter2@db:5432/ids\"\n",
        &[],
    )
    .unwrap();
    let text = c.to_masked_toml();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("postgres://app:***@db:5432/ids"), "{text}");
    let again = load(&text, &[]).unwrap();
    assert_eq!(again.server.listen, c.server.listen);
    assert_eq!(again.generators.len(), 4);
}

#[test]
fn store_step_cap_and_prefetch_share_are_checked_and_resolved() {
    for (toml, says) in [
        ("[store]\nmax_step = 0\n", "store.max_step: 0"),
        ("[store]\nmax_step = 4294967296\n", "use 1 to 2147483647"),
        ("[store]\nprefetch_at = 1.5\n", "store.prefetch_at: 1.5"),
        ("[store]\nprefetch_at = -0.1\n", "use 0 to 1"),
    ] {
        let e = load(toml, &[]).unwrap_err().to_string();
        assert!(e.contains(says), "{toml}: {e}");
    }
    let c = load(
        "",
        &[
            ("SNOWDRIFT_STORE__PREFETCH_AT", "0.29"),
            ("SNOWDRIFT_STORE__MAX_STEP", "50000"),
        ],
    )
    .unwrap();
    let buffer = c.plan().unwrap().buffer();
    assert_eq!(buffer.chain.prefetch_percent, 29, "rounded, not truncated");
    assert_eq!(buffer.step.max_step, 50_000);
    let default = Config::load(None, Vec::new())
        .unwrap()
        .plan()
        .unwrap()
        .buffer();
    assert_eq!(default.chain.prefetch_percent, 10);
    assert_eq!(default.step.max_step, 1_000_000);
}

#[test]
fn coordinator_credentials_and_tls_files_pass_through_and_are_masked() {
    let etcd = "https://sd:hunter2@10.0.0.1:2379,10.0.0.2:2379?ca=/etc/sd/ca.pem&cert=/etc/sd/c.pem&key=/etc/sd/k.pem";
    let zk = "zookeeper://sd:hunter2@10.0.0.3:2181";
    let c = load(
        &format!(
            "[server]\nlisten = \"127.0.0.1:9000\"\n\
             [worker]\nregistry = \"etcd\"\nurl = \"{etcd}\"\n\
             [[generator]]\nname = \"sf\"\nkind = \"snowflake\"\n\
             [[generator]]\nname = \"ts\"\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"{etcd}\"\n\
             [[generator]]\nname = \"zv\"\nkind = \"zk-version\"\nurl = \"{zk}\"\nznode = \"/snowdrift/zv\"\n"
        ),
        &[],
    )
    .unwrap();
    let text = c.to_masked_toml();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains(
            "https://sd:***@10.0.0.1:2379,10.0.0.2:2379?ca=/etc/sd/ca.pem&cert=/etc/sd/c.pem&key=/etc/sd/k.pem"
        ),
        "{text}"
    );
    assert!(text.contains("zookeeper://sd:***@10.0.0.3:2181"), "{text}");
    load(&text, &[]).unwrap();
}
