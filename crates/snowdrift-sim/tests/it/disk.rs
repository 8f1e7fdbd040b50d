//! The simulated disk keeps POSIX's promises and no more: what was fsynced survives a
//! crash, what was not may be lost (a file's writes, a directory's new names), a flock is
//! one open file's and goes with it, and a crash ends every process's handles and locks.

use std::fs::TryLockError;
use std::path::Path;
use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::StdRng;
use snowdrift_sim::disk::{Disk, Proc};

const DIR: &str = "/data";

/// A disk with the directory `DIR`, its inode, and a process on it.
fn disk() -> (Arc<Disk>, Proc, u64) {
    let disk = Arc::new(Disk::new(tokio::time::Instant::now()));
    let p = Proc::new(disk.clone());
    p.create_dir_all(Path::new(DIR), 0o700).unwrap();
    let dir = p.open_dir(Path::new(DIR)).unwrap();
    (disk, p, dir)
}

fn write(p: &Proc, dir: u64, name: &str, text: &str) -> u64 {
    let (ino, _) = p.open_at(dir, name, true, 0o600).unwrap();
    p.write_at(ino, 0, text.as_bytes()).unwrap();
    ino
}

fn read(disk: &Disk, name: &str) -> Option<String> {
    disk.read(&Path::new(DIR).join(name))
        .map(|b| String::from_utf8(b).unwrap())
}

#[test]
fn what_was_fsynced_survives_every_crash() {
    for seed in 0..50 {
        let (disk, p, dir) = disk();
        let ino = write(&p, dir, "mark", "42");
        p.sync_file(ino).unwrap();
        p.sync_dir(dir).unwrap();
        disk.crash(&mut StdRng::seed_from_u64(seed));
        assert_eq!(read(&disk, "mark").as_deref(), Some("42"), "seed {seed}");
    }
}

#[test]
fn what_was_not_fsynced_is_kept_by_some_crashes_and_lost_by_others() {
    // The write-to-temp, rename, fsync-the-directory dance without the file's fsync: the
    // name survives, the content may not.
    let mut outcomes = std::collections::BTreeSet::new();
    for seed in 0..50 {
        let (disk, p, dir) = disk();
        let ino = write(&p, dir, ".mark.tmp", "42");
        p.rename(dir, ".mark.tmp", "mark").unwrap();
        p.sync_dir(dir).unwrap();
        let _ = ino;
        disk.crash(&mut StdRng::seed_from_u64(seed));
        outcomes.insert(read(&disk, "mark"));
    }
    let kept = Some("42".to_string());
    assert_eq!(
        outcomes,
        [Some(String::new()), kept].into_iter().collect(),
        "an empty file or the write, never anything else"
    );
    // A rename whose directory was not fsynced: the old file or the new one.
    let mut outcomes = std::collections::BTreeSet::new();
    for seed in 0..50 {
        let (disk, p, dir) = disk();
        let old = write(&p, dir, "mark", "1");
        p.sync_file(old).unwrap();
        p.sync_dir(dir).unwrap();
        let new = write(&p, dir, ".mark.tmp", "2");
        p.sync_file(new).unwrap();
        p.rename(dir, ".mark.tmp", "mark").unwrap();
        assert_eq!(read(&disk, "mark").as_deref(), Some("2"), "seen at once");
        disk.crash(&mut StdRng::seed_from_u64(seed));
        outcomes.insert(read(&disk, "mark"));
    }
    assert_eq!(
        outcomes,
        [Some("1".to_string()), Some("2".to_string())]
            .into_iter()
            .collect()
    );
}

#[test]
fn a_flock_is_one_open_files_and_goes_when_it_is_closed_or_the_machine_crashes() {
    let (disk, p, dir) = disk();
    let (ino, first) = p.open_at(dir, "w.lock", true, 0o600).unwrap();
    let (_, second) = p.open_at(dir, "w.lock", false, 0).unwrap();
    p.try_lock(ino, first).unwrap();
    // A second open file of the same inode is refused, even in the same process.
    assert!(matches!(
        p.try_lock(ino, second),
        Err(TryLockError::WouldBlock)
    ));
    p.unlock(ino, first);
    p.try_lock(ino, second).unwrap();
    assert!(disk.lock_holder(Path::new(DIR), "w.lock").is_some());
    disk.crash(&mut StdRng::seed_from_u64(1));
    assert!(disk.lock_holder(Path::new(DIR), "w.lock").is_none());
    // Every call of a process of the boot before fails.
    assert!(p.read_dir(Path::new(DIR)).is_err());
    let after = Proc::new(disk.clone());
    assert!(after.read_dir(Path::new(DIR)).is_ok());
}
