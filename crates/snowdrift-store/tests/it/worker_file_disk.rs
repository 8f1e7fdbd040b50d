//! The file registry on a disk that stalls: a high-water mark's durable write (two
//! fsyncs) can take seconds on a busy disk, and the lock file's proof is good for only
//! 300 ms. The keeper must go on proving the lock while a write is pending, so a node keeps
//! issuing up to the mark it already wrote. It once waited for the write: a busy disk
//! closed the fence (503 "lease could not be renewed in time") with nothing wrong.
//!
//! The stall is real: the registry's directory is an ext4 file system on a loop device,
//! frozen with `fsfreeze` (every write blocks until it is thawed; reads go on). That needs
//! root and loop devices, as the test machines have; `scripts/services` installs the tools.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::generator::SnowflakeGenerator;
use snowdrift_core::layout::Layout;
use snowdrift_store::worker::{LeaseConfig, WorkerNode, WorkerSource, WorkerState};
use snowdrift_testkit::unique_name;

/// A small ext4 file system on a loop device: mounted on creation, thawed and unmounted
/// when dropped (also when the test fails), so no write is left blocked.
struct LoopDisk {
    image: PathBuf,
    mount: PathBuf,
}

fn run(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e} (scripts/services installs it)"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}\nthis test needs root and loop devices",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl LoopDisk {
    fn new() -> Self {
        let base = std::env::temp_dir().join(unique_name("snowdrift_disk"));
        let (image, mount) = (base.with_extension("img"), base.with_extension("mnt"));
        std::fs::File::create(&image)
            .unwrap()
            .set_len(32 << 20)
            .unwrap();
        run(&["mkfs.ext4", "-q", "-F", image.to_str().unwrap()]);
        std::fs::create_dir_all(&mount).unwrap();
        run(&[
            "mount",
            "-o",
            "loop",
            image.to_str().unwrap(),
            mount.to_str().unwrap(),
        ]);
        let disk = Self { image, mount };
        std::fs::create_dir(disk.dir()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(disk.dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
        disk
    }

    /// The registry's directory on it.
    fn dir(&self) -> PathBuf {
        self.mount.join("workers")
    }

    fn freeze(&self) {
        run(&["fsfreeze", "-f", self.mount.to_str().unwrap()]);
    }

    fn thaw(&self) {
        run(&["fsfreeze", "-u", self.mount.to_str().unwrap()]);
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let mount = self.mount.to_str().unwrap();
        let _ = Command::new("fsfreeze").args(["-u", mount]).output();
        let _ = Command::new("umount").arg(mount).output();
        let _ = std::fs::remove_dir(&self.mount);
        let _ = std::fs::remove_file(&self.image);
    }
}

/// Whether a thread of this process is blocked in the kernel (state D): on a frozen disk,
/// the thread writing the mark.
fn a_thread_is_blocked() -> bool {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
            // The state follows the command name, which is in parentheses.
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('D'))
        })
    })
}

fn config(dir: &Path) -> LeaseConfig {
    let mut c = LeaseConfig::new(format!("file://{}", dir.display()), WorkerSource::Lowest);
    c.namespace = unique_name("wd");
    c.ttl = Duration::from_secs(3);
    // Marks are written when less than half a window is left: a write that stalls leaves
    // the node 1.5 s to issue under the mark it has.
    c.window = Duration::from_secs(3);
    c.publish_every = Duration::from_millis(200);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mark_write_stuck_on_a_busy_disk_does_not_stop_issuing() {
    let disk = LoopDisk::new();
    let node = Arc::new(
        WorkerNode::start(
            config(&disk.dir()),
            SnowflakeGenerator::builder(Layout::preset("twitter").unwrap()),
            MonotonicClock::new(),
        )
        .await
        .unwrap(),
    );
    disk.freeze();
    // Until the keeper's next mark write is stuck on the frozen disk (within 1.5 s): seen
    // blocked twice, 50 ms apart, so a thread that was in the kernel a moment for something
    // else (a page fault) is not taken for it.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if a_thread_is_blocked() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if a_thread_is_blocked() {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no write blocked on the frozen disk"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Issue for a second while it stays stuck: inside the 1.5 s the mark allows (less the
    // 50 ms above), more than three proofs' worth.
    let (issued, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let issuer = {
        let (node, issued, refused, stop) =
            (node.clone(), issued.clone(), refused.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut first_error = None;
            while !stop.load(Ordering::Relaxed) {
                match node.epoch().generator().next_block(64) {
                    Ok(block) => {
                        issued.fetch_add(block.len(), Ordering::Relaxed);
                    }
                    Err(e) => {
                        refused.fetch_add(1, Ordering::Relaxed);
                        first_error.get_or_insert(e.to_string());
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
            first_error
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let still_stuck = a_thread_is_blocked();
    stop.store(true, Ordering::Relaxed);
    let first_error = issuer.join().unwrap();
    let status = node.status();
    disk.thaw();
    assert!(still_stuck, "the write finished on a frozen disk");
    assert_eq!(
        refused.load(Ordering::Relaxed),
        0,
        "issuing stopped while a mark write was stuck ({} IDs issued): {first_error:?}; {status:?}",
        issued.load(Ordering::Relaxed)
    );
    assert!(issued.load(Ordering::Relaxed) > 0);
    assert_eq!(status.state, WorkerState::Issuing, "{status:?}");
    // Thawed, the marks go on being written and the node goes on issuing.
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        node.epoch().generator().next_block(64).unwrap_or_else(|e| {
            panic!("after the thaw: {e}; {:?}", node.status());
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Arc::into_inner(node).unwrap().shutdown().await.ok();
}
