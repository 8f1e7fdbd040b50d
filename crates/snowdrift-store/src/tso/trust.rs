//! What a follower checks in the leader's answers before it serves them: why it refuses
//! ([`Refusal`]), what it has served ([`Served`]), which every answer must be above, and
//! the check itself ([`check_answer`]): the term the leader key names, one run of exactly
//! the count asked for, no wrap, within reach of the follower's clock, above what it had
//! served when it asked.
//!
//! The server runs it on every answer its follower gets over gRPC; the simulator
//! (`crates/snowdrift-sim`) on every answer of its simulated network: one check, not two.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use snowdrift_core::segment::IdRange;
use snowdrift_core::tso::TsoConfig;

use crate::worker::mistakes::{Mistake, planted};

/// How far past the follower's clock (beyond the window a leader saves ahead) the leader's
/// IDs may lie: room for the nodes' clocks to disagree. An answer further ahead is no
/// leader's, and taking it would make this node refuse the real leader until its clock
/// caught up.
pub const MAX_AHEAD_MS: u64 = 60_000;

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
    /// Every reason, in the order the server's report counts them.
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
pub struct Served {
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
pub struct ServedMark {
    top: u64,
    accepted: u64,
}

impl Served {
    /// Records IDs this node issued as leader.
    pub fn issued(&self, range: &IdRange) {
        self.top.fetch_max(range.end, Ordering::Relaxed);
    }

    /// Before a call to the leader is sent.
    pub fn mark(&self) -> ServedMark {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        ServedMark {
            top: self.top.load(Ordering::Relaxed),
            accepted: recent.count,
        }
    }

    /// Accepts `range`, the answer to a call sent at `mark`, or says why not.
    pub fn accept(&self, mark: ServedMark, range: &IdRange) -> Result<(), String> {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if planted(Mistake::AcceptFollowerAnswerBelowServed) {
            // The planted mistake: the answer is taken without comparing it with what this
            // node served.
            recent.record(&self.top, range);
            return Ok(());
        }
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
        recent.record(&self.top, range);
        Ok(())
    }
}

impl Accepted {
    /// Notes `range` as accepted, and raises `top` past it.
    fn record(&mut self, top: &AtomicU64, range: &IdRange) {
        self.count += 1;
        let n = self.count;
        self.runs.push_back((n, range.start, range.end));
        if self.runs.len() > RECENT_RUNS {
            self.runs.pop_front();
        }
        top.fetch_max(range.end, Ordering::Relaxed);
    }
}

/// One run of IDs in a leader's answer: `count` IDs from `first`, `stride` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnsweredRun {
    /// The first ID.
    pub first: u64,
    /// How many.
    pub count: u64,
    /// The step between two of them (a tso leader answers 1).
    pub stride: u64,
}

/// What the leader answered one call, as the follower read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderAnswer {
    /// The term the leader named in its answer (`None`: it named none).
    pub term: Option<i64>,
    /// The runs of IDs it answered.
    pub runs: Vec<AnsweredRun>,
    /// The kind its answer says the IDs are of, for the message when it is not tso.
    pub kind: String,
    /// Whether that kind is tso.
    pub is_tso: bool,
}

/// What the follower asked the leader for.
#[derive(Debug, Clone, Copy)]
pub struct Asked {
    /// The term the leader key named when the call was sent.
    pub term: i64,
    /// How many IDs.
    pub count: u64,
    /// What the follower had served when the call was sent ([`Served::mark`]).
    pub mark: ServedMark,
}

/// An answer refused: why, and what was wrong with it (for the follower's message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The reason.
    pub why: Refusal,
    /// What was wrong, in words.
    pub problem: String,
}

/// The IDs of the leader's `answer` to `asked`, once it passed every check: the term the
/// leader key names, one run of exactly the count asked for, of kind tso, no wrap, its last
/// ID a tso ID of `oracle` no further ahead of `now_ms` (the follower's clock) than a leader
/// could be, above what the follower had `served` when it asked (which then counts it as
/// served). A [`Refusal::Term`] with a term named is a node that no longer leads (ask again
/// as the election says); every other refusal is a peer that is no snowdrift leader of this
/// oracle.
pub fn check_answer(
    asked: &Asked,
    answer: &LeaderAnswer,
    oracle: &TsoConfig,
    now_ms: u64,
    served: &Served,
) -> Result<IdRange, Refused> {
    let refuse = |why, problem: String| Err(Refused { why, problem });
    let count = asked.count;
    match answer.term {
        Some(t) if t == asked.term => {}
        Some(t) => {
            return refuse(
                Refusal::Term,
                format!(
                    "it answered in term {t}, but the leader key names term {}",
                    asked.term
                ),
            );
        }
        None => {
            return refuse(
                Refusal::Term,
                format!(
                    "it named no term (the leader key names term {}); it is not a snowdrift \
                     leader of this version",
                    asked.term
                ),
            );
        }
    }
    // One consecutive run of exactly `count`; anything else is a peer that is not a
    // snowdrift tso leader of this generator.
    let first = match answer.runs.as_slice() {
        [run] if run.count == count && run.stride == 1 && answer.is_tso => run.first,
        _ => {
            return refuse(
                Refusal::Shape,
                format!(
                    "{} runs of kind {} ({:?} IDs), not one run of {count} tso IDs: is it a \
                     snowdrift server with the same generator?",
                    answer.runs.len(),
                    answer.kind,
                    answer.runs.iter().map(|r| r.count).collect::<Vec<_>>()
                ),
            );
        }
    };
    let Some(end) = first.checked_add(count) else {
        return refuse(
            Refusal::OutOfRange,
            format!("{count} IDs from {first} wrap past 2^64"),
        );
    };
    let range = IdRange::new(first, end);
    if let Err(problem) = in_reach(&range, oracle, now_ms) {
        return refuse(Refusal::OutOfRange, problem);
    }
    if let Err(problem) = served.accept(asked.mark, &range) {
        return refuse(Refusal::NotAbove, problem);
    }
    Ok(range)
}

/// `Ok` when the last ID of `range` is a tso ID of `oracle` no further ahead of `now_ms`
/// than a leader could be (its window, and clocks that disagree by up to a minute).
fn in_reach(range: &IdRange, oracle: &TsoConfig, now_ms: u64) -> Result<(), String> {
    let last = range.end - 1;
    let parts = oracle
        .decode(last)
        .map_err(|e| format!("{last} is not a tso ID ({e})"))?;
    let reach = now_ms
        .saturating_add(oracle.window_ms)
        .saturating_add(MAX_AHEAD_MS);
    if parts.physical_ms > reach {
        return Err(format!(
            "{last} is from {}, {} s past this node's clock: further ahead than any leader \
             could be",
            snowdrift_core::layout::format_ms(parts.physical_ms),
            (parts.physical_ms - now_ms) / 1000
        ));
    }
    Ok(())
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

    #[test]
    fn check_answer_refuses_each_kind_of_wrong_answer_and_serves_a_right_one() {
        let oracle = TsoConfig::default();
        let now_ms = 1_800_000_000_000;
        let id = |ms: u64| oracle.compose(ms, 0).unwrap();
        let served = Served::default();
        served.issued(&IdRange::new(id(now_ms), id(now_ms) + 5));
        let asked = Asked {
            term: 7,
            count: 2,
            mark: served.mark(),
        };
        let answer = |term, first, count, stride| LeaderAnswer {
            term,
            runs: vec![AnsweredRun {
                first,
                count,
                stride,
            }],
            kind: "tso".into(),
            is_tso: true,
        };
        let why = |a: &LeaderAnswer| check_answer(&asked, a, &oracle, now_ms, &served).unwrap_err();
        let above = id(now_ms + 1);
        assert_eq!(why(&answer(Some(8), above, 2, 1)).why, Refusal::Term);
        assert!(
            why(&answer(None, above, 2, 1))
                .problem
                .contains("named no term")
        );
        assert_eq!(why(&answer(Some(7), above, 3, 1)).why, Refusal::Shape);
        assert_eq!(why(&answer(Some(7), above, 2, 2)).why, Refusal::Shape);
        assert_eq!(
            why(&answer(Some(7), u64::MAX, 2, 1)).why,
            Refusal::OutOfRange
        );
        let far = id(now_ms + oracle.window_ms + MAX_AHEAD_MS + 1_000);
        assert_eq!(why(&answer(Some(7), far, 2, 1)).why, Refusal::OutOfRange);
        assert_eq!(
            why(&answer(Some(7), id(now_ms), 2, 1)).why,
            Refusal::NotAbove
        );
        let ok = check_answer(
            &asked,
            &answer(Some(7), above, 2, 1),
            &oracle,
            now_ms,
            &served,
        );
        assert_eq!(ok, Ok(IdRange::new(above, above + 2)));
    }
}
