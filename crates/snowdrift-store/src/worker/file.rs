//! Worker leases on one machine: a locked file per worker ID, and a mark file beside it,
//! in a directory only this server's user can change.

use std::collections::HashMap;
use std::fs::TryLockError;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::io::Errno;

use super::mistakes::{Mistake, planted as mistake_planted};
use super::sql::{validate_holder, validate_namespace, validate_space};
use super::{PeerClocks, PeerTime};
use crate::error::{Error, Result};

pub mod fs;
mod os;

use fs::{Dir, File, Fs, Kind, Meta, Open};
pub use os::OsFs;

/// How often a holder proves that its lock file is still the one on disk
/// ([`FileRegistry::check_every`]): a few `fstat` calls, cheap enough to run often.
pub const CHECK_EVERY: Duration = Duration::from_millis(20);

/// How long one proof lets a holder issue ([`FileRegistry::proof_valid`]): its fence
/// closes this long after the last proof that succeeded was started, even if the keeper
/// that proves it is held up. Fifteen checks, so a busy machine does not close it.
pub const PROOF_VALID: Duration = Duration::from_millis(300);

/// How long a claim that had to create its lock file, with no mark beside it, waits
/// before it returns: a lock and mark deleted under a live holder leave nothing to wait
/// for, and that holder's fence closes within [`PROOF_VALID`] of the deletion. The rest
/// covers clock reads rounded to milliseconds.
pub const FRESH_GUARD: Duration = Duration::from_millis(350);

/// Worker leases in a local directory, for nodes without a coordinator (`static` and
/// `derived` sources on one machine) and for several processes sharing one machine.
///
/// Worker ID `N` is leased by holding an exclusive lock ([`File::try_lock`], `flock` on
/// Linux) on `DIR/{namespace}-N.lock`, which also names the holder; a second process (or a
/// second registry in the same process) is refused with [`Error::WorkerTaken`]. The
/// operating system drops the lock when the process dies, even by `kill -9`. The
/// high-water mark is `DIR/{namespace}-N.mark` (decimal milliseconds), replaced atomically:
/// written to a temporary file, fsynced, renamed over the old one, and the directory
/// fsynced, so a crash leaves the old mark or the new one, never a torn file.
///
/// **Nothing on disk is trusted that was not checked.** A lock only fences while the file
/// it is held on is the file of that name: deleting it (or the whole directory) lets a
/// second process create and lock a new file of the same name. So every
/// [`renew`](Self::renew) (run every [`CHECK_EVERY`]), mark write and clock report proves
/// that the held file is still linked under its name in the same directory (same device
/// and inode) and that the directory is still the one at its path; otherwise the lease is
/// lost ([`Error::LeaseLost`]) and the node stops issuing at once, as when a coordinator
/// fences it. A proof lets a holder issue for [`PROOF_VALID`] only, so a holder whose
/// keeper is held up stops too. A claim that had to create its lock file and finds no
/// mark returns only after [`FRESH_GUARD`], when a holder whose files were deleted has
/// stopped for certain.
///
/// The directory must be owned by this process's user and not writable by group or
/// others (checked at [`connect`](Self::connect)): anyone who can write it can delete a
/// lock or plant a symlink. Every file in it is opened relative to the directory's
/// descriptor with `O_NOFOLLOW` (a planted symlink is refused, never followed), created
/// `0600`, and must be a regular file of this user. The directory must be on a local file
/// system (locks over NFS are not reliable).
///
/// All nodes of a file registry share one machine and so one clock:
/// [`publish_time`](Self::publish_time) records nothing and
/// [`peer_times`](Self::peer_times) is always empty.
#[derive(Debug)]
pub struct FileRegistry {
    fs: Arc<dyn Fs>,
    path: PathBuf,
    dir: Arc<dyn Dir>,
    /// The directory's device and inode when it was opened.
    dir_id: (u64, u64),
    namespace: String,
    held: Mutex<HashMap<u64, Lock>>,
}

/// A lock file this registry holds.
#[derive(Debug)]
struct Lock {
    file: Box<dyn File>,
    holder: String,
    /// The file's device and inode when it was locked.
    id: (u64, u64),
    /// This claim created the file (no earlier holder left one).
    created: bool,
}

fn file_id(st: &Meta) -> (u64, u64) {
    (st.dev, st.ino)
}

/// The operating system's error number of `e`, if it has one.
fn errno(e: &std::io::Error) -> Option<Errno> {
    Errno::from_io_error(e)
}

impl FileRegistry {
    /// Opens `file://DIR` (an absolute path, `file:///var/lib/snowdrift`, or a relative one,
    /// `file://workers`), creating the directory (mode 0700) if missing, and refuses a
    /// directory another user owns or that group or others may write.
    pub fn connect(url: &str, namespace: &str) -> Result<Self> {
        Self::connect_on(Arc::new(OsFs), url, namespace)
    }

    /// [`connect`](Self::connect) on the file system `fs` (the operating system's is
    /// [`OsFs`]; the deterministic simulator has its own).
    pub fn connect_on(fs: Arc<dyn Fs>, url: &str, namespace: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        let path = Self::dir_of(url)?;
        match fs.create_dir_all(&path, 0o700) {
            Ok(()) => {}
            Err(e) => return Err(io_error(&path, "create the directory", e)),
        }
        let dir = fs.open_dir(&path).map_err(|e| match errno(&e) {
            Some(Errno::LOOP | Errno::NOTDIR) => Error::InvalidInput(format!(
                "the worker directory {} is a symbolic link or not a directory; snowdrift does not follow links there (someone could point it elsewhere): set worker.path to the real directory",
                path.display()
            )),
            _ => io_error(&path, "open the directory", e),
        })?;
        let st = dir.stat().map_err(|e| io_error(&path, "inspect", e))?;
        check_private_dir(&path, &st, fs.euid())?;
        Ok(Self {
            fs,
            path,
            dir,
            dir_id: file_id(&st),
            namespace: namespace.to_string(),
            held: Mutex::new(HashMap::new()),
        })
    }

    /// The directory a `file://DIR` URL names, or why it names none; what
    /// [`connect`](Self::connect) refuses before it touches the file system.
    pub fn dir_of(url: &str) -> Result<PathBuf> {
        match url.strip_prefix("file://").filter(|p| !p.is_empty()) {
            Some(path) => Ok(PathBuf::from(path)),
            None => Err(Error::InvalidUrl {
                url: url.to_string(),
                reason: "use file://DIR, a directory for the lock and mark files (file:///var/lib/snowdrift or file://relative/dir)".into(),
            }),
        }
    }

    /// The directory of the lock and mark files.
    pub fn dir(&self) -> &Path {
        &self.path
    }

    /// How often a holder must [`renew`](Self::renew), which here means proving its lock
    /// file is still in place: [`CHECK_EVERY`].
    pub fn check_every(&self) -> Duration {
        CHECK_EVERY
    }

    /// How long after a proof was started its holder may issue: [`PROOF_VALID`], in place
    /// of a coordinator lease's TTL.
    pub fn proof_valid(&self) -> Duration {
        PROOF_VALID
    }

    /// Whether this registry's claim of `worker_id` created its lock file (no earlier
    /// holder left one). Such a claim waited out [`FRESH_GUARD`] if it found no mark; IDs
    /// an earlier holder issued ahead of its clock (`max_lead`) are the caller's to wait
    /// out.
    pub fn created_lock(&self, worker_id: u64) -> bool {
        self.held().get(&worker_id).is_some_and(|l| l.created)
    }

    /// After a claim that created its lock file: waits out [`FRESH_GUARD`] when there is
    /// no mark either (see the type's docs).
    /// On failure (an unreadable or planted mark) the lock is given back.
    async fn guard_fresh(&self, worker_id: u64, holder: &str) -> Result<()> {
        if !self.created_lock(worker_id) {
            return Ok(());
        }
        match self.read_mark(worker_id).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => {
                tokio::time::sleep(FRESH_GUARD).await;
                Ok(())
            }
            Err(e) => {
                self.release(worker_id, holder).await?;
                Err(e)
            }
        }
    }

    fn lock_name(&self, worker_id: u64) -> String {
        format!("{}-{worker_id}.lock", self.namespace)
    }

    fn mark_name(&self, worker_id: u64) -> String {
        format!("{}-{worker_id}.mark", self.namespace)
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Lock>> {
        // A panic while holding this map cannot leave it inconsistent (single inserts and
        // removes), so a poisoned lock is still usable.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens `name` in the directory without following a link, and checks that it is a
    /// regular file of this user. With `create`, a missing file is created `0600`;
    /// returns the file and whether this call created it.
    fn open_file(
        &self,
        name: &str,
        write: bool,
        create: bool,
    ) -> Result<Option<(Box<dyn File>, bool)>> {
        let path = self.path.join(name);
        let existing = Open {
            write,
            create_new: false,
            mode: 0,
        };
        let mut created = false;
        let opened = if create {
            let new = Open {
                create_new: true,
                mode: 0o600,
                ..existing
            };
            match self.dir.open(name, new) {
                Ok(fd) => {
                    created = true;
                    Ok(fd)
                }
                Err(e) if errno(&e) == Some(Errno::EXIST) => self.dir.open(name, existing),
                Err(e) => Err(e),
            }
        } else {
            self.dir.open(name, existing)
        };
        let fd = match opened {
            Ok(fd) => fd,
            Err(e) if errno(&e) == Some(Errno::NOENT) && !create => return Ok(None),
            Err(e) if errno(&e) == Some(Errno::LOOP) => {
                return Err(planted(&path, "is a symbolic link"));
            }
            Err(e) => return Err(io_error(&path, "open", e)),
        };
        let st = fd.stat().map_err(|e| io_error(&path, "inspect", e))?;
        if st.kind != Kind::File {
            return Err(planted(&path, "is not a regular file"));
        }
        let me = self.fs.euid();
        if st.uid != me {
            return Err(planted(
                &path,
                &format!("is owned by uid {}, not this server's uid {me}", st.uid),
            ));
        }
        if st.mode & 0o077 != 0 {
            // Files of older versions were 0644: a read-only handle is enough to take a
            // flock, so nobody else may open them at all.
            fd.chmod(0o600)
                .map_err(|e| io_error(&path, "make private (chmod 0600)", e))?;
        }
        Ok(Some((fd, created)))
    }

    /// Leases the lowest worker ID in `0..space` whose lock file no process holds;
    /// [`Error::WorkersExhausted`] when every one is held. `ttl` is unused: a file lock lasts
    /// as long as the process, proved every [`CHECK_EVERY`]. Returns after
    /// [`FRESH_GUARD`] when it had to create the lock file and there is no mark.
    ///
    /// With `now_ms` (the claiming node's clock) it prefers a free ID that can issue by
    /// then: the lowest one whose mark is at or before it (or that has a lock file and no
    /// mark), else the one that can issue soonest. An ID without any file counts as ready
    /// [`FRESH_GUARD`] after `now_ms`, the wait its claim makes; so a restarted server takes
    /// an ID an earlier server released long enough ago before one never used, and either
    /// before the one a killed server just left.
    pub async fn claim_free(
        &self,
        space: u64,
        holder: &str,
        _ttl: Duration,
        now_ms: Option<u64>,
    ) -> Result<u64> {
        self.fs.running().await;
        validate_space(space)?;
        validate_holder(holder)?;
        let ready = match now_ms {
            Some(_) => self.ready_times(space)?,
            None => HashMap::new(),
        };
        let now = now_ms.unwrap_or(0);
        let unknown = if now_ms.is_some() {
            now.saturating_add(super::node::ms(FRESH_GUARD))
        } else {
            0
        };
        let mut holders = Vec::new();
        for id in super::claim::preference(space, now, &ready, unknown) {
            match self.try_claim(id, holder) {
                Ok(()) => {
                    self.guard_fresh(id, holder).await?;
                    return Ok(id);
                }
                Err(Error::WorkerTaken { holder: other, .. }) => holders.push((id, other)),
                Err(e) => return Err(e),
            }
        }
        holders.sort();
        Err(Error::WorkersExhausted { space, holders })
    }

    /// When each ID below `space` with a lock or mark file can issue (see
    /// [`claim_free`](Self::claim_free)): its mark's time, 0 with a lock file and no mark,
    /// never (`u64::MAX`) with a mark that does not parse. Held IDs are included: the
    /// claim skips them when their lock is refused.
    fn ready_times(&self, space: u64) -> Result<HashMap<u64, u64>> {
        let prefix = format!("{}-", self.namespace);
        let entries = self
            .fs
            .read_dir(&self.path)
            .map_err(|e| io_error(&self.path, "list", e))?;
        let mut ready = HashMap::new();
        for name in entries {
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
                continue;
            };
            let parsed = |suffix| rest.strip_suffix(suffix)?.parse::<u64>().ok();
            if let Some(id) = parsed(".lock").filter(|id| *id < space) {
                ready.entry(id).or_insert(0);
            } else if let Some(id) = parsed(".mark").filter(|id| *id < space) {
                // Read the way the keeper will; an unreadable mark is tried last.
                let at = match self.read_mark_now(id) {
                    Ok(Some(m)) => super::Mark::from_stored(m).ms,
                    Ok(None) => continue,
                    Err(_) => u64::MAX,
                };
                ready.insert(id, at);
            }
        }
        Ok(ready)
    }

    /// Leases exactly `worker_id` to `holder`; [`Error::WorkerTaken`] when another process
    /// (or another registry in this one) holds its lock. Claiming an ID this registry
    /// already holds for `holder` succeeds.
    pub async fn claim(&self, worker_id: u64, holder: &str, _ttl: Duration) -> Result<()> {
        self.fs.running().await;
        validate_holder(holder)?;
        self.try_claim(worker_id, holder)?;
        self.guard_fresh(worker_id, holder).await
    }

    fn try_claim(&self, worker_id: u64, holder: &str) -> Result<()> {
        self.check_dir().map_err(|reason| {
            Error::Unavailable(format!("{reason}: cannot lock worker IDs in it").into())
        })?;
        let mut held = self.held();
        if let Some(lock) = held.get(&worker_id) {
            if lock.holder == holder {
                return Ok(());
            }
            return Err(Error::WorkerTaken {
                worker_id,
                holder: lock.holder.clone(),
            });
        }
        let name = self.lock_name(worker_id);
        let path = self.path.join(&name);
        let Some((file, created)) = self.open_file(&name, true, true)? else {
            return Err(io_error(&path, "open", std::io::ErrorKind::NotFound.into()));
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(Error::WorkerTaken {
                    worker_id,
                    holder: read_holder(&*file),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io_error(&path, "lock", e)),
        }
        // Read under the lock: a reservation is written only under it, so one made before
        // this lock is seen here, and none can be made while it is held.
        if let Some(reserved_by) = self.reserved_by(worker_id)? {
            let _ = file.unlock();
            return Err(Error::WorkerTaken {
                worker_id,
                holder: reserved_by,
            });
        }
        let st = file.stat().map_err(|e| io_error(&path, "inspect", e))?;
        // Name the holder for whoever is refused next; the lock, not this text, is the lease.
        let named = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(holder.as_bytes()))
            .and_then(|()| file.sync_data());
        named.map_err(|e| io_error(&path, "write the holder into", e))?;
        held.insert(
            worker_id,
            Lock {
                file,
                holder: holder.to_string(),
                id: file_id(&st),
                created,
            },
        );
        Ok(())
    }

    fn reserved_name(&self, worker_id: u64) -> String {
        format!("{}-{worker_id}.reserved", self.namespace)
    }

    /// Who reserved `worker_id` (`DIR/{namespace}-N.reserved`), if anyone did.
    fn reserved_by(&self, worker_id: u64) -> Result<Option<String>> {
        let name = self.reserved_name(worker_id);
        let Some((file, _)) = self.open_file(&name, false, false)? else {
            return Ok(None);
        };
        let mut text = String::new();
        file.read_to_string(&mut text)
            .map_err(|e| io_error(&self.path.join(&name), "read", e))?;
        Ok(Some(text.trim().to_string()))
    }

    /// Takes the lock on `worker_id`'s lock file for a moment (a reservation's write), or
    /// [`Error::WorkerTaken`] when a process holds it.
    fn lock_briefly(&self, worker_id: u64) -> Result<Box<dyn File>> {
        self.check_dir().map_err(|reason| {
            Error::Unavailable(format!("{reason}: cannot reserve worker IDs in it").into())
        })?;
        if let Some(lock) = self.held().get(&worker_id) {
            return Err(Error::WorkerTaken {
                worker_id,
                holder: lock.holder.clone(),
            });
        }
        let name = self.lock_name(worker_id);
        let path = self.path.join(&name);
        let Some((file, _)) = self.open_file(&name, true, true)? else {
            return Err(io_error(&path, "open", std::io::ErrorKind::NotFound.into()));
        };
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(TryLockError::WouldBlock) => Err(Error::WorkerTaken {
                worker_id,
                holder: read_holder(&*file),
            }),
            Err(TryLockError::Error(e)) => Err(io_error(&path, "lock", e)),
        }
    }

    /// Reserves `worker_id` for `holder` for good (see
    /// [`WorkerRegistry::reserve`](super::WorkerRegistry::reserve)): the file
    /// `DIR/{namespace}-N.reserved`, naming the holder, written durably while this call
    /// holds the ID's lock. A server's claim reads it once it holds the lock and lets the
    /// ID go, so no server issues under it; no process holds a lock for it, and nothing
    /// but [`unreserve`](Self::unreserve) removes it. [`Error::WorkerTaken`] when a
    /// process holds the lock or someone else reserved the ID.
    pub async fn reserve(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        self.fs.running().await;
        validate_holder(holder)?;
        let file = self.lock_briefly(worker_id)?;
        match self.reserved_by(worker_id)? {
            Some(h) if h == holder => return Ok(()),
            Some(h) => {
                return Err(Error::WorkerTaken {
                    worker_id,
                    holder: h,
                });
            }
            None => {}
        }
        self.replace_file(
            &self.reserved_name(worker_id),
            holder.to_string(),
            "the reservation",
        )
        .await?;
        self.replace_file(
            &self.layout_name(worker_id),
            layout.to_string(),
            "the layout record",
        )
        .await?;
        // For whoever reads the lock file to see who has the ID.
        let path = self.path.join(self.lock_name(worker_id));
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(holder.as_bytes()))
            .map_err(|e| io_error(&path, "write the holder into", e))?;
        let _ = file.unlock();
        Ok(())
    }

    /// Ends `holder`'s reservation of `worker_id`: raises its mark file to `mark`
    /// (durably), then removes the reservation file and syncs the directory, all under the
    /// ID's lock. `Ok(false)` when the file no longer names `holder`.
    pub async fn unreserve(&self, worker_id: u64, holder: &str, mark: u64) -> Result<bool> {
        self.fs.running().await;
        validate_holder(holder)?;
        if self.reserved_by(worker_id)?.as_deref() != Some(holder) {
            return Ok(false);
        }
        let file = self.lock_briefly(worker_id)?;
        if self.read_mark_now(worker_id)?.is_none_or(|m| m < mark) {
            self.replace_file(
                &self.mark_name(worker_id),
                mark.to_string(),
                "the high-water mark",
            )
            .await?;
        }
        let name = self.reserved_name(worker_id);
        let gone = self.dir.unlink(&name).and_then(|()| self.dir.sync());
        gone.map_err(|e| io_error(&self.path.join(&name), "remove", e))?;
        let _ = file.set_len(0);
        let _ = file.unlock();
        Ok(true)
    }

    /// The directory is still the one opened at its path (not deleted, renamed or replaced).
    fn check_dir(&self) -> std::result::Result<(), String> {
        match self.dir.stat() {
            Ok(st) if st.nlink == 0 => {
                return Err(format!("its directory {} was deleted", self.path.display()));
            }
            Ok(_) => {}
            Err(e) => return Err(format!("its directory cannot be inspected: {e}")),
        }
        match self.fs.lstat(&self.path) {
            Ok(st) if file_id(&st) == self.dir_id => Ok(()),
            Ok(_) => Err(format!(
                "the directory at {} was replaced by another one",
                self.path.display()
            )),
            Err(e) => Err(format!(
                "the directory {} is gone ({e})",
                self.path.display()
            )),
        }
    }

    /// Proves that `holder` holds `worker_id` here and that the locked file is still the
    /// one under its name; [`Error::LeaseLost`] otherwise, and the lock is dropped for good
    /// (a second process may hold a new file of that name now).
    fn verify(&self, worker_id: u64, holder: &str) -> Result<()> {
        let name = self.lock_name(worker_id);
        let lost = |reason: String| Error::LeaseLost {
            worker_id,
            holder: holder.to_string(),
            reason,
        };
        let mut held = self.held();
        let Some(lock) = held.get(&worker_id).filter(|l| l.holder == holder) else {
            return Err(lost(format!(
                "this process does not hold the lock on {}",
                self.path.join(&name).display()
            )));
        };
        let problem = self.check_dir().err().or_else(|| {
            match self.dir.stat_at(&name) {
                Ok(st) if file_id(&st) == lock.id => None,
                Ok(_) => Some(format!(
                    "the lock file {} was replaced by another file (someone deleted the locked one; another process may hold worker ID {worker_id} now)",
                    self.path.join(&name).display()
                )),
                Err(e) if errno(&e) == Some(Errno::NOENT) => Some(format!(
                    "the lock file {} was deleted (another process may lock a new one and take worker ID {worker_id})",
                    self.path.join(&name).display()
                )),
                Err(e) => Some(format!(
                    "the lock file {} cannot be inspected: {e}",
                    self.path.join(&name).display()
                )),
            }
        });
        match problem {
            None => Ok(()),
            Some(reason) => {
                held.remove(&worker_id);
                Err(lost(format!(
                    "{reason}; stopped issuing under it. Nothing but snowdrift may delete files in {}",
                    self.path.display()
                )))
            }
        }
    }

    /// Proves that `holder` still holds `worker_id` here: the lock is held and its file is
    /// still the one on disk; [`Error::LeaseLost`] otherwise.
    pub async fn renew(&self, worker_id: u64, holder: &str, _ttl: Duration) -> Result<()> {
        self.fs.running().await;
        self.verify(worker_id, holder)
    }

    /// Unlocks `worker_id` if `holder` holds it here; otherwise does nothing.
    pub async fn release(&self, worker_id: u64, holder: &str) -> Result<()> {
        self.fs.running().await;
        let mut held = self.held();
        if held.get(&worker_id).is_some_and(|l| l.holder == holder)
            && let Some(lock) = held.remove(&worker_id)
        {
            // Clear the name so a reader does not blame a stopped node; closing the file
            // drops the lock.
            let _ = lock.file.set_len(0);
            let _ = lock.file.unlock();
        }
        Ok(())
    }

    /// The worker IDs whose lock file some process holds, with their holders.
    pub async fn holders(&self) -> Result<Vec<(u64, String)>> {
        self.fs.running().await;
        let prefix = format!("{}-", self.namespace);
        let entries = self
            .fs
            .read_dir(&self.path)
            .map_err(|e| io_error(&self.path, "list", e))?;
        let mut out = Vec::new();
        for name in entries {
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_prefix(&prefix))
                .and_then(|n| n.strip_suffix(".lock"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            if let Some(lock) = self.held().get(&id) {
                out.push((id, lock.holder.clone()));
                continue;
            }
            if let Ok(Some(reserved_by)) = self.reserved_by(id) {
                out.push((id, reserved_by));
                continue;
            }
            let Ok(Some((file, _))) = self.open_file(&self.lock_name(id), false, false) else {
                continue;
            };
            // A lock we can take is free; taking it here is released when `file` closes.
            if let Err(TryLockError::WouldBlock) = file.try_lock() {
                out.push((id, read_holder(&*file)));
            }
        }
        out.sort();
        Ok(out)
    }

    /// The high-water mark of `worker_id`, if one was ever written.
    pub async fn read_mark(&self, worker_id: u64) -> Result<Option<u64>> {
        self.fs.running().await;
        self.read_mark_now(worker_id)
    }

    fn read_mark_now(&self, worker_id: u64) -> Result<Option<u64>> {
        let name = self.mark_name(worker_id);
        let path = self.path.join(&name);
        let Some((file, _)) = self.open_file(&name, false, false)? else {
            return Ok(None);
        };
        let mut text = String::new();
        file.read_to_string(&mut text)
            .map_err(|e| io_error(&path, "read", e))?;
        text.trim().parse::<u64>().map(Some).map_err(|_| {
            Error::InvalidInput(format!(
                "the high-water mark file {} holds {:?}, not milliseconds since 1970; it was edited by hand. Put back the last time IDs were issued with worker ID {worker_id} (or a later one) and retry",
                path.display(),
                text.trim()
            ))
        })
    }

    /// Raises the high-water mark of `worker_id` to `mark_ms` (never lowers it), durably,
    /// if `holder` holds the ID here; [`Error::LeaseLost`] otherwise. The lock is proved
    /// again after the write: a mark written while the lock was being taken over must not
    /// be used, since the new holder may have read the mark before it.
    pub async fn write_mark(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<()> {
        self.fs.running().await;
        self.verify(worker_id, holder)?;
        let current = self.read_mark(worker_id).await?.unwrap_or(0);
        if mark_ms <= current {
            return Ok(());
        }
        self.replace_file(
            &self.mark_name(worker_id),
            mark_ms.to_string(),
            "the high-water mark",
        )
        .await?;
        self.verify(worker_id, holder)
    }

    /// Replaces `target` in the directory with `content`: written to a temporary file,
    /// fsynced, renamed over it, and the directory fsynced, so a crash leaves the old file or
    /// the new one.
    async fn replace_file(&self, target: &str, content: String, what: &str) -> Result<()> {
        let path = self.path.join(target);
        let tmp = format!(".{target}.tmp");
        let target = target.to_string();
        let dir = Arc::clone(&self.dir);
        // Planted for the simulator only: the mark's write without its two fsyncs.
        let unsynced = what == "the high-water mark" && mistake_planted(Mistake::SkipMarkFsync);
        let write = move || -> std::io::Result<()> {
            // A leftover (a crash mid-write, or something planted) is removed, never
            // written through: the new file is created exclusively, without following links.
            match dir.unlink(&tmp) {
                Ok(()) => {}
                Err(e) if errno(&e) == Some(Errno::NOENT) => {}
                Err(e) => return Err(e),
            }
            let new = Open {
                write: true,
                create_new: true,
                mode: 0o600,
            };
            let f = dir.open(&tmp, new)?;
            f.write_all(content.as_bytes())?;
            if !unsynced {
                f.sync_all()?;
            }
            dir.rename(&tmp, &target)?;
            // The rename is durable only once the directory is.
            if !unsynced {
                dir.sync()?;
            }
            Ok(())
        };
        // Two fsyncs can take tens of milliseconds on a busy disk: on a runtime thread they
        // stalled every request queued behind them (p99 of single-ID requests 42-90 ms at
        // 20,000 requests/s, with the server on one CPU).
        self.fs
            .off_thread(Box::new(write))
            .await
            .map_err(|e| io_error(&path, &format!("write {what}"), e))
    }

    fn layout_name(&self, worker_id: u64) -> String {
        format!("{}-{worker_id}.layout", self.namespace)
    }

    /// The layout recorded beside `worker_id`'s mark (`DIR/{namespace}-N.layout`), if any.
    pub async fn read_layout(&self, worker_id: u64) -> Result<Option<String>> {
        self.fs.running().await;
        let name = self.layout_name(worker_id);
        let Some((file, _)) = self.open_file(&name, false, false)? else {
            return Ok(None);
        };
        let mut text = String::new();
        file.read_to_string(&mut text)
            .map_err(|e| io_error(&self.path.join(&name), "read", e))?;
        Ok(Some(text.trim().to_string()))
    }

    /// Records the layout `holder` issues under with `worker_id`, if it holds the ID here;
    /// [`Error::LeaseLost`] otherwise.
    pub async fn write_layout(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        self.fs.running().await;
        self.verify(worker_id, holder)?;
        self.replace_file(
            &self.layout_name(worker_id),
            layout.to_string(),
            "the layout record",
        )
        .await?;
        self.verify(worker_id, holder)
    }

    /// Every worker ID whose lock file a process holds: its holder, when its lock file was
    /// written (the claim), its mark and layout. A file lock has no time left: the
    /// operating system drops it the moment its process dies.
    ///
    /// A lock file that cannot be opened (a link, or a file snowdrift did not make) is
    /// listed as [`never_expires`](super::WorkerEntry::never_expires): a server's claim
    /// stops at it. A lock file whose name holds no worker ID is listed as unreadable, and
    /// a mark or layout that cannot be read is flagged on its entry.
    pub async fn list(&self) -> Result<super::WorkerList> {
        self.fs.running().await;
        use std::os::unix::ffi::OsStrExt;
        let prefix = format!("{}-", self.namespace);
        let entries = self
            .fs
            .read_dir(&self.path)
            .map_err(|e| io_error(&self.path, "list", e))?;
        let mut out = super::WorkerList::default();
        for name in entries {
            let Some(middle) = name
                .as_bytes()
                .strip_prefix(prefix.as_bytes())
                .and_then(|n| n.strip_suffix(b".lock"))
            else {
                continue;
            };
            // Parsed as the server's claims and holders() parse it.
            let Some(id) = std::str::from_utf8(middle)
                .ok()
                .and_then(|n| n.parse::<u64>().ok())
            else {
                out.unreadable.push(super::UnreadableEntry::new(
                    name.to_string_lossy(),
                    format!(
                        "a lock file whose name holds no worker ID; snowdrift did not make it, and servers ignore it: remove it from {}",
                        self.path.display()
                    ),
                ));
                continue;
            };
            if let Some(e) = self.list_one(id).await {
                out.entries.push(e);
            }
        }
        Ok(out)
    }

    /// The entry of `worker_id` if its lock file is held (or cannot be opened).
    async fn list_one(&self, id: u64) -> Option<super::WorkerEntry> {
        match self.reserved_by(id) {
            Ok(Some(holder)) => {
                let mut entry = super::WorkerEntry::new(id, holder);
                entry.stuck_or_reserved(format!(
                    "the file {} reserves it: no server takes it; remove the file to free it",
                    self.path.join(self.reserved_name(id)).display()
                ));
                match self.read_mark_now(id) {
                    Ok(mark) => entry.mark = mark,
                    Err(e) => entry.flag(e.to_string()),
                }
                match self.read_layout(id).await {
                    Ok(layout) => entry.layout = layout,
                    Err(e) => entry.flag(e.to_string()),
                }
                return Some(entry);
            }
            Ok(None) => {}
            Err(e) => {
                let mut entry = super::WorkerEntry::new(id, "?".into());
                entry.stuck(format!(
                    "{e}; a server's claim that comes to this worker ID fails the same way"
                ));
                return Some(entry);
            }
        }
        let mine = self
            .held()
            .get(&id)
            .map(|lock| (lock.holder.clone(), lock.file.try_clone().ok()));
        let (holder, file) = if let Some(mine) = mine {
            mine
        } else {
            match self.open_file(&self.lock_name(id), false, false) {
                // Gone since the listing.
                Ok(None) => return None,
                Ok(Some((file, _))) => match file.try_lock() {
                    // A lock we can take is free; taking it here is released when `file`
                    // closes.
                    Ok(()) => return None,
                    Err(TryLockError::WouldBlock) => (read_holder(&*file), Some(file)),
                    Err(TryLockError::Error(e)) => {
                        let mut entry = super::WorkerEntry::new(id, "?".into());
                        entry.flag(format!(
                            "{}; a server's claim that comes to this worker ID fails the same way",
                            io_error(&self.path.join(self.lock_name(id)), "lock", e)
                        ));
                        return Some(entry);
                    }
                },
                Err(e) => {
                    let mut entry = super::WorkerEntry::new(id, "?".into());
                    entry.stuck(format!(
                        "{e}; a server's claim that comes to this worker ID fails (servers try the free IDs lowest first, and stop there)"
                    ));
                    return Some(entry);
                }
            }
        };
        let mut entry = super::WorkerEntry::new(id, holder);
        entry.since_ms = file.and_then(|f| f.stat().ok()).map(|st| st.mtime_ms);
        match self.read_mark_now(id) {
            Ok(mark) => entry.mark = mark,
            Err(e) => entry.flag(e.to_string()),
        }
        match self.read_layout(id).await {
            Ok(layout) => entry.layout = layout,
            Err(e) => entry.flag(e.to_string()),
        }
        Some(entry)
    }

    /// Records nothing (every node of a file registry shares this machine's clock), but
    /// proves the lock as [`renew`](Self::renew) does.
    pub async fn publish_time(&self, worker_id: u64, holder: &str, _now_ms: u64) -> Result<()> {
        self.fs.running().await;
        self.verify(worker_id, holder)
    }

    /// Always empty (one machine, one clock).
    pub async fn peer_times(&self) -> Result<Vec<PeerTime>> {
        Ok(Vec::new())
    }

    /// Always none (one machine, one clock).
    pub async fn peer_clocks(&self, _holder: &str) -> Result<PeerClocks> {
        Ok(PeerClocks::default())
    }
}

/// Refuses a worker directory another user could change: one it does not own, or one
/// group or others may write (they could delete a lock or plant a link).
fn check_private_dir(path: &Path, st: &Meta, me: u32) -> Result<()> {
    let fix = format!(
        "a user who can change it could delete a lock file or plant a link and make two servers share a worker ID. Use a directory of this server's user with mode 0700 (chown {me} {0} && chmod 0700 {0}), or set worker.path to one",
        path.display()
    );
    if st.uid != me {
        return Err(Error::InvalidInput(format!(
            "the worker directory {} is owned by uid {}, not by this server's uid {me}: {fix}",
            path.display(),
            st.uid
        )));
    }
    if st.mode & 0o022 != 0 {
        return Err(Error::InvalidInput(format!(
            "the worker directory {} has mode {:04o}, writable by {}: {fix}",
            path.display(),
            st.mode & 0o7777,
            if st.mode & 0o002 != 0 {
                "every user"
            } else {
                "its group"
            }
        )));
    }
    Ok(())
}

/// A file in the worker directory that snowdrift did not make.
fn planted(path: &Path, what: &str) -> Error {
    Error::InvalidInput(format!(
        "{} {what}; snowdrift makes only regular files of its own user there, so something else put it there. It was not opened or followed: remove it and check who can write the directory",
        path.display()
    ))
}

/// The holder named in a lock file, or a placeholder when it cannot be read.
fn read_holder(file: &dyn File) -> String {
    let mut s = String::new();
    match file.read_to_string(&mut s) {
        Ok(_) if !s.trim().is_empty() => s.trim().to_string(),
        _ => "another process (no name in the lock file)".to_string(),
    }
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::Unavailable(
        format!(
            "could not {what} {}: {e}; check that the directory exists and is writable",
            path.display()
        )
        .into(),
    )
}
