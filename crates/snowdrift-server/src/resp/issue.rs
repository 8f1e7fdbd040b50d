//! `INCR`, `INCRBY` and `SNOWFLAKE`: IDs from the server's generators, as replies.
//!
//! `SNOWFLAKE name format` answers a bulk string in the format (`base62`,
//! `obfuscated-sqids`, ...); `INCR` and `INCRBY` always answer as Redis does, so they take
//! no format.
//!
//! `INCRBY name n` keeps Redis' meaning: the counter moves up by `n` and the reply is its
//! new value, so the caller owns the `n` IDs `(reply - n, reply]`. That holds only where a
//! batch is one consecutive run: segment tags on one store and plain Redis counters. Other
//! kinds are refused with `-WRONGTYPE` before anything is issued: snowflake batches span
//! ticks, ticket servers interleave, striped stores hand out every k-th ID, zk-version
//! writes interleave with other nodes', and text kinds are no counter at all. `INCRBY name
//! 1` is `INCR name` for every kind, as redis-py's `r.incr(name)` sends it.

use crate::config::Kind;
use crate::error::Error;
use crate::source::{IdSource, Ids, SegmentSource, Source};
use crate::state::Generators;

use super::refusal::Refusal;
use super::reply;

/// How many segments `INCRBY` tries for one that still holds `n` IDs in a row. A
/// segment's tail too short for `n` is skipped (a gap, never a duplicate); two more tries
/// reach a fresh segment even when other requests take from it meanwhile.
const SEGMENT_TRIES: usize = 3;

/// One ID, as its reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Id {
    /// A 64-bit ID that fits RESP's signed integers.
    Integer(i64),
    /// A text ID (UUID, ULID, ObjectId, templated counter), or a 64-bit ID of a layout
    /// that may pass `i64::MAX`, in decimal.
    Text(String),
}

impl Id {
    /// Appends the reply to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Id::Integer(v) => reply::integer(out, *v),
            Id::Text(t) => reply::bulk(out, t.as_bytes()),
        }
    }

    /// `value` as `source`'s generator answers it: a snowflake layout that may pass
    /// `i64::MAX` answers every ID in text, so a client never sees one generator switch
    /// reply types as its IDs grow.
    fn of(source: &Source, value: u64) -> Self {
        let wide =
            matches!(source, Source::Snowflake(s) if i64::try_from(s.layout().max_id()).is_err());
        match i64::try_from(value) {
            Ok(v) if !wide => Id::Integer(v),
            _ => Id::Text(value.to_string()),
        }
    }
}

/// `INCR name`: the next ID of the generator or tag `name`.
pub async fn incr(name: &str, source: &Source) -> Result<Id, Refusal> {
    let ids = source.next(1).await?;
    counted(name, source, ids.len());
    let id = match ids {
        Ids::Runs(runs) => runs.first().map(|r| Id::of(source, r.first)),
        Ids::Text(text) => text.into_iter().next().map(Id::Text),
    };
    id.ok_or_else(|| Refusal::from(Error::unavailable(format!("{name:?} issued no ID"))))
}

/// `INCRBY name n`: `n` new consecutive IDs of `name` (1 to `max_count`), answered with the
/// last.
pub async fn incr_by(name: &str, source: &Source, n: i64, max_count: u64) -> Result<Id, Refusal> {
    let n = u64::try_from(n)
        .ok()
        .filter(|n| (1..=max_count).contains(n))
        .ok_or_else(|| {
            Refusal::err(format!(
                "INCRBY takes a count from 1 to {max_count} (limits.max_count), got {n}: IDs \
                 only go up, and the reply r means the IDs r-n+1 to r are yours"
            ))
        })?;
    if n == 1 {
        // One ID is a run of one whatever the kind: redis-py's `incr(name)` sends this.
        return incr(name, source).await;
    }
    let last = match source {
        Source::Segment(segment) => segment_run(name, segment, n).await?,
        // A plain counter's batch, and a timestamp oracle's (one allocation), are one run.
        Source::Counter(_) | Source::Tso(_) if crate::format::is_64_bit(source) => {
            let ids = source.next(n).await?;
            counted(name, source, ids.len());
            one_run_last(&ids, n).ok_or_else(|| {
                Refusal::from(Error::unavailable(format!(
                    "{name:?} returned {n} IDs that are not one consecutive run; they are \
                     skipped: try again"
                )))
            })?
        }
        other => return Err(not_consecutive(name, other)),
    };
    Ok(Id::of(source, last))
}

/// `SNOWFLAKE name format`: one ID of `source` (a 64-bit kind), written in `format`. The
/// format, and the generator's key for an obfuscated one, are checked before the ID is
/// issued.
pub async fn formatted(
    generators: &Generators,
    name: &str,
    source: &Source,
    format: &str,
) -> Result<Id, Refusal> {
    let format = crate::format::parse(format)?;
    let codec = crate::format::number_codec(generators, name, source, format)?;
    let ids = source.next(1).await?;
    counted(name, source, ids.len());
    let id = match ids {
        Ids::Runs(runs) => runs.first().map(|r| r.first),
        Ids::Text(_) => None,
    }
    .ok_or_else(|| Refusal::from(Error::unavailable(format!("{name:?} issued no ID"))))?;
    Ok(Id::Text(crate::format::encode(name, &codec, id)?))
}

/// `SNOWFLAKE [name]`: the snowflake generator `name` (the default one when `None`) and
/// its source.
pub fn snowflake_source(
    generators: &Generators,
    name: Option<&str>,
) -> Result<(String, std::sync::Arc<Source>), Refusal> {
    let Some(name) = name else {
        return generators
            .default_snowflake()
            .map(|(n, s)| (n.to_string(), s))
            .ok_or_else(|| {
                Refusal::err(
                    "this server has no snowflake generator; add a [[generator]] of kind \
                     \"snowflake\", or use INCR on a tag",
                )
            });
    };
    let source = generators.get(name)?;
    match source.kind() {
        Kind::Snowflake => Ok((name.to_string(), source)),
        kind if generators.is_generator(name) => Err(Refusal::wrong_type(format!(
            "generator {name:?} is of kind {}, not snowflake; use INCR {name}",
            kind.as_str()
        ))),
        _ => Err(Refusal::err(format!(
            "no snowflake generator is named {name:?}; SNOWFLAKE without a name uses the \
             default one"
        ))),
    }
}

/// The last of `n` consecutive IDs of one segment of `segment`'s tag.
async fn segment_run(name: &str, segment: &SegmentSource, n: u64) -> Result<u64, Refusal> {
    let service = segment.service();
    if service.store().backend() == "striped" {
        return Err(Refusal::wrong_type(format!(
            "{name:?} is served from striped stores, so its IDs step by the number of \
             stores: no n of them are consecutive; use INCR, or the HTTP/gRPC API for batches"
        )));
    }
    for _ in 0..SEGMENT_TRIES {
        let range = service.next(segment.tag(), n).await.map_err(Error::from)?;
        crate::metrics::issued(name, Kind::Segment, range.len());
        if range.len() == n && range.stride <= 1 {
            return Ok(range.nth(n - 1));
        }
    }
    let step = match service.get_tag(segment.tag()).await {
        Ok(tag) => format!(" (its step is {})", tag.step),
        Err(_) => String::new(),
    };
    Err(Refusal::err(format!(
        "INCRBY {name} {n}: {SEGMENT_TRIES} segments in a row held fewer than {n} IDs; a \
         count above the tag's step{step} never fits one segment: ask for fewer, or raise the \
         step"
    )))
}

/// The last ID of `ids` when they are `n` IDs in one run of stride 1.
fn one_run_last(ids: &Ids, n: u64) -> Option<u64> {
    match ids {
        Ids::Runs(runs) => match runs.as_slice() {
            [run] if run.count == n && run.stride == 1 => Some(run.first + (n - 1)),
            _ => None,
        },
        Ids::Text(_) => None,
    }
}

fn not_consecutive(name: &str, source: &Source) -> Refusal {
    let kind = source.kind().as_str();
    let why = match source.kind() {
        Kind::Snowflake => "a batch of snowflake IDs may span clock ticks, so it is not one run",
        Kind::Ticket => "ticket servers take turns, so a batch is not one run",
        Kind::Counter => "its IDs are text, rendered through a template",
        Kind::ZkVersion => {
            "each ID is one write of its znode, and other nodes' writes to it interleave, so \
             a batch is not one run"
        }
        _ => "its IDs are text, not a counter",
    };
    Refusal::wrong_type(format!(
        "INCRBY needs n consecutive IDs, and {name:?} is of kind {kind}: {why}; use INCR for \
         one ID, or the HTTP/gRPC API for batches"
    ))
}

/// Counts issued IDs in the same metrics as the HTTP and gRPC APIs.
fn counted(name: &str, source: &Source, count: u64) {
    crate::metrics::issued(name, source.kind(), count);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::IdRun;

    #[test]
    fn only_one_run_of_stride_one_has_a_last() {
        let run = |first, count, stride| IdRun {
            first,
            count,
            stride,
        };
        assert_eq!(one_run_last(&Ids::Runs(vec![run(5, 3, 1)]), 3), Some(7));
        assert_eq!(one_run_last(&Ids::Runs(vec![run(5, 3, 2)]), 3), None);
        assert_eq!(one_run_last(&Ids::Runs(vec![run(5, 2, 1)]), 3), None);
        assert_eq!(
            one_run_last(&Ids::Runs(vec![run(5, 2, 1), run(9, 1, 1)]), 3),
            None
        );
        assert_eq!(one_run_last(&Ids::Text(vec!["a".into()]), 1), None);
    }
}
