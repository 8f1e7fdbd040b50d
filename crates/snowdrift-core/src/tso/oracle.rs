//! The oracle's state machine: terms, the saved window, the physical and logical parts.

use super::config::TsoConfig;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::layout::format_ms;
use crate::segment::IdRange;

/// What [`TimestampOracle::allocate`] asks of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Allocation {
    /// The IDs: consecutive, all above every ID issued before (in this term and in any
    /// earlier one whose window was saved). Split it among merged requests with
    /// [`IdRange::slice`].
    Issued(IdRange),
    /// Nothing was issued: the next ID's physical time is past the saved window. Save
    /// the window, report it with [`TimestampOracle::window_saved`], and ask again.
    SaveWindow(WindowSave),
    /// Nothing was issued: the logical part of the current millisecond cannot hold the
    /// count, and the clock reads that millisecond. Ask again once the clock reads
    /// `until_ms` (ms since 1970): at most a millisecond away. (When the physical part is
    /// ahead of the clock, it moves on a millisecond instead of waiting.)
    Wait {
        /// The clock reading to wait for.
        until_ms: u64,
    },
}

/// A window end for the driver to save durably, under the leadership of `term`.
///
/// The store must keep the largest value it was given (a save below the stored value is
/// refused or ignored, as PD refuses it): a window end that went back would let the next
/// leader start below IDs this one issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct WindowSave {
    /// The term the save is for; the save must be conditioned on still leading in it.
    pub term: u64,
    /// The window end: no ID of this term has a physical part (ms since 1970) above it.
    pub up_to_ms: u64,
}

/// A snapshot of a [`TimestampOracle`] for metrics and readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TsoStatus {
    /// The current term, 0 when not leading.
    pub term: u64,
    /// The physical part in use, ms since 1970 (IDs of this term are at or above it).
    pub physical_ms: u64,
    /// The next logical value of that millisecond.
    pub logical: u64,
    /// The saved window end of the current term, ms since 1970; `None` before the first
    /// save of a term or when not leading.
    pub window_end_ms: Option<u64>,
    /// How many times a clock reading was below the one before (the clock stepped back).
    pub clock_steps_back: u64,
    /// The largest such step, in ms.
    pub largest_step_back_ms: u64,
}

/// A timestamp oracle: the pure state of PD's TSO. See the [module](super) for the driver
/// it expects around it.
#[derive(Debug)]
pub struct TimestampOracle<C> {
    config: TsoConfig,
    clock: C,
    max_physical_ms: u64,
    /// The physical part of the last issued ID, or, at the start of a term, the floor of
    /// the next one. Never decreases.
    physical_ms: u64,
    /// The next unused logical value of `physical_ms`.
    logical: u64,
    /// The current term; 0 when not leading.
    term: u64,
    /// The last term number handed out.
    last_term: u64,
    /// The saved window end of the current term.
    window_end_ms: Option<u64>,
    last_read_ms: u64,
    clock_steps_back: u64,
    largest_step_back_ms: u64,
}

impl<C: Clock> TimestampOracle<C> {
    /// An oracle that does not lead yet. Checks the options, and that the clock reads a
    /// time the physical part can hold.
    pub fn new(config: TsoConfig, clock: C) -> Result<Self> {
        config.validate()?;
        let now = clock.now_ms();
        if now < config.epoch_ms {
            return Err(Error::EpochInFuture {
                epoch: format_ms(config.epoch_ms),
                now: format_ms(now),
            });
        }
        if now > config.max_physical_ms() {
            return Err(config.time_exhausted());
        }
        Ok(Self {
            max_physical_ms: config.max_physical_ms(),
            config,
            clock,
            physical_ms: config.epoch_ms,
            logical: 0,
            term: 0,
            last_term: 0,
            window_end_ms: None,
            last_read_ms: now,
            clock_steps_back: 0,
            largest_step_back_ms: 0,
        })
    }

    /// The options.
    pub fn config(&self) -> &TsoConfig {
        &self.config
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Starts leading, after winning the election. `previous_window_end_ms` is the window
    /// end saved in the store (ms since 1970), `None` if nothing was ever saved. The first
    /// ID of the term has a physical part above it (and above anything this oracle issued
    /// before), even when this node's clock is behind: the physical part then runs ahead
    /// of the clock until the clock catches up. Returns the new term's number.
    pub fn start_term(&mut self, previous_window_end_ms: Option<u64>) -> u64 {
        let above_previous = previous_window_end_ms.map_or(0, |end| end.saturating_add(1));
        self.physical_ms = self
            .physical_ms
            .saturating_add(1)
            .max(above_previous)
            .max(self.config.epoch_ms);
        self.logical = 0;
        self.last_term += 1;
        self.term = self.last_term;
        self.window_end_ms = None;
        self.term
    }

    /// Stops leading (leadership lost or given up). Every later call to
    /// [`allocate`](Self::allocate) fails until the next [`start_term`](Self::start_term).
    pub fn end_term(&mut self) {
        self.term = 0;
        self.window_end_ms = None;
    }

    /// Reserves `count` consecutive IDs (1 to [`TsoConfig::logical_capacity`]), above every
    /// ID issued before. Serve a group of merged requests with one call for their total.
    ///
    /// Errors: not leading, a count out of range, a clock before the epoch, or a physical
    /// time the ID cannot hold (never a wrap).
    pub fn allocate(&mut self, count: u64) -> Result<Allocation> {
        if self.term == 0 {
            return Err(Error::NotLeading);
        }
        let capacity = self.config.logical_capacity();
        if count == 0 || count > capacity {
            return Err(Error::InvalidCount {
                count,
                allowed: format!(
                    "1..={capacity} (the logical values of one millisecond, 2^{})",
                    self.config.logical_bits
                ),
            });
        }
        let now = self.read_clock();
        if now < self.config.epoch_ms {
            return Err(Error::ClockBeforeEpoch {
                now_ms: now,
                epoch_ms: self.config.epoch_ms,
            });
        }
        // The physical part follows the clock forward only: after a step back it stays
        // where it was and the logical part keeps counting.
        if now > self.physical_ms {
            self.physical_ms = now;
            self.logical = 0;
        } else if capacity - self.logical < count {
            if now == self.physical_ms {
                return Ok(Allocation::Wait {
                    until_ms: self.physical_ms.saturating_add(1),
                });
            }
            // The physical part is ahead of the clock (a new term starts above the saved
            // window, which runs ahead of the old leader's clock; or the clock stepped
            // back): waiting for the clock could take as long as the window, so move on
            // one millisecond, as PD does. The saved window still bounds it below.
            self.physical_ms = self.physical_ms.saturating_add(1);
            self.logical = 0;
        }
        if self.physical_ms > self.max_physical_ms {
            return Err(self.config.time_exhausted());
        }
        match self.window_end_ms {
            Some(end) if self.physical_ms <= end => {}
            _ => {
                return Ok(Allocation::SaveWindow(WindowSave {
                    term: self.term,
                    up_to_ms: self.physical_ms.saturating_add(self.config.window_ms),
                }));
            }
        }
        // Cannot overflow: physical_ms <= max_physical_ms keeps the shifted part below
        // 2^63, and logical + count <= 2^logical_bits.
        let first =
            ((self.physical_ms - self.config.epoch_ms) << self.config.logical_bits) | self.logical;
        self.logical += count;
        Ok(Allocation::Issued(IdRange::new(first, first + count)))
    }

    /// A window end to save ahead of need, when less than half the window is left beyond
    /// the current time (or nothing is saved yet in this term); `None` when not leading or
    /// when enough is left. Call it from a ticker so that [`allocate`](Self::allocate)
    /// rarely has to wait for a save.
    pub fn window_wanted(&self) -> Option<WindowSave> {
        if self.term == 0 {
            return None;
        }
        let base = self.clock.now_ms().max(self.physical_ms);
        let enough = base.saturating_add(self.config.window_ms / 2);
        match self.window_end_ms {
            Some(end) if end >= enough => None,
            _ => Some(WindowSave {
                term: self.term,
                up_to_ms: base.saturating_add(self.config.window_ms),
            }),
        }
    }

    /// Records that `save` is durable: IDs of its term may now have physical parts up to
    /// `save.up_to_ms`. A save for a term that has ended is refused, since its leadership
    /// cannot vouch for the current one.
    pub fn window_saved(&mut self, save: WindowSave) -> Result<()> {
        if self.term == 0 || save.term != self.term {
            return Err(Error::StaleTerm {
                term: save.term,
                current: self.term,
            });
        }
        self.window_end_ms = Some(
            self.window_end_ms
                .map_or(save.up_to_ms, |end| end.max(save.up_to_ms)),
        );
        Ok(())
    }

    /// A snapshot for metrics.
    pub fn status(&self) -> TsoStatus {
        TsoStatus {
            term: self.term,
            physical_ms: self.physical_ms,
            logical: self.logical,
            window_end_ms: self.window_end_ms,
            clock_steps_back: self.clock_steps_back,
            largest_step_back_ms: self.largest_step_back_ms,
        }
    }

    /// Reads the clock, counting steps back.
    fn read_clock(&mut self) -> u64 {
        let now = self.clock.now_ms();
        if now < self.last_read_ms {
            self.clock_steps_back += 1;
            self.largest_step_back_ms = self.largest_step_back_ms.max(self.last_read_ms - now);
        }
        self.last_read_ms = now;
        now
    }
}
