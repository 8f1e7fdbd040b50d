//! Layout switches during a rolling restart: the layouts a fleet may move to from its own,
//! and which of those moves `snowdrift layout migrate` calls safe. The verdict is the
//! product's (`migrate::check` and `safe_for_rollout` with the command's default rollout of
//! 168 h, which is also what a starting node checks its live peers against), asked at the
//! instant the simulated rollout begins; nothing here judges a switch itself.

use std::time::Duration;

use snowdrift_core::layout::Layout;
use snowdrift_core::layout::migrate::{self, DEFAULT_ROLLOUT_MS, Verdict};

/// A layout the fleet may be moved to, and what `snowdrift layout migrate` says of the move.
#[derive(Debug, Clone)]
pub struct Target {
    /// A stable name (`--layout-switch NAME`).
    pub name: &'static str,
    /// The layout.
    pub layout: Layout,
    /// The product's verdict on a switch from the fleet's layout at the rollout's start.
    pub verdict: Verdict,
    /// Whether `snowdrift layout migrate` (default `--rollout 168h`) exits 0 for it.
    pub safe: bool,
}

/// Which target a run switches to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// One the product calls safe, drawn from the seed.
    Safe,
    /// One the product calls unsafe, drawn from the seed: the real keeper must refuse it
    /// while peers run the old layout, and forced through (`--mistake
    /// ignore-layout-checks`) it repeats IDs.
    Unsafe,
    /// The target of this name.
    Named(String),
}

impl Pick {
    /// Reads `safe`, `unsafe` or a target's name.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "safe" => Ok(Pick::Safe),
            "unsafe" => Ok(Pick::Unsafe),
            name if NAMES.contains(&name) => Ok(Pick::Named(name.to_string())),
            other => Err(format!(
                "no layout switch {other:?}: use safe, unsafe or one of {}",
                NAMES.join(", ")
            )),
        }
    }

    /// What [`parse`](Self::parse) reads back.
    pub fn name(&self) -> &str {
        match self {
            Pick::Safe => "safe",
            Pick::Unsafe => "unsafe",
            Pick::Named(n) => n,
        }
    }
}

const DAY_MS: u64 = 86_400_000;

/// Every target's name, in the order [`targets`] lists them.
pub const NAMES: [&str; 7] = [
    "epoch-30d-earlier",
    "wider-worker",
    "worker-below-seq-epoch-30d-earlier",
    "worker-below-seq",
    "worker-below-seq-epoch-10s-earlier",
    "epoch-1min-later",
    "wider-worker-narrower-seq",
];

/// The layouts a fleet on `from` (`time:41,worker:B,seq:12`, 1 ms) may be moved to, each
/// with the product's verdict on a switch at `at_ms`:
///
/// - the same fields on an epoch 30 days earlier (IDs a month ahead of the old ones);
/// - one more worker bit, one time bit fewer (twice the IDs of the same instant);
/// - the worker field below the sequence, on an epoch 30 days earlier;
/// - the worker field below the sequence, same epoch (the same 64 bits as other worker
///   IDs of the old layout at the same instant);
/// - the same, 10 s earlier (an old node issues 10 s later what a new one issued: the
///   attack of issue 40, at the fleet's scale);
/// - the same fields on an epoch a minute later (IDs the old layout issued a minute ago);
/// - one more worker bit, one sequence bit fewer (worker `w`'s IDs are old worker
///   `w / 2`'s).
pub fn targets(from: &Layout, at_ms: u64) -> Vec<Target> {
    let bits = from.node_bits();
    let epoch = from.epoch_ms();
    // (epoch shift in ms, fields), in 1 ms units as the fleet's.
    let month = -30 * DAY_MS as i64;
    let specs: [(i64, String); 7] = [
        (month, format!("time:41,worker:{bits},seq:12")),
        (0, format!("time:40,worker:{},seq:12", bits + 1)),
        (month, format!("time:41,seq:12,worker:{bits}")),
        (0, format!("time:41,seq:12,worker:{bits}")),
        (-10_000, format!("time:41,seq:12,worker:{bits}")),
        (60_000, format!("time:41,worker:{bits},seq:12")),
        (0, format!("time:41,worker:{},seq:11", bits + 1)),
    ];
    NAMES
        .iter()
        .zip(specs)
        .map(|(name, (shift, spec))| {
            let layout = Layout::from_spec(&spec, 1, epoch.saturating_add_signed(shift))
                .unwrap_or_else(|e| panic!("the simulated layout {spec}: {e}"));
            let m = migrate::check(from, 0, &layout, at_ms);
            Target {
                name,
                safe: m.safe_for_rollout(DEFAULT_ROLLOUT_MS),
                verdict: m.verdict,
                layout,
            }
        })
        .collect()
}

/// The target `pick` names or draws (`draw` is a number from the seed).
pub fn choose(from: &Layout, at_ms: u64, pick: &Pick, draw: u64) -> Option<Target> {
    let all = targets(from, at_ms);
    let fitting: Vec<Target> = match pick {
        Pick::Named(name) => all.into_iter().filter(|t| t.name == name).collect(),
        Pick::Safe => all.into_iter().filter(|t| t.safe).collect(),
        Pick::Unsafe => all.into_iter().filter(|t| !t.safe).collect(),
    };
    let n = u64::try_from(fitting.len()).ok().filter(|n| *n > 0)?;
    fitting
        .into_iter()
        .nth(usize::try_from(draw % n).unwrap_or(0))
}

/// The wall-clock instant (ms since 1970) a rollout `after` the run's start begins.
pub fn rollout_at_ms(after: Duration) -> u64 {
    crate::world::WALL_START_MS + u64::try_from(after.as_millis()).unwrap_or(u64::MAX)
}
