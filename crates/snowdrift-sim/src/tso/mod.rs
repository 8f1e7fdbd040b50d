//! The timestamp oracle simulation (`scripts/simulate --tso`): a cluster of nodes, each
//! running the real [`OracleNode`](snowdrift_store::tso::OracleNode) (its campaign on etcd,
//! terms started above the saved window, window saves, renewals, stopping `ttl / 5` before
//! its lease could lapse) over [`EtcdTso::over`](snowdrift_store::tso::EtcdTso::over) on
//! the simulated etcd; clients ask any node, a follower forwards to the leader over the
//! simulated network and checks each answer with the server's own check
//! ([`check_answer`](snowdrift_store::tso::check_answer)). Leaders are killed, paused past
//! their lease and cut off, etcd changes leader, clocks step. Every answered request is
//! recorded with the times it was asked and answered, and the history is checked with the
//! project's linearizability checker (`snowdrift-history`): no ID twice, each answer
//! consecutive, none below an answer that completed before it was asked for; and each
//! client's IDs rise.

pub mod chaos;
pub mod process;
pub mod requests;
pub mod world;

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use snowdrift_core::tso::TsoConfig;
use snowdrift_history::History;
use tokio::time::Instant;

use self::world::{Answered, TsoWorld};
use crate::checker::{Checker, Failure};
use crate::coordinator::Stats;
use crate::scenario::{Scenario, Settings, pick};
use crate::world::{World, lock};

/// What one tso run did and found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What was asked.
    pub settings: Settings,
    /// The leader lease drawn.
    pub ttl: Duration,
    /// The window drawn (ms).
    pub window_ms: u64,
    /// Broken guarantees; empty when the run passed.
    pub failures: Vec<Failure>,
    /// A hash of every answer in order: equal for two runs of the same settings.
    pub digest: u64,
    /// Requests answered with IDs.
    pub answered: u64,
    /// IDs handed out.
    pub ids: u64,
    /// Requests that got none (no leader, a lost call, an answer refused).
    pub failed: u64,
    /// Terms led (campaigns won).
    pub terms: u64,
    /// Terms whose IDs a client got.
    pub terms_answering: u64,
    /// Processes started.
    pub starts: u64,
    /// Faults and refusals, by kind.
    pub counts: std::collections::BTreeMap<&'static str, u64>,
    /// What etcd did.
    pub etcd: Stats,
    /// Simulated time run.
    pub simulated: Duration,
}

impl Outcome {
    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        let s = &self.settings;
        let mut cmd =
            crate::run::replay_of("--tso", s.seed, s.nodes, s.duration, s.faults, &s.mistakes);
        if s.freeze_pauses {
            cmd.push_str(" --freeze-pauses");
        }
        cmd
    }

    /// Simulated node-hours.
    pub fn node_hours(&self) -> f64 {
        self.settings.nodes as f64 * self.simulated.as_secs_f64() / 3600.0
    }

    /// What the run did, in one line.
    pub fn describe(&self) -> String {
        format!(
            "{} tso nodes, lease {:?}, window {} ms; {:?} simulated; {} starts, {} terms led ({} answered clients); {} requests answered ({} IDs), {} got none; events {:?}; etcd {:?}",
            self.settings.nodes,
            self.ttl,
            self.window_ms,
            self.simulated,
            self.starts,
            self.terms,
            self.terms_answering,
            self.answered,
            self.ids,
            self.failed,
            self.counts,
            self.etcd,
        )
    }
}

/// Runs one seed of the tso simulation to its end, on this thread.
pub fn run(settings: Settings) -> Outcome {
    let mistakes = settings.mistakes.clone();
    crate::run::on_this_thread(&mistakes, simulate(settings))
}

async fn simulate(settings: Settings) -> Outcome {
    // Drawn apart from the world's RNG: the network, clocks and etcd faults are the
    // worker simulation's, drawn as there.
    let mut rng = StdRng::seed_from_u64(settings.seed ^ 0x75_0a11);
    let ttl = Duration::from_secs(*pick(&mut rng, &[1, 2, 3, 5]));
    let window_ms = *pick(&mut rng, &[200, 1_000, 3_000]);
    let duplicate = *pick(&mut rng, &[0.0, 0.01, 0.05]) * if settings.faults { 1.0 } else { 0.0 };
    let request_every = Duration::from_millis(*pick(&mut rng, &[20, 100, 300]));
    let tso = TsoConfig {
        window_ms,
        ..TsoConfig::default()
    };
    let duration = settings.duration;
    let faults = settings.faults;
    let scenario = Scenario::draw(settings.clone());
    let world = Arc::new(World::new(
        scenario,
        Checker::new(Vec::new()),
        crate::capacity::Capacity::default(),
    ));
    let t0 = world.t0;
    let state = Arc::new(TsoWorld::new(world.clone(), ttl, tso, duplicate));
    tokio::spawn(crate::chaos::coordinator_ticks(world.clone()));
    let nodes = settings.nodes;
    for n in 0..nodes {
        state.start(n);
    }
    if faults {
        // etcd's faults as the worker simulation draws them (the node commands are the
        // file registry's machine crash only, which etcd never does).
        let idle: Vec<_> = (0..nodes)
            .map(|_| tokio::sync::mpsc::unbounded_channel().0)
            .collect();
        tokio::spawn(crate::chaos::coordinator_faults(world.clone(), idle));
        tokio::spawn(chaos::node_faults(state.clone()));
    }
    for n in 0..nodes {
        tokio::spawn(client(state.clone(), n, request_every));
    }
    tokio::time::sleep_until(t0 + duration).await;
    let log = lock(&state.log);
    let failures = check(&log.answered, nodes);
    let terms_answering = log
        .answered
        .iter()
        .map(|a| a.term)
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u64;
    let mut counts = log.counts.clone();
    // etcd's faults, counted by the worker simulation's driver.
    for (what, n) in &lock(&world.counts).faults {
        *counts.entry(what).or_default() += n;
    }
    let (answered, failed, starts) = (log.answered.len() as u64, log.failed, log.starts);
    let ids = log
        .answered
        .iter()
        .map(|a| a.range.end - a.range.start)
        .sum();
    let digest = digest(&log.answered);
    drop(log);
    let etcd = lock(&world.coordinator).stats();
    Outcome {
        settings,
        ttl,
        window_ms,
        failures,
        digest,
        answered,
        ids,
        failed,
        terms: state.terms(),
        terms_answering,
        starts,
        counts,
        etcd,
        simulated: world.elapsed(),
    }
}

/// The client of node `n`: one request after another, 1 to 4 IDs each, each recorded with
/// when it was sent and when its answer came.
async fn client(tso: Arc<TsoWorld>, n: usize, every: Duration) {
    let t0 = tso.world.t0;
    loop {
        let (gap, count) = {
            let mut rng = tso.world.rng();
            (
                crate::chaos::scale(&mut rng, every, 0.0, 2.0),
                rng.random_range(1..=4u64),
            )
        };
        tokio::time::sleep(gap).await;
        let invoke = Instant::now();
        let wait = tso.forward_timeout * 2;
        let answer = tokio::time::timeout(wait, requests::ask(&tso, n, count)).await;
        let complete = Instant::now();
        let ns = |t: Instant| u64::try_from((t - t0).as_nanos()).unwrap_or(u64::MAX);
        let mut log = lock(&tso.log);
        match answer {
            Ok(Ok((range, term))) => log.answered.push(Answered {
                node: n,
                invoke_ns: ns(invoke),
                complete_ns: ns(complete),
                range,
                term,
            }),
            _ => log.failed += 1,
        }
    }
}

/// The checks of a run's answers: the history linearizable (`snowdrift-history`: no ID
/// twice, each answer consecutive, none below an answer completed before it was asked for),
/// and each client's IDs rising.
fn check(answered: &[Answered], nodes: usize) -> Vec<Failure> {
    let mut history = History::new();
    let mut failures = Vec::new();
    let mut last = vec![None::<u64>; nodes];
    for a in answered {
        let client = format!("client of node {}", a.node);
        if let Err(e) = history.push(
            &client,
            a.invoke_ns,
            a.complete_ns,
            a.range.start..a.range.end,
        ) {
            failures.push(failure(a.complete_ns, format!("HISTORY: {e}")));
        }
        if let Some(top) = last[a.node]
            && a.range.start <= top
        {
            failures.push(failure(
                a.complete_ns,
                format!(
                    "NOT RISING: the {client} got {}..{} (term {}) after {top}",
                    a.range.start, a.range.end, a.term
                ),
            ));
        }
        last[a.node] = Some(a.range.end - 1);
    }
    let report = history.check();
    for v in report.violations.iter().take(10) {
        failures.push(failure(0, format!("NOT LINEARIZABLE: {v}")));
    }
    if report.violation_count() > 10 {
        failures.push(failure(
            0,
            format!(
                "NOT LINEARIZABLE: {} violations in all ({} duplicate IDs, {} real-time)",
                report.violation_count(),
                report.duplicate_count,
                report.real_time_count
            ),
        ));
    }
    failures
}

fn failure(at_ns: u64, what: String) -> Failure {
    Failure {
        at: Duration::from_nanos(at_ns),
        what,
    }
}

/// FNV-1a over every answer, in order.
fn digest(answered: &[Answered]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for a in answered {
        for x in [
            a.node as u64,
            a.invoke_ns,
            a.complete_ns,
            a.range.start,
            a.range.end,
            a.term as u64,
        ] {
            for b in x.to_le_bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    h
}
