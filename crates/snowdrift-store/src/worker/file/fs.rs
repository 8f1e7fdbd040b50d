//! What the file registry does to the file system, as a trait: a directory opened without
//! following links, files opened in it relative to its descriptor (created exclusively,
//! never through a link), `flock`, writes, `fsync` of a file and of the directory,
//! `rename`, `unlink`, `fstat`/`lstat`, and listing. [`super::os`] implements it with the
//! operating system's calls; the deterministic simulator (`crates/snowdrift-sim`) with a
//! disk of its own whose crash loses what was not fsynced, so both drive the one registry.
//!
//! Errors are [`std::io::Error`]s carrying the operating system's error numbers (`EEXIST`,
//! `ENOENT`, `ELOOP`, ...), which the registry tells apart as it did with the calls
//! themselves.

use std::ffi::OsString;
use std::fmt::Debug;
use std::fs::TryLockError;
use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

/// What a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else (a symbolic link, a device, a socket...).
    Other,
}

/// What `stat` says of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Its device.
    pub dev: u64,
    /// Its inode.
    pub ino: u64,
    /// How many names it has (0 once deleted).
    pub nlink: u64,
    /// Its owner.
    pub uid: u32,
    /// Its permission bits (`0o7777`).
    pub mode: u32,
    /// What it is.
    pub kind: Kind,
    /// Its last modification, ms since 1970.
    pub mtime_ms: u64,
}

/// How [`Dir::open`] opens a file (always without following a link: a link is `ELOOP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Open {
    /// For reading and writing; otherwise read only.
    pub write: bool,
    /// Create it, failing with `EEXIST` when it exists (`O_CREAT | O_EXCL`).
    pub create_new: bool,
    /// The permission bits of a created file.
    pub mode: u32,
}

/// A blocking job (writes and fsyncs), run off the async runtime.
pub type Job = Box<dyn FnOnce() -> io::Result<()> + Send>;

/// The future of a [`Job`].
pub type JobFuture = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

/// A file system, as one process sees it.
pub trait Fs: Send + Sync + Debug {
    /// Creates `path` and its missing parents with mode `mode`.
    fn create_dir_all(&self, path: &Path, mode: u32) -> io::Result<()>;
    /// Opens the directory `path`, not following a link (`ELOOP`, or `ENOTDIR` when it is
    /// not a directory).
    fn open_dir(&self, path: &Path) -> io::Result<Arc<dyn Dir>>;
    /// `lstat(path)`.
    fn lstat(&self, path: &Path) -> io::Result<Meta>;
    /// The names in the directory `path` (entries that cannot be read are left out).
    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>>;
    /// This process's effective user ID.
    fn euid(&self) -> u32;
    /// Runs `job`, which blocks (writes, fsyncs), where it holds up no other task.
    fn off_thread(&self, job: Job) -> JobFuture;
    /// Returns once this process runs: at once for a real process (the operating system
    /// schedules it, and a stopped one simply does not get here), while the simulator
    /// holds a process it paused (SIGSTOP, a GC pause) here. Every registry call starts
    /// with it, so a pause falls between a proof's start and its checks, as it can.
    fn running(&self) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// An open directory: names in it are resolved relative to it, whatever its path is now.
pub trait Dir: Send + Sync + Debug {
    /// `fstat` of the directory.
    fn stat(&self) -> io::Result<Meta>;
    /// Opens `name` in it (`openat` with `O_NOFOLLOW`).
    fn open(&self, name: &str, how: Open) -> io::Result<Box<dyn File>>;
    /// `fstatat(name, AT_SYMLINK_NOFOLLOW)`.
    fn stat_at(&self, name: &str) -> io::Result<Meta>;
    /// Removes `name`.
    fn unlink(&self, name: &str) -> io::Result<()>;
    /// Renames `from` to `to` in it, replacing `to` atomically.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// `fsync` of the directory: its names (creations, renames, removals) are durable.
    fn sync(&self) -> io::Result<()>;
}

/// An open file. Locks are `flock`s: held by the open file (and its clones), dropped when
/// the last of them is closed, by [`unlock`](Self::unlock), or when the process dies.
pub trait File: Send + Sync + Debug {
    /// `fstat`.
    fn stat(&self) -> io::Result<Meta>;
    /// `fchmod`.
    fn chmod(&self, mode: u32) -> io::Result<()>;
    /// An exclusive lock, without waiting.
    fn try_lock(&self) -> Result<(), TryLockError>;
    /// Drops the lock.
    fn unlock(&self) -> io::Result<()>;
    /// Truncates or extends to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Moves the position to the start.
    fn rewind(&self) -> io::Result<()>;
    /// Writes all of `bytes` at the position.
    fn write_all(&self, bytes: &[u8]) -> io::Result<()>;
    /// Reads from the position to the end.
    fn read_to_string(&self, into: &mut String) -> io::Result<usize>;
    /// `fdatasync`: the data is durable.
    fn sync_data(&self) -> io::Result<()>;
    /// `fsync`: the data and the metadata are durable.
    fn sync_all(&self) -> io::Result<()>;
    /// Another handle on the same open file (shares its lock and position).
    fn try_clone(&self) -> io::Result<Box<dyn File>>;
}
