//! Segments bound to a period: what a segment tag with a template (`ORD{date:%Y%m%d}{seq:06}`)
//! serves. Its sequence numbers start again from 1 each period the template names, so a
//! segment is good only in the period it was claimed for, and a clock reading decides both
//! whether a segment may still be served and the date its numbers are rendered with.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{RwLock, RwLockReadGuard};

use super::{ChainConfig, ChainStatus, IdRange, SegmentChain, Take};
use crate::clock::Clock;
use crate::counter::{CounterTemplate, PeriodSpan};
use crate::error::{Error, Result};

/// The segments of one tag with a template, for the period they were claimed in.
///
/// It holds one [`SegmentChain`] for one period at a time. A caller takes sequence numbers
/// with [`take`](Self::take), which reads the clock before and after taking: numbers are
/// handed out only while the clock is inside the chain's period, and come with the clock
/// reading they are to be rendered with, so a number and its date always belong to the same
/// period. At the period's end the chain serves nothing until the refill
/// [`push`](Self::push)es a segment claimed for the new period, which replaces the old
/// chain and everything it still held (a gap in a period that is over, never a number
/// served after its period). A chain the store says is over before this node's clock does
/// (another node moved the tag on) is [`close`](Self::close)d: it serves nothing more.
///
/// No I/O: the store layer asks [`wanted`](Self::wanted) what to claim, claims it durably,
/// and pushes it.
///
/// ```
/// use snowdrift_core::clock::ManualClock;
/// use snowdrift_core::counter::CounterTemplate;
/// use snowdrift_core::segment::{ChainConfig, DatedChain, DatedTake, IdRange, Wanted};
/// let template = CounterTemplate::parse("ORD{date:%Y%m%d}{seq:04}")?;
/// let chain = DatedChain::new(ChainConfig::default(), template)?;
/// let clock = ManualClock::new(1_795_391_999_000); // 2026-11-22T23:59:59Z
/// let Wanted::Claim(day) = chain.wanted(clock.now_ms())? else { unreachable!() };
/// chain.push(day, IdRange::new(1, 101))?; // claimed for 20261122 in the store
/// let DatedTake::Ready { ids, .. } = chain.take(2, &clock) else { unreachable!() };
/// assert_eq!(ids.render(chain.template())?, ["ORD202611220001", "ORD202611220002"]);
/// clock.advance(1_000); // midnight: the rest of the 22nd is never served
/// assert!(matches!(chain.take(1, &clock), DatedTake::Empty));
/// let Wanted::Claim(next) = chain.wanted(clock.now_ms())? else { unreachable!() };
/// assert_eq!(next.key, 20261123);
/// # use snowdrift_core::clock::Clock;
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug)]
pub struct DatedChain {
    template: CounterTemplate,
    config: ChainConfig,
    /// Read for every take (held for the take only); written when a new period begins.
    current: RwLock<Current>,
}

#[derive(Debug)]
struct Current {
    /// `None` until the first segment is pushed.
    span: Option<PeriodSpan>,
    chain: SegmentChain,
    /// The store has moved past this period: serve nothing more of it.
    closed: AtomicBool,
}

/// Sequence numbers of one period, taken at one instant: what [`DatedChain::take`] hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatedIds {
    /// The sequence numbers (1 is the period's first).
    pub seqs: IdRange,
    /// The period they were claimed in.
    pub span: PeriodSpan,
    /// The clock reading they were taken at, inside `span`: render them with it.
    pub at_ms: u64,
}

impl DatedIds {
    /// The numbers rendered through `template` at [`at_ms`](Self::at_ms).
    pub fn render(&self, template: &CounterTemplate) -> Result<Vec<String>> {
        let at = template.at(self.at_ms)?;
        self.seqs.iter().map(|seq| at.render(seq)).collect()
    }
}

/// The result of [`DatedChain::take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum DatedTake {
    /// Numbers for the caller, all of one segment of the period the clock is in. When
    /// `refill` is true the take crossed the prefetch point: wake the refill.
    Ready {
        /// The numbers and the instant to render them at.
        ids: DatedIds,
        /// Whether the refill should be woken.
        refill: bool,
    },
    /// Nothing to serve for the period the clock is in (none claimed yet, the segments used
    /// up, the period over or closed): wake the refill and wait for a push.
    Empty,
}

/// What the refill should do next, from [`DatedChain::wanted`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// The chain holds enough for the clock's period.
    Nothing,
    /// Claim a segment for this period: more of the current one, or the first of the
    /// period the clock has moved into.
    Claim(PeriodSpan),
    /// Claim nothing before the clock reads this instant (ms since 1970): the store has
    /// moved past the clock's period (another node's clock is ahead), or the clock reads
    /// before the period this chain has already served (it was stepped back). A claim for
    /// an earlier period than the store's is refused, so asking sooner is pointless.
    WaitUntil(u64),
}

impl DatedChain {
    /// An empty chain serving numbers rendered through `template`.
    pub fn new(config: ChainConfig, template: CounterTemplate) -> Result<Self> {
        let chain = SegmentChain::new(config)?;
        Ok(Self {
            template,
            config,
            current: RwLock::new(Current {
                span: None,
                chain,
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// The template numbers are rendered through.
    pub fn template(&self) -> &CounterTemplate {
        &self.template
    }

    fn read(&self) -> RwLockReadGuard<'_, Current> {
        // `Current` is replaced whole under the write lock: a panic cannot leave it half set.
        self.current.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Up to `n` numbers (`n` >= 1) of one segment, if the clock is inside the period the
    /// chain holds. The clock is read again after the take; numbers taken as the period
    /// ended are dropped (never served: their period is over) and the take is `Empty`.
    #[inline]
    pub fn take(&self, n: u64, clock: &impl Clock) -> DatedTake {
        let current = self.read();
        let Some(span) = current.span else {
            return DatedTake::Empty;
        };
        if !span.contains(clock.now_ms()) || current.closed.load(Ordering::Acquire) {
            return DatedTake::Empty;
        }
        let Take::Ready { ids, refill } = current.chain.take(n) else {
            return DatedTake::Empty;
        };
        let at_ms = clock.now_ms();
        if !span.contains(at_ms) || current.closed.load(Ordering::Acquire) {
            return DatedTake::Empty;
        }
        DatedTake::Ready {
            ids: DatedIds {
                seqs: ids,
                span,
                at_ms,
            },
            refill,
        }
    }

    /// What the refill should claim when the clock reads `now_ms`. Fails only for a clock
    /// the template cannot show (past the year 9999).
    pub fn wanted(&self, now_ms: u64) -> Result<Wanted> {
        let now = self.template.period_span(now_ms)?;
        let current = self.read();
        Ok(match current.span {
            None => Wanted::Claim(now),
            Some(span) if span.key < now.key => Wanted::Claim(now),
            Some(span) if span.key > now.key => Wanted::WaitUntil(span.start_ms),
            Some(span) if current.closed.load(Ordering::Acquire) => Wanted::WaitUntil(span.end_ms),
            Some(span) if current.chain.wanted() > 0 => Wanted::Claim(span),
            Some(_) => Wanted::Nothing,
        })
    }

    /// Adds a segment the store claimed durably for period `span`. A segment of the period
    /// held goes into its chain; one of a later period replaces the chain, dropping what it
    /// held; one of an earlier period is refused (the chain never goes back).
    pub fn push(&self, span: PeriodSpan, ids: IdRange) -> Result<()> {
        {
            let current = self.read();
            match current.span {
                Some(held) if held.key == span.key => return current.chain.push(ids),
                Some(held) if held.key > span.key => {
                    return Err(Error::InvalidConfig(format!(
                        "a segment of period {} arrived after period {} began; it is dropped \
                         (a gap, never a number served out of its period)",
                        span.key, held.key
                    )));
                }
                _ => {}
            }
        }
        let chain = SegmentChain::new(self.config)?;
        chain.push(ids)?;
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        // The refill is this chain's only writer, so nothing newer was installed meanwhile;
        // checked anyway, since going back would serve an ended period.
        if current.span.is_some_and(|held| held.key >= span.key) {
            return Err(Error::InvalidConfig(format!(
                "period {} was replaced while a segment of it was pushed",
                span.key
            )));
        }
        *current = Current {
            span: Some(span),
            chain,
            closed: AtomicBool::new(false),
        };
        Ok(())
    }

    /// Stops serving period `key` if the chain holds it: the store has moved past it. True
    /// when it did.
    pub fn close(&self, key: i64) -> bool {
        let current = self.read();
        let held = current.span.is_some_and(|s| s.key == key);
        if held {
            current.closed.store(true, Ordering::Release);
        }
        held
    }

    /// The period held (`None` before the first push), whether it is closed, and what its
    /// chain holds.
    pub fn status(&self) -> DatedStatus {
        let current = self.read();
        DatedStatus {
            span: current.span,
            closed: current.closed.load(Ordering::Acquire),
            chain: current.chain.status(),
        }
    }
}

/// What a [`DatedChain`] holds, for status pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatedStatus {
    /// The period held, once a segment was pushed.
    pub span: Option<PeriodSpan>,
    /// True when the store has moved past it.
    pub closed: bool,
    /// The period's segments.
    pub chain: ChainStatus,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    /// 2026-11-22T00:00:00Z.
    const NOV22: u64 = 1_795_305_600_000;
    const DAY: u64 = 86_400_000;

    fn chain(text: &str) -> DatedChain {
        DatedChain::new(
            ChainConfig::default(),
            CounterTemplate::parse(text).unwrap(),
        )
        .unwrap()
    }

    fn claim(chain: &DatedChain, clock: &ManualClock) -> PeriodSpan {
        match chain.wanted(clock.now_ms()).unwrap() {
            Wanted::Claim(span) => span,
            other => panic!("wanted {other:?}"),
        }
    }

    fn ready(take: DatedTake) -> DatedIds {
        match take {
            DatedTake::Ready { ids, .. } => ids,
            DatedTake::Empty => panic!("empty"),
        }
    }

    #[test]
    fn numbers_are_served_only_inside_their_period() {
        let c = chain("{date:%Y%m%d}-{seq}");
        let clock = ManualClock::new(NOV22 + DAY - 10);
        assert_eq!(c.take(1, &clock), DatedTake::Empty, "nothing before a push");
        let day = claim(&c, &clock);
        assert_eq!(day.key, 20261122);
        c.push(day, IdRange::new(1, 1001)).unwrap();
        let ids = ready(c.take(3, &clock));
        assert_eq!(ids.seqs, IdRange::new(1, 4));
        assert_eq!(ids.at_ms, NOV22 + DAY - 10);
        assert_eq!(
            ids.render(c.template()).unwrap(),
            ["20261122-1", "20261122-2", "20261122-3"]
        );
        clock.set(NOV22 + DAY);
        assert_eq!(c.take(1, &clock), DatedTake::Empty, "997 left, none served");
        let next = claim(&c, &clock);
        assert_eq!(next.key, 20261123);
        c.push(next, IdRange::new(1, 11)).unwrap();
        let ids = ready(c.take(2, &clock));
        assert_eq!(
            ids.render(c.template()).unwrap(),
            ["20261123-1", "20261123-2"]
        );
        assert_eq!(
            c.status().chain.ids_ahead + c.status().chain.current_left,
            8
        );
        // The old period never comes back, even pushed late.
        assert!(c.push(day, IdRange::new(1001, 2001)).is_err());
    }

    /// A clock that crosses the boundary between the check and the take: what was taken
    /// is dropped, not rendered with a date of the next period.
    #[test]
    fn a_take_that_straddles_the_boundary_is_dropped() {
        struct Crossing(ManualClock, std::sync::atomic::AtomicU32);
        impl Clock for Crossing {
            fn now_ms(&self) -> u64 {
                let reads = self.1.fetch_add(1, Ordering::SeqCst);
                if reads == 1 {
                    self.0.set(NOV22 + DAY);
                }
                self.0.now_ms()
            }
        }
        let c = chain("{date:%Y%m%d}-{seq}");
        let clock = Crossing(ManualClock::new(NOV22 + DAY - 1), Default::default());
        c.push(
            c.template().period_span(NOV22).unwrap(),
            IdRange::new(1, 11),
        )
        .unwrap();
        assert_eq!(c.take(1, &clock), DatedTake::Empty);
        assert_eq!(c.status().chain.current_left, 9, "the one taken is gone");
    }

    #[test]
    fn a_closed_period_serves_nothing_and_waits_for_its_end() {
        let c = chain("{date:%Y%m%d}-{seq}");
        let clock = ManualClock::new(NOV22 + 5);
        let day = claim(&c, &clock);
        c.push(day, IdRange::new(1, 101)).unwrap();
        assert!(!c.close(day.key + 1), "another period: nothing closed");
        assert!(c.close(day.key));
        assert_eq!(c.take(1, &clock), DatedTake::Empty);
        assert_eq!(
            c.wanted(clock.now_ms()).unwrap(),
            Wanted::WaitUntil(NOV22 + DAY)
        );
        clock.set(NOV22 + DAY);
        assert_eq!(claim(&c, &clock).key, 20261123);
    }

    #[test]
    fn a_clock_set_back_before_the_held_period_waits_for_it() {
        let c = chain("{date:%Y%m%d%H}-{seq}");
        let clock = ManualClock::new(NOV22 + 3_600_000);
        let hour = claim(&c, &clock);
        c.push(hour, IdRange::new(1, 101)).unwrap();
        clock.step_back(1);
        assert_eq!(c.take(1, &clock), DatedTake::Empty);
        assert_eq!(
            c.wanted(clock.now_ms()).unwrap(),
            Wanted::WaitUntil(hour.start_ms)
        );
    }

    #[test]
    fn wanted_follows_the_chain_within_a_period() {
        let c = chain("{seq:04}");
        let clock = ManualClock::new(NOV22);
        let span = claim(&c, &clock);
        assert_eq!((span.key, span.end_ms), (0, u64::MAX));
        c.push(span, IdRange::new(1, 11)).unwrap();
        // One segment, below the prefetch point: Leaf's double buffer wants one more.
        assert_eq!(c.wanted(clock.now_ms()).unwrap(), Wanted::Nothing);
        ready(c.take(5, &clock));
        assert_eq!(c.wanted(clock.now_ms()).unwrap(), Wanted::Claim(span));
        c.push(span, IdRange::new(11, 21)).unwrap();
        assert_eq!(c.wanted(clock.now_ms()).unwrap(), Wanted::Nothing);
    }
}
