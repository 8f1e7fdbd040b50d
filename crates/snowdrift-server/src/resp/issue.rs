//! `INCR`, `INCRBY` and `SNOWFLAKE`: IDs from the server's generators, as replies.
//!
//! `SNOWFLAKE name format` answers a bulk string in the format (`base62`,
//! `obfuscated-sqids`, ...); `INCR` and `INCRBY` always answer as Redis does, so they take
//! no format.
//!
//! `INCRBY name n` keeps Redis' meaning: the counter moves up by `n` and the reply is its
//! new value, so the caller owns the `n` IDs `(reply - n, reply]`. That holds only where a
//! batch is one consecutive run: each kind says whether it can give one
//! ([`IdSource::consecutive`]); the others are refused with `-WRONGTYPE` before anything is
//! issued. `INCRBY name 1` is `INCR name` for every kind, as redis-py's `r.incr(name)` sends
//! it.

use crate::error::Error;
use crate::kinds::{Consecutive, IdSource, Ids, Source};
use crate::state::Generators;

use super::refusal::Refusal;
use super::reply;

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
        match i64::try_from(value) {
            Ok(v) if !source.wide() => Id::Integer(v),
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
    let last = match source.consecutive(name, n).await? {
        Consecutive::Last(last) => last,
        Consecutive::Never(why) => return Err(not_consecutive(name, source, &why)),
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
    if source.snowflake().is_some() {
        return Ok((name.to_string(), source));
    }
    if generators.is_generator(name) {
        return Err(Refusal::wrong_type(format!(
            "generator {name:?} is of kind {}, not snowflake; use INCR {name}",
            source.kind().as_str()
        )));
    }
    Err(Refusal::err(format!(
        "no snowflake generator is named {name:?}; SNOWFLAKE without a name uses the default \
         one"
    )))
}

fn not_consecutive(name: &str, source: &Source, why: &str) -> Refusal {
    Refusal::wrong_type(format!(
        "INCRBY needs n consecutive IDs, and {name:?} is of kind {}: {why}; use INCR for one \
         ID, or the HTTP/gRPC API for batches",
        source.kind().as_str()
    ))
}

/// Counts issued IDs in the same metrics as the HTTP and gRPC APIs.
fn counted(name: &str, source: &Source, count: u64) {
    crate::metrics::issued(name, source.kind(), count);
}
