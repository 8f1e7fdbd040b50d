//! `snowdrift serve` as a user runs it: the real binary on port 0, stopped with SIGTERM and
//! started again on the same files, never issuing an ID twice.

mod common;

use std::collections::HashSet;
use std::path::Path;

use common::Served;

fn serve(dir: &Path) -> Served {
    let mut cmd = common::serve_command();
    cmd.args(["--listen", "127.0.0.1:0"]).current_dir(dir);
    Served::start(cmd)
}

/// The IDs of one `/v1/ids` answer.
fn ids(served: &Served, path: &str) -> Vec<u64> {
    let (status, body) = served.get(path, None);
    assert_eq!(status, 200, "{path}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn no_id_is_issued_twice_across_sigterm_and_restart() {
    // The defaults: ./snowdrift.db and a lock file for worker 0 in ./snowdrift-workers.
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-restart"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut seen = HashSet::new();
    let mut last_snowflake = 0;
    for round in 0..3 {
        let served = serve(&dir);
        if round == 0 {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"))
                .args([
                    "tags",
                    "--server",
                    &served.url(),
                    "create",
                    "order",
                    "--step",
                    "100",
                ])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for _ in 0..5 {
            let snowflakes = ids(&served, "/v1/ids/snowflake?count=1000");
            assert!(
                snowflakes[0] > last_snowflake,
                "round {round}: snowflakes go on increasing"
            );
            last_snowflake = *snowflakes.last().unwrap();
            for id in snowflakes {
                assert!(
                    seen.insert(("snowflake", id)),
                    "round {round}: snowflake {id} twice"
                );
            }
            for id in ids(&served, "/v1/ids/order?count=250") {
                assert!(
                    seen.insert(("order", id)),
                    "round {round}: order {id} twice"
                );
            }
        }
        let status = served.stop();
        assert!(
            status.success(),
            "round {round}: SIGTERM is a clean exit: {status:?}"
        );
    }
    assert_eq!(seen.len(), 3 * 5 * (1000 + 250));
    let _ = std::fs::remove_dir_all(&dir);
}
