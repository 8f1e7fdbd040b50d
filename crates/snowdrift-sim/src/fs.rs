//! One process's file system on the simulated disk ([`crate::disk`]): the file registry's
//! [`Fs`] calls, each one call of the disk; its blocking jobs (a mark's write and fsyncs)
//! take the disk's time, and a paused process makes none.

use std::ffi::OsString;
use std::fs::TryLockError;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use snowdrift_store::worker::sim::{Dir, File, Fs, Job, JobFuture, Meta, Open};

use crate::disk::{Disk, Proc, UID};
use crate::world::{World, lock};

/// Node `node`'s current process on the machine's disk.
#[derive(Debug, Clone)]
pub struct SimFs {
    world: Arc<World>,
    node: usize,
    proc: Proc,
}

impl SimFs {
    /// The file system of a process of node `node` started now on `disk`.
    pub fn new(world: Arc<World>, node: usize, disk: Arc<Disk>) -> Self {
        Self {
            world,
            node,
            proc: Proc::new(disk),
        }
    }
}

impl Fs for SimFs {
    fn create_dir_all(&self, path: &Path, mode: u32) -> io::Result<()> {
        self.proc.create_dir_all(path, mode)
    }

    fn open_dir(&self, path: &Path) -> io::Result<Arc<dyn Dir>> {
        let ino = self.proc.open_dir(path)?;
        Ok(Arc::new(SimDir {
            proc: self.proc.clone(),
            ino,
        }))
    }

    fn lstat(&self, path: &Path) -> io::Result<Meta> {
        self.proc.lstat(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        self.proc.read_dir(path)
    }

    fn euid(&self) -> u32 {
        UID
    }

    fn off_thread(&self, job: Job) -> JobFuture {
        let (world, node) = (self.world.clone(), self.node);
        Box::pin(async move {
            // The writes and fsyncs take the disk's time, then happen at once: a kill
            // meanwhile drops the job with its task, a machine crash fails its calls.
            world.awake(node).await;
            tokio::time::sleep(world.disk_delay()).await;
            job()
        })
    }

    fn running(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        let (world, node) = (self.world.clone(), self.node);
        Box::pin(async move { world.awake(node).await })
    }
}

/// An open directory.
#[derive(Debug)]
struct SimDir {
    proc: Proc,
    ino: u64,
}

impl Dir for SimDir {
    fn stat(&self) -> io::Result<Meta> {
        self.proc.stat(self.ino)
    }

    fn open(&self, name: &str, how: Open) -> io::Result<Box<dyn File>> {
        let (ino, open) = self
            .proc
            .open_at(self.ino, name, how.create_new, how.mode)?;
        Ok(Box::new(SimFile(Arc::new(OpenFile {
            proc: self.proc.clone(),
            ino,
            open,
            pos: Mutex::new(0),
            write: how.write,
        }))))
    }

    fn stat_at(&self, name: &str) -> io::Result<Meta> {
        self.proc.stat_at(&self.ino, name)
    }

    fn unlink(&self, name: &str) -> io::Result<()> {
        self.proc.unlink(self.ino, name)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.proc.rename(self.ino, from, to)
    }

    fn sync(&self) -> io::Result<()> {
        self.proc.sync_dir(self.ino)
    }
}

/// An open file description: its clones share its position and its lock, which goes when
/// the last of them is closed.
#[derive(Debug)]
struct OpenFile {
    proc: Proc,
    ino: u64,
    open: u64,
    pos: Mutex<u64>,
    write: bool,
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        self.proc.unlock(self.ino, self.open);
    }
}

/// A handle on an open file.
#[derive(Debug)]
struct SimFile(Arc<OpenFile>);

impl SimFile {
    fn writable(&self) -> io::Result<()> {
        if self.0.write {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(
                rustix::io::Errno::BADF.raw_os_error(),
            ))
        }
    }
}

impl File for SimFile {
    fn stat(&self) -> io::Result<Meta> {
        self.0.proc.stat(self.0.ino)
    }

    fn chmod(&self, mode: u32) -> io::Result<()> {
        self.0.proc.chmod(self.0.ino, mode)
    }

    fn try_lock(&self) -> Result<(), TryLockError> {
        self.0.proc.try_lock(self.0.ino, self.0.open)
    }

    fn unlock(&self) -> io::Result<()> {
        self.0.proc.unlock(self.0.ino, self.0.open);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.writable()?;
        self.0.proc.set_len(self.0.ino, len)
    }

    fn rewind(&self) -> io::Result<()> {
        *lock(&self.0.pos) = 0;
        Ok(())
    }

    fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        self.writable()?;
        let mut pos = lock(&self.0.pos);
        *pos = self.0.proc.write_at(self.0.ino, *pos, bytes)?;
        Ok(())
    }

    fn read_to_string(&self, into: &mut String) -> io::Result<usize> {
        let mut pos = lock(&self.0.pos);
        let bytes = self.0.proc.read_from(self.0.ino, *pos)?;
        let text = String::from_utf8(bytes).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })?;
        *pos += text.len() as u64;
        into.push_str(&text);
        Ok(text.len())
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.proc.sync_file(self.0.ino)
    }

    fn sync_all(&self) -> io::Result<()> {
        self.0.proc.sync_file(self.0.ino)
    }

    fn try_clone(&self) -> io::Result<Box<dyn File>> {
        Ok(Box::new(SimFile(self.0.clone())))
    }
}
