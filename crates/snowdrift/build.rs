//! Records which commit this binary is built from, for `snowdrift --version`, `/healthz` and
//! the `snowdrift_build_info` metric: `SNOWDRIFT_BUILD_COMMIT` when set (a packager building
//! from a source archive), else `git rev-parse HEAD` of the checkout, else `unknown` (a
//! packaged crate has no .git). `SNOWDRIFT_BUILD_DIRTY` is `true` when tracked files differ
//! from that commit. Runs again when HEAD moves or a tracked file under crates/ changes, so
//! a dirty flag is never older than the build's last edit (staging alone does not count).

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    // --no-optional-locks: `git status` would otherwise rewrite the index to refresh its
    // stat data (on a fresh clone it does), and the new index makes the next cargo run
    // this script again and rebuild the binary and everything above it.
    let out = Command::new("git")
        .arg("--no-optional-locks")
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=SNOWDRIFT_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=SNOWDRIFT_BUILD_DIRTY");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let git_dir = git(&["rev-parse", "--absolute-git-dir"]);
    if let Some(dir) = &git_dir {
        let dir = PathBuf::from(dir);
        // Not .git/index: any `git status` (a shell prompt, an editor, Go's VCS stamping)
        // rewrites it, and each rewrite would rebuild the binary. A commit moves HEAD's
        // ref, an edit moves a tracked file; staging alone is not watched.
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(head_ref).display());
        }
        // The tracked files under crates/, one by one, not the directory: the tests put
        // untracked files there (node_modules of the reference clients, databases), which
        // cannot make the tree dirty, and a directory would make every build after them
        // run this again and rebuild the binary and everything above it.
        if let Some(crates) = manifest.parent()
            && let Some(files) = git(&[
                "-C",
                &crates.display().to_string(),
                "ls-files",
                "--full-name",
                "-z",
                "--",
                ".",
            ])
            && let Some(root) = git(&["rev-parse", "--show-toplevel"])
        {
            for file in files.split('\0').filter(|f| !f.is_empty()) {
                println!("cargo:rerun-if-changed={root}/{file}");
            }
        }
    }
    let commit = std::env::var("SNOWDRIFT_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git_dir.as_ref().and_then(|_| git(&["rev-parse", "HEAD"])))
        .unwrap_or_else(|| "unknown".into());
    let dirty = match std::env::var("SNOWDRIFT_BUILD_DIRTY") {
        Ok(v) => v == "true",
        Err(_) => {
            git_dir.is_some()
                && git(&["status", "--porcelain", "--untracked-files=no"])
                    .is_some_and(|s| !s.is_empty())
        }
    };
    println!("cargo:rustc-env=SNOWDRIFT_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=SNOWDRIFT_BUILD_DIRTY={dirty}");
}
