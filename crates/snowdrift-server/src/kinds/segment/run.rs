//! `INCRBY` on a tag: `n` IDs in a row from one segment, answered with the last.

use crate::config::Kind;
use crate::error::Error;
use crate::kinds::Consecutive;

use super::SegmentSource;

/// How many segments `INCRBY` tries for one that still holds `n` IDs in a row. A
/// segment's tail too short for `n` is skipped (a gap, never a duplicate); two more tries
/// reach a fresh segment even when other requests take from it meanwhile.
const SEGMENT_TRIES: usize = 3;

/// The last of `n` consecutive IDs of one segment of `segment`'s tag, served as `name`.
pub(super) async fn consecutive(
    segment: &SegmentSource,
    name: &str,
    n: u64,
) -> Result<Consecutive, Error> {
    let service = segment.service();
    if service.store().backend() == "striped" {
        return Ok(Consecutive::Never(
            "it is served from striped stores, so its IDs step by the number of stores: no n \
             of them are consecutive"
                .into(),
        ));
    }
    // Starts the tag's buffer if needed and says which kind of tag it is, issuing nothing.
    match service.buffer(segment.tag()).await {
        Err(snowdrift_store::Error::TagTemplated { .. }) => {
            return Ok(Consecutive::Never(
                "its numbers are text, rendered through the tag's template".into(),
            ));
        }
        other => {
            other?;
        }
    }
    for _ in 0..SEGMENT_TRIES {
        let range = service.next(segment.tag(), n).await?;
        crate::metrics::issued(name, Kind::Segment, range.len());
        if range.len() == n && range.stride <= 1 {
            return Ok(Consecutive::Last(range.nth(n - 1)));
        }
    }
    let step = match service.get_tag(segment.tag()).await {
        Ok(tag) => format!(" (its step is {})", tag.step),
        Err(_) => String::new(),
    };
    // A request's count, not the store, is at fault: Redis clients get ERR, not TRYAGAIN.
    Err(Error::invalid(format!(
        "INCRBY {name} {n}: {SEGMENT_TRIES} segments in a row held fewer than {n} IDs; a \
         count above the tag's step{step} never fits one segment: ask for fewer, or raise the \
         step"
    )))
}
