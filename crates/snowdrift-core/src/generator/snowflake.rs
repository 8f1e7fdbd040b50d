//! The lock-free snowflake generator.

use std::sync::Arc;
use std::time::Duration;

use super::Attempt;
use super::block::IdBlock;
use super::fence::Fence;
use super::packing::Packing;
use super::ticks::UnitDivider;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::layout::{Layout, Role, format_ms, mask};
use crate::sync::{AtomicU64, Ordering};

/// State value meaning "nothing issued yet"; no ID reaches it, since IDs stay below 2^63.
const NONE: u64 = u64::MAX;

/// Default bound on waiting out a clock that stepped back: Leaf's 5 ms.
pub const DEFAULT_BACKWARD_WAIT: Duration = Duration::from_millis(5);

/// What a generator does when its clock reads earlier than the last tick it used.
///
/// Whatever the policy, an ID is never issued twice: the choice is between waiting,
/// moving to the next extension value and refusing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnBackward {
    /// Wait out a step back of up to the [`backward_wait`](Builder::backward_wait) bound;
    /// beyond it, move to the next value of the layout's extension field, so IDs go on at
    /// once and stay increasing. Without an extension field, or with every value used,
    /// refuse ([`Error::ClockBehind`]). The default.
    #[default]
    Extension,
    /// Wait out a step back of up to the bound; beyond it, refuse, even with extension
    /// bits left.
    Wait,
    /// Refuse at once, never waiting.
    Refuse,
}

impl OnBackward {
    /// The policy's name in configuration: `extension`, `wait` or `refuse`.
    pub fn name(self) -> &'static str {
        match self {
            OnBackward::Extension => "extension",
            OnBackward::Wait => "wait",
            OnBackward::Refuse => "refuse",
        }
    }
}

impl std::str::FromStr for OnBackward {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "extension" => Ok(OnBackward::Extension),
            "wait" => Ok(OnBackward::Wait),
            "refuse" => Ok(OnBackward::Refuse),
            _ => Err(Error::InvalidConfig(format!(
                "on_backward {text:?} is not a policy; use \"wait\" (wait up to backward_wait, then refuse), \"extension\" (wait up to backward_wait, then the next extension value) or \"refuse\" (never wait)"
            ))),
        }
    }
}

/// Configures a [`SnowflakeGenerator`].
///
/// ```
/// use snowdrift_core::{clock::ManualClock, generator::SnowflakeGenerator, layout::Layout};
/// let clock = ManualClock::new(1_700_000_000_000);
/// let generator = SnowflakeGenerator::builder(Layout::preset("twitter")?)
///     .node("datacenter", 1)?
///     .node("worker", 7)?
///     .build(clock)?;
/// let a = generator.next()?;
/// let b = generator.next()?;
/// assert!(b > a);
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    layout: Layout,
    node_values: Vec<u64>,
    max_lead: Duration,
    backward_wait: Duration,
    on_backward: OnBackward,
    extension: u64,
    random_start: Option<(u64, u64)>,
    start_after: Option<u64>,
    fence: Option<Arc<Fence>>,
}

impl Builder {
    /// The layout the generator will follow.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Gates every issue on `fence`: the generator issues only while its clock is before
    /// the fence's lease deadline, and never an ID whose tick ends after the fence's
    /// durable window (the high-water mark). Refusals are [`Error::NotIssuing`],
    /// [`Error::LeaseExpired`] and [`Error::WindowNotExtended`]. Without a fence (the
    /// default) nothing is checked. The generator's clock must be the one the fence's
    /// keeper computes deadlines with, and it must not step (a [`MonotonicClock`]).
    ///
    /// [`MonotonicClock`]: crate::clock::MonotonicClock
    pub fn fence(mut self, fence: Arc<Fence>) -> Self {
        self.fence = Some(fence);
        self
    }

    /// Sets one node field (`worker`, `datacenter`...). Unset node fields are 0.
    pub fn node(mut self, name: &str, value: u64) -> Result<Self> {
        let i = self.layout.field_index(name)?;
        let field = &self.layout.fields()[i];
        if field.role() != Role::Node {
            return Err(Error::InvalidConfig(format!(
                "{name:?} is not a node field of this layout; node fields: {}",
                self.node_names()
            )));
        }
        if value > field.max() {
            return Err(Error::FieldOutOfRange {
                field: name.to_string(),
                value,
                bits: field.bits(),
                max: field.max(),
            });
        }
        self.node_values[i] = value;
        Ok(self)
    }

    /// Sets all node fields at once from one number: the node fields' bits concatenated,
    /// high field first (for Twitter, `datacenter << 5 | worker`). This is the "worker ID"
    /// a registry hands out.
    pub fn node_id(mut self, id: u64) -> Result<Self> {
        let bits = self.layout.node_bits();
        if id > mask(bits as u8) {
            return Err(Error::FieldOutOfRange {
                field: format!("node id ({})", self.node_names()),
                value: id,
                bits: bits as u8,
                max: mask(bits as u8),
            });
        }
        let mut rest = bits;
        for (i, f) in self.layout.fields().iter().enumerate() {
            if f.role() == Role::Node {
                rest -= u32::from(f.bits());
                self.node_values[i] = (id >> rest) & f.max();
            }
        }
        Ok(self)
    }

    /// Lets the generator borrow up to this much future time when a tick's sequence is used
    /// up, instead of waiting (Yitter's drift, Baidu's borrowing, but bounded). Default 0:
    /// wait for the next tick. Borrowed time must be covered by the high-water mark.
    pub fn max_lead(mut self, lead: Duration) -> Self {
        self.max_lead = lead;
        self
    }

    /// How long the generator may ask callers to wait when the clock steps back. Beyond it,
    /// the extension field is bumped if the layout has one, else the call fails with
    /// [`Error::ClockBehind`]. Default 5 ms.
    pub fn backward_wait(mut self, bound: Duration) -> Self {
        self.backward_wait = bound;
        self
    }

    /// What to do when the clock steps back further than the wait bound (or at all, with
    /// [`OnBackward::Refuse`]). Default [`OnBackward::Extension`].
    pub fn on_backward(mut self, policy: OnBackward) -> Self {
        self.on_backward = policy;
        self
    }

    /// The policy set by [`on_backward`](Self::on_backward).
    pub fn backward_policy(&self) -> OnBackward {
        self.on_backward
    }

    /// The bound set by [`backward_wait`](Self::backward_wait).
    pub fn backward_bound(&self) -> Duration {
        self.backward_wait
    }

    /// The bound set by [`max_lead`](Self::max_lead): how far ahead of the clock an ID's
    /// time may be.
    pub fn lead_bound(&self) -> Duration {
        self.max_lead
    }

    /// Issues under extension value `value` from the first ID on (default 0): how a node
    /// that restarts behind its durable high-water mark goes on at once, above every ID
    /// issued under the values before. Refused by [`build`](Self::build) if the layout's
    /// extension field cannot hold it.
    pub fn extension(mut self, value: u64) -> Self {
        self.extension = value;
        self
    }

    /// Starts each new tick's sequence at a pseudo-random value below `below` instead of 0,
    /// derived from `seed` and the tick (Leaf's remedy for low-traffic IDs that are all
    /// even, which skews `id % shards`). It costs up to `below - 1` IDs per tick, on average
    /// about half that: with 12 sequence bits and `below = 100`, about 1.2% of the rate.
    pub fn random_sequence_start(mut self, seed: u64, below: u64) -> Self {
        self.random_start = Some((seed, below));
        self
    }

    /// Continues after an ID issued earlier (for example by a previous run), so every new
    /// ID is greater than it. The ID's node fields are ignored.
    pub fn start_after(mut self, id: u64) -> Self {
        self.start_after = Some(id);
        self
    }

    fn node_names(&self) -> String {
        self.layout
            .fields()
            .iter()
            .filter(|f| f.role() == Role::Node)
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Builds the generator over `clock`.
    pub fn build<C: Clock>(self, clock: C) -> Result<SnowflakeGenerator<C>> {
        let layout = self.layout;
        let mut node_part = 0;
        for (i, f) in layout.fields().iter().enumerate() {
            if f.role() == Role::Node {
                node_part |= self.node_values[i] << layout.shift_of(i);
            }
        }
        let packing = Packing::new(&layout, node_part);
        if let Some((_, below)) = self.random_start
            && (below == 0 || below > packing.seq_max())
        {
            return Err(Error::InvalidConfig(format!(
                "random sequence start bound {below} must be between 1 and {} (the sequence holds {} values)",
                packing.seq_max(),
                packing.seq_max() + 1
            )));
        }
        let unit = layout.unit_ms();
        let ticks = UnitDivider::new(unit);
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let ext_max = mask(layout.extension_bits());
        if self.extension > ext_max {
            return Err(Error::FieldOutOfRange {
                field: "extension".into(),
                value: self.extension,
                bits: layout.extension_bits(),
                max: ext_max,
            });
        }
        let state = match (self.start_after, self.extension) {
            (None, 0) => NONE,
            // Tick 0 of the extension value counts as used, so the first ID is the clock's
            // tick under that value.
            (None, ext) => packing.id(packing.pack(ext, 0, 0)),
            (Some(id), ext) => {
                layout.decode(id)?;
                packing.id(packing.state_of(id).max(packing.pack(ext, 0, 0)))
            }
        };
        Ok(SnowflakeGenerator {
            state: CacheLine(AtomicU64::new(state)),
            clock,
            packing,
            epoch_ms: layout.epoch_ms(),
            unit_ms: unit,
            ticks,
            max_tick: layout.max_tick(),
            ext_max,
            tick_seq_mask: packing.pack(0, packing.time_mask, packing.seq_max()),
            // At most the largest reading after the epoch, so a reading before the epoch,
            // which wraps around in `fast`, is always beyond it; and no more than the
            // divider's exact range (2^63 ms or more), beyond which `now` divides.
            max_since_ms: (layout.max_tick() + 1)
                .saturating_mul(unit)
                .saturating_sub(1)
                .min(u64::MAX - layout.epoch_ms())
                .min(ticks.exact_max()),
            lead_ticks: ms(self.max_lead) / unit,
            wait_bound_ms: match self.on_backward {
                OnBackward::Refuse => 0,
                _ => ms(self.backward_wait),
            },
            may_extend: self.on_backward == OnBackward::Extension,
            random_start: self.random_start,
            fence: self.fence,
            layout,
        })
    }
}

/// A lock-free snowflake generator: its whole state is one `AtomicU64`, and each call
/// reserves one ID or a block of IDs with a single compare-and-swap.
///
/// IDs from one generator are strictly increasing, across sequence exhaustion, borrowed
/// time and extension bumps alike. Nothing here sleeps holding a lock: the `try_` methods
/// never block and say how long to wait instead; [`next`](Self::next) and
/// [`next_block`](Self::next_block) wait through the [`Clock`].
#[derive(Debug)]
pub struct SnowflakeGenerator<C> {
    /// The last ID reserved, or `NONE` (see `packing` for why an ID and not the compact
    /// state).
    state: CacheLine<AtomicU64>,
    clock: C,
    packing: Packing,
    epoch_ms: u64,
    unit_ms: u64,
    /// Readings into ticks without a division.
    ticks: UnitDivider,
    max_tick: u64,
    ext_max: u64,
    /// The tick and sequence bits of a state: all but its extension bits.
    tick_seq_mask: u64,
    /// The last clock reading, in ms after the epoch, within the time field (and no more
    /// than a `u64` reading allows) that `fast` takes; later readings go the slow way.
    max_since_ms: u64,
    lead_ticks: u64,
    wait_bound_ms: u64,
    /// [`OnBackward::Extension`]: a step back past the wait bound moves to the next
    /// extension value.
    may_extend: bool,
    random_start: Option<(u64, u64)>,
    fence: Option<Arc<Fence>>,
    layout: Layout,
}

/// Gives the state a cache line (a pair of lines, which Intel's spatial prefetcher moves
/// together) of its own. Every call reads the clock handle, the packing and the bounds;
/// sharing the state's line, each of those reads missed after another thread's CAS had
/// taken the line away, so two threads paid up to three line transfers per ID instead of
/// one.
#[derive(Debug)]
#[repr(align(128))]
struct CacheLine<T>(T);

impl<T> std::ops::Deref for CacheLine<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Where the inlined common case ended.
enum Fast {
    /// First state, length, and the first state's ID.
    Reserved(u64, u64, u64),
    /// The CAS lost a race; the clock reading, in ms and ticks.
    Contended((u64, u64)),
    /// Anything else, for the slow path.
    Slow,
}

/// Where an attempt ended: reserved states, or the clock time to try again at.
enum Step {
    Reserved(u64, u64),
    RetryAt { now_ms: u64, at_ms: u64 },
}

impl SnowflakeGenerator<()> {
    /// Starts configuring a generator for `layout`.
    pub fn builder(layout: Layout) -> Builder {
        let n = layout.fields().len();
        Builder {
            layout,
            node_values: vec![0; n],
            max_lead: Duration::ZERO,
            backward_wait: DEFAULT_BACKWARD_WAIT,
            on_backward: OnBackward::default(),
            extension: 0,
            random_start: None,
            start_after: None,
            fence: None,
        }
    }
}

impl<C: Clock> SnowflakeGenerator<C> {
    /// The layout IDs follow.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    /// The clock the generator reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The fence this generator issues behind, if any.
    pub fn fence(&self) -> Option<&Arc<Fence>> {
        self.fence.as_ref()
    }

    /// The most recent ID issued, if any.
    pub fn last_id(&self) -> Option<u64> {
        let s = self.state.load(Ordering::Acquire);
        (s != NONE).then_some(s)
    }

    /// The end (exclusive, ms since 1970) of the latest tick used so far; a high-water mark
    /// must cover it before a restart may reuse the worker ID.
    pub fn used_until_ms(&self) -> Option<u64> {
        let s = self.state.load(Ordering::Acquire);
        (s != NONE).then(|| self.tick_ms(self.packing.tick(self.packing.state_of(s)) + 1))
    }

    /// The extension value IDs are issued under now (0 when the layout has no extension
    /// field); a high-water mark must carry it, so a restart goes on at this value or above.
    pub fn extension(&self) -> u64 {
        let s = self.state.load(Ordering::Acquire);
        if s == NONE {
            0
        } else {
            self.packing.ext(self.packing.state_of(s))
        }
    }

    /// The most extension values the layout holds, less one (0 without an extension
    /// field).
    pub fn extension_max(&self) -> u64 {
        self.ext_max
    }

    /// How far the generator is ahead of its clock, from borrowing future ticks.
    pub fn lead(&self) -> Duration {
        let now = self.clock.now_ms();
        Duration::from_millis(self.used_until_ms().map_or(0, |end| {
            end.saturating_sub(self.unit_ms).saturating_sub(now)
        }))
    }

    /// One ID, or how long to wait. Never blocks.
    pub fn try_next(&self) -> Result<Attempt<u64>> {
        Ok(match self.step(1)? {
            Step::Reserved(start, _) => Attempt::Ready(self.packing.id(start)),
            Step::RetryAt { now_ms, at_ms } => {
                Attempt::RetryAfter(Duration::from_millis(at_ms - now_ms))
            }
        })
    }

    /// Up to `n` IDs (at least one) with one compare-and-swap, or how long to wait. Never
    /// blocks. The block is shorter than `n` when the current tick plus the allowed lead
    /// has fewer IDs left.
    pub fn try_next_block(&self, n: u64) -> Result<Attempt<IdBlock>> {
        Ok(match self.step(n)? {
            Step::Reserved(start, len) => Attempt::Ready(IdBlock::new(start, len, self.packing)),
            Step::RetryAt { now_ms, at_ms } => {
                Attempt::RetryAfter(Duration::from_millis(at_ms - now_ms))
            }
        })
    }

    /// One ID, waiting on the clock if the tick is used up or the clock stepped back by
    /// less than the wait bound.
    #[inline]
    pub fn next(&self) -> Result<u64> {
        match self.fast(1) {
            Fast::Reserved(_, _, id) => Ok(id),
            Fast::Contended(reading) => self
                .wait_slow(1, Some(reading))
                .map(|(start, _)| self.packing.id(start)),
            Fast::Slow => self
                .wait_slow(1, None)
                .map(|(start, _)| self.packing.id(start)),
        }
    }

    /// Up to `n` IDs (at least one), waiting on the clock as [`next`](Self::next) does.
    #[inline]
    pub fn next_block(&self, n: u64) -> Result<IdBlock> {
        self.wait_for(n)
            .map(|(start, len)| IdBlock::new(start, len, self.packing))
    }

    /// Reserves up to `n` states, waiting on the clock as long as the generator asks to.
    /// Only the first attempt's common case is inlined into the caller, and it returns
    /// nothing through memory, so the caller's loop keeps the ID in registers.
    #[inline(always)]
    fn wait_for(&self, n: u64) -> Result<(u64, u64)> {
        match self.fast(n) {
            Fast::Reserved(start, len, _) => Ok((start, len)),
            Fast::Contended(reading) => self.wait_slow(n, Some(reading)),
            Fast::Slow => self.wait_slow(n, None),
        }
    }

    #[inline(never)]
    fn wait_slow(&self, n: u64, resume: Option<(u64, u64)>) -> Result<(u64, u64)> {
        let mut attempt = self.step_slow(n, resume);
        loop {
            match attempt? {
                Step::Reserved(start, len) => return Ok((start, len)),
                Step::RetryAt { at_ms, .. } => self.clock.wait_until_ms(at_ms),
            }
            attempt = self.step(n);
        }
    }

    /// One attempt, waiting for nothing.
    #[inline]
    fn step(&self, n: u64) -> Result<Step> {
        match self.fast(n) {
            Fast::Reserved(start, len, _) => Ok(Step::Reserved(start, len)),
            Fast::Contended(reading) => self.step_slow(n, Some(reading)),
            Fast::Slow => self.step_slow(n, None),
        }
    }

    fn tick_ms(&self, tick: u64) -> u64 {
        tick.saturating_mul(self.unit_ms)
            .saturating_add(self.epoch_ms)
    }

    #[inline]
    fn now(&self) -> Result<(u64, u64)> {
        let now_ms = self.clock.now_ms();
        let Some(since) = now_ms.checked_sub(self.epoch_ms) else {
            return Err(Error::ClockBeforeEpoch {
                now_ms,
                epoch_ms: self.epoch_ms,
            });
        };
        let tick = self.ticks.div(since);
        if tick > self.max_tick {
            return Err(self.time_exhausted());
        }
        Ok((now_ms, tick))
    }

    #[cold]
    fn time_exhausted(&self) -> Error {
        Error::TimeExhausted {
            ended: format_ms(self.tick_ms(self.max_tick + 1)),
        }
    }

    fn first_seq(&self, tick: u64) -> u64 {
        match self.random_start {
            None => 0,
            Some((seed, below)) => splitmix64(seed ^ tick) % below,
        }
    }

    /// The common case, inlined into the caller: a reading that raises no error, a state
    /// from an older tick or with room left in this one, and a CAS that succeeds. Anything
    /// else goes to `step_slow`. Kept out of line, the whole algorithm made every `next()`
    /// a call that saved six registers and returned its result through memory, and x86's
    /// locked CAS waits for those stores to drain.
    ///
    /// The clock is read first and the state loaded after it (see `step_slow` for what
    /// that means), so the window between the state's load and its CAS, in which another
    /// thread can take the state's cache line away, holds only a few register operations.
    #[inline(always)]
    fn fast(&self, n: u64) -> Fast {
        let p = &self.packing;
        let now_ms = self.clock.now_ms();
        // A reading before the epoch wraps around past `max_since_ms`, so one comparison
        // catches it and the end of the time field alike; `step_slow` says which.
        let since = now_ms.wrapping_sub(self.epoch_ms);
        if since > self.max_since_ms || n == 0 {
            return Fast::Slow;
        }
        // `max_since_ms` keeps `since` in the divider's exact range.
        let now = self.ticks.fast(since);
        let fence_tick = match &self.fence {
            None => u64::MAX,
            Some(f) => match self.fence_last_tick(f.limits(), now_ms, now) {
                Some(t) => t,
                None => return Fast::Slow,
            },
        };
        // The first ID of tick `now`, from the reading alone, before the state's load.
        let now_id_base = p.id_tick_base(now);
        let last = self.state.load(Ordering::Acquire);
        // The common case, on the stored ID itself: one ID, in tick `now`, with sequence
        // numbers left. One subtraction tests all three (an ID of an older tick wraps
        // around), and its chain from the load is two operations long: the locked CAS
        // waits for every older branch to resolve. The reading, the time field and the
        // fence all allow tick `now` in full, so no limit is needed. `NONE` fails the test.
        if n == 1 && (last & p.id_tick_seq_mask).wrapping_sub(now_id_base) < p.id_seq_mask {
            let id = last + p.id_seq_one;
            return match self.state.compare_exchange_weak(
                last,
                id,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => Fast::Reserved(p.state_of(id), 1, id),
                Err(_) => Fast::Contended((now_ms, now)),
            };
        }
        if last == NONE {
            return Fast::Slow;
        }
        // Blocks, new ticks and borrowed time: in the compact form. `now()` and the fence
        // keep the limit at or after tick `now`.
        let cur = p.state_of(last);
        let now_base = now << p.seq_bits;
        let low = cur & self.tick_seq_mask;
        let ext_bits = cur ^ low;
        let limit_tick = (now + self.lead_ticks).min(self.max_tick).min(fence_tick);
        let limit = ext_bits | p.pack(0, limit_tick, p.seq_max());
        let start = if low < now_base {
            // An older tick: start this one.
            ext_bits | (now_base + self.first_seq(now))
        } else if cur < limit {
            // This tick, or ahead of the clock within the lead; a full tick carries into
            // the next by itself.
            cur + 1
        } else {
            // Used up, or ahead of this reading.
            return Fast::Slow;
        };
        let end = start + (limit - start).min(n - 1);
        match self
            .state
            .compare_exchange_weak(last, p.id(end), Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Fast::Reserved(start, end - start + 1, p.id(start)),
            Err(_) => Fast::Contended((now_ms, now)),
        }
    }

    /// The algorithm.
    ///
    /// The clock is read before the state is loaded, so another thread may have stored a
    /// state from a later reading than ours: a state ahead of our reading means nothing
    /// until the clock is read again after that state was loaded. `fresh` says whether
    /// `cur` was loaded before the reading; a state ahead of a reading that is not fresh
    /// reads the clock again, and only a state ahead of a fresh reading means borrowed time
    /// or a clock that stepped back.
    ///
    /// After a lost CAS the reading is kept: while the state's tick is not past it,
    /// continuing from that state with our reading is what a call that started now would
    /// do. Reading the clock again on every lost CAS cost a vDSO call (~37 ns) per retry
    /// with `MonotonicClock`, which widened the window for the next loss.
    ///
    /// `resume` is the reading of a `fast` attempt whose CAS lost.
    #[inline(never)]
    fn step_slow(&self, n: u64, resume: Option<(u64, u64)>) -> Result<Step> {
        if n == 0 {
            return Err(Error::InvalidCount {
                count: 0,
                allowed: "at least 1".into(),
            });
        }
        let p = &self.packing;
        // `last` is the stored state (an ID), `cur` its compact form.
        let (mut reading, mut last) = match resume {
            Some(reading) => {
                std::hint::spin_loop();
                (reading, self.state.load(Ordering::Acquire))
            }
            None => {
                let reading = self.now()?;
                (reading, self.state.load(Ordering::Acquire))
            }
        };
        let mut fresh = false;
        'read: loop {
            let (now_ms, now) = reading;
            let fence_tick = match &self.fence {
                None => u64::MAX,
                Some(f) => self.fenced_last_tick(f, now_ms, now)?,
            };
            // `now()` and the fence keep this at or after `now`.
            let limit_tick = (now + self.lead_ticks).min(self.max_tick).min(fence_tick);
            // The first state of tick `now` and the last one this call may reserve, with
            // the extension bits left out; a state's own extension bits are ORed in.
            let now_base = p.pack(0, now, 0);
            let limit_base = p.pack(0, limit_tick, p.seq_max());
            loop {
                let cur = if last == NONE { NONE } else { p.state_of(last) };
                let ext_bits = cur & !self.tick_seq_mask;
                let (start, limit) = if cur == NONE {
                    (p.pack(0, now, self.first_seq(now)), limit_base)
                } else if cur < (ext_bits | now_base) {
                    // An older tick: start this one.
                    (
                        ext_bits | (now_base + self.first_seq(now)),
                        ext_bits | limit_base,
                    )
                } else if cur < (ext_bits | limit_base) {
                    // This tick, or ahead of the clock within the allowed lead: continue. A
                    // full sequence carries into the next tick by itself.
                    (cur + 1, ext_bits | limit_base)
                } else if !fresh {
                    // Used up, or ahead of a reading older than the state: read again.
                    reading = self.now()?;
                    fresh = true;
                    continue 'read;
                } else if p.tick(cur) - now <= self.lead_ticks {
                    // Used up (the tick, the lead, the fence's window or the time field).
                    if limit_tick == self.max_tick {
                        return Err(self.time_exhausted());
                    }
                    return Ok(Step::RetryAt {
                        now_ms,
                        at_ms: self.tick_ms(now + 1),
                    });
                } else {
                    // The clock stepped back past the lead.
                    let ext = p.ext(cur);
                    let last = p.tick(cur);
                    let resume_ms = self.tick_ms(last - self.lead_ticks);
                    let wait = resume_ms.saturating_sub(now_ms);
                    if wait <= self.wait_bound_ms {
                        return Ok(Step::RetryAt {
                            now_ms,
                            at_ms: resume_ms,
                        });
                    }
                    if ext >= self.ext_max || !self.may_extend {
                        return Err(Error::ClockBehind {
                            behind: Duration::from_millis(
                                self.tick_ms(last).saturating_sub(now_ms),
                            ),
                            bound: Duration::from_millis(self.wait_bound_ms),
                            ext_left: self.ext_max - ext,
                        });
                    }
                    let ext_bits = p.pack(ext + 1, 0, 0);
                    let start = ext_bits | (now_base + self.first_seq(now));
                    (start, ext_bits | limit_base)
                };
                let len = n.min(limit - start + 1);
                let end = start + len - 1;
                match self.state.compare_exchange_weak(
                    last,
                    p.id(end),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return Ok(Step::Reserved(start, len)),
                    Err(_) => {
                        // Another thread holds the line now and is likely to issue again
                        // at once: give it a moment, then look at the state afresh. A CAS
                        // straight away with the state it returned would fail if the other
                        // thread had moved on, and take its line away for nothing.
                        std::hint::spin_loop();
                        last = self.state.load(Ordering::Acquire);
                        fresh = false;
                    }
                }
            }
        }
    }
}

impl<C: Clock> SnowflakeGenerator<C> {
    /// The last tick the fence lets this call use: the lease deadline must lie ahead of
    /// the clock, and a tick may be used only if it ends at or before the window end.
    #[inline]
    fn fenced_last_tick(&self, fence: &Fence, now_ms: u64, now: u64) -> Result<u64> {
        let (until, end) = fence.limits();
        match self.fence_last_tick((until, end), now_ms, now) {
            Some(tick) => Ok(tick),
            None if now_ms >= until => Err(Self::fence_refusal(fence, until, now_ms)),
            None => Err(Error::WindowNotExtended {
                window_end_ms: end,
                now_ms,
            }),
        }
    }

    /// [`fenced_last_tick`](Self::fenced_last_tick) without the error, for `fast`.
    #[inline(always)]
    fn fence_last_tick(&self, (until, end): (u64, u64), now_ms: u64, now: u64) -> Option<u64> {
        if now_ms >= until {
            return None;
        }
        let since = end.saturating_sub(self.epoch_ms);
        // Ticks that end at or before `end`: 0..end_ticks.
        let end_ticks = self.ticks.div(since);
        (end_ticks > now).then(|| end_ticks - 1)
    }

    #[cold]
    fn fence_refusal(fence: &Fence, until: u64, now_ms: u64) -> Error {
        if until == 0 {
            Error::NotIssuing {
                reason: fence.closed_reason(),
            }
        } else {
            Error::LeaseExpired {
                deadline_ms: until,
                now_ms,
            }
        }
    }
}

/// SplitMix64: a cheap, well-mixed hash of the tick for the random sequence start.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(all(test, not(loom)))]
mod fence_tests;
#[cfg(all(test, not(loom)))]
mod tests;
