//! [`Fs`] with the operating system's calls (rustix's `*at` calls, `std`'s files and
//! `flock`), one call per operation; blocking jobs run on tokio's blocking threads.

use std::ffi::OsString;
use std::fs::TryLockError;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

use super::fs::{Dir, File, Fs, Job, JobFuture, Kind, Meta, Open};

/// The operating system's file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsFs;

fn meta(st: &Stat) -> Meta {
    Meta {
        dev: st.st_dev,
        ino: st.st_ino,
        nlink: st.st_nlink,
        uid: st.st_uid,
        mode: st.st_mode & 0o7777,
        kind: match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            _ => Kind::Other,
        },
        mtime_ms: u64::try_from(st.st_mtime).unwrap_or(0) * 1000 + st.st_mtime_nsec / 1_000_000,
    }
}

impl Fs for OsFs {
    fn create_dir_all(&self, path: &Path, mode: u32) -> io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(mode)
            .create(path)
    }

    fn open_dir(&self, path: &Path) -> io::Result<Arc<dyn Dir>> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Arc::new(OsDir(fd)))
    }

    fn lstat(&self, path: &Path) -> io::Result<Meta> {
        Ok(meta(&rustix::fs::lstat(path)?))
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        Ok(std::fs::read_dir(path)?
            .flatten()
            .map(|e| e.file_name())
            .collect())
    }

    fn euid(&self) -> u32 {
        rustix::process::geteuid().as_raw()
    }

    fn running(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(std::future::ready(()))
    }

    fn off_thread(&self, job: Job) -> JobFuture {
        Box::pin(async move {
            tokio::task::spawn_blocking(job)
                .await
                .map_err(|e| io::Error::other(format!("the writing thread failed: {e}")))
                .and_then(|done| done)
        })
    }
}

/// An open directory.
#[derive(Debug)]
struct OsDir(OwnedFd);

impl Dir for OsDir {
    fn stat(&self) -> io::Result<Meta> {
        Ok(meta(&rustix::fs::fstat(&self.0)?))
    }

    fn open(&self, name: &str, how: Open) -> io::Result<Box<dyn File>> {
        let mut flags = OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
        flags |= if how.write {
            OFlags::RDWR
        } else {
            OFlags::RDONLY
        };
        if how.create_new {
            flags |= OFlags::CREATE | OFlags::EXCL;
        }
        let fd = rustix::fs::openat(self.0.as_fd(), name, flags, Mode::from_raw_mode(how.mode))?;
        Ok(Box::new(OsFile(std::fs::File::from(fd))))
    }

    fn stat_at(&self, name: &str) -> io::Result<Meta> {
        Ok(meta(&rustix::fs::statat(
            self.0.as_fd(),
            name,
            AtFlags::SYMLINK_NOFOLLOW,
        )?))
    }

    fn unlink(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(
            self.0.as_fd(),
            name,
            AtFlags::empty(),
        )?)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(rustix::fs::renameat(
            self.0.as_fd(),
            from,
            self.0.as_fd(),
            to,
        )?)
    }

    fn sync(&self) -> io::Result<()> {
        Ok(rustix::fs::fsync(self.0.as_fd())?)
    }
}

/// An open file.
#[derive(Debug)]
struct OsFile(std::fs::File);

impl File for OsFile {
    fn stat(&self) -> io::Result<Meta> {
        Ok(meta(&rustix::fs::fstat(&self.0)?))
    }

    fn chmod(&self, mode: u32) -> io::Result<()> {
        Ok(rustix::fs::fchmod(&self.0, Mode::from_raw_mode(mode))?)
    }

    fn try_lock(&self) -> Result<(), TryLockError> {
        self.0.try_lock()
    }

    fn unlock(&self) -> io::Result<()> {
        self.0.unlock()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn rewind(&self) -> io::Result<()> {
        (&self.0).seek(SeekFrom::Start(0)).map(|_| ())
    }

    fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        (&self.0).write_all(bytes)
    }

    fn read_to_string(&self, into: &mut String) -> io::Result<usize> {
        (&self.0).read_to_string(into)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }

    fn try_clone(&self) -> io::Result<Box<dyn File>> {
        Ok(Box::new(OsFile(self.0.try_clone()?)))
    }
}
