//! What a follower checks in the leader's answers before it serves them: why it refuses
//! ([`Refusal`]), and what it has served ([`Served`]), which every answer must be above.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use snowdrift_core::segment::IdRange;

/// Why a follower refused to forward, or refused what the leader answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The leader is plain `http://` and this node would have to send its
    /// `forward_token` in cleartext (`forward_plaintext` is off).
    PlaintextToken,
    /// The answer names another term than the leader key does (or none).
    Term,
    /// Not one run of exactly the count asked for, of kind tso.
    Shape,
    /// IDs that wrap past 2^64, are not tso IDs (2^63 and up), or lie further in the
    /// future than any leader could have reached.
    OutOfRange,
    /// IDs not above everything this node had served when it asked.
    NotAbove,
}

impl Refusal {
    /// Every reason, in the order of [`TsoReport::refused`](super::TsoReport::refused).
    pub const ALL: [Refusal; 5] = [
        Refusal::PlaintextToken,
        Refusal::Term,
        Refusal::Shape,
        Refusal::OutOfRange,
        Refusal::NotAbove,
    ];

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::PlaintextToken => "plaintext_token",
            Refusal::Term => "term",
            Refusal::Shape => "shape",
            Refusal::OutOfRange => "out_of_range",
            Refusal::NotAbove => "not_above_served",
        }
    }
}

/// What this node has served of one oracle, to check the leader's answers against: an
/// answer must be above everything served before it was asked for (a leader allocates
/// after it is asked), and must not overlap anything served while it was on its way
/// (two calls are in flight at once, and their answers may arrive in either order).
#[derive(Debug, Default)]
pub(crate) struct Served {
    /// One past the largest ID this node served, as leader or follower (0: none yet).
    top: AtomicU64,
    /// The runs accepted from the leader, newest last, numbered.
    recent: Mutex<Accepted>,
}

#[derive(Debug, Default)]
struct Accepted {
    /// How many runs were ever accepted.
    count: u64,
    /// The last few: (number, start, end).
    runs: VecDeque<(u64, u64, u64)>,
}

/// Runs kept to check concurrent answers against; an answer whose call outlived more
/// accepted runs than this must be above all of them.
const RECENT_RUNS: usize = 64;

/// What a call saw when it was sent: [`Served::mark`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServedMark {
    top: u64,
    accepted: u64,
}

impl Served {
    /// Records IDs this node issued as leader.
    pub(crate) fn issued(&self, range: &IdRange) {
        self.top.fetch_max(range.end, Ordering::Relaxed);
    }

    /// Before a call to the leader is sent.
    pub(crate) fn mark(&self) -> ServedMark {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        ServedMark {
            top: self.top.load(Ordering::Relaxed),
            accepted: recent.count,
        }
    }

    /// Accepts `range`, the answer to a call sent at `mark`, or says why not.
    pub(crate) fn accept(&self, mark: ServedMark, range: &IdRange) -> Result<(), String> {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if range.start < mark.top {
            return Err(format!(
                "it starts at {}, not above {}, the largest ID this node had served when it asked",
                range.start,
                mark.top - 1
            ));
        }
        let since = recent.count - mark.accepted;
        if since as usize > recent.runs.len() {
            // Too many answers came meanwhile to check against each: above them all.
            let top = self.top.load(Ordering::Relaxed);
            if range.start < top {
                return Err(format!(
                    "it starts at {}, not above {}, the largest ID this node has served",
                    range.start,
                    top - 1
                ));
            }
        } else if let Some((_, s, e)) = recent
            .runs
            .iter()
            .rev()
            .take(since as usize)
            .find(|(_, s, e)| range.start < *e && *s < range.end)
        {
            return Err(format!(
                "its IDs {}..{} overlap {s}..{e}, which this node served meanwhile",
                range.start, range.end
            ));
        }
        recent.count += 1;
        let n = recent.count;
        recent.runs.push_back((n, range.start, range.end));
        if recent.runs.len() > RECENT_RUNS {
            recent.runs.pop_front();
        }
        self.top.fetch_max(range.end, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_must_be_above_what_was_served_when_it_was_asked_for() {
        let served = Served::default();
        served.issued(&IdRange::new(100, 110));
        let mark = served.mark();
        let e = served.accept(mark, &IdRange::new(105, 115)).unwrap_err();
        assert!(e.contains("not above 109"), "{e}");
        served.accept(mark, &IdRange::new(110, 120)).unwrap();
        // The same run again, asked for after it was served.
        let e = served
            .accept(served.mark(), &IdRange::new(110, 120))
            .unwrap_err();
        assert!(e.contains("not above 119"), "{e}");
    }

    #[test]
    fn concurrent_answers_may_arrive_in_either_order_but_never_overlap() {
        let served = Served::default();
        // Two calls in flight at once; the leader allocates the first before the second,
        // but the second's answer arrives first.
        let (first, second) = (served.mark(), served.mark());
        served.accept(second, &IdRange::new(20, 30)).unwrap();
        served.accept(first, &IdRange::new(10, 20)).unwrap();
        // A third call, in flight with both, answered with IDs one of them got.
        let third = first;
        let e = served.accept(third, &IdRange::new(25, 35)).unwrap_err();
        assert!(e.contains("overlap 20..30"), "{e}");
        // A call that outlived more answers than are kept must be above them all.
        let old = served.mark();
        for i in 0..RECENT_RUNS as u64 + 1 {
            served
                .accept(served.mark(), &IdRange::new(1000 + i * 10, 1010 + i * 10))
                .unwrap();
        }
        let e = served.accept(old, &IdRange::new(40, 50)).unwrap_err();
        assert!(e.contains("largest ID this node has served"), "{e}");
    }
}
