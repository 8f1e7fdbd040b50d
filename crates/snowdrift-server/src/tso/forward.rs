//! A follower's client of the leader: requests for a `tso` generator are sent on, as gRPC
//! `Next` calls, to the node the leader key names, over one cached connection. Requests
//! waiting together go in one call for their total (PD's clients batch the same way), and
//! each gets its slice: the IDs were allocated at one instant on the leader, within every
//! such request's time.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use snowdrift_core::segment::IdRange;
use snowdrift_proto::grpc::NextRequest;
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use tonic::Code;
use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use super::{Reply, Request, Role, Shared};
use crate::error::Error;
use crate::plan::TsoPlan;

/// The metadata key that marks a forwarded call: the leader answers it itself, or refuses.
pub(crate) const FORWARDED_HEADER: &str = "snowdrift-forwarded";

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
    tls: Option<ClientTlsConfig>,
    timeout: Duration,
    client: Mutex<Option<(String, IdServiceClient<Channel>)>>,
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
    /// the system's roots and `plan.forward_ca`.
    pub(super) fn new(plan: &TsoPlan) -> Result<Self, snowdrift_store::Error> {
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
        let mut tls = ClientTlsConfig::new().with_native_roots();
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
            tls: Some(tls),
            timeout: plan.ttl * 2,
            client: Mutex::new(None),
        })
    }

    /// `count` IDs of oracle `name` from `leader` (its advertised URL).
    pub(super) async fn next(
        &self,
        leader: &str,
        name: &str,
        count: u64,
    ) -> Result<IdRange, Failure> {
        let mut client = self.client(leader)?;
        let mut request = tonic::Request::new(NextRequest {
            name: name.to_string(),
            count: Some(count),
            ..Default::default()
        });
        request
            .metadata_mut()
            .insert(FORWARDED_HEADER, MetadataValue::from_static("1"));
        if let Some(a) = &self.authorization {
            request.metadata_mut().insert("authorization", a.clone());
        }
        let batch = match client.next(request).await {
            Ok(r) => r.into_inner(),
            Err(status) => return Err(failure(leader, &status)),
        };
        // The leader answers one consecutive run of exactly `count`; anything else is a
        // peer that is not a snowdrift tso leader of this generator.
        match batch.runs.as_slice() {
            [run] if run.count == count && run.stride == 1 && batch.kind == "tso" => {
                Ok(IdRange::new(run.first, run.first + count))
            }
            _ => Err(Failure::Refused(Error::unavailable(format!(
                "the tso leader {leader} answered {} runs of kind {:?} for {count} IDs of \
                 {name:?}, not one run of tso IDs: is it a snowdrift server with the same \
                 generator?",
                batch.runs.len(),
                batch.kind
            )))),
        }
    }

    fn client(&self, leader: &str) -> Result<IdServiceClient<Channel>, Failure> {
        let mut cached = self.client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((url, client)) = cached.as_ref()
            && url == leader
        {
            return Ok(client.clone());
        }
        let mut endpoint = Endpoint::from_shared(leader.to_string())
            .map_err(|e| Failure::LeaderGone(format!("the leader's URL is not valid: {e}")))?
            .connect_timeout(Duration::from_secs(1))
            .timeout(self.timeout)
            .tcp_nodelay(true);
        if leader.starts_with("https://")
            && let Some(tls) = &self.tls
        {
            endpoint = endpoint
                .tls_config(tls.clone())
                .map_err(|e| Failure::LeaderGone(format!("TLS for the leader: {e}")))?;
        }
        let client = IdServiceClient::new(endpoint.connect_lazy());
        *cached = Some((leader.to_string(), client.clone()));
        Ok(client)
    }
}

/// A forwarder: takes every request waiting in `queue` (up to `max_count` IDs, what one
/// call may ask of the leader), sends one call for them, answers each; until the queue
/// closes.
pub(super) async fn run(
    queue: Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Request>>>,
    forwarder: Arc<Forwarder>,
    shared: Arc<Shared>,
    name: String,
    max_count: u64,
) {
    let mut carry: Option<Request> = None;
    loop {
        let mut group = Vec::new();
        let mut total = 0;
        {
            let mut queue = queue.lock().await;
            let first = match carry.take() {
                Some(r) => r,
                None => match queue.recv().await {
                    Some(r) => r,
                    None => return,
                },
            };
            total += first.count;
            group.push(first);
            while let Ok(r) = queue.try_recv() {
                if total + r.count > max_count {
                    carry = Some(r);
                    break;
                }
                total += r.count;
                group.push(r);
            }
        }
        let leader = match &*shared.role.borrow() {
            Role::Follower { leader } => Some(leader.clone()),
            _ => None,
        };
        let outcome = match leader {
            Some(leader) => {
                shared
                    .counters
                    .forward_calls
                    .fetch_add(1, Ordering::Relaxed);
                forwarder.next(&leader, &name, total).await
            }
            // The role changed while they waited: each asks again as it now says.
            None => Err(Failure::LeaderGone("this node's role changed".into())),
        };
        match outcome {
            Ok(range) => {
                let mut at = 0;
                for r in group {
                    let _ = r.reply.send(Reply::Issued(range.slice(at, at + r.count)));
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
}

/// What a refusal from the leader means here.
fn failure(leader: &str, status: &tonic::Status) -> Failure {
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
