//! README's Python range cache over `form=runs`, run as README shows it (the block between
//! its `range-cache.py` markers) against a real `snowdrift serve`: every ID it hands out is
//! new, in order, and the ones the server hands out next follow them.

use std::collections::HashSet;
use std::process::Command;

/// The Python block of README.md between the `range-cache.py` markers.
fn python_block() -> String {
    let readme = include_str!("../../../../README.md");
    let start = readme
        .find("<!-- range-cache.py -->")
        .expect("README has the range-cache.py block");
    let end = readme
        .find("<!-- /range-cache.py -->")
        .expect("README ends the range-cache.py block");
    let block = &readme[start..end];
    let code = block
        .split("```python\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a python code block");
    code.to_string()
}

fn run_cache(base: &str, name: &str, n: usize) -> Vec<u64> {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("range-cache"));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("range_cache.py");
    std::fs::write(&script, python_block()).unwrap();
    let out = Command::new("python3")
        .arg(&script)
        .args([base, name, &n.to_string()])
        .output()
        .expect("python3 runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

#[test]
fn the_readme_python_range_cache_hands_out_new_ids() {
    let (dir, served) = crate::common::served_with_tag("readme-cache", "order", 400);
    let base = served.url();
    let mut seen = HashSet::new();
    for name in ["order", "snowflake"] {
        // 1,000 IDs in batches of 250: four fetches, spanning segments of 400.
        let ids = run_cache(&base, name, 1000);
        assert_eq!(ids.len(), 1000, "{name}");
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{name}: not in order");
        for id in &ids {
            assert!(seen.insert(*id), "{name}: {id} twice");
        }
        // The server's next ID comes after everything the cache held.
        let (status, body) = served.get(&format!("/v1/ids/{name}"), None);
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let next: u64 = v["ids"][0].as_str().unwrap().parse().unwrap();
        assert!(
            ids.iter().all(|&id| id < next),
            "{name}: {next} is not after the cache"
        );
    }
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}
