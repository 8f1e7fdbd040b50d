//! Clients' requests for IDs and their way through the fleet, as the server routes them:
//! the leader serves a request itself ([`OracleNode::next`](snowdrift_store::tso::OracleNode::next)),
//! a follower forwards it over the simulated network to the node the leader key names, and
//! checks the answer with the server's own check ([`check_answer`]) before it serves it.
//!
//! The network between nodes is the one between a node and etcd (latency, spikes, lost
//! messages; a node cut off is cut off from its peers too; a paused process handles
//! nothing), and it may deliver an answer this follower already served again for a later
//! call (a duplicated message): the check must refuse it. (An answer it never served,
//! delivered late for a later call, would pass its check, which compares with what this
//! node served only: the real transport, gRPC over HTTP/2, matches each answer to its
//! call, so the simulated one does too.)

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use snowdrift_core::segment::IdRange;
use snowdrift_store::tso::{AnsweredRun, Asked, LeaderAnswer, Role, check_answer};
use tokio::time::Instant;

use super::process::{Process, node_of};
use super::world::TsoWorld;

/// Why a request got no IDs.
pub type Refused = String;

/// Asks node `n` for `count` IDs, as a client does: its answer (the IDs and the term that
/// issued them), or why not.
pub async fn ask(tso: &Arc<TsoWorld>, n: usize, count: u64) -> Result<(IdRange, i64), Refused> {
    tso.world.awake(n).await;
    let process = tso.process(n).ok_or("the node is down")?;
    match process.node.role() {
        Role::Leader { .. } => {
            let (range, term) = process.node.next(count).await.map_err(|e| e.to_string())?;
            process.served.issued(&range);
            Ok((range, term))
        }
        Role::Follower { leader, term } => forward(tso, n, &process, &leader, term, count).await,
        Role::Electing { .. } | Role::Stopped => Err("no leader (electing)".into()),
    }
}

/// Forwards a request of `count` IDs from follower `n` to `leader` (the key's term `term`)
/// and checks the answer.
async fn forward(
    tso: &Arc<TsoWorld>,
    n: usize,
    process: &Arc<Process>,
    leader: &str,
    term: i64,
    count: u64,
) -> Result<(IdRange, i64), Refused> {
    let m = node_of(leader).ok_or_else(|| format!("no node at {leader}"))?;
    let mark = process.served.mark();
    let (range, answered) = call(tso, n, m, count, tso.forward_timeout).await?;
    tso.world.awake(n).await;
    if !process.alive() {
        return Err("the node was killed".into());
    }
    // A duplicated message: an answer of the same leader that this process already
    // served, delivered again for this call (as a middlebox retrying a response would).
    let (range, answered) = match process.last_served() {
        Some((l, r, t)) if l == m && tso.world.rng().random_bool(tso.duplicate) => {
            tso.count("duplicated answers delivered");
            (r, t)
        }
        _ => (range, answered),
    };
    let answer = LeaderAnswer {
        term: Some(answered),
        runs: vec![AnsweredRun {
            first: range.start,
            count: range.end - range.start,
            stride: 1,
        }],
        kind: "tso".into(),
        is_tso: true,
    };
    let asked = Asked { term, count, mark };
    use snowdrift_core::clock::Clock;
    match check_answer(
        &asked,
        &answer,
        &process.tso,
        process.clock.now_ms(),
        &process.served,
    ) {
        Ok(range) => {
            process.served_from(m, range, answered);
            Ok((range, answered))
        }
        Err(refused) => {
            tso.count(match refused.why.label() {
                "term" => "answers refused: term",
                "shape" => "answers refused: shape",
                "out_of_range" => "answers refused: out of range",
                "not_above_served" => "answers refused: not above served",
                _ => "answers refused: other",
            });
            Err(refused.problem)
        }
    }
}

/// One call from `n` to the leader `m`: the request's trip, `m` serving it (if it runs and
/// leads), the answer's trip back; nothing when a message is lost or a link is cut.
async fn call(
    tso: &Arc<TsoWorld>,
    n: usize,
    m: usize,
    count: u64,
    timeout: Duration,
) -> Result<(IdRange, i64), Refused> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let world = &tso.world;
    let (there, back) = (world.trip(), world.trip());
    let cut_at_send = world.cut(n);
    let flight = tso.clone();
    tokio::spawn(async move {
        let (Some(there), false) = (there, cut_at_send) else {
            return;
        };
        tokio::time::sleep(there).await;
        let world = &flight.world;
        if world.cut(n) || world.cut(m) {
            return;
        }
        world.awake(m).await;
        let Some(leader) = flight.process(m) else {
            return;
        };
        let answer = match leader.node.role() {
            Role::Leader { .. } => match leader.node.next(count).await {
                Ok((range, term)) => {
                    leader.served.issued(&range);
                    Ok((range, term))
                }
                Err(e) => Err(e.to_string()),
            },
            _ => Err(format!("node {m} does not lead")),
        };
        world.awake(m).await;
        if !leader.alive() {
            return;
        }
        let Some(back) = back else { return };
        tokio::time::sleep(back).await;
        if world.cut(n) || world.cut(m) {
            return;
        }
        let _ = tx.send(answer);
    });
    let heard = async {
        match rx.await {
            Ok(answer) => answer,
            Err(_) => std::future::pending().await,
        }
    };
    match tokio::time::timeout_at(Instant::now() + timeout, heard).await {
        Ok(answer) => answer,
        Err(_) => Err(format!(
            "the leader node {m} gave no answer within {timeout:?}"
        )),
    }
}
