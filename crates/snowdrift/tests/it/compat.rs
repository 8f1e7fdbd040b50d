//! Compatibility fixtures (issue 39) the binary reads: a full configuration file of every
//! released version (`tests/fixtures/<VERSION>/config/snowdrift.toml`, every section and
//! every kind with its keys) still passes `snowdrift serve --check-config`. See
//! `tests/fixtures/README.md`: old fixtures are never edited; a key that must change keeps
//! being read (or is refused with a message that says what to write instead, named in
//! CHANGELOG.md), and this test says which.

use std::path::{Path, PathBuf};

use snowdrift_testkit::unique_name;

/// Every version's full config, oldest first; fails when there is none.
fn configs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/fixtures exists")
        .filter_map(|e| e.ok().map(|e| e.path().join("config/snowdrift.toml")))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    assert!(
        !found.is_empty(),
        "no config fixture under {}",
        root.display()
    );
    found
}

#[test]
fn every_released_full_config_still_passes_check_config() {
    // A directory of its own: the config's relative SQLite paths are never created by a
    // check, but a start from here would put them here, not in the checkout.
    let dir = std::env::temp_dir().join(unique_name("compat-config"));
    std::fs::create_dir_all(&dir).unwrap();
    for file in configs() {
        let text = std::fs::read_to_string(&file).unwrap();
        let out = crate::common::serve_command()
            .current_dir(&dir)
            .args(["--config"])
            .arg(&file)
            .arg("--check-config")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{} no longer passes --check-config: {stderr}",
            file.display()
        );
        // Every generator of the old file is in the plan the check prints.
        for line in text.lines().filter(|l| l.starts_with("name = ")) {
            assert!(
                stdout.contains(line),
                "{}: {line} is not in the checked config:\n{stdout}",
                file.display()
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
