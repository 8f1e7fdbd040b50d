//! A follower's client of the leader: requests for a `tso` generator are sent on, as gRPC
//! `Next` calls, to the node the leader key names, over one cached connection. Requests
//! waiting together go in one call for their total (PD's clients batch the same way), and
//! each gets its slice: the IDs were allocated at one instant on the leader, within every
//! such request's time.
//!
//! Nothing the leader answers is taken on trust: the leader key was checked when it was
//! read (a live lease of a campaign, `snowdrift_store::tso`), the answer must name the same
//! term, be one run of exactly the count asked for, not wrap, not lie further ahead than a
//! leader could be, and be above everything this node had served; the `forward_token` is
//! never sent in cleartext unless `forward_plaintext` says so.

use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use snowdrift_core::clock::{Clock, MonotonicClock, OffsetClock};
use snowdrift_core::segment::IdRange;
use snowdrift_core::tso::TsoConfig;
use snowdrift_proto::grpc::{IdBatch, NextRequest};
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use tonic::Code;
use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use snowdrift_store::tso::{AnsweredRun, Asked, LeaderAnswer, ServedMark, check_answer};

use super::{Counters, Refusal, Reply, Request, Served, Shared};
use crate::error::Error;
use crate::kinds::tso::TsoPlan;

/// The metadata key that marks a forwarded call: the leader answers it itself, or refuses.
pub(crate) const FORWARDED_HEADER: &str = "snowdrift-forwarded";
/// The one value of [`FORWARDED_HEADER`] a follower sends; any other is refused.
pub(crate) const FORWARDED_VALUE: &str = "1";
/// The response metadata key in which a leader names the term (its etcd lease, decimal)
/// that issued the IDs of a forwarded call.
pub(crate) const TERM_HEADER: &str = "snowdrift-tso-term";

/// Why forwarding did not give IDs.
pub(super) enum Failure {
    /// The leader answered with an error that a retry elsewhere would not change.
    Refused(Error),
    /// The leader could not be reached, or no longer leads: wait for the election.
    LeaderGone(String),
}

/// The connection to the current leader, made when first needed and again when the leader
/// changes.
pub(super) struct Forwarder {
    authorization: Option<MetadataValue<tonic::metadata::Ascii>>,
    /// `forward_plaintext`: the token may go to a plain `http://` leader.
    plaintext: bool,
    /// The oracle's options, to read the time in an answer's IDs.
    oracle: TsoConfig,
    /// This node's clock, as its oracle reads it.
    clock: OffsetClock<MonotonicClock>,
    tls: Option<ClientTlsConfig>,
    timeout: Duration,
    client: Mutex<Option<(String, Channel)>>,
}

impl std::fmt::Debug for Forwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forwarder")
            .field("token", &self.authorization.as_ref().map(|_| "***"))
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Forwarder {
    /// A forwarder presenting `plan.forward_token`, checking an `https://` leader against
    /// `plan.forward_ca` (the system's roots only without one, under `insecure_coordinator`).
    pub(super) fn new(
        plan: &TsoPlan,
        clock_offset_ms: i64,
    ) -> Result<Self, snowdrift_store::Error> {
        let invalid = |m: String| snowdrift_store::Error::InvalidInput(m);
        let authorization = plan
            .forward_token
            .as_deref()
            .map(|t| {
                format!("Bearer {t}").parse().map_err(|_| {
                    invalid("forward_token holds characters a header cannot carry".into())
                })
            })
            .transpose()?;
        // The cluster's own certificate alone when there is one: a leader that the system's
        // roots trust (any public certificate of any host) is not thereby a member.
        let mut tls = ClientTlsConfig::new();
        if plan.forward_ca.is_none() {
            tls = tls.with_native_roots();
        }
        if let Some(path) = &plan.forward_ca {
            let pem = std::fs::read(path).map_err(|e| {
                invalid(format!(
                    "reading {} to check a tso leader's certificate: {e}",
                    path.display()
                ))
            })?;
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        Ok(Self {
            authorization,
            plaintext: plan.forward_plaintext,
            oracle: plan.oracle,
            clock: OffsetClock::new(MonotonicClock::new(), clock_offset_ms),
            tls: Some(tls),
            timeout: plan.ttl * 2,
            client: Mutex::new(None),
        })
    }

    /// `count` IDs of oracle `name` from `leader` (its advertised URL) in `term`, by one
    /// `Next` call (to a leader without `TsoPeer.Forward`), checked against what this node
    /// has `served`; a refusal counted in `counters`.
    pub(super) async fn next(
        &self,
        leader: &str,
        term: i64,
        name: &str,
        count: u64,
        served: &Served,
        counters: &Counters,
    ) -> Result<IdRange, Failure> {
        self.may_send_token(leader, name, counters)?;
        let mut client = IdServiceClient::new(self.channel(leader)?);
        let mut request = tonic::Request::new(NextRequest {
            name: name.to_string(),
            count: Some(count),
            ..Default::default()
        });
        request.metadata_mut().insert(
            FORWARDED_HEADER,
            MetadataValue::from_static(FORWARDED_VALUE),
        );
        if let Some(a) = &self.authorization {
            request.metadata_mut().insert("authorization", a.clone());
        }
        let mark = served.mark();
        let response = match client.next(request).await {
            Ok(r) => r,
            Err(status) => return Err(failure(leader, &status)),
        };
        let answered_term = response
            .metadata()
            .get(TERM_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<i64>().ok());
        let answer = Answer {
            leader,
            term,
            name,
            count,
            answered_term,
            batch: response.into_inner(),
            mark,
        };
        self.check(answer, served, counters)
    }

    /// An error unless this node may send its `forward_token` to `leader`: over TLS, or in
    /// cleartext where `forward_plaintext` allows it.
    pub(super) fn may_send_token(
        &self,
        leader: &str,
        name: &str,
        counters: &Counters,
    ) -> Result<(), Failure> {
        if self.authorization.is_some()
            && !self.plaintext
            && !leader
                .get(..8)
                .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
        {
            return Err(Failure::Refused(Error::unavailable(refuse(
                counters,
                name,
                leader,
                Refusal::PlaintextToken,
                format!(
                    "the tso leader {leader} is not https://, and this node does not send its \
                     forward_token in cleartext (anyone on the path, or a fake leader named in \
                     etcd, would read it): serve the nodes over TLS (server.tls_cert), or set \
                     forward_plaintext = true on generator {name:?} if the network is trusted"
                ),
            ))));
        }
        Ok(())
    }

    /// The IDs of the leader's `answer`, once it passed every check: the term the leader
    /// key names, one run of exactly the count asked for, no wrap, within reach of this
    /// node's clock, above what this node had served when it asked.
    pub(super) fn check(
        &self,
        answer: Answer<'_>,
        served: &Served,
        counters: &Counters,
    ) -> Result<IdRange, Failure> {
        let Answer {
            leader,
            term,
            name,
            count,
            answered_term,
            batch,
            mark,
        } = answer;
        let what = |problem: &str| {
            format!(
                "this node refused what the tso leader {leader} answered for {count} IDs of \
                 {name:?}: {problem}; nothing was served from it"
            )
        };
        let read = LeaderAnswer {
            term: answered_term,
            runs: batch
                .runs
                .iter()
                .map(|r| AnsweredRun {
                    first: r.first,
                    count: r.count,
                    stride: r.stride,
                })
                .collect(),
            kind: format!("{:?}", batch.kind),
            is_tso: batch.kind_value() == Some(crate::config::Kind::Tso),
        };
        let asked = Asked { term, count, mark };
        // The same check the simulator runs (`snowdrift_store::tso::check_answer`).
        check_answer(&asked, &read, &self.oracle, self.clock.now_ms(), served).map_err(|r| {
            let message = refuse(counters, name, leader, r.why, what(&r.problem));
            match (r.why, answered_term) {
                // A node that stopped leading, or not the one the key names: the key will
                // change, so ask again as the election says.
                (Refusal::Term, Some(_)) => Failure::LeaderGone(message),
                _ => Failure::Refused(Error::unavailable(message)),
            }
        })
    }

    /// The channel to `leader` for `Next` calls, each cut at twice the lease.
    fn channel(&self, leader: &str) -> Result<Channel, Failure> {
        let mut cached = self.client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((url, channel)) = cached.as_ref()
            && url == leader
        {
            return Ok(channel.clone());
        }
        let channel = self
            .endpoint(leader)?
            .timeout(self.timeout)
            .connect_lazy();
        *cached = Some((leader.to_string(), channel.clone()));
        Ok(channel)
    }

    /// An endpoint for `leader`, over TLS for an `https://` one.
    pub(super) fn endpoint(&self, leader: &str) -> Result<Endpoint, Failure> {
        let mut endpoint = Endpoint::from_shared(leader.to_string())
            .map_err(|e| Failure::LeaderGone(format!("the leader's URL is not valid: {e}")))?
            .connect_timeout(Duration::from_secs(1))
            .tcp_nodelay(true);
        if leader.starts_with("https://")
            && let Some(tls) = &self.tls
        {
            endpoint = endpoint
                .tls_config(tls.clone())
                .map_err(|e| Failure::LeaderGone(format!("TLS for the leader: {e}")))?;
        }
        Ok(endpoint)
    }

    /// The `authorization` metadata this node sends, if it has a `forward_token`.
    pub(super) fn authorization(&self) -> Option<&MetadataValue<tonic::metadata::Ascii>> {
        self.authorization.as_ref()
    }

    /// How long a request may wait for the leader: twice the lease.
    pub(super) fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// What the leader answered to one request, and what the request was.
pub(super) struct Answer<'a> {
    pub(super) leader: &'a str,
    /// The term the leader key named when the request was sent.
    pub(super) term: i64,
    pub(super) name: &'a str,
    pub(super) count: u64,
    /// The term the leader named in its answer, if any.
    pub(super) answered_term: Option<i64>,
    pub(super) batch: IdBatch,
    /// What this node had served when the request was sent.
    pub(super) mark: ServedMark,
}

/// Counts a refusal of `why` and returns its `message`.
fn refuse(counters: &Counters, name: &str, leader: &str, why: Refusal, message: String) -> String {
    counters.refused[Refusal::ALL.iter().position(|r| *r == why).unwrap_or(0)]
        .fetch_add(1, Ordering::Relaxed);
    // Not a warning per answer: a fake answers as often as it is asked, and the metric and
    // each 503 already say it.
    tracing::debug!(generator = name, leader, reason = why.label(), "{message}");
    message
}

/// Answers every request of `group` from `outcome` (the IDs for their total, and their term;
/// or why not): each its slice, in order.
pub(super) fn answer(group: Vec<Request>, outcome: Result<(IdRange, i64), Failure>, shared: &Shared) {
    match outcome {
        Ok((range, term)) => {
            let mut at = 0;
            for r in group {
                let _ = r
                    .reply
                    .send(Reply::Issued(range.slice(at, at + r.count), term));
                at += r.count;
            }
        }
        Err(failure) => {
            let c = &shared.counters;
            c.forward_errors
                .fetch_add(group.len() as u64, Ordering::Relaxed);
            let reply = match failure {
                Failure::Refused(e) => Reply::Failed(e),
                Failure::LeaderGone(why) => {
                    *shared
                        .forward_error
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = why;
                    Reply::NotLeading
                }
            };
            for r in group {
                let _ = r.reply.send(reply.clone());
            }
        }
    }
}

/// What a refusal from the leader means here.
pub(super) fn failure(leader: &str, status: &tonic::Status) -> Failure {
    let message = status.message();
    match status.code() {
        Code::Unavailable | Code::Unknown | Code::Cancelled | Code::DeadlineExceeded => {
            Failure::LeaderGone(format!("{:?}: {message}", status.code()))
        }
        Code::InvalidArgument | Code::OutOfRange => Failure::Refused(Error::invalid(message)),
        Code::Unauthenticated | Code::PermissionDenied => {
            Failure::Refused(Error::unavailable(format!(
                "the tso leader {leader} refused this node's forward_token ({message}); give \
                 every node a forward_token that the leader's [[auth.token]] list has, with \
                 this generator in its scope"
            )))
        }
        _ => Failure::Refused(Error::unavailable(format!(
            "the tso leader {leader} answered {:?}: {message}",
            status.code()
        ))),
    }
}
