//! `snowdrift next --server URL[,URL...] NAME`: IDs from running servers through the client
//! crate, with a server that is down in the list, and the errors of a name the servers do
//! not have.

use std::collections::HashSet;
use std::process::Command;

fn next(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .arg("next")
        .args(args)
        .env_remove("SNOWDRIFT_TOKEN")
        .output()
        .unwrap()
}

#[test]
fn next_takes_ids_from_the_servers_through_the_client() {
    let (dir, served) = crate::common::served_with_tag("next-server", "order", 1000);
    let base = served.url();
    // The first endpoint has nothing listening: the client moves on to the second.
    let servers = format!("http://127.0.0.1:1,{base}");
    let mut seen = HashSet::new();
    for (name, n) in [("order", 2500), ("snowflake", 1200)] {
        let out = next(&["--server", &servers, name, "-n", &n.to_string()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ids: Vec<u64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(ids.len(), n, "{name}");
        for id in ids {
            assert!(seen.insert(id), "{name}: {id} twice");
        }
    }
    let out = next(&["--server", &base, "uuid7", "-n", "3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.lines().filter(|l| l.len() == 36).count(), 3, "{text}");
    let out = next(&["--server", &base, "no-such-tag"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("no-such-tag"), "{err}");
    let out = next(&["--server", &base, "order", "--kind", "uuid7"]);
    assert!(!out.status.success(), "--server with --kind is refused");
    let _ = std::fs::remove_dir_all(&dir);
}
