//! Planted mistakes in the lease keeper, the registries, the segment claims and the tso
//! follower's check, for the
//! simulator to catch (cargo feature `sim`).
//! Without the feature, [`planted`] is `false` and the checks fold away.

/// A mistake the keeper can be made to commit, each one a rule of the design broken.
#[cfg(feature = "sim")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Mistake {
    /// Opens a window before its high-water mark is durable (the write skipped at the
    /// start of an epoch, the fence moved before the write while issuing).
    SkipMarkWriteAhead,
    /// Takes a renewal that found the lease lost for a good one (opens the fence again).
    RenewWithoutFence,
    /// Counts the fence deadline from when a renewal's answer arrived, not from when it
    /// was sent: a pause or a slow answer stretches the lease past its end.
    TrustLeaseAfterPause,
    /// Starts issuing without waiting for the clock to pass the worker ID's mark.
    ForgetClockBackOnRestart,
    /// The file registry writes a high-water mark without fsyncing it or its directory:
    /// the write is seen at once, and lost by a crash of the machine.
    SkipMarkFsync,
    /// The Redis registry renews with a bare `PEXPIRE`, without checking that the lease
    /// key still names the caller: a node that lost its lease extends its successor's.
    RenewAnyHolder,
    /// The ZooKeeper registry renews by asking its client whether the session is still
    /// open instead of writing through the leader: the client learns that the server
    /// expired the session only when it next gets through, so a cut-off node goes on
    /// taking its lease for alive after ZooKeeper deleted it.
    RenewByClientSession,
    /// Starts under its layout without comparing it with the layout recorded beside the
    /// worker ID's mark or with the live peers' (a layout switch `snowdrift layout
    /// migrate` calls unsafe goes through).
    IgnoreLayoutChecks,
    /// A SQL segment claim whose `COMMIT` failed hands out its range anyway, as if the
    /// error came after the commit (it may have rolled back, and the range be claimed
    /// again).
    ClaimIgnoresFailedCommit,
    /// A SQL segment claim takes its range from a read of `max_id` made before its
    /// `UPDATE`, outside the row's lock (a lost update between racing claims).
    ClaimReadsBeforeUpdate,
    /// A tso follower takes the leader's answer without checking it against what it had
    /// served (`tso::Served::accept`): an answer of a deposed leader, or one that overtook
    /// a later one, is served below IDs the follower served before.
    AcceptFollowerAnswerBelowServed,
}

#[cfg(feature = "sim")]
impl Mistake {
    /// Every mistake.
    pub const ALL: [Mistake; 11] = [
        Mistake::SkipMarkWriteAhead,
        Mistake::RenewWithoutFence,
        Mistake::TrustLeaseAfterPause,
        Mistake::ForgetClockBackOnRestart,
        Mistake::IgnoreLayoutChecks,
        Mistake::SkipMarkFsync,
        Mistake::RenewAnyHolder,
        Mistake::RenewByClientSession,
        Mistake::ClaimIgnoresFailedCommit,
        Mistake::ClaimReadsBeforeUpdate,
        Mistake::AcceptFollowerAnswerBelowServed,
    ];

    /// The mistakes of the keeper, which every registry runs.
    /// (`IgnoreLayoutChecks` is the keeper's too, but shows only in a run that switches
    /// layouts.)
    pub const KEEPER: [Mistake; 4] = [
        Mistake::SkipMarkWriteAhead,
        Mistake::RenewWithoutFence,
        Mistake::TrustLeaseAfterPause,
        Mistake::ForgetClockBackOnRestart,
    ];

    /// A stable name: `skip-mark-write-ahead`, `renew-without-fence`,
    /// `trust-lease-after-pause`, `forget-clock-back-on-restart`, `ignore-layout-checks`,
    /// `skip-mark-fsync` (file registry), `renew-any-holder` (Redis registry),
    /// `renew-by-client-session` (ZooKeeper registry), `claim-ignores-failed-commit`,
    /// `claim-reads-before-update` (SQL segment claims),
    /// `accept-follower-answer-below-served` (a tso follower's check).
    pub fn name(self) -> &'static str {
        match self {
            Mistake::SkipMarkWriteAhead => "skip-mark-write-ahead",
            Mistake::RenewWithoutFence => "renew-without-fence",
            Mistake::TrustLeaseAfterPause => "trust-lease-after-pause",
            Mistake::ForgetClockBackOnRestart => "forget-clock-back-on-restart",
            Mistake::SkipMarkFsync => "skip-mark-fsync",
            Mistake::RenewAnyHolder => "renew-any-holder",
            Mistake::RenewByClientSession => "renew-by-client-session",
            Mistake::IgnoreLayoutChecks => "ignore-layout-checks",
            Mistake::ClaimIgnoresFailedCommit => "claim-ignores-failed-commit",
            Mistake::ClaimReadsBeforeUpdate => "claim-reads-before-update",
            Mistake::AcceptFollowerAnswerBelowServed => "accept-follower-answer-below-served",
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

#[cfg(feature = "sim")]
thread_local! {
    static PLANTED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Makes every keeper that runs on this thread commit `mistakes` (none: the real keeper).
/// The simulator runs each seed on one thread, so one run's mistakes stay in that run.
#[cfg(feature = "sim")]
pub fn plant(mistakes: &[Mistake]) {
    PLANTED.with(|p| p.set(mistakes.iter().fold(0, |bits, m| bits | m.bit())));
}

/// Whether the keeper on this thread is to commit `mistake`.
#[cfg(feature = "sim")]
pub(crate) fn planted(mistake: Mistake) -> bool {
    PLANTED.with(|p| p.get() & mistake.bit() != 0)
}

/// Without the `sim` feature no mistake can be planted.
#[cfg(not(feature = "sim"))]
#[inline(always)]
pub(crate) fn planted(_: Mistake) -> bool {
    false
}

/// Without the `sim` feature there are no mistakes to name; the keeper's checks compile
/// to nothing.
#[cfg(not(feature = "sim"))]
#[derive(Debug, Clone, Copy)]
// Without the Redis or ZooKeeper registry, its mistake is never named.
#[cfg_attr(not(all(feature = "redis", feature = "zookeeper")), allow(dead_code))]
pub(crate) enum Mistake {
    SkipMarkWriteAhead,
    RenewWithoutFence,
    TrustLeaseAfterPause,
    ForgetClockBackOnRestart,
    SkipMarkFsync,
    RenewAnyHolder,
    RenewByClientSession,
    IgnoreLayoutChecks,
    ClaimIgnoresFailedCommit,
    ClaimReadsBeforeUpdate,
    AcceptFollowerAnswerBelowServed,
}
