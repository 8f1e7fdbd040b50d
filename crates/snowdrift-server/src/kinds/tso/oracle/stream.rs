//! A follower's one long-lived stream to the leader (PD's follower proxy): the requests of
//! this node's clients are taken from the queue, every request waiting at that moment merged
//! into one message for their total (at most `max_count`), and sent on a `TsoPeer.Forward`
//! stream to the node the leader key names; up to [`IN_FLIGHT`] messages are on their way
//! at once, and while they are the requests that come wait and merge into the next. Each
//! answer goes through every check a `Next` answer does ([`Forwarder::check`]: the term the
//! leader key named when the message was sent, the shape, the reach, above what this node
//! had served), then each request gets its slice.
//!
//! The stream is opened when first needed and again when the leader key names another node
//! or the stream breaks (every message on a broken stream fails as a `Next` call to a gone
//! leader would: the request waits for the election and asks again). A leader without the
//! stream (a node of an older version, answering UNIMPLEMENTED) is asked with one `Next`
//! call per merged group instead.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use snowdrift_proto::grpc::tso_peer_client::TsoPeerClient;
use snowdrift_proto::grpc::{ForwardReply, ForwardRequest};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tonic::Code;

use super::forward::{Answer, Failure, Forwarder, answer, failure};
use snowdrift_store::tso::ServedMark;
use super::{Request, Role, Shared};
use crate::error::Error;

/// Messages on their way to the leader at once: one, as PD's client sends one TSO batch at
/// a time by default. While it is out, every request that comes waits and goes in the next,
/// so under load each message carries many (50 connections of single IDs: 4.2 requests per
/// message with 8 in flight). Each message costs both nodes a wake-up and a TCP exchange;
/// with one in flight a follower served 0.82-1.02x the leader's rate on a CPU shared with
/// it (medians 0.89x, 0.91x and 0.89x in three runs), with 2 0.80x, with 8 0.69-0.72x, and
/// its p50 latency fell too (BENCHMARKS.md). The
/// price, on a network with a longer round trip: a request that comes while a message is
/// out waits for it, up to one round trip more.
const IN_FLIGHT: usize = 1;

/// Requests this node may queue on the stream before the leader read them.
const OUTBOX: usize = IN_FLIGHT * 2;

/// A message sent and not yet answered.
struct Pending {
    group: Vec<Request>,
    count: u64,
    /// The term the leader key named when it was sent.
    term: i64,
    mark: ServedMark,
    /// Its place among the [`IN_FLIGHT`].
    _slot: OwnedSemaphorePermit,
}

type PendingMap = Arc<Mutex<HashMap<u64, Pending>>>;

/// The stream to one leader.
struct Conn {
    leader: String,
    /// The term the leader key named when it was opened: a new term opens a new stream.
    term: i64,
    /// `None`: the leader has no stream (UNIMPLEMENTED); groups go as `Next` calls.
    outbox: Option<mpsc::Sender<ForwardRequest>>,
    pending: PendingMap,
    /// Set by the reader when the leader's side ended.
    ended: Arc<AtomicBool>,
    /// Set by the reader when the leader answered the stream UNIMPLEMENTED: groups go as
    /// `Next` calls.
    no_stream: Arc<AtomicBool>,
}

impl Conn {
    fn is_open(&self) -> bool {
        self.no_stream.load(Ordering::Acquire)
            || (!self.ended.load(Ordering::Acquire)
                && self.outbox.as_ref().is_some_and(|o| !o.is_closed()))
    }
}

/// The forwarder: until the queue closes.
pub(super) async fn run(
    mut queue: mpsc::Receiver<Request>,
    forwarder: Arc<Forwarder>,
    shared: Arc<Shared>,
    name: String,
    max_count: u64,
) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut carry: Option<Request> = None;
    let mut conn: Option<Conn> = None;
    let mut next_id = 0u64;
    loop {
        let slot = match tokio::time::timeout(forwarder.timeout(), slots.clone().acquire_owned())
            .await
        {
            Ok(Ok(slot)) => slot,
            Ok(Err(_)) => return,
            // Every place is held by a message the leader has not answered for twice the
            // lease: a leader that reads and never answers. What it holds fails (its callers
            // ask again as the election says), and the next message opens a new stream.
            Err(_) => {
                if let Some(c) = conn.take() {
                    c.ended.store(true, Ordering::Release);
                    fail_pending(&c.pending, &shared, "it answered nothing for twice the lease");
                }
                continue;
            }
        };
        let first = match carry.take() {
            Some(r) => r,
            None => match queue.recv().await {
                Some(r) => r,
                None => return,
            },
        };
        let mut total = first.count;
        let mut group = vec![first];
        while let Ok(r) = queue.try_recv() {
            if total + r.count > max_count {
                carry = Some(r);
                break;
            }
            total += r.count;
            group.push(r);
        }
        let (leader, term) = match &*shared.role.borrow() {
            Role::Follower { leader, term } => (leader.clone(), *term),
            // The role changed while they waited: each asks again as it now says.
            _ => {
                answer(
                    group,
                    Err(Failure::LeaderGone("this node's role changed".into())),
                    &shared,
                );
                continue;
            }
        };
        if let Err(f) = forwarder.may_send_token(&leader, &name, &shared.counters) {
            answer(group, Err(f), &shared);
            continue;
        }
        shared
            .counters
            .forward_calls
            .fetch_add(1, Ordering::Relaxed);
        if !conn
            .as_ref()
            .is_some_and(|c| c.leader == leader && c.term == term && c.is_open())
        {
            conn = match open(&forwarder, &shared, &leader, term, &name).await {
                Ok(c) => Some(c),
                Err(f) => {
                    answer(group, Err(f), &shared);
                    continue;
                }
            };
        }
        let Some(c) = conn.as_ref() else { continue };
        let pending = Pending {
            group,
            count: total,
            term,
            mark: shared.served.mark(),
            _slot: slot,
        };
        let outbox = match &c.outbox {
            Some(o) if !c.no_stream.load(Ordering::Acquire) => o,
            // A leader without the stream: one `Next` call for the group, beside the others.
            _ => {
                unary(&forwarder, &shared, &leader, term, &name, pending);
                continue;
            }
        };
        next_id += 1;
        let id = next_id;
        c.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, pending);
        let message = ForwardRequest {
            id,
            name: name.clone(),
            count: total,
        };
        // The reader marks the stream ended (or without the method) before it takes what
        // is pending; a message put there after it took them is taken back here.
        let sent = outbox.send(message).await.is_ok();
        if !sent || c.ended.load(Ordering::Acquire) || c.no_stream.load(Ordering::Acquire) {
            let lost = c.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            match lost {
                None => {}
                Some(p) if c.no_stream.load(Ordering::Acquire) => {
                    unary(&forwarder, &shared, &leader, term, &name, p)
                }
                Some(p) => answer(
                    p.group,
                    Err(Failure::LeaderGone(format!("the stream to {leader} ended"))),
                    &shared,
                ),
            }
        }
    }
}

/// Fails every message in `pending` as sent to a gone leader, saying `why`.
fn fail_pending(pending: &PendingMap, shared: &Shared, why: &str) {
    let left: Vec<Pending> = pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .drain()
        .map(|(_, p)| p)
        .collect();
    for p in left {
        answer(p.group, Err(Failure::LeaderGone(why.to_string())), shared);
    }
}

/// Opens the stream to `leader` and starts its reader; a leader without it gives a [`Conn`]
/// without an outbox.
async fn open(
    forwarder: &Arc<Forwarder>,
    shared: &Arc<Shared>,
    leader: &str,
    term: i64,
    name: &str,
) -> Result<Conn, Failure> {
    // No timeout on the call (it lasts as long as the leader leads); a leader that goes
    // silent is found by HTTP/2 keep-alive pings.
    let channel = forwarder
        .endpoint(leader)?
        .http2_keep_alive_interval(Duration::from_secs(1))
        .keep_alive_timeout(forwarder.timeout() / 2)
        .keep_alive_while_idle(true)
        .connect_lazy();
    let (outbox, requests) = mpsc::channel::<ForwardRequest>(OUTBOX);
    let requests = futures_util::stream::unfold(requests, |mut r| async move {
        r.recv().await.map(|m| (m, r))
    });
    let mut request = tonic::Request::new(requests);
    if let Some(a) = forwarder.authorization() {
        request.metadata_mut().insert("authorization", a.clone());
    }
    let opened = tokio::time::timeout(
        forwarder.timeout(),
        TsoPeerClient::new(channel).forward(request),
    )
    .await;
    let replies = match opened {
        Ok(Ok(r)) => r.into_inner(),
        Ok(Err(status)) if status.code() == Code::Unimplemented => {
            tracing::info!(
                generator = name,
                leader,
                "the tso leader has no TsoPeer stream (an older version): forwarding with a Next call per group"
            );
            return Ok(Conn {
                leader: leader.to_string(),
                term,
                outbox: None,
                pending: PendingMap::default(),
                ended: Arc::default(),
                no_stream: Arc::new(AtomicBool::new(true)),
            });
        }
        Ok(Err(status)) => return Err(failure(leader, &status)),
        Err(_) => {
            return Err(Failure::LeaderGone(format!(
                "the stream to {leader} did not open within {:?}",
                forwarder.timeout()
            )));
        }
    };
    let pending = PendingMap::default();
    let ended = Arc::new(AtomicBool::new(false));
    let no_stream = Arc::new(AtomicBool::new(false));
    tokio::spawn(read(
        replies,
        pending.clone(),
        ended.clone(),
        no_stream.clone(),
        term,
        forwarder.clone(),
        shared.clone(),
        leader.to_string(),
        name.to_string(),
    ));
    Ok(Conn {
        leader: leader.to_string(),
        term,
        outbox: Some(outbox),
        pending,
        ended,
        no_stream,
    })
}

/// The stream's reader: each answer checked and handed out; when the stream ends, every
/// message still pending fails as to a gone leader.
#[allow(clippy::too_many_arguments)]
async fn read(
    mut replies: tonic::Streaming<ForwardReply>,
    pending: PendingMap,
    ended: Arc<AtomicBool>,
    no_stream: Arc<AtomicBool>,
    term: i64,
    forwarder: Arc<Forwarder>,
    shared: Arc<Shared>,
    leader: String,
    name: String,
) {
    let mut answered = false;
    let why = loop {
        match replies.next().await {
            // A server without the method (an older snowdrift) answers with no message.
            Some(Err(status)) if status.code() == Code::Unimplemented && !answered => {
                tracing::info!(
                    generator = name,
                    leader,
                    "the tso leader has no TsoPeer stream (an older version): forwarding with a Next call per group"
                );
                no_stream.store(true, Ordering::Release);
                let left: Vec<Pending> = pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .drain()
                    .map(|(_, p)| p)
                    .collect();
                for p in left {
                    unary(&forwarder, &shared, &leader, term, &name, p);
                }
                return;
            }
            Some(Ok(reply)) => {
                answered = true;
                let p = pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&reply.id);
                // An answer to nothing this node sent: no leader's; ignored (the
                // message it names, if any, is answered or fails with the stream).
                let Some(p) = p else { continue };
                let outcome = outcome(&forwarder, &shared, &leader, &name, p.count, p.term, p.mark, reply);
                answer(p.group, outcome, &shared);
            }
            Some(Err(status)) => break format!("{:?}: {}", status.code(), status.message()),
            None => break "the leader ended the stream".to_string(),
        }
    };
    // Before the pending are failed: a request that asks again must find a new stream.
    ended.store(true, Ordering::Release);
    fail_pending(&pending, &shared, &format!("the stream to {leader}: {why}"));
}

/// What one answer on the stream gives: the IDs and their term once checked, or why not.
#[allow(clippy::too_many_arguments)]
fn outcome(
    forwarder: &Forwarder,
    shared: &Shared,
    leader: &str,
    name: &str,
    count: u64,
    term: i64,
    mark: ServedMark,
    reply: ForwardReply,
) -> Result<(snowdrift_core::segment::IdRange, i64), Failure> {
    let Some(batch) = reply.batch else {
        let code = Code::from_i32(reply.code as i32);
        if code == Code::Ok {
            return Err(Failure::Refused(Error::unavailable(format!(
                "the tso leader {leader} answered neither IDs nor an error for {count} IDs of \
                 {name:?}: is it a snowdrift server?"
            ))));
        }
        return Err(failure(leader, &tonic::Status::new(code, reply.message)));
    };
    let answered_term = (reply.term != 0).then_some(reply.term);
    let answer = Answer {
        leader,
        term,
        name,
        count,
        answered_term,
        batch,
        mark,
    };
    forwarder
        .check(answer, &shared.served, &shared.counters)
        .map(|range| (range, term))
}

/// Sends `p`'s group as one `Next` call (to a leader without the stream), beside the others.
fn unary(forwarder: &Arc<Forwarder>, shared: &Arc<Shared>, leader: &str, term: i64, name: &str, p: Pending) {
    let (forwarder, shared, leader, name) =
        (forwarder.clone(), shared.clone(), leader.to_string(), name.to_string());
    tokio::spawn(async move {
        let outcome = forwarder
            .next(&leader, term, &name, p.count, &shared.served, &shared.counters)
            .await
            .map(|range| (range, term));
        answer(p.group, outcome, &shared);
    });
}
