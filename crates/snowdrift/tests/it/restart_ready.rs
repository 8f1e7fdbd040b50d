//! A restart after a kill: the worker ID the killed server left has its high-water mark
//! up to a window ahead, so taking it again means waiting before `/readyz` is 200. With
//! another free ID whose mark passed, the restarted server takes that one instead (file
//! registry after `kill -9`; etcd after a stop, since a killed server's etcd lease keeps
//! its ID until the ttl runs out).

use std::time::Duration;

use snowdrift_testkit::{unique_name, urls};

use crate::common::Served;

/// Server A (a long window, so the mark it leaves is seconds ahead) on ID 0 and server B
/// (a short window) on ID 1; B stops and its mark passes; A is stopped with `signal` and
/// started again: it must take ID 1, not wait for ID 0.
fn restart_takes_the_id_whose_mark_passed(name: &str, worker: &str, signal: &str) {
    let dir = std::env::temp_dir().join(unique_name(&format!("opc-rr-{name}")));
    std::fs::create_dir_all(&dir).unwrap();
    let ns = unique_name("opc_rr");
    let config = |window: &str| {
        let path = dir.join(format!("snowdrift-{window}.toml"));
        std::fs::write(
            &path,
            format!(
                "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{}/ids.db\"\n\n\
                 [worker]\n{worker}\nnamespace = \"{ns}\"\nwindow = \"{window}\"\n\n\
                 [[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nlayout = \"js53\"\n",
                dir.display()
            ),
        )
        .unwrap();
        path
    };
    let (long, short) = (config("8s"), config("200ms"));
    let start = |config: &std::path::Path| {
        let mut cmd = crate::common::serve_command();
        cmd.args(["--config", config.to_str().unwrap()]);
        let s = Served::start(cmd);
        s.wait_ready();
        s
    };
    let id_of = |s: &Served| s.worker_of("sf")["worker_id"].as_u64().unwrap();
    let a = start(&long);
    assert_eq!(id_of(&a), 0, "{name}");
    let b = start(&short);
    assert_eq!(id_of(&b), 1, "{name}");
    stop(b, signal);
    // B's mark is at most its 200 ms window ahead.
    std::thread::sleep(Duration::from_millis(600));
    stop(a, signal);
    // A's mark is 4 to 8 s ahead: taking ID 0 again would wait that long.
    let again = start(&long);
    assert_eq!(
        id_of(&again),
        1,
        "{name}: the restart took the ID whose mark is still ahead"
    );
    drop(again);
    std::fs::remove_dir_all(&dir).ok();
}

/// Sends `signal` and waits until the server is gone (after a TERM it has released its ID).
fn stop(s: Served, signal: &str) {
    if signal == "TERM" {
        assert!(s.stop().success());
    } else {
        s.signal(signal);
        drop(s);
    }
}

#[test]
fn a_restart_after_kill_takes_the_free_id_whose_mark_passed_file() {
    let dir = std::env::temp_dir().join(unique_name("opc-rr-workers"));
    restart_takes_the_id_whose_mark_passed(
        "file",
        &format!("registry = \"file\"\npath = \"{}\"", dir.display()),
        "KILL",
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_restart_after_stop_takes_the_free_id_whose_mark_passed_etcd() {
    restart_takes_the_id_whose_mark_passed(
        "etcd",
        &format!("registry = \"etcd\"\nurl = \"{}\"", urls::etcd()),
        "TERM",
    );
}
