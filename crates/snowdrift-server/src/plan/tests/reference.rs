//! The configuration reference of the book (`docs/src/reference/config.md`), rendered from
//! the schema itself: the keys and their doc comments from `config/schema/*.rs` (read as
//! source, since doc comments do not survive compilation), each key checked against the
//! field list serde derives, the defaults from `Config::default()`, the ranges from
//! [`COUNTS`](crate::plan::sections) and [`SPANS`](crate::plan::sections), the words of every mode from
//! its enum and the kinds each generator key applies to from the kinds' own lists. The test
//! fails when the committed page differs, so the page cannot drift from the schema;
//! `scripts/config-reference` writes it anew.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use crate::config::{
    AuthConfig, BitsFrom, Config, Derive, GeneratorConfig, Kind, LeafConfig, LeafErrors,
    LimitsConfig, OnBackwardPolicy, Output, Registry, Role, ServerConfig, StoreConfig,
    TinyidConfig, TokenConfig, WorkerConfig,
};
use crate::plan::SourcePlan;
use crate::plan::sections::{COUNTS, SPANS};

/// The schema's sources, as compiled into this test (so a change to one rebuilds it).
const SOURCES: &[(&str, &str)] = &[
    ("mod.rs", include_str!("../../config/schema/mod.rs")),
    ("server.rs", include_str!("../../config/schema/server.rs")),
    ("store.rs", include_str!("../../config/schema/store.rs")),
    ("worker.rs", include_str!("../../config/schema/worker.rs")),
    ("limits.rs", include_str!("../../config/schema/limits.rs")),
    ("auth.rs", include_str!("../../config/schema/auth.rs")),
    (
        "generator.rs",
        include_str!("../../config/schema/generator.rs"),
    ),
];

/// The page, relative to the repository.
const PAGE: &str = "docs/src/reference/config.md";

/// One field of a struct as the source declares it.
#[derive(Debug, Clone)]
struct Field {
    /// The key in the file (serde's `rename`, else the field's name).
    key: String,
    /// The Rust type as written.
    ty: String,
    doc: String,
    /// `#[serde(default...)]` on the field itself.
    has_default: bool,
    /// A duration written as text (`with = "duration_text..."`).
    duration: bool,
}

/// A struct or a `word_enum!` as the source declares it.
#[derive(Debug, Clone, Default)]
struct Item {
    name: String,
    doc: String,
    /// `#[serde(... default ...)]` on the struct.
    default_all: bool,
    fields: Vec<Field>,
    /// `word_enum!`: (word, doc).
    words: Vec<(String, String)>,
}

/// Reads every struct (with its fields) and every `word_enum!` (with its words) of the
/// schema's sources, with their doc comments. The schema is plain declarations, so a line
/// reader suffices; what it reads is checked against serde's own field lists below, so a
/// declaration it misreads fails the test rather than dropping a key.
fn parse() -> Vec<Item> {
    let mut items = Vec::new();
    for (file, text) in SOURCES {
        let mut lines = text.lines().peekable();
        let mut doc: Vec<String> = Vec::new();
        let mut attrs = String::new();
        while let Some(line) = lines.next() {
            let t = line.trim();
            if let Some(d) = t.strip_prefix("///") {
                doc.push(d.strip_prefix(' ').unwrap_or(d).to_string());
            } else if t.starts_with("#[") {
                // An attribute, possibly over several lines.
                let mut attr = t.to_string();
                while !balanced(&attr) {
                    attr.push(' ');
                    attr.push_str(lines.next().expect("an attribute ends").trim());
                }
                attrs.push_str(&attr);
            } else if let Some(rest) = t.strip_prefix("pub struct ") {
                let name = rest.trim_end_matches('{').trim().to_string();
                let mut item = Item {
                    name,
                    doc: doc.join("\n"),
                    default_all: serde_words(&attrs).iter().any(|w| w == "default"),
                    ..Item::default()
                };
                doc.clear();
                attrs.clear();
                for line in lines.by_ref() {
                    let t = line.trim();
                    if t == "}" {
                        break;
                    }
                    if let Some(d) = t.strip_prefix("///") {
                        doc.push(d.strip_prefix(' ').unwrap_or(d).to_string());
                        continue;
                    }
                    if t.starts_with("#[") || !attrs.is_empty() && !balanced(&attrs) {
                        attrs.push_str(t);
                        attrs.push(' ');
                        continue;
                    }
                    if t.is_empty() {
                        continue;
                    }
                    let decl = t
                        .strip_prefix("pub ")
                        .or_else(|| t.strip_prefix("pub(crate) "))
                        .unwrap_or_else(|| panic!("{file}: {}: a field line: {t}", item.name));
                    let (name, ty) = decl
                        .trim_end_matches(',')
                        .split_once(':')
                        .unwrap_or_else(|| panic!("{file}: a field `name: Type`: {t}"));
                    let words = serde_words(&attrs);
                    if !words.iter().any(|w| w == "skip") {
                        let key = serde_value(&attrs, "rename").unwrap_or(name.trim().to_string());
                        item.fields.push(Field {
                            key,
                            ty: ty.trim().to_string(),
                            doc: doc.join("\n"),
                            has_default: words.iter().any(|w| w == "default"),
                            duration: serde_value(&attrs, "with")
                                .is_some_and(|w| w.starts_with("duration_text")),
                        });
                    }
                    doc.clear();
                    attrs.clear();
                }
                items.push(item);
            } else if t == "word_enum!(" {
                let mut item = Item::default();
                let mut inner: Vec<String> = Vec::new();
                for line in lines.by_ref() {
                    let t = line.trim();
                    if t == ");" {
                        break;
                    }
                    if let Some(d) = t.strip_prefix("///") {
                        inner.push(d.strip_prefix(' ').unwrap_or(d).to_string());
                    } else if let Some(name) = t.strip_suffix(" {") {
                        item.name = name.to_string();
                        item.doc = inner.join("\n");
                        inner.clear();
                    } else if let Some((_, word)) = t.split_once(" = \"") {
                        let word = word.trim_end_matches(',').trim_end_matches('"');
                        item.words.push((word.to_string(), inner.join("\n")));
                        inner.clear();
                    }
                }
                items.push(item);
                doc.clear();
                attrs.clear();
            } else {
                doc.clear();
                attrs.clear();
            }
        }
    }
    items
}

fn balanced(attr: &str) -> bool {
    attr.matches('[').count() == attr.matches(']').count()
        && attr.matches('(').count() == attr.matches(')').count()
}

/// The bare words of `#[serde(...)]` attributes (`default`, `skip`, `deny_unknown_fields`).
fn serde_words(attrs: &str) -> Vec<String> {
    serde_args(attrs)
        .into_iter()
        .filter(|a| !a.contains('='))
        .collect()
}

/// The value of `name = "..."` in `#[serde(...)]` attributes.
fn serde_value(attrs: &str, name: &str) -> Option<String> {
    serde_args(attrs).into_iter().find_map(|a| {
        let (k, v) = a.split_once('=')?;
        (k.trim() == name).then(|| v.trim().trim_matches('"').to_string())
    })
}

fn serde_args(attrs: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = attrs;
    while let Some(at) = rest.find("#[serde(") {
        let body = &rest[at + "#[serde(".len()..];
        let end = body.find(")]").unwrap_or(body.len());
        out.extend(body[..end].split(',').map(|a| a.trim().to_string()));
        rest = &body[end..];
    }
    out.retain(|a| !a.is_empty());
    out
}

/// A section of the page: a struct of the schema and where it sits in the file.
struct Section {
    /// `server`, `auth.token`, `generator`.
    path: &'static str,
    /// `[server]`, `[[auth.token]]`.
    header: &'static str,
    item: &'static str,
    /// The struct's defaults as JSON, for structs that have them.
    defaults: Option<serde_json::Value>,
    /// serde's field list.
    fields: &'static [&'static str],
    /// The environment variable prefix of its keys.
    env: &'static str,
}

fn json<T: Serialize>(value: T) -> Option<serde_json::Value> {
    Some(serde_json::to_value(value).expect("the defaults serialize"))
}

fn sections() -> Vec<Section> {
    vec![
        Section {
            path: "server",
            header: "[server]",
            item: "ServerConfig",
            defaults: json(ServerConfig::default()),
            fields: crate::config::schema::serde_fields::<ServerConfig>(),
            env: "SNOWDRIFT_SERVER__",
        },
        Section {
            path: "store",
            header: "[store]",
            item: "StoreConfig",
            defaults: json(StoreConfig::default()),
            fields: crate::config::schema::serde_fields::<StoreConfig>(),
            env: "SNOWDRIFT_STORE__",
        },
        Section {
            path: "worker",
            header: "[worker]",
            item: "WorkerConfig",
            defaults: json(WorkerConfig::default()),
            fields: crate::config::schema::serde_fields::<WorkerConfig>(),
            env: "SNOWDRIFT_WORKER__",
        },
        Section {
            path: "limits",
            header: "[limits]",
            item: "LimitsConfig",
            defaults: json(LimitsConfig::default()),
            fields: crate::config::schema::serde_fields::<LimitsConfig>(),
            env: "SNOWDRIFT_LIMITS__",
        },
        Section {
            path: "auth",
            header: "[auth]",
            item: "AuthConfig",
            defaults: None,
            fields: crate::config::schema::serde_fields::<AuthConfig>(),
            env: "SNOWDRIFT_AUTH__",
        },
        Section {
            path: "auth.token",
            header: "[[auth.token]]",
            item: "TokenConfig",
            defaults: None,
            fields: crate::config::schema::serde_fields::<TokenConfig>(),
            env: "SNOWDRIFT_AUTH__TOKEN__0__",
        },
        Section {
            path: "leaf",
            header: "[leaf]",
            item: "LeafConfig",
            defaults: json(LeafConfig::default()),
            fields: crate::config::schema::serde_fields::<LeafConfig>(),
            env: "SNOWDRIFT_LEAF__",
        },
        Section {
            path: "tinyid",
            header: "[tinyid]",
            item: "TinyidConfig",
            defaults: json(TinyidConfig::default()),
            fields: crate::config::schema::serde_fields::<TinyidConfig>(),
            env: "SNOWDRIFT_TINYID__",
        },
        Section {
            path: "generator",
            header: "[[generator]]",
            item: "GeneratorConfig",
            defaults: None,
            fields: crate::config::schema::serde_fields::<GeneratorConfig>(),
            env: "SNOWDRIFT_GENERATOR__0__",
        },
    ]
}

/// The words of every mode, from the enums themselves (the source gives their docs).
fn mode_words(item: &str) -> Option<Vec<&'static str>> {
    fn names<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> Vec<&'static str> {
        all.iter().map(|v| name(*v)).collect()
    }
    Some(match item {
        "Registry" => names(Registry::ALL, Registry::name),
        "Derive" => names(Derive::ALL, Derive::name),
        "BitsFrom" => names(BitsFrom::ALL, BitsFrom::name),
        "LeafErrors" => names(LeafErrors::ALL, LeafErrors::name),
        "Role" => names(Role::ALL, Role::name),
        "OnBackwardPolicy" => names(OnBackwardPolicy::ALL, OnBackwardPolicy::name),
        "Output" => names(Output::ALL, Output::name),
        _ => return None,
    })
}

/// `Option<Registry>` -> `Registry`.
fn inner_type(ty: &str) -> &str {
    ty.strip_prefix("Option<")
        .and_then(|t| t.strip_suffix('>'))
        .unwrap_or(ty)
}

fn type_text(field: &Field, items: &[Item]) -> String {
    let ty = inner_type(&field.ty);
    if field.duration {
        return "duration (text such as `\"10s\"`, `\"250ms\"`, `\"1m 30s\"`)".into();
    }
    if let Some(item) = items.iter().find(|i| i.name == ty && !i.words.is_empty()) {
        let words: Vec<String> = item
            .words
            .iter()
            .map(|(w, _)| format!("`\"{w}\"`"))
            .collect();
        return format!("one of {}", words.join(", "));
    }
    match ty {
        "Kind" => {
            let words: Vec<String> = Kind::ALL
                .iter()
                .map(|k| format!("`\"{}\"`", k.as_str()))
                .collect();
            format!("one of {}", words.join(", "))
        }
        "SocketAddr" => "address (text, `\"IP:PORT\"`)".into(),
        "std::net::IpAddr" => "IP address (text)".into(),
        "std::path::PathBuf" => "path (text)".into(),
        "String" => "text".into(),
        "bool" => "`true` or `false`".into(),
        "u8" | "u32" | "u64" | "usize" => "whole number".into(),
        "f64" => "number".into(),
        "Vec<String>" => "list of text".into(),
        "Vec<TokenConfig>" => "tables, `[[auth.token]]` (below)".into(),
        "Vec<GeneratorConfig>" => "tables, `[[generator]]` (below)".into(),
        other => panic!(
            "key {:?}: the reference has no words for type {other}; add them to type_text",
            field.key
        ),
    }
}

/// A default as it would be written in the file.
fn toml_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => format!("{s:?}"),
        serde_json::Value::Array(a) if a.is_empty() => "[]".into(),
        other => other.to_string(),
    }
}

fn duration_text(d: std::time::Duration) -> String {
    jiff::SignedDuration::try_from(d).map_or_else(|_| format!("{d:?}"), |d| format!("{d:#}"))
}

/// `1234567` -> `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The range of `key` and why each end is where it is, from the plan's own tables.
fn range(key: &str) -> Option<String> {
    if let Some(c) = COUNTS.iter().find(|c| c.key == key) {
        let span = if c.max == u64::MAX {
            format!("{}{} or more", grouped(c.min), c.unit)
        } else {
            format!("{} to {}{}", grouped(c.min), grouped(c.max), c.unit)
        };
        return Some(with_reasons(span, c.low, c.high));
    }
    let s = SPANS.iter().find(|s| s.key == key)?;
    let span = format!(
        "`\"{}\"` to `\"{}\"`",
        duration_text(s.min),
        duration_text(s.max)
    );
    Some(with_reasons(span, s.low, s.high))
}

fn with_reasons(span: String, low: &str, high: &str) -> String {
    let mut why = Vec::new();
    if !low.is_empty() {
        why.push(format!("less: {low}"));
    }
    if !high.is_empty() {
        why.push(format!("more: {high}"));
    }
    if why.is_empty() {
        span
    } else {
        format!("{span} ({})", why.join("; "))
    }
}

/// Defaults that depend on the machine the test runs on, said in words instead.
fn machine_default(key: &str) -> Option<&'static str> {
    match key {
        "worker.path" => Some("per machine and user (above)"),
        _ => None,
    }
}

/// The whole page.
fn render() -> String {
    let items = parse();
    let item = |name: &str| -> &Item {
        items
            .iter()
            .find(|i| i.name == name)
            .unwrap_or_else(|| panic!("the schema's sources declare {name}"))
    };
    let mut out = String::new();
    out.push_str(
        "# Configuration reference\n\n\
         <!-- Generated from crates/snowdrift-server/src/config/schema/*.rs by the test\n     \
         plan::tests::reference::docs_config_reference; do not edit: run scripts/config-reference. -->\n\n\
         Every key of the config file, generated from the schema the server reads it with (its doc\n\
         comments, defaults and types), the ranges `--check-config` enforces and the keys each\n\
         generator kind takes. How the file, the environment and the flags combine, and an example\n\
         of every section: [Configuration](../server/configuration.md).\n\n\
         Every key can also be set as an environment variable: `SNOWDRIFT_` and the key's path\n\
         with `__` between its parts, upper-case (`SNOWDRIFT_SERVER__LISTEN`; the first\n\
         generator's keys as `SNOWDRIFT_GENERATOR__0__...`). Keys a section does not list,\n\
         values of another type and values outside their range are refused, naming the key.\n",
    );
    let top = item("Config");
    let top_fields = crate::config::schema::serde_fields::<Config>();
    assert_eq!(
        top.fields
            .iter()
            .map(|f| f.key.as_str())
            .collect::<Vec<_>>(),
        top_fields,
        "the sections read from schema/mod.rs are serde's"
    );
    for section in sections() {
        let it = item(section.item);
        let keys: Vec<&str> = it.fields.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(
            keys, section.fields,
            "{}: the keys read from the source are the keys serde reads",
            section.header
        );
        let _ = write!(out, "\n## `{}`\n\n", section.header);
        // The section's own doc: the struct's, or the parent's field doc for a list.
        let parent_doc = top
            .fields
            .iter()
            .find(|f| f.key == section.path)
            .map(|f| f.doc.clone())
            .unwrap_or_default();
        let doc = if it.doc.is_empty() {
            parent_doc.clone()
        } else {
            it.doc.clone()
        };
        let doc = match strip_header(&doc, section.header) {
            "" => capitalized(&parent_doc),
            own => capitalized(own),
        };
        if !doc.is_empty() {
            let _ = writeln!(out, "{}", paragraph(&doc));
        }
        if section.path == "generator" {
            out.push_str(&kinds_table());
        }
        for field in &it.fields {
            let path = format!("{}.{}", section.path, field.key);
            let _ = write!(out, "\n### `{path}`\n\n");
            if !field.doc.is_empty() {
                let _ = writeln!(out, "{}\n", paragraph(&field.doc));
            }
            let mut facts = vec![format!("Type: {}", type_text(field, &items))];
            let required = !it.default_all && !field.has_default;
            if required {
                facts.push("required".into());
            } else if let Some(words) = machine_default(&path) {
                facts.push(format!("Default: {words}"));
            } else if let Some(defaults) = &section.defaults {
                match defaults.get(&field.key) {
                    Some(v) if !v.is_null() => facts.push(format!("Default: `{}`", toml_text(v))),
                    _ => facts.push("Default: unset".into()),
                }
            }
            if let Some(r) = range(&path) {
                facts.push(format!("Range: {r}"));
            }
            if section.path == "generator" && field.key != "name" && field.key != "kind" {
                let kinds: Vec<String> = Kind::ALL
                    .iter()
                    .filter(|k| SourcePlan::keys(**k).contains(&field.key.as_str()))
                    .map(|k| format!("`{}`", k.as_str()))
                    .collect();
                assert!(
                    !kinds.is_empty(),
                    "generator key {:?} is no kind's",
                    field.key
                );
                facts.push(format!("Kinds: {}", kinds.join(", ")));
            }
            if !field.ty.starts_with("Vec<TokenConfig")
                && !field.ty.starts_with("Vec<GeneratorConfig")
            {
                facts.push(format!(
                    "Environment: `{}{}`",
                    section.env,
                    field.key.to_uppercase()
                ));
            }
            let _ = writeln!(out, "{}.", facts.join(". "));
            // The words of a mode, each with its doc.
            let ty = inner_type(&field.ty);
            if let Some(words) = mode_words(ty) {
                let mode = item(ty);
                assert_eq!(
                    mode.words
                        .iter()
                        .map(|(w, _)| w.as_str())
                        .collect::<Vec<_>>(),
                    words,
                    "{ty}: the words read from the source are the enum's"
                );
                out.push('\n');
                for (word, doc) in &mode.words {
                    let _ = writeln!(out, "- `\"{word}\"`: {}", paragraph(doc));
                }
            }
        }
    }
    out
}

/// Which keys each kind takes (besides `name` and `kind`), from the kinds' own lists.
fn kinds_table() -> String {
    let mut out = String::from("\n| kind | keys besides `name` and `kind` |\n|---|---|\n");
    for kind in Kind::ALL {
        let keys: Vec<String> = SourcePlan::keys(*kind)
            .iter()
            .map(|k| format!("`{k}`"))
            .collect();
        let keys = if keys.is_empty() {
            "none".to_string()
        } else {
            keys.join(", ")
        };
        let _ = writeln!(out, "| `{}` | {keys} |", kind.as_str());
    }
    out
}

/// A doc comment's lines joined into one paragraph per blank-line-separated block, so the
/// page reads the same whatever the source's line breaks.
fn paragraph(doc: &str) -> String {
    doc.split("\n\n")
        .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A struct doc starting with its own header (`` `[server]`. ``, `` `[store]`: ``) loses it:
/// the page's heading says it.
fn strip_header<'a>(doc: &'a str, header: &str) -> &'a str {
    let quoted = format!("`{header}`");
    let Some(rest) = doc.strip_prefix(&quoted) else {
        return doc;
    };
    let rest = rest.trim_start_matches(['.', ':']).trim_start();
    if rest.is_empty() { "" } else { rest }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn page_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(PAGE)
}

/// The committed page is what the schema gives: a key added, removed, renamed or
/// re-documented, a default or a range changed, without the page changing fails here.
#[test]
fn docs_config_reference() {
    let path = page_path();
    // Only in the repository: a packaged crate has no docs to compare.
    if !path.parent().is_some_and(|p| p.is_dir()) {
        return;
    }
    let want = render();
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let line = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| have.lines().count().min(want.lines().count()));
        panic!(
            "{PAGE} is not what the config schema gives (first difference at line {}: the page \
             has {:?}, the schema gives {:?}); run scripts/config-reference and commit the page",
            line + 1,
            have.lines().nth(line).unwrap_or("<end>"),
            want.lines().nth(line).unwrap_or("<end>"),
        );
    }
}

/// Writes the page (`scripts/config-reference` runs it); ignored in the suite.
#[test]
#[ignore = "writes docs/src/reference/config.md: run by scripts/config-reference"]
fn write_docs_config_reference() {
    std::fs::write(page_path(), render()).expect("the page is writable");
}

/// The reader finds every section, key and word, and their docs.
#[test]
fn the_schema_reader_finds_every_key_with_its_doc() {
    let items = parse();
    let worker = items.iter().find(|i| i.name == "WorkerConfig").unwrap();
    assert!(worker.default_all);
    let ttl = worker.fields.iter().find(|f| f.key == "ttl").unwrap();
    assert!(ttl.duration && ttl.doc.starts_with("Lease time to live"));
    let registry = items.iter().find(|i| i.name == "Registry").unwrap();
    assert_eq!(registry.words[0].0, "file");
    assert!(
        registry.words[0]
            .1
            .starts_with("Lock files on this machine")
    );
    let config = items.iter().find(|i| i.name == "Config").unwrap();
    assert!(config.fields.iter().any(|f| f.key == "generator"));
    assert!(!config.fields.iter().any(|f| f.key == "origins"));
    let generator = items.iter().find(|i| i.name == "GeneratorConfig").unwrap();
    assert!(!generator.default_all);
    assert!(
        generator
            .fields
            .iter()
            .any(|f| f.key == "backward_wait" && f.duration)
    );
}
