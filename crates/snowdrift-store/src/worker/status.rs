//! What a worker node reports about its lease, for readiness checks, metrics and dashboards.

/// Where a node stands with its worker ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerState {
    /// Claiming a worker ID.
    Starting,
    /// Holding a worker ID, waiting for the clock to pass its high-water mark.
    WaitingForMark,
    /// Issuing IDs.
    Issuing,
    /// The lease was lost or could not be renewed in time; trying to regain an ID.
    LeaseLost,
    /// This node's clock is behind a peer's by more than the bound; not issuing.
    ClockBehind,
    /// Shut down; the worker ID was released.
    Stopped,
}

impl WorkerState {
    /// Every state, in the order a node usually passes through them: the `state` label
    /// values of `snowdrift_worker_state`, each exported (0 or 1) so a dashboard or alert
    /// sees a state that is absent as 0 rather than as no series.
    pub const ALL: [WorkerState; 6] = [
        WorkerState::Starting,
        WorkerState::WaitingForMark,
        WorkerState::Issuing,
        WorkerState::LeaseLost,
        WorkerState::ClockBehind,
        WorkerState::Stopped,
    ];

    /// A stable lower-case name: `starting`, `waiting_for_mark`, `issuing`, `lease_lost`,
    /// `clock_behind`, `stopped`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerState::Starting => "starting",
            WorkerState::WaitingForMark => "waiting_for_mark",
            WorkerState::Issuing => "issuing",
            WorkerState::LeaseLost => "lease_lost",
            WorkerState::ClockBehind => "clock_behind",
            WorkerState::Stopped => "stopped",
        }
    }
}

impl std::fmt::Display for WorkerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A peer's clock compared with this node's, from the peer's latest report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerOffset {
    /// The peer's worker ID.
    pub worker_id: u64,
    /// Who holds it.
    pub holder: String,
    /// The peer's reported time minus this node's clock when it was read, in ms. Positive:
    /// the peer is ahead by at least this much (a report is at most one interval old).
    pub ahead_ms: i64,
}

/// A snapshot of a [`WorkerNode`](super::WorkerNode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerStatus {
    /// The worker ID held (or last held), if any.
    pub worker_id: Option<u64>,
    /// This node's name on the coordinator.
    pub holder: String,
    /// The coordinator backend (`file`, `etcd`, `sqlite`, ...).
    pub backend: &'static str,
    /// Where the node stands.
    pub state: WorkerState,
    /// How many times the node has opened for issuing (1 after start; more after a lease
    /// was lost and regained).
    pub epoch: u64,
    /// When issuing stops unless the lease is renewed, ms since 1970 on the node's clock
    /// (0 when not issuing).
    pub deadline_ms: u64,
    /// The durable high-water mark in force, ms since 1970.
    pub mark_ms: u64,
    /// Lease renewals the coordinator accepted since the node started.
    pub renewals: u64,
    /// How many times a lost lease was regained under another worker ID (the lost one was
    /// taken meanwhile) since the node started: IDs of this node then carry a new worker ID.
    pub worker_id_changes: u64,
    /// The node's clock when this snapshot was taken, ms since 1970.
    pub now_ms: u64,
    /// The furthest-ahead and furthest-behind peers' clocks relative to this one (at most
    /// two; one when they are the same peer), from the latest check.
    pub peers: Vec<PeerOffset>,
    /// The latest coordinator error, if the latest call failed.
    pub last_error: Option<String>,
}

impl WorkerStatus {
    /// True when the node may issue now: it holds its lease, the deadline lies ahead and
    /// the clock is not behind. This is what `/readyz` reports.
    pub fn is_ready(&self) -> bool {
        self.state == WorkerState::Issuing
            && self.now_ms < self.deadline_ms
            && self.now_ms < self.mark_ms
    }
}
