//! `snowdrift import sonyflake`: Sonyflake's layout and its hosts' machine IDs (the lower
//! 16 bits of their private addresses), with marks on snowdrift's etcd registry above its
//! last IDs, issued by a host whose clock ran ahead.

use std::time::{SystemTime, UNIX_EPOCH};

use snowdrift_store::worker::{Mark, WorkerRegistry};
use snowdrift_testkit::{unique_name, urls};

use super::{args, fails, ids_of, ok};
use crate::common::{Served, serve_command};

/// Sonyflake's default start time, 2014-09-01, in its 10 ms units.
const START: u64 = 1_409_529_600_000;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A Sonyflake ID (`toID`): time, then sequence, then machine ID.
fn sonyflake_id(t_ms: u64, seq: u64, machine: u64) -> u64 {
    ((t_ms / 10 - START / 10) << 24) | (seq << 16) | machine
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sonyflake_hosts_keep_their_machine_ids_above_its_last_ids() {
    let ns = unique_name("sonyimp");
    let dir = std::env::temp_dir().join(unique_name("sony-import"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("snowdrift.toml");
    // The host 10.0.1.7 (machine ID 263) as it is configured after the move.
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{}/ids.db\"\n\n\
             [worker]\nregistry = \"derived\"\nderive = \"ip\"\nip = \"10.0.1.7\"\nbits_from = \"low\"\nverify_with = \"{}\"\nnamespace = \"{ns}\"\n\n\
             [[generator]]\nname = \"flake\"\nkind = \"snowflake\"\nlayout = \"sonyflake\"\n",
            dir.display(),
            urls::etcd()
        ),
    )
    .unwrap();
    // Its last IDs came from a clock 1.5 s ahead of this one.
    let last = now_ms() + 1_500;
    let old: Vec<u64> = [263, 521]
        .iter()
        .map(|m| sonyflake_id(last, 255, *m))
        .collect();
    let last_text = last.to_string();
    let import = |extra: &[&str]| {
        let mut a = args(&[
            "import",
            "sonyflake",
            "--ips",
            "10.0.1.7,10.0.2.9",
            "--last-issued",
            &last_text,
            "--config",
            config.to_str().unwrap(),
        ]);
        a.extend(args(extra));
        a
    };
    let registry = WorkerRegistry::connect(&urls::etcd(), &format!("{ns}_flake"))
        .await
        .unwrap();
    let plan = ok(&import(&[]));
    for needle in [
        "machine ID 263",
        "snowdrift worker ID 263",
        "521",
        "the config's [worker]",
        "Plan only",
    ] {
        assert!(plan.contains(needle), "{needle:?} in:\n{plan}");
    }
    assert_eq!(
        registry.read_mark(263).await.unwrap(),
        None,
        "a plan writes nothing"
    );
    assert!(ok(&import(&["--apply"])).contains("Applied"));
    for m in [263, 521] {
        let mark = Mark::from_stored(registry.read_mark(m).await.unwrap().unwrap());
        assert_eq!(
            mark.ms,
            last / 10 * 10 + 10,
            "machine {m}: the tick after the last ID"
        );
    }
    assert!(ok(&import(&["--apply"])).contains("Nothing to change"));

    let mut cmd = serve_command();
    cmd.arg("--config").arg(&config);
    let served = Served::start(cmd);
    served.wait_ready();
    let (status, body) = served.get("/v1/ids/flake?count=300", None);
    assert_eq!(status, 200, "{body}");
    for id in ids_of(&body) {
        assert_eq!(id & 0xffff, 263, "the host's machine ID");
        assert!(id > old[0], "{id} is not above Sonyflake's last {}", old[0]);
    }
    drop(served);

    // Refusals write nothing: an address that is not private, two hosts with one machine
    // ID.
    let e = fails(&args(&[
        "import",
        "sonyflake",
        "--ips",
        "8.8.8.8",
        "--config",
        config.to_str().unwrap(),
        "--apply",
    ]));
    assert!(e.contains("8.8.8.8") && e.contains("private"), "{e}");
    let e = fails(&args(&[
        "import",
        "sonyflake",
        "--machine-ids",
        "5,5",
        "--registry",
        &urls::etcd(),
        "--generator",
        "flake",
        "--namespace",
        &ns,
        "--apply",
    ]));
    assert!(e.contains("same machine ID 5"), "{e}");
    assert_eq!(registry.read_mark(5).await.unwrap(), None);
    std::fs::remove_dir_all(&dir).ok();
}
