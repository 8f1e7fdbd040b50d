//! The documentation shows configuration the server accepts and links that lead somewhere:
//! every ```` ```toml ```` block of README.md, README.zh-CN.md, BENCHMARKS.md and `docs/`
//! passes `snowdrift serve --check-config`, and every relative link names a file that exists
//! (and a heading of it, for an `#anchor`). A block that is a fragment of a config is marked
//! ```` ```toml,partial ```` and checked inside a minimal config; no block is skipped. The
//! Chinese pages (README.zh-CN.md, `docs/zh/`) follow their English pages: the same code
//! blocks, and a hash of the English text they were translated from.

use std::path::{Path, PathBuf};

use snowdrift_testkit::unique_name;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md, its Chinese translation, BENCHMARKS.md and every Markdown file under `docs/`
/// (the Chinese book under `docs/zh/` included), relative to the repository.
fn markdown_files() -> Vec<PathBuf> {
    let root = repo();
    let mut files = vec![
        PathBuf::from("README.md"),
        PathBuf::from("README.zh-CN.md"),
        PathBuf::from("BENCHMARKS.md"),
    ];
    let mut dirs = vec![PathBuf::from("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(root.join(&dir)).unwrap().flatten() {
            let path = dir.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A fenced code block: the line its fence opens on, its info string, its text.
struct Block {
    line: usize,
    info: String,
    body: String,
}

/// The fenced blocks of a Markdown text (backtick fences of any length, indented or not).
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, usize, String, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let ticks = t.chars().take_while(|c| *c == '`').count();
        match &mut open {
            None if ticks >= 3 => {
                open = Some((n + 1, ticks, t[ticks..].trim().into(), String::new()))
            }
            None => {}
            Some((at, fence, info, body)) => {
                if ticks >= *fence && t[ticks..].trim().is_empty() {
                    out.push(Block {
                        line: *at,
                        info: std::mem::take(info),
                        body: std::mem::take(body),
                    });
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "a code block is never closed");
    out
}

/// The text outside fenced blocks, line by line (fenced lines left empty, so line numbers
/// stay right).
fn prose(text: &str) -> Vec<String> {
    let mut fence = 0;
    text.lines()
        .map(|line| {
            let t = line.trim_start();
            let ticks = t.chars().take_while(|c| *c == '`').count();
            if fence == 0 && ticks >= 3 {
                fence = ticks;
                String::new()
            } else if fence > 0 {
                if ticks >= fence && t[ticks..].trim().is_empty() {
                    fence = 0;
                }
                String::new()
            } else {
                line.to_string()
            }
        })
        .collect()
}

/// The minimal config a partial block is checked in: a store and lease files of its own.
fn minimal(dir: &Path, block: &str) -> String {
    let mut text = block.to_string();
    if !block.contains("[store]") {
        let db = dir.join("ids.db");
        text.push_str(&format!("\n[store]\nurl = \"sqlite://{}\"\n", db.display()));
    }
    if !block.contains("[worker]") {
        let workers = dir.join("workers");
        text.push_str(&format!("\n[worker]\npath = \"{}\"\n", workers.display()));
    }
    text
}

/// Every TOML block of README.md and `docs/` is a config `snowdrift serve --check-config`
/// accepts: a whole one as written (run in an empty directory, so relative paths land
/// there), a ```` ```toml,partial ```` one inside [`minimal`]. Any other marker fails, so
/// no block is left out by accident.
#[test]
fn every_toml_snippet_passes_check_config() {
    let root = repo();
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        for block in blocks(&text) {
            let mut parts = block.info.split(',').map(str::trim);
            if parts.next() != Some("toml") {
                continue;
            }
            let marks: Vec<&str> = parts.collect();
            let partial = match marks.as_slice() {
                [] => false,
                ["partial"] => true,
                other => panic!(
                    "{}:{}: ```toml marked {other:?}; a TOML block is checked whole (```toml) \
                     or inside a minimal config (```toml,partial), never skipped",
                    file.display(),
                    block.line
                ),
            };
            let dir = std::env::temp_dir().join(unique_name("docs-toml"));
            std::fs::create_dir_all(&dir).unwrap();
            let config = if partial {
                minimal(&dir, &block.body)
            } else {
                block.body.clone()
            };
            let path = dir.join("snowdrift.toml");
            std::fs::write(&path, &config).unwrap();
            let out = crate::common::serve_command()
                .arg("--config")
                .arg(&path)
                .arg("--check-config")
                .current_dir(&dir)
                .output()
                .unwrap();
            if !out.status.success() {
                failures.push(format!(
                    "{}:{} ({}): {}",
                    file.display(),
                    block.line,
                    if partial { "partial" } else { "whole" },
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            checked += 1;
            std::fs::remove_dir_all(&dir).ok();
        }
    }
    assert!(
        failures.is_empty(),
        "TOML blocks --check-config refuses:\n{}",
        failures.join("\n")
    );
    // The README's and the book's examples (9 when this was written), so a reader that
    // found none (a changed fence, a moved directory) fails rather than passing on nothing.
    assert!(checked >= 8, "only {checked} TOML blocks found");
    eprintln!("{checked} TOML blocks pass --check-config");
}

/// A heading's anchor as mdBook and GitHub make it: lower case, letters, digits, `-` and `_`
/// kept, spaces to `-`, the rest (backticks, punctuation, a link's target) dropped.
fn slug(heading: &str) -> String {
    // A link in a heading contributes its text only.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find("](") {
        text.push_str(&rest[..open]);
        rest = rest[open..].split_once(')').map_or("", |(_, after)| after);
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page: its headings' slugs, with the pages it `{{#include}}`s expanded.
fn anchors(file: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in prose(&text) {
        if let Some(heading) = line.strip_prefix('#') {
            out.push(slug(heading.trim_start_matches('#')));
        }
        if let Some(inner) = line
            .trim()
            .strip_prefix("{{#include ")
            .and_then(|r| r.strip_suffix("}}"))
        {
            out.extend(anchors(&file.parent().unwrap().join(inner.trim())));
        }
    }
    out
}

/// Every relative link of README.md and `docs/` names a file or directory of the repository,
/// and an `#anchor` names a heading of the page it points to (mdBook writes the same links
/// to `.html` pages, so what holds here holds in the built book).
#[test]
fn every_relative_link_resolves() {
    let root = repo();
    let mut broken = Vec::new();
    let mut links = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        let dir = root.join(&file).parent().unwrap().to_path_buf();
        for (n, line) in prose(&text).iter().enumerate() {
            let mut rest = line.as_str();
            while let Some(at) = rest.find("](") {
                rest = &rest[at + 2..];
                let Some(end) = rest.find(')') else { break };
                let target = &rest[..end];
                rest = &rest[end..];
                if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                    continue;
                }
                links += 1;
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let page = if path.is_empty() {
                    root.join(&file)
                } else {
                    dir.join(path)
                };
                let place = format!("{}:{}: {target}", file.display(), n + 1);
                if !page.exists() {
                    broken.push(format!("{place}: no such file"));
                } else if !anchor.is_empty() && !anchors(&page).iter().any(|a| a == anchor) {
                    broken.push(format!("{place}: no heading #{anchor} there"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(links >= 50, "only {links} relative links found");
}

/// The English code blocks a Chinese page leaves out, each named on purpose: (the Chinese
/// page, the block's position among its English pages' blocks, counting from 1, as the
/// test's messages do). None so far: every translated page keeps every block.
const OMITTED: &[(&str, usize)] = &[];

/// The Chinese pages: README.zh-CN.md and the pages of the Chinese book (its SUMMARY.md
/// aside), relative to the repository.
fn translated_pages() -> Vec<PathBuf> {
    markdown_files()
        .into_iter()
        .filter(|file| {
            file == Path::new("README.zh-CN.md")
                || (file.starts_with("docs/zh/src") && !file.ends_with("SUMMARY.md"))
        })
        .collect()
}

/// The English pages a Chinese page is translated from, with the hashes it was translated
/// at: its first lines, one per page, `<!-- source: docs/src/X.md sha256:HEX -->` (the path
/// from the repository's root). A page mdBook assembles with `{{#include}}` is named by the
/// file that holds the text (`docs/ops/monitoring.md`, not its `docs/src/ops/` wrapper).
fn sources(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map_while(|line| {
            let inner = line
                .trim()
                .strip_prefix("<!-- source: ")?
                .strip_suffix(" -->")?;
            let (path, hash) = inner.split_once(" sha256:")?;
            Some((path.trim().to_string(), hash.trim().to_string()))
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The Chinese pages stay translations of their English pages. Each names its English
/// pages and the sha256 of each when it was last brought up to date: an English page that
/// changed since fails, naming both files and the new hash, until the Chinese page says the
/// same again and carries that hash. Whatever the hash, a Chinese page's fenced code blocks
/// (commands, config, code, console output) are its English pages' blocks, byte for byte
/// and in order, but for those [`OMITTED`] names. Every page of the Chinese book is in its
/// SUMMARY.md, so none is written and never shown.
#[test]
fn translations_follow_their_english_pages() {
    let root = repo();
    let summary = std::fs::read_to_string(root.join("docs/zh/src/SUMMARY.md")).unwrap();
    let pages = translated_pages();
    let mut failures = Vec::new();
    // Each page with the number of its English pages' blocks, for OMITTED's check.
    let mut counted = Vec::new();
    for page in &pages {
        let shown = page.display().to_string();
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        if let Ok(in_book) = page.strip_prefix("docs/zh/src")
            && !summary.contains(&format!("]({})", in_book.display()))
        {
            failures.push(format!(
                "{shown} is not in docs/zh/src/SUMMARY.md: list it there"
            ));
        }
        let sources = sources(&text);
        if sources.is_empty() {
            failures.push(format!(
                "{shown} names no English page: its first line must be \
                 `<!-- source: docs/src/X.md sha256:HEX -->` (one line per English page)"
            ));
            continue;
        }
        // The English pages' blocks in order, each with the page it is from.
        let mut english = Vec::new();
        for (source, recorded) in &sources {
            let Ok(bytes) = std::fs::read(root.join(source)) else {
                failures.push(format!("{shown} names {source}, which does not exist"));
                continue;
            };
            let hash = sha256_hex(&bytes);
            if hash != *recorded {
                failures.push(format!(
                    "{source} changed since {shown} was translated: update the translation, \
                     then its hash to {hash}"
                ));
            }
            let text = String::from_utf8(bytes).unwrap();
            english.extend(blocks(&text).into_iter().map(|b| (source.clone(), b)));
        }
        counted.push((shown.clone(), english.len()));
        let english: Vec<_> = english
            .into_iter()
            .enumerate()
            .filter(|(n, _)| !OMITTED.contains(&(shown.as_str(), n + 1)))
            .map(|(_, block)| block)
            .collect();
        let chinese = blocks(&text);
        // The first difference only: the ones after it follow from it.
        for n in 0..english.len().max(chinese.len()) {
            let problem = match (english.get(n), chinese.get(n)) {
                (Some((source, en)), Some(zh)) if en.info != zh.info || en.body != zh.body => {
                    format!(
                        "{shown}:{}: code block {} is not {source}:{}'s (a Chinese page keeps \
                         the English blocks as they are, in order):\n--- {source}\n```{}\n{}```\n\
                         --- {shown}\n```{}\n{}```",
                        zh.line,
                        n + 1,
                        en.line,
                        en.info,
                        en.body,
                        zh.info,
                        zh.body
                    )
                }
                (Some((source, en)), None) => format!(
                    "{shown} lacks the code block of {source}:{} (its block {}, ```{}): copy \
                     it in as it is, or name it in OMITTED",
                    en.line,
                    n + 1,
                    en.info
                ),
                (None, Some(zh)) => format!(
                    "{shown}:{}: a code block its English pages ({}) do not have",
                    zh.line,
                    sources
                        .iter()
                        .map(|(s, _)| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                _ => continue,
            };
            failures.push(problem);
            break;
        }
    }
    for &(page, n) in OMITTED {
        if !counted
            .iter()
            .any(|(p, count)| p == page && (1..=*count).contains(&n))
        {
            failures.push(format!(
                "OMITTED names block {n} of {page}, which its English pages do not have"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "Chinese pages out of step with their English pages:\n{}",
        failures.join("\n")
    );
    // README.zh-CN.md and the Chinese book's pages (12 when this was written), so a test
    // that found none (a moved directory) fails rather than passing on nothing.
    assert!(
        pages.len() >= 12,
        "only {} Chinese pages found",
        pages.len()
    );
}

#[test]
fn slugs_are_the_books() {
    assert_eq!(
        slug(" Clock steps and restarts behind the mark (server)"),
        "clock-steps-and-restarts-behind-the-mark-server"
    );
    assert_eq!(slug("`[[auth.token]]`"), "authtoken");
    assert_eq!(
        slug("The client (`snowdrift-client`)"),
        "the-client-snowdrift-client"
    );
    assert_eq!(slug("See [Leaf](x.md) here"), "see-leaf-here");
}
