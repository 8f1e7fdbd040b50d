//! The file registry under a hostile neighbour: a lock file deleted (alone, with its mark,
//! or with the whole directory) under a running holder while a second node takes the
//! same worker ID, symbolic links planted where snowdrift writes, and a directory other
//! users can change. Every attack once gave duplicate IDs or overwrote a file through a
//! link; here each must give none and leave every target unchanged.

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::generator::SnowflakeGenerator;
use snowdrift_core::layout::Layout;
use snowdrift_store::Error;
use snowdrift_store::worker::{
    FileRegistry, LeaseConfig, WorkerNode, WorkerRegistry, WorkerSource, WorkerState,
};
use snowdrift_testkit::{IdChecker, unique_name};

fn private_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(unique_name("snowdrift_wfile"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn config(dir: &Path, ns: &str, source: WorkerSource) -> LeaseConfig {
    let mut c = LeaseConfig::new(format!("file://{}", dir.display()), source);
    c.namespace = ns.to_string();
    c.ttl = Duration::from_millis(1500);
    c.window = Duration::from_millis(400);
    c.publish_every = Duration::from_millis(200);
    c
}

/// Issues from `node` on a thread until `stop`, recording each epoch as its own source.
fn issue(
    node: Arc<WorkerNode<MonotonicClock>>,
    name: &'static str,
    checker: Arc<IdChecker>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut issued = 0;
        while !stop.load(Ordering::Relaxed) {
            let epoch = node.epoch();
            match epoch.generator().next_block(64) {
                Ok(block) => {
                    issued += block.len();
                    checker.record(&format!("{name}/{}", epoch.number()), block.iter());
                }
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        issued
    })
}

/// What the attacker deletes.
#[derive(Debug, Clone, Copy)]
enum Deleted {
    /// `rm DIR/ns-0.lock`: the mark stays.
    Lock,
    /// `rm DIR/*`: lock and mark.
    LockAndMark,
    /// `rm -rf DIR`: the second node makes the directory again.
    Directory,
}

/// The attack of issue 27: delete a running server's lock, start a second server on the
/// same path (it takes worker 0 too). Before the fix both issued under worker 0 with
/// `verified` state: millions of identical IDs in seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_lock_stops_its_holder_before_a_second_node_issues_under_its_id() {
    for attack in [Deleted::Lock, Deleted::LockAndMark, Deleted::Directory] {
        let dir = private_dir();
        let ns = unique_name("wf");
        let twitter = || SnowflakeGenerator::builder(Layout::preset("twitter").unwrap());
        let a = Arc::new(
            WorkerNode::start(
                config(&dir, &ns, WorkerSource::Lowest),
                twitter(),
                MonotonicClock::new(),
            )
            .await
            .unwrap(),
        );
        assert_eq!(a.epoch().worker_id(), 0);
        let checker = Arc::new(IdChecker::new());
        let stop = Arc::new(AtomicBool::new(false));
        let a_thread = issue(a.clone(), "a", checker.clone(), stop.clone());
        tokio::time::sleep(Duration::from_millis(300)).await;

        match attack {
            Deleted::Lock => std::fs::remove_file(dir.join(format!("{ns}-0.lock"))).unwrap(),
            Deleted::LockAndMark => {
                for entry in std::fs::read_dir(&dir).unwrap() {
                    std::fs::remove_file(entry.unwrap().path()).unwrap();
                }
            }
            Deleted::Directory => std::fs::remove_dir_all(&dir).unwrap(),
        }
        // At once, as a script would: the second node starts on the same path and takes
        // worker 0, whose lock file no process holds now.
        let b = Arc::new(
            WorkerNode::start(
                config(&dir, &ns, WorkerSource::Static(0)),
                twitter(),
                MonotonicClock::new(),
            )
            .await
            .unwrap_or_else(|e| panic!("{attack:?}: B could not start: {e}")),
        );
        let b_thread = issue(b.clone(), "b", checker.clone(), stop.clone());
        // Both issue side by side: A under another ID once it noticed and regained one.
        tokio::time::sleep(Duration::from_millis(1000)).await;
        stop.store(true, Ordering::Relaxed);
        let (a_issued, b_issued) = (a_thread.join().unwrap(), b_thread.join().unwrap());
        assert!(
            a_issued > 0 && b_issued > 0,
            "{attack:?}: {a_issued} {b_issued}"
        );
        let report = checker.report();
        assert!(
            report.duplicate_count == 0,
            "{attack:?}: duplicates between the holder whose lock was deleted and the new one: {report}"
        );
        checker.assert_clean();
        let status = a.status();
        assert!(
            status.state == WorkerState::LeaseLost || status.epoch >= 2,
            "{attack:?}: A never noticed its lock was deleted: {status:?}"
        );
        let lost = a.status().last_error.unwrap_or_default();
        assert!(
            lost.contains("deleted") || lost.contains("replaced") || a.epoch().worker_id() != 0,
            "{attack:?}: {lost}"
        );
        for node in [b, a] {
            Arc::into_inner(node).unwrap().shutdown().await.ok();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The registry level: renew proves the file on disk is the locked one.
#[tokio::test]
async fn renew_fails_once_the_lock_file_is_replaced_and_stays_failed() {
    let dir = private_dir();
    let url = format!("file://{}", dir.display());
    let ns = unique_name("wf");
    let a = FileRegistry::connect(&url, &ns).unwrap();
    let ttl = Duration::from_secs(1);
    assert_eq!(a.claim_free(4, "a", ttl, None).await.unwrap(), 0);
    a.renew(0, "a", ttl).await.unwrap();
    a.write_mark(0, "a", 1_000).await.unwrap();
    std::fs::remove_file(dir.join(format!("{ns}-0.lock"))).unwrap();
    let b = FileRegistry::connect(&url, &ns).unwrap();
    b.claim(0, "b", ttl).await.unwrap();
    let err = a.renew(0, "a", ttl).await.unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
    assert!(err.to_string().contains("replaced"), "{err}");
    // Lost for good, even for writes that would otherwise pass.
    let err = a.write_mark(0, "a", 2_000).await.unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
    assert_eq!(b.read_mark(0).await.unwrap(), Some(1_000));
    b.renew(0, "b", ttl).await.unwrap();
    // B made the lock afresh; the mark is still there for its keeper to wait out.
    assert!(b.created_lock(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_deleted_directory_is_noticed_even_when_made_again() {
    let dir = private_dir();
    let url = format!("file://{}", dir.display());
    let ns = unique_name("wf");
    let a = FileRegistry::connect(&url, &ns).unwrap();
    let ttl = Duration::from_secs(1);
    a.claim(3, "a", ttl).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let err = a.renew(3, "a", ttl).await.unwrap_err();
    assert!(err.to_string().contains("deleted"), "{err}");
    std::fs::create_dir(&dir).unwrap();
    let b = FileRegistry::connect(&url, &ns).unwrap();
    let started = std::time::Instant::now();
    b.claim(3, "b", ttl).await.unwrap();
    // B found no lock and no mark: its claim returns only once A has surely stopped.
    assert!(b.created_lock(3));
    assert!(started.elapsed() >= snowdrift_store::worker::file::FRESH_GUARD);
    assert!(a.renew(3, "a", ttl).await.is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

fn precious(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, "precious").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

fn unchanged(path: &Path) {
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        "precious",
        "{}",
        path.display()
    );
}

/// Links planted where snowdrift opens its lock, mark and temporary files: each refused or
/// removed, never followed; the files they point at are unchanged.
#[tokio::test]
async fn planted_symlinks_are_never_followed() {
    let dir = private_dir();
    let elsewhere = private_dir();
    let url = format!("file://{}", dir.display());
    let ns = unique_name("wf");
    let ttl = Duration::from_secs(1);
    let (t_lock, t_tmp, t_mark) = (
        precious(&elsewhere, "lock-target"),
        precious(&elsewhere, "tmp-target"),
        precious(&elsewhere, "mark-target"),
    );
    symlink(&t_lock, dir.join(format!("{ns}-0.lock"))).unwrap();
    symlink(&t_tmp, dir.join(format!(".{ns}-1.mark.tmp"))).unwrap();
    symlink(&t_mark, dir.join(format!("{ns}-2.mark"))).unwrap();
    let r = FileRegistry::connect(&url, &ns).unwrap();

    let err = r.claim(0, "a", ttl).await.unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    // Lowest skips nothing silently: the planted lock is an error, not a free ID.
    let err = r.claim_free(4, "a", ttl, None).await.unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");

    r.claim(1, "a", ttl).await.unwrap();
    r.write_mark(1, "a", 12_345).await.unwrap();
    assert_eq!(r.read_mark(1).await.unwrap(), Some(12_345));
    let mark = std::fs::symlink_metadata(dir.join(format!("{ns}-1.mark"))).unwrap();
    assert!(mark.file_type().is_file());
    assert_eq!(mark.mode() & 0o777, 0o600);

    // A planted mark is refused at the claim, which gives the lock back.
    let err = r.claim(2, "a", ttl).await.unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    let err = r.read_mark(2).await.unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(r.write_mark(2, "a", 99).await.is_err());
    assert!(!r.holders().await.unwrap().iter().any(|(id, _)| *id == 2));

    let lock = std::fs::metadata(dir.join(format!("{ns}-1.lock"))).unwrap();
    assert_eq!(lock.mode() & 0o777, 0o600, "lock files are private");
    for target in [&t_lock, &t_tmp, &t_mark] {
        unchanged(target);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

/// A lock file of an older version (0644: a read-only handle could take its lock) is made
/// private when claimed.
#[tokio::test]
async fn an_old_world_readable_lock_file_is_made_private() {
    let dir = private_dir();
    let ns = unique_name("wf");
    let path = dir.join(format!("{ns}-0.lock"));
    std::fs::write(&path, "").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = FileRegistry::connect(&format!("file://{}", dir.display()), &ns).unwrap();
    r.claim(0, "a", Duration::from_secs(1)).await.unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory other users can change is refused, saying which and how to fix it.
#[tokio::test]
async fn a_directory_others_can_change_is_refused() {
    let ns = unique_name("wf");
    for (mode, says) in [
        (0o777, "every user"),
        (0o770, "its group"),
        (0o1777, "every user"),
    ] {
        let dir = private_dir();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let err = WorkerRegistry::connect(&format!("file://{}", dir.display()), &ns)
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains(says) && text.contains("chmod 0700"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
    // A link in place of the directory.
    let real = private_dir();
    let link = std::env::temp_dir().join(unique_name("snowdrift_wlink"));
    symlink(&real, &link).unwrap();
    let err = FileRegistry::connect(&format!("file://{}", link.display()), &ns).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    let _ = std::fs::remove_file(&link);
    // Another user's directory (the tests run as root in CI, which may give it away).
    if running_as_root() {
        let dir = private_dir();
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        let err = FileRegistry::connect(&format!("file://{}", dir.display()), &ns).unwrap_err();
        assert!(err.to_string().contains("owned by uid 65534"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
    // A missing directory is made private.
    let fresh = std::env::temp_dir().join(unique_name("snowdrift_wnew"));
    FileRegistry::connect(&format!("file://{}", fresh.display()), &ns).unwrap();
    assert_eq!(std::fs::metadata(&fresh).unwrap().mode() & 0o777, 0o700);
    let _ = std::fs::remove_dir_all(&fresh);
    let _ = std::fs::remove_dir_all(&real);
}

/// Whether the tests run as root: a file this process makes belongs to its user.
fn running_as_root() -> bool {
    let probe = private_dir();
    let uid = std::fs::metadata(&probe).unwrap().uid();
    let _ = std::fs::remove_dir_all(&probe);
    uid == 0
}

/// A claim with a time takes a free ID whose mark passed (or that has a lock file and no
/// mark) before a lower one whose mark is ahead; then one never used (its claim waits a
/// guard) before one whose mark passes later than that; the plain claim stays lowest-first.
#[tokio::test]
async fn a_claim_with_a_time_prefers_an_id_that_can_issue_soonest() {
    let dir = private_dir();
    let url = format!("file://{}", dir.display());
    let ns = unique_name("wf");
    let r = FileRegistry::connect(&url, &ns).unwrap();
    let ttl = Duration::from_secs(1);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    // 0: left by a killed node a minute ahead; 1: never used; 2: passed; 3: a lock file
    // and no mark.
    for (id, mark) in [(0, Some(now + 60_000)), (2, Some(now - 1_000)), (3, None)] {
        r.claim(id, "earlier", ttl).await.unwrap();
        if let Some(mark) = mark {
            r.write_mark(id, "earlier", mark).await.unwrap();
        }
        r.release(id, "earlier").await.unwrap();
    }
    assert_eq!(r.claim_free(4, "b", ttl, Some(now)).await.unwrap(), 2);
    assert!(!r.created_lock(2));
    assert_eq!(r.claim_free(4, "c", ttl, Some(now)).await.unwrap(), 3);
    assert_eq!(r.claim_free(4, "d", ttl, Some(now)).await.unwrap(), 1);
    assert!(
        r.created_lock(1),
        "1 had no files: its claim waited the guard"
    );
    assert_eq!(r.claim_free(4, "e", ttl, Some(now)).await.unwrap(), 0);
    match r.claim_free(4, "f", ttl, Some(now)).await {
        Err(Error::WorkersExhausted { space: 4, holders }) => {
            let ids: Vec<u64> = holders.iter().map(|(id, _)| *id).collect();
            assert_eq!(ids, vec![0, 1, 2, 3]);
        }
        other => panic!("expected WorkersExhausted, got {other:?}"),
    }
    r.release(0, "e").await.unwrap();
    r.release(2, "b").await.unwrap();
    assert_eq!(r.claim_free(4, "g", ttl, None).await.unwrap(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}
