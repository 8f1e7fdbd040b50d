//! Worker leases on one machine: a locked file per worker ID, and a mark file beside it.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::PeerTime;
use super::sql::{validate_holder, validate_namespace, validate_space};
use crate::error::{Error, Result};

/// Worker leases in a local directory, for nodes without a coordinator (`static` and
/// `derived` sources on one machine) and for several processes sharing one machine.
///
/// Worker ID `N` is leased by holding an exclusive lock ([`File::try_lock`], `flock` on
/// Linux) on `DIR/{namespace}-N.lock`, which also names the holder; a second process (or a
/// second registry in the same process) is refused with [`Error::WorkerTaken`]. The
/// operating system drops the lock when the process dies, even by `kill -9`, so a lease
/// needs no renewal and has no TTL: [`renew`](Self::renew) only checks that this registry
/// still holds it. The high-water mark is `DIR/{namespace}-N.mark` (decimal milliseconds),
/// replaced atomically: written to a temporary file, fsynced, renamed over the old one,
/// and the directory fsynced, so a crash leaves the old mark or the new one, never a torn
/// file.
///
/// The lock files are never deleted: deleting one while another process opens it would
/// let two processes lock two different files of the same name. The directory must be
/// on a local file system (locks over NFS are not reliable).
///
/// All nodes of a file registry share one machine and so one clock:
/// [`publish_time`](Self::publish_time) records nothing and
/// [`peer_times`](Self::peer_times) is always empty.
#[derive(Debug)]
pub struct FileRegistry {
    dir: PathBuf,
    namespace: String,
    /// The lock files this registry holds, with their holder.
    held: Mutex<HashMap<u64, (File, String)>>,
}

impl FileRegistry {
    /// Opens `file://DIR` (an absolute path, `file:///var/lib/snowdrift`, or a relative one,
    /// `file://workers`), creating the directory if missing.
    pub fn connect(url: &str, namespace: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        let Some(path) = url.strip_prefix("file://").filter(|p| !p.is_empty()) else {
            return Err(Error::InvalidUrl {
                url: url.to_string(),
                reason: "use file://DIR, a directory for the lock and mark files (file:///var/lib/snowdrift or file://relative/dir)".into(),
            });
        };
        let dir = PathBuf::from(path);
        std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, "create the directory", e))?;
        Ok(Self {
            dir,
            namespace: namespace.to_string(),
            held: Mutex::new(HashMap::new()),
        })
    }

    /// The directory of the lock and mark files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn lock_path(&self, worker_id: u64) -> PathBuf {
        self.dir
            .join(format!("{}-{worker_id}.lock", self.namespace))
    }

    fn mark_path(&self, worker_id: u64) -> PathBuf {
        self.dir
            .join(format!("{}-{worker_id}.mark", self.namespace))
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (File, String)>> {
        // A panic while holding this map cannot leave it inconsistent (single inserts and
        // removes), so a poisoned lock is still usable.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leases the lowest worker ID in `0..space` whose lock file no process holds;
    /// [`Error::WorkersExhausted`] when every one is held. `ttl` is unused: a file lock lasts
    /// as long as the process.
    pub async fn claim_lowest(&self, space: u64, holder: &str, _ttl: Duration) -> Result<u64> {
        validate_space(space)?;
        validate_holder(holder)?;
        let mut holders = Vec::new();
        for id in 0..space {
            match self.try_claim(id, holder) {
                Ok(()) => return Ok(id),
                Err(Error::WorkerTaken { holder: other, .. }) => holders.push((id, other)),
                Err(e) => return Err(e),
            }
        }
        Err(Error::WorkersExhausted { space, holders })
    }

    /// Leases exactly `worker_id` to `holder`; [`Error::WorkerTaken`] when another process
    /// (or another registry in this one) holds its lock. Claiming an ID this registry
    /// already holds for `holder` succeeds.
    pub async fn claim(&self, worker_id: u64, holder: &str, _ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        self.try_claim(worker_id, holder)
    }

    fn try_claim(&self, worker_id: u64, holder: &str) -> Result<()> {
        let mut held = self.held();
        if let Some((_, current)) = held.get(&worker_id) {
            if current == holder {
                return Ok(());
            }
            return Err(Error::WorkerTaken {
                worker_id,
                holder: current.clone(),
            });
        }
        let path = self.lock_path(worker_id);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_error(&path, "open the lock file", e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(Error::WorkerTaken {
                    worker_id,
                    holder: read_holder(&mut file),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io_error(&path, "lock", e)),
        }
        // Name the holder for whoever is refused next; the lock, not this text, is the lease.
        let named = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(holder.as_bytes()))
            .and_then(|()| file.sync_data());
        named.map_err(|e| io_error(&path, "write the holder into", e))?;
        held.insert(worker_id, (file, holder.to_string()));
        Ok(())
    }

    /// Checks that `holder` still holds `worker_id` here; [`Error::LeaseLost`] otherwise
    /// (released, or never claimed by this registry).
    pub async fn renew(&self, worker_id: u64, holder: &str, _ttl: Duration) -> Result<()> {
        self.check_holder(worker_id, holder)
    }

    fn check_holder(&self, worker_id: u64, holder: &str) -> Result<()> {
        match self.held().get(&worker_id) {
            Some((_, h)) if h == holder => Ok(()),
            _ => Err(Error::LeaseLost {
                worker_id,
                holder: holder.to_string(),
                reason: format!(
                    "this process does not hold the lock on {}",
                    self.lock_path(worker_id).display()
                ),
            }),
        }
    }

    /// Unlocks `worker_id` if `holder` holds it here; otherwise does nothing.
    pub async fn release(&self, worker_id: u64, holder: &str) -> Result<()> {
        let mut held = self.held();
        if held.get(&worker_id).is_some_and(|(_, h)| h == holder)
            && let Some((file, _)) = held.remove(&worker_id)
        {
            // Clear the name so a reader does not blame a stopped node; closing the file
            // drops the lock.
            let _ = file.set_len(0);
            let _ = file.unlock();
        }
        Ok(())
    }

    /// The worker IDs whose lock file some process holds, with their holders.
    pub async fn holders(&self) -> Result<Vec<(u64, String)>> {
        let prefix = format!("{}-", self.namespace);
        let entries = std::fs::read_dir(&self.dir).map_err(|e| io_error(&self.dir, "list", e))?;
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_prefix(&prefix))
                .and_then(|n| n.strip_suffix(".lock"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            if let Some((_, h)) = self.held().get(&id) {
                out.push((id, h.clone()));
                continue;
            }
            let Ok(mut file) = File::open(entry.path()) else {
                continue;
            };
            // A lock we can take is free; taking it here is released when `file` closes.
            if let Err(TryLockError::WouldBlock) = file.try_lock() {
                out.push((id, read_holder(&mut file)));
            }
        }
        out.sort();
        Ok(out)
    }

    /// The high-water mark of `worker_id`, if one was ever written.
    pub async fn read_mark(&self, worker_id: u64) -> Result<Option<u64>> {
        let path = self.mark_path(worker_id);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path, "read", e)),
        };
        text.trim().parse::<u64>().map(Some).map_err(|_| {
            Error::InvalidInput(format!(
                "the high-water mark file {} holds {:?}, not milliseconds since 1970; it was edited by hand. Put back the last time IDs were issued with worker ID {worker_id} (or a later one) and retry",
                path.display(),
                text.trim()
            ))
        })
    }

    /// Raises the high-water mark of `worker_id` to `mark_ms` (never lowers it), durably,
    /// if `holder` holds the ID here; [`Error::LeaseLost`] otherwise.
    pub async fn write_mark(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<()> {
        self.check_holder(worker_id, holder)?;
        let current = self.read_mark(worker_id).await?.unwrap_or(0);
        if mark_ms <= current {
            return Ok(());
        }
        let path = self.mark_path(worker_id);
        let tmp = self
            .dir
            .join(format!(".{}-{worker_id}.mark.tmp", self.namespace));
        let (dir, target) = (self.dir.clone(), path.clone());
        let write = move || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(mark_ms.to_string().as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &target)?;
            // The rename is durable only once the directory is.
            File::open(&dir)?.sync_all()
        };
        // Two fsyncs can take tens of milliseconds on a busy disk: on a runtime thread they
        // stalled every request queued behind them (p99 of single-ID requests 42-90 ms at
        // 20,000 requests/s, with the server on one CPU).
        tokio::task::spawn_blocking(write)
            .await
            .map_err(|e| std::io::Error::other(format!("the writing thread failed: {e}")))
            .and_then(|written| written)
            .map_err(|e| io_error(&path, "write the high-water mark", e))
    }

    /// Records nothing: every node of a file registry shares this machine's clock.
    pub async fn publish_time(&self, worker_id: u64, holder: &str, _now_ms: u64) -> Result<()> {
        self.check_holder(worker_id, holder)
    }

    /// Always empty (one machine, one clock).
    pub async fn peer_times(&self) -> Result<Vec<PeerTime>> {
        Ok(Vec::new())
    }
}

/// The holder named in a lock file, or a placeholder when it cannot be read.
fn read_holder(file: &mut File) -> String {
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
