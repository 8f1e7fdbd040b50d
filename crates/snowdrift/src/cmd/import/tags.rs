//! Segment tags carried over: each tag's floor previewed against every store (read only,
//! creating nothing: a store that does not exist yet holds no tags), printed before and
//! after, and raised with the store's own raise (one transaction per SQL store).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use snowdrift_store::segment::{SegmentStore, Tag, TagChange, TagFloor, inspect};

use super::target::Stores;

/// What raising every store to the floors changes, store by store.
#[derive(Debug)]
pub struct TagPlan {
    /// Each store's URL and its changes, in the floors' order.
    pub stores: Vec<(String, Vec<TagChange>)>,
    /// The table.
    pub table: String,
}

impl TagPlan {
    /// How many tags would change, over every store.
    pub fn changes(&self) -> usize {
        self.stores
            .iter()
            .flat_map(|(_, c)| c)
            .filter(|c| c.changes())
            .count()
    }
}

/// Reads each store and works out the change each floor makes there, writing nothing (a
/// table, key prefix or root znode that does not exist yet counts as empty, and is not
/// created).
pub async fn preview(stores: &Stores, floors: &[TagFloor]) -> Result<TagPlan> {
    let mut out = Vec::with_capacity(stores.urls.len());
    for url in &stores.urls {
        let shown = snowdrift_store::mask_url(url);
        let existing = read(url, &stores.table, floors)
            .await
            .with_context(|| format!("reading snowdrift's store {shown}"))?;
        let changes = floors
            .iter()
            .map(|f| f.against(existing.get(&f.tag)))
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("snowdrift's store {shown}"))?;
        out.push((url.clone(), changes));
    }
    Ok(TagPlan {
        stores: out,
        table: stores.table.clone(),
    })
}

async fn read(url: &str, table: &str, floors: &[TagFloor]) -> Result<BTreeMap<String, Tag>> {
    let names: Vec<String> = floors.iter().map(|f| f.tag.clone()).collect();
    let found = inspect::read_tags(url, table, &names).await?;
    Ok(found.into_iter().map(|t| (t.tag.clone(), t)).collect())
}

/// Raises every store to the floors, each with its own raise (one transaction on SQL);
/// returns what was written, store by store.
pub async fn apply(plan: &TagPlan, floors: &[TagFloor]) -> Result<TagPlan> {
    let mut out = Vec::with_capacity(plan.stores.len());
    for (url, _) in &plan.stores {
        let shown = snowdrift_store::mask_url(url);
        let store = SegmentStore::connect(url, &plan.table)
            .await
            .with_context(|| format!("opening snowdrift's store {shown}"))?;
        let changes = store
            .raise_to(floors)
            .await
            .with_context(|| format!("raising the tags in snowdrift's store {shown}"))?;
        out.push((url.clone(), changes));
    }
    Ok(TagPlan {
        stores: out,
        table: plan.table.clone(),
    })
}

fn state((max_id, step): (i64, i64)) -> String {
    format!("next {max_id}, step {step}")
}

/// What a change does, in a word or two.
pub fn verb(c: &TagChange) -> &'static str {
    match c.before {
        None => "create",
        Some(b) if b == c.after => "keep",
        Some((max_id, _)) if max_id < c.after.0 => "raise",
        Some(_) => "set step",
    }
}

/// The plan's lines for the tags: per store, each tag's source (`from`), before and after.
pub fn render(plan: &TagPlan, from: &dyn Fn(&str) -> String) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for (url, changes) in &plan.stores {
        let _ = writeln!(
            s,
            "\nSegment tags in snowdrift's store {} (table {}):",
            snowdrift_store::mask_url(url),
            plan.table
        );
        if changes.is_empty() {
            let _ = writeln!(s, "  none");
            continue;
        }
        let width = changes
            .iter()
            .map(|c| c.tag.len())
            .max()
            .unwrap_or(3)
            .max(3);
        let _ = writeln!(
            s,
            "  {:<width$}  {:<28}  {:<28}  {:<13}  FROM",
            "TAG", "BEFORE", "AFTER", "CHANGE"
        );
        for c in changes {
            let _ = writeln!(
                s,
                "  {:<width$}  {:<28}  {:<28}  {:<13}  {}",
                c.tag,
                c.before.map_or("none".into(), state),
                state(c.after),
                verb(c),
                from(&c.tag)
            );
        }
    }
    s
}
