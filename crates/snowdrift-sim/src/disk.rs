//! The simulated disk of one machine, which the nodes of a file registry share (that is
//! what the file registry is for): directories, files, `flock`s, and a crash that loses what
//! was not made durable.
//!
//! What POSIX promises, and no more:
//! - a write is seen at once by every process, and is durable only once the file is
//!   fsynced (`fsync`, `fdatasync`);
//! - a name made, renamed or removed in a directory is durable only once the directory is
//!   fsynced; until then a crash keeps some prefix of those changes, in order (as a
//!   journal commits them), and may keep none;
//! - a `flock` belongs to an open file and its clones: dropped by `unlock`, when the last
//!   handle is closed, or when its process dies; a second open file of the same inode,
//!   even in the same process, is refused (`EWOULDBLOCK`);
//! - a kill of a process ends its locks and keeps all it wrote (the kernel has it); a crash
//!   of the machine ends every process, and each file's writes since its last fsync are
//!   kept or lost (drawn per file), and each directory keeps a drawn prefix of its changes
//!   since its last fsync; every handle opened before it fails afterwards.
//!
//! Not modelled: torn writes inside a file (the registry writes whole files and renames
//! them, so a lost write is the whole file's), several devices, hard links, free space.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::fs::TryLockError;
use std::io;
use std::path::{Component, Path};
use std::sync::{Arc, Mutex};

use rand::RngExt;
use rand::rngs::StdRng;
use rustix::io::Errno;
use snowdrift_store::worker::sim::{Kind, Meta};

use tokio::time::Instant;

use crate::world::{WALL_START_MS, lock};

/// The user every simulated process runs as.
pub const UID: u32 = 1000;

/// The device number of the disk.
const DEV: u64 = 0x801;

/// The root directory's inode.
const ROOT: u64 = 1;

fn err(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// A change to a directory's names, not yet durable.
#[derive(Debug, Clone)]
enum Change {
    Link(String, u64),
    Unlink(String),
    Rename(String, String),
}

#[derive(Debug, Clone)]
struct Inode {
    kind: Kind,
    mode: u32,
    /// What every process reads now.
    data: Vec<u8>,
    /// What a crash leaves at least (the last fsynced data).
    durable: Vec<u8>,
    /// Names in it (a directory), now.
    entries: BTreeMap<String, u64>,
    /// Its names as the last fsync left them, and the changes since, in order.
    durable_entries: BTreeMap<String, u64>,
    changes: VecDeque<Change>,
    mtime_ms: u64,
}

impl Inode {
    fn new(kind: Kind, mode: u32, mtime_ms: u64) -> Self {
        Self {
            kind,
            mode,
            data: Vec::new(),
            durable: Vec::new(),
            entries: BTreeMap::new(),
            durable_entries: BTreeMap::new(),
            changes: VecDeque::new(),
            mtime_ms,
        }
    }
}

/// What the disk did, for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// File system calls (opens, stats, locks, reads, writes, renames, ...).
    pub calls: u64,
    /// fsyncs of files and directories.
    pub fsyncs: u64,
    /// Machine crashes.
    pub crashes: u64,
    /// Files whose unsynced writes a crash lost.
    pub lost_writes: u64,
    /// Directory changes (creations, renames, removals) a crash lost.
    pub lost_names: u64,
}

#[derive(Debug)]
struct State {
    inodes: BTreeMap<u64, Inode>,
    next_ino: u64,
    /// Which open file holds the lock of each inode.
    locks: BTreeMap<u64, u64>,
    next_open: u64,
    /// Counts the machine's boots: a handle of an earlier boot is dead.
    boot: u64,
    stats: DiskStats,
}

/// The shared disk.
#[derive(Debug)]
pub struct Disk {
    state: Mutex<State>,
    /// When the run began, for modification times.
    t0: Instant,
}

impl Disk {
    /// An empty disk (only the root directory) in a run that began at `t0`.
    pub fn new(t0: Instant) -> Self {
        let mut inodes = BTreeMap::new();
        inodes.insert(ROOT, Inode::new(Kind::Dir, 0o755, 0));
        Self {
            state: Mutex::new(State {
                inodes,
                next_ino: ROOT + 1,
                locks: BTreeMap::new(),
                next_open: 1,
                boot: 1,
                stats: DiskStats::default(),
            }),
            t0,
        }
    }

    /// What it did so far.
    pub fn stats(&self) -> DiskStats {
        lock(&self.state).stats
    }

    /// The machine's current boot (handles of earlier boots are dead).
    pub fn boot(&self) -> u64 {
        lock(&self.state).boot
    }

    /// The machine crashes: every process dies (their locks go, their handles fail from
    /// now on), each file keeps or loses its writes since its last fsync, and each
    /// directory keeps a prefix of its changes since its last fsync.
    pub fn crash(&self, rng: &mut StdRng) {
        let mut s = lock(&self.state);
        s.boot += 1;
        s.locks.clear();
        s.stats.crashes += 1;
        let mut lost = (0, 0);
        for inode in s.inodes.values_mut() {
            if inode.kind == Kind::File && inode.data != inode.durable {
                if rng.random_bool(0.5) {
                    inode.data = inode.durable.clone();
                    lost.0 += 1;
                } else {
                    inode.durable = inode.data.clone();
                }
            }
            if inode.kind == Kind::Dir && !inode.changes.is_empty() {
                let kept = rng.random_range(0..=inode.changes.len());
                lost.1 += (inode.changes.len() - kept) as u64;
                let mut names = inode.durable_entries.clone();
                for change in inode.changes.drain(..).take(kept) {
                    match change {
                        Change::Link(name, ino) => {
                            names.insert(name, ino);
                        }
                        Change::Unlink(name) => {
                            names.remove(&name);
                        }
                        Change::Rename(from, to) => {
                            if let Some(ino) = names.remove(&from) {
                                names.insert(to, ino);
                            }
                        }
                    }
                }
                inode.entries = names.clone();
                inode.durable_entries = names;
            }
        }
        s.stats.lost_writes += lost.0;
        s.stats.lost_names += lost.1;
        // An inode no name reaches is gone (fsck frees it).
        let mut reachable = std::collections::BTreeSet::from([ROOT]);
        let mut todo = vec![ROOT];
        while let Some(dir) = todo.pop() {
            let children: Vec<u64> = s
                .inodes
                .get(&dir)
                .map(|d| d.entries.values().copied().collect())
                .unwrap_or_default();
            for c in children {
                if reachable.insert(c) {
                    todo.push(c);
                }
            }
        }
        s.inodes.retain(|ino, _| reachable.contains(ino));
    }

    /// The process holding the lock of `dir/name` (a path of the registry's directory),
    /// and what the file says now, if anyone holds it: the ground truth of a file lease.
    pub fn lock_holder(&self, dir: &Path, name: &str) -> Option<String> {
        let s = lock(&self.state);
        let dir = s.resolve(dir).ok()?;
        let ino = *s.inodes.get(&dir)?.entries.get(name)?;
        s.locks.get(&ino)?;
        let data = &s.inodes.get(&ino)?.data;
        Some(String::from_utf8_lossy(data).trim().to_string())
    }

    /// How many files in `dir` whose names end with `suffix` are locked now.
    pub fn locked_in(&self, dir: &Path, suffix: &str) -> usize {
        let s = lock(&self.state);
        let Ok(dir) = s.resolve(dir) else { return 0 };
        s.inodes.get(&dir).map_or(0, |d| {
            d.entries
                .iter()
                .filter(|(n, ino)| n.ends_with(suffix) && s.locks.contains_key(ino))
                .count()
        })
    }

    /// What a file says now, by path (for tests).
    pub fn read(&self, path: &Path) -> Option<Vec<u8>> {
        let s = lock(&self.state);
        let ino = s.resolve(path).ok()?;
        Some(s.inodes.get(&ino)?.data.clone())
    }
}

impl State {
    fn resolve(&self, path: &Path) -> io::Result<u64> {
        let mut at = ROOT;
        for c in path.components() {
            match c {
                Component::RootDir | Component::CurDir => {}
                Component::Normal(name) => {
                    let dir = self.inodes.get(&at).ok_or_else(|| err(Errno::NOENT))?;
                    if dir.kind != Kind::Dir {
                        return Err(err(Errno::NOTDIR));
                    }
                    at = *dir
                        .entries
                        .get(&name.to_string_lossy().into_owned())
                        .ok_or_else(|| err(Errno::NOENT))?;
                }
                _ => return Err(err(Errno::INVAL)),
            }
        }
        Ok(at)
    }

    fn meta(&self, ino: u64) -> io::Result<Meta> {
        let inode = self.inodes.get(&ino).ok_or_else(|| err(Errno::NOENT))?;
        let names = self
            .inodes
            .values()
            .filter(|d| d.kind == Kind::Dir)
            .map(|d| d.entries.values().filter(|i| **i == ino).count() as u64)
            .sum::<u64>();
        Ok(Meta {
            dev: DEV,
            ino,
            nlink: names + u64::from(ino == ROOT),
            uid: UID,
            mode: inode.mode,
            kind: inode.kind,
            mtime_ms: inode.mtime_ms,
        })
    }

    fn dir_mut(&mut self, ino: u64) -> io::Result<&mut Inode> {
        match self.inodes.get_mut(&ino) {
            Some(d) if d.kind == Kind::Dir => Ok(d),
            Some(_) => Err(err(Errno::NOTDIR)),
            None => Err(err(Errno::NOENT)),
        }
    }
}

/// One process's view of the disk: its calls, its open files, and its boot (a process of
/// an earlier boot is dead, and so is everything it opened).
#[derive(Debug, Clone)]
pub struct Proc {
    disk: Arc<Disk>,
    boot: u64,
}

impl Proc {
    /// A process started now on `disk`.
    pub fn new(disk: Arc<Disk>) -> Self {
        let boot = disk.boot();
        Self { disk, boot }
    }

    /// Runs `f` on the disk's state, unless this process died in a crash (`EIO`, as the
    /// calls of a process that is gone cannot happen).
    fn with<T>(&self, f: impl FnOnce(&mut State) -> io::Result<T>) -> io::Result<T> {
        let mut s = lock(&self.disk.state);
        if s.boot != self.boot {
            return Err(err(Errno::IO));
        }
        s.stats.calls += 1;
        f(&mut s)
    }

    /// The machine's wall clock, for modification times.
    fn now(&self) -> u64 {
        WALL_START_MS + u64::try_from(self.disk.t0.elapsed().as_millis()).unwrap_or(0)
    }

    /// `mkdir -p`.
    pub fn create_dir_all(&self, path: &Path, mode: u32) -> io::Result<()> {
        let now = self.now();
        self.with(|s| {
            let mut at = ROOT;
            for c in path.components() {
                let Component::Normal(name) = c else { continue };
                let name = name.to_string_lossy().into_owned();
                let next = s.dir_mut(at)?.entries.get(&name).copied();
                at = match next {
                    Some(ino) => ino,
                    None => {
                        let ino = s.next_ino;
                        s.next_ino += 1;
                        s.inodes.insert(ino, Inode::new(Kind::Dir, mode, now));
                        let dir = s.dir_mut(at)?;
                        dir.entries.insert(name.clone(), ino);
                        // A directory made for the registry is taken as durable (mkdir -p at
                        // install time); the registry's own files are what a crash tests.
                        dir.durable_entries.insert(name, ino);
                        ino
                    }
                };
            }
            Ok(())
        })
    }

    /// Opens a directory by path.
    pub fn open_dir(&self, path: &Path) -> io::Result<u64> {
        self.with(|s| {
            let ino = s.resolve(path)?;
            match s.inodes.get(&ino).map(|i| i.kind) {
                Some(Kind::Dir) => Ok(ino),
                _ => Err(err(Errno::NOTDIR)),
            }
        })
    }

    /// `lstat` by path.
    pub fn lstat(&self, path: &Path) -> io::Result<Meta> {
        self.with(|s| {
            let ino = s.resolve(path)?;
            s.meta(ino)
        })
    }

    /// The names in a directory, by path.
    pub fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        self.with(|s| {
            let ino = s.resolve(path)?;
            Ok(s.dir_mut(ino)?.entries.keys().map(OsString::from).collect())
        })
    }

    /// `fstat`.
    pub fn stat(&self, ino: u64) -> io::Result<Meta> {
        self.with(|s| s.meta(ino))
    }

    /// `fstatat(dir, name)`.
    pub fn stat_at(&self, dir: &u64, name: &str) -> io::Result<Meta> {
        self.with(|s| {
            let ino = *s
                .dir_mut(*dir)?
                .entries
                .get(name)
                .ok_or_else(|| err(Errno::NOENT))?;
            s.meta(ino)
        })
    }

    /// `openat(dir, name)`: the inode and a new open file's number.
    pub fn open_at(
        &self,
        dir: u64,
        name: &str,
        create_new: bool,
        mode: u32,
    ) -> io::Result<(u64, u64)> {
        let now = self.now();
        self.with(|s| {
            let found = s.dir_mut(dir)?.entries.get(name).copied();
            let ino = match (found, create_new) {
                (Some(_), true) => return Err(err(Errno::EXIST)),
                (Some(ino), false) => ino,
                (None, false) => return Err(err(Errno::NOENT)),
                (None, true) => {
                    let ino = s.next_ino;
                    s.next_ino += 1;
                    s.inodes.insert(ino, Inode::new(Kind::File, mode, now));
                    let d = s.dir_mut(dir)?;
                    d.entries.insert(name.to_string(), ino);
                    d.changes.push_back(Change::Link(name.to_string(), ino));
                    ino
                }
            };
            if s.inodes.get(&ino).map(|i| i.kind) == Some(Kind::Dir) {
                return Err(err(Errno::ISDIR));
            }
            let open = s.next_open;
            s.next_open += 1;
            Ok((ino, open))
        })
    }

    /// Removes `name` from `dir`.
    pub fn unlink(&self, dir: u64, name: &str) -> io::Result<()> {
        self.with(|s| {
            let d = s.dir_mut(dir)?;
            d.entries.remove(name).ok_or_else(|| err(Errno::NOENT))?;
            d.changes.push_back(Change::Unlink(name.to_string()));
            Ok(())
        })
    }

    /// Renames `from` to `to` in `dir`, replacing `to`.
    pub fn rename(&self, dir: u64, from: &str, to: &str) -> io::Result<()> {
        self.with(|s| {
            let d = s.dir_mut(dir)?;
            let ino = d.entries.remove(from).ok_or_else(|| err(Errno::NOENT))?;
            d.entries.insert(to.to_string(), ino);
            d.changes
                .push_back(Change::Rename(from.to_string(), to.to_string()));
            Ok(())
        })
    }

    /// `fsync` of a directory: its names are durable.
    pub fn sync_dir(&self, dir: u64) -> io::Result<()> {
        self.with(|s| {
            s.stats.fsyncs += 1;
            let d = s.dir_mut(dir)?;
            d.durable_entries = d.entries.clone();
            d.changes.clear();
            Ok(())
        })
    }

    /// `fsync` of a file: its data is durable.
    pub fn sync_file(&self, ino: u64) -> io::Result<()> {
        self.with(|s| {
            s.stats.fsyncs += 1;
            let f = s.inodes.get_mut(&ino).ok_or_else(|| err(Errno::BADF))?;
            f.durable = f.data.clone();
            Ok(())
        })
    }

    /// `fchmod`.
    pub fn chmod(&self, ino: u64, mode: u32) -> io::Result<()> {
        self.with(|s| {
            s.inodes.get_mut(&ino).ok_or_else(|| err(Errno::BADF))?.mode = mode & 0o7777;
            Ok(())
        })
    }

    /// Writes `bytes` at `pos` (extending the file): the position after it.
    pub fn write_at(&self, ino: u64, pos: u64, bytes: &[u8]) -> io::Result<u64> {
        let now = self.now();
        self.with(|s| {
            let f = s.inodes.get_mut(&ino).ok_or_else(|| err(Errno::BADF))?;
            let start = usize::try_from(pos).map_err(|_| err(Errno::FBIG))?;
            if f.data.len() < start + bytes.len() {
                f.data.resize(start + bytes.len(), 0);
            }
            f.data[start..start + bytes.len()].copy_from_slice(bytes);
            f.mtime_ms = now;
            Ok(pos + bytes.len() as u64)
        })
    }

    /// Reads from `pos` to the end.
    pub fn read_from(&self, ino: u64, pos: u64) -> io::Result<Vec<u8>> {
        self.with(|s| {
            let f = s.inodes.get(&ino).ok_or_else(|| err(Errno::BADF))?;
            let start = usize::try_from(pos).unwrap_or(usize::MAX).min(f.data.len());
            Ok(f.data[start..].to_vec())
        })
    }

    /// `ftruncate`.
    pub fn set_len(&self, ino: u64, len: u64) -> io::Result<()> {
        let now = self.now();
        self.with(|s| {
            let f = s.inodes.get_mut(&ino).ok_or_else(|| err(Errno::BADF))?;
            f.data
                .resize(usize::try_from(len).map_err(|_| err(Errno::FBIG))?, 0);
            f.mtime_ms = now;
            Ok(())
        })
    }

    /// `flock(LOCK_EX | LOCK_NB)` by open file `open` on `ino`.
    pub fn try_lock(&self, ino: u64, open: u64) -> Result<(), TryLockError> {
        self.with(|s| match s.locks.get(&ino) {
            Some(holder) if *holder != open => Ok(false),
            _ => {
                s.locks.insert(ino, open);
                Ok(true)
            }
        })
        .map_err(TryLockError::Error)
        .and_then(|taken| {
            if taken {
                Ok(())
            } else {
                Err(TryLockError::WouldBlock)
            }
        })
    }

    /// Drops the lock `open` holds on `ino`, if it holds it. A process of an earlier boot
    /// holds nothing (the crash dropped it).
    pub fn unlock(&self, ino: u64, open: u64) {
        let mut s = lock(&self.disk.state);
        if s.boot == self.boot && s.locks.get(&ino) == Some(&open) {
            s.locks.remove(&ino);
        }
    }
}
