//! `snowdrift import tinyid`: every `tiny_id_info` row of every Tinyid database becomes a
//! segment tag whose next ID is above the highest `max_id` of its biz type on any of them,
//! and every `tiny_id_token` token an `[[auth.token]]` holding the hash of the same token,
//! scoped to its biz types.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use snowdrift_server::auth::{Auth, Role, TokenHash};
use snowdrift_server::config::{AuthConfig, TokenConfig};
use snowdrift_store::peer::tinyid::{self, TinyIdDatabase, TinyIdInfo};
use snowdrift_store::segment::{TagFloor, validate_tag};

use super::target::{ConfigArgs, StoreFlags, append_to_config, quote, token_toml};
use super::{closing, tags};

/// Carry Didi Tinyid's biz types and tokens over.
///
/// Reads tiny_id_info and tiny_id_token from every Tinyid database (give each of a striped
/// setup: Tinyid's delta and remainder spread a biz type's IDs over them). Each biz type
/// becomes a segment tag of the same name whose next ID is above its highest max_id on any
/// database, with Tinyid's step; a tag already higher is kept. Each token becomes an
/// [[auth.token]] holding the SHA-256 of the same token (role read, scoped to its biz
/// types), so Tinyid's clients keep the token they are configured with; with --config and
/// --apply the lines are appended to the config file (tokens already in it are skipped),
/// else printed to add by hand.
///
/// Refused, naming the row, before anything is written: a biz type whose name is no tag
/// name, a step of 0, a max_id with no segment left below i64::MAX, two databases serving
/// the same remainder of a biz type, a remainder outside 0..delta, and (unless
/// --partial-stripes) a biz type striped over more databases (its delta) than rows found.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
snowdrift import tinyid --source mysql://tinyid@db1/tinyid --source mysql://tinyid@db2/tinyid --config snowdrift.toml\n  \
snowdrift import tinyid --source postgres://tinyid@pg/tinyid --store postgres://snowdrift@pg/ids --apply")]
pub struct Args {
    /// A Tinyid database (mysql://, mariadb://, postgres://), as tinyid-server's
    /// datasource.tinyid.*.url names it; several times (or comma-separated) for a striped
    /// setup, every one of them.
    #[arg(long, value_name = "URL", value_delimiter = ',', required = true)]
    source: Vec<String>,
    #[command(flatten)]
    store: StoreFlags,
    #[command(flatten)]
    common: ConfigArgs,
    /// Accept a biz type with fewer rows than its delta: only when no other database serves
    /// the missing remainders (Tinyid's sample test_odd: delta 2, remainder 1, on one
    /// database). A database left out may hold a higher max_id, whose IDs would repeat.
    #[arg(long)]
    partial_stripes: bool,
}

/// Where one biz type's rows are.
struct BizType<'a> {
    rows: Vec<(&'a TinyIdDatabase, &'a TinyIdInfo)>,
}

fn row_name(db: &TinyIdDatabase, row: &TinyIdInfo) -> String {
    format!(
        "tiny_id_info row id {} (biz_type {:?}) of {}",
        row.id, row.biz_type, db.shown
    )
}

/// The floor of every biz type over `dbs`, and the line saying where it comes from.
fn floors(dbs: &[TinyIdDatabase], partial: bool) -> Result<Vec<(TagFloor, String)>> {
    let mut by_type: BTreeMap<&str, BizType<'_>> = BTreeMap::new();
    for db in dbs {
        for row in &db.infos {
            by_type
                .entry(row.biz_type.as_str())
                .or_insert_with(|| BizType { rows: Vec::new() })
                .rows
                .push((db, row));
        }
    }
    let mut out = Vec::with_capacity(by_type.len());
    for (name, biz) in by_type {
        let (db0, first) = biz.rows[0];
        validate_tag(name).map_err(|e| {
            anyhow::anyhow!(
                "{}: its biz_type cannot be a snowdrift tag ({e}); rename it in Tinyid first",
                row_name(db0, first)
            )
        })?;
        let delta = first.delta;
        let mut remainders: BTreeMap<i64, String> = BTreeMap::new();
        for (db, row) in &biz.rows {
            if row.delta != delta {
                bail!(
                    "{} has delta {}, and {} has delta {delta}: the databases given are not one Tinyid setup (every database of a biz type has the same delta)",
                    row_name(db, row),
                    row.delta,
                    row_name(db0, first)
                );
            }
            if row.delta < 1 || row.remainder < 0 || row.remainder >= row.delta {
                bail!(
                    "{} has delta {} and remainder {}: Tinyid needs 0 <= remainder < delta",
                    row_name(db, row),
                    row.delta,
                    row.remainder
                );
            }
            if row.step < 1 {
                bail!(
                    "{} has step {}: Tinyid never issued a segment from it, and a tag needs a step of 1 or more; set its step in Tinyid first",
                    row_name(db, row),
                    row.step
                );
            }
            if let Some(other) = remainders.insert(row.remainder, db.shown.clone()) {
                bail!(
                    "{} serves remainder {} of delta {delta}, as {other} does: two Tinyid databases handed out the same IDs; fix the setup (or leave one out) before importing",
                    row_name(db, row),
                    row.remainder
                );
            }
        }
        let found = biz.rows.len() as i64;
        if found < delta && !partial {
            let missing: Vec<String> = (0..delta)
                .filter(|r| !remainders.contains_key(r))
                .map(|r| r.to_string())
                .collect();
            bail!(
                "biz_type {name:?} has delta {delta} (Tinyid stripes it over {delta} databases) but the {} database(s) given hold only remainder(s) {}: remainder(s) {} live on a database not given, whose max_id may be higher; give every database with --source (or --partial-stripes when no other database serves {name:?})",
                dbs.len(),
                remainders
                    .keys()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                missing.join(", ")
            );
        }
        let (db_max, top) = biz
            .rows
            .iter()
            .max_by_key(|(_, r)| r.max_id)
            .copied()
            .unwrap_or((db0, first));
        let step = biz
            .rows
            .iter()
            .map(|(_, r)| r.step)
            .max()
            .unwrap_or(first.step);
        let floor = TagFloor {
            tag: name.to_string(),
            // Tinyid's segments are (max_id - step, max_id]: max_id itself was issued.
            next_id: top.max_id.saturating_add(1),
            step,
            description: Some("moved from Tinyid".into()),
        };
        floor
            .validate()
            .map_err(|e| anyhow::anyhow!("{}: {e}", row_name(db_max, top)))?;
        let from = biz
            .rows
            .iter()
            .map(|(db, r)| {
                format!(
                    "max_id {} (remainder {} of {}) on {}",
                    r.max_id, r.remainder, r.delta, db.shown
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        out.push((floor, from));
    }
    Ok(out)
}

/// A token for each distinct `tiny_id_token.token`, scoped to its biz types, over `dbs`.
fn tokens(dbs: &[TinyIdDatabase]) -> Result<Vec<TokenConfig>> {
    let mut by_token: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for db in dbs {
        for row in &db.tokens {
            let token = row.token.as_str();
            if token.is_empty() || token.trim() != token || token.chars().any(char::is_control) {
                bail!(
                    "tiny_id_token row id {} of {} has a token that is empty or starts or ends with a space or holds a control character: no client can send it as a bearer token; fix it in Tinyid first",
                    row.id,
                    db.shown
                );
            }
            validate_tag(&row.biz_type).map_err(|e| {
                anyhow::anyhow!(
                    "tiny_id_token row id {} of {} scopes its token to biz_type {:?}, which cannot be a snowdrift tag ({e})",
                    row.id,
                    db.shown,
                    row.biz_type
                )
            })?;
            let scope = by_token.entry(token).or_default();
            if !scope.contains(&row.biz_type) {
                scope.push(row.biz_type.clone());
            }
        }
    }
    let mut out = Vec::with_capacity(by_token.len());
    for (token, mut generators) in by_token {
        generators.sort();
        let hash = TokenHash::of(token);
        let hex = hash.to_string();
        out.push(TokenConfig {
            name: format!("tinyid-{}", &hex["sha256:".len()..][..8]),
            hash: hex,
            generators,
            role: Role::Read,
            rate: None,
            burst: None,
        });
    }
    // The server's own check, so what is written is what it accepts.
    Auth::from_config(&AuthConfig {
        tokens: out.clone(),
    })
    .map_err(|e| anyhow::anyhow!("{e}").context("Tinyid's tokens make no valid [[auth.token]]"))?;
    Ok(out)
}

/// Runs the import.
pub async fn run(args: Args) -> Result<()> {
    let config = args.common.load()?;
    let Some(stores) = super::target::stores(&args.store, config.as_ref())? else {
        bail!("no snowdrift store given: pass --config FILE (its [store]) or --store URL");
    };
    let mut dbs = Vec::with_capacity(args.source.len());
    for url in &args.source {
        let shown = snowdrift_store::mask_url(url);
        dbs.push(
            tinyid::read(url)
                .await
                .with_context(|| format!("reading Tinyid's database {shown}"))?,
        );
    }
    let floors = floors(&dbs, args.partial_stripes)?;
    let tokens = tokens(&dbs)?;
    let plan = tags::preview(
        &stores,
        &floors.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>(),
    )
    .await?;
    let existing: Vec<String> = config
        .as_ref()
        .map(|c| {
            c.auth
                .tokens
                .iter()
                .map(|t| t.hash.to_lowercase())
                .collect()
        })
        .unwrap_or_default();
    let is_new = |t: &TokenConfig| !existing.contains(&t.hash);
    let new_tokens = tokens.iter().filter(|t| is_new(t)).count();

    outln!(
        "Plan: import Tinyid from {} database(s): {}",
        dbs.len(),
        dbs.iter()
            .map(|d| format!(
                "{} ({} biz types, {} token rows)",
                d.shown,
                d.infos.len(),
                d.tokens.len()
            ))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    let from: BTreeMap<&str, &str> = floors
        .iter()
        .map(|(f, from)| (f.tag.as_str(), from.as_str()))
        .collect();
    out!(
        "{}",
        tags::render(&plan, &|tag| {
            format!("Tinyid {}", from.get(tag).copied().unwrap_or("?"))
        })
    )?;
    outln!(
        "\nTokens: {} Tinyid token(s), as [[auth.token]] holding the hash of the same token (role read, scoped to its biz types):",
        tokens.len()
    )?;
    let mut toml = String::new();
    for t in &tokens {
        let line = format!(
            "  {} for {}: {}",
            quote(&t.name),
            t.generators.join(", "),
            if is_new(t) {
                "add"
            } else {
                "in the config already"
            }
        );
        outln!("{line}")?;
        if is_new(t) {
            toml.push_str(&token_toml(t));
            toml.push('\n');
        }
    }
    if !toml.is_empty() {
        let auth_off = config.as_ref().is_some_and(|c| c.auth.tokens.is_empty());
        outln!(
            "\nConfig lines{}:\n\n{toml}",
            match (&args.common.config, args.common.apply) {
                (Some(p), true) => format!(" appended to {}", p.display()),
                (Some(p), false) => format!(" to append to {} (--apply does)", p.display()),
                (None, _) => " to add to the server's config (then reload it: kill -HUP)".into(),
            }
        )?;
        if auth_off || config.is_none() {
            outln!(
                "Note: a config without [[auth.token]] serves anyone; with these, every route needs a token (snowdrift token create makes them for snowdrift's own clients)."
            )?;
        }
    }
    outln!(
        "\nNot carried over: delta and remainder (a tag serves every ID of its segments; stripe snowdrift's own stores with [store] urls), begin_id (no meaning beyond the first segment), version."
    )?;
    let token_changes = if args.common.config.is_some() {
        new_tokens
    } else {
        0
    };
    let changes = plan.changes() + token_changes;
    if !args.common.apply || changes == 0 {
        outln!("\n{}", closing(false, changes))?;
        return Ok(());
    }
    let floors: Vec<TagFloor> = floors.into_iter().map(|(f, _)| f).collect();
    let done = tags::apply(&plan, &floors).await?;
    if let (Some(path), false) = (&args.common.config, toml.is_empty()) {
        append_to_config(path, &toml)?;
    }
    outln!("\n{}", closing(true, done.changes() + token_changes))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use snowdrift_store::peer::tinyid::TinyIdToken;

    fn db(name: &str, rows: &[(&str, i64, i64, i64)]) -> TinyIdDatabase {
        TinyIdDatabase {
            shown: name.into(),
            infos: rows
                .iter()
                .enumerate()
                .map(|(i, (biz, max_id, delta, remainder))| TinyIdInfo {
                    id: i as i64 + 1,
                    biz_type: biz.to_string(),
                    begin_id: 1,
                    max_id: *max_id,
                    step: 1000,
                    delta: *delta,
                    remainder: *remainder,
                    version: 3,
                })
                .collect(),
            tokens: Vec::new(),
        }
    }

    #[test]
    fn the_floor_is_above_every_databases_max_id() {
        let dbs = [
            db("db1", &[("order", 5001, 2, 0)]),
            db("db2", &[("order", 9001, 2, 1)]),
        ];
        let f = floors(&dbs, false).unwrap();
        assert_eq!(f[0].0.next_id, 9002);
        assert!(
            f[0].1.contains("db1") && f[0].1.contains("db2"),
            "{}",
            f[0].1
        );
    }

    #[test]
    fn a_missing_or_doubled_stripe_is_refused() {
        let one = [db("db1", &[("order", 5001, 2, 0)])];
        let e = floors(&one, false).unwrap_err().to_string();
        assert!(
            e.contains("remainder(s) 1") && e.contains("--source"),
            "{e}"
        );
        assert_eq!(floors(&one, true).unwrap()[0].0.next_id, 5002);
        let twice = [
            db("db1", &[("order", 5001, 2, 0)]),
            db("db2", &[("order", 9001, 2, 0)]),
        ];
        let e = floors(&twice, false).unwrap_err().to_string();
        assert!(e.contains("same IDs") && e.contains("row id 1"), "{e}");
        let bad = [db("db1", &[("has space", 5, 1, 0)])];
        assert!(
            floors(&bad, false)
                .unwrap_err()
                .to_string()
                .contains("has space")
        );
    }

    #[test]
    fn tokens_keep_their_text_and_gather_their_biz_types() {
        let mut a = db("db1", &[]);
        a.tokens = vec![
            TinyIdToken {
                id: 1,
                token: "0f673adf80504e2eaa552f5d791b644c".into(),
                biz_type: "test".into(),
                remark: String::new(),
            },
            TinyIdToken {
                id: 2,
                token: "0f673adf80504e2eaa552f5d791b644c".into(),
                biz_type: "test_odd".into(),
                remark: String::new(),
            },
        ];
        let t = tokens(&[a]).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].generators, ["test", "test_odd"]);
        assert_eq!(
            t[0].hash,
            TokenHash::of("0f673adf80504e2eaa552f5d791b644c").to_string()
        );
    }
}
