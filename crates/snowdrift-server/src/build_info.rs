//! Which build of snowdrift runs: the version and the commit, as `snowdrift --version`,
//! `/healthz` and the `snowdrift_build_info` metric show them. The binary records its
//! commit (its build script reads git) with [`set`] before serving; a server embedded as a
//! library without it reports commit `unknown`.

use std::sync::OnceLock;

/// The version and commit of the running build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    /// The crate version (`0.1.0`).
    pub version: &'static str,
    /// The full commit hash, or `unknown`.
    pub commit: &'static str,
    /// Whether tracked files differed from the commit when it was built.
    pub dirty: bool,
}

impl BuildInfo {
    /// The commit as shown: the hash, with `-dirty` when the tree was.
    pub fn commit_text(&self) -> String {
        if self.dirty {
            format!("{}-dirty", self.commit)
        } else {
            self.commit.to_string()
        }
    }
}

static INFO: OnceLock<BuildInfo> = OnceLock::new();

/// Records the build this process runs; the first call wins.
pub fn set(info: BuildInfo) {
    let _ = INFO.set(info);
}

/// The build this process runs ([`set`], or this crate's version with commit `unknown`).
pub fn get() -> &'static BuildInfo {
    INFO.get_or_init(|| BuildInfo {
        version: env!("CARGO_PKG_VERSION"),
        commit: "unknown",
        dirty: false,
    })
}
