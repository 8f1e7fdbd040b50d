//! `snowdrift.v1.TsoPeer`: the leader's end of a follower's `Forward` stream. Each request
//! on it is served as a forwarded `Next` is (answered by this node's oracle or refused,
//! never forwarded again) and answered with the term its IDs were issued in; requests are
//! served concurrently, so the oracle merges them with everything else waiting.

use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use tokio::sync::{mpsc, watch};
use tonic::{Request, Response, Status, Streaming};

use super::convert;
use super::pb;
use super::pb::tso_peer_server::TsoPeer;
use crate::answer::access;
use crate::answer::query::bounded;
use crate::auth::Target;
use crate::error::Error;
use crate::kinds::IdSource;
use crate::state::AppState;

/// Requests a stream may have in flight, being served or answered and not yet sent: room
/// for what a follower keeps in flight (one message; 8 from a follower of the version
/// before), and a bound on what a caller that sends without reading makes this node hold.
/// At the bound, the stream's requests are not read, so HTTP/2 flow control holds the
/// sender back.
const ANSWERS: usize = 256;

/// What `Forward` returns.
pub type ForwardStream = Pin<Box<dyn Stream<Item = Result<pb::ForwardReply, Status>> + Send>>;

/// The service.
#[derive(Debug)]
pub struct PeerApi {
    state: Arc<AppState>,
    stop: watch::Receiver<bool>,
}

impl PeerApi {
    /// Serves `state`'s `tso` generators; streams end once `stop` turns true (a graceful
    /// shutdown waits for every call, and this one would last as long as the leader).
    pub fn new(state: Arc<AppState>, stop: watch::Receiver<bool>) -> Self {
        Self { state, stop }
    }
}

#[tonic::async_trait]
impl TsoPeer for PeerApi {
    type ForwardStream = ForwardStream;

    async fn forward(
        &self,
        request: Request<Streaming<pb::ForwardRequest>>,
    ) -> Result<Response<ForwardStream>, Status> {
        let authorization = request
            .metadata()
            .get("authorization")
            .map(|v| v.to_str().unwrap_or_default().to_string());
        let mut requests = request.into_inner();
        let (answers, out) = mpsc::channel(ANSWERS);
        let state = self.state.clone();
        let mut stop = self.stop.clone();
        tokio::spawn(async move {
            // Ends when the follower closes its side (or breaks the stream), or at shutdown
            // (the request side let go, so the call ends); requests being served finish and
            // their answers go nowhere.
            loop {
                // The answer's place first: none free, no request is read.
                let place = tokio::select! {
                    place = answers.clone().reserve_owned() => place.ok(),
                    _ = stop.wait_for(|stop| *stop) => None,
                };
                let Some(place) = place else { break };
                let r = tokio::select! {
                    r = requests.next() => r,
                    _ = stop.wait_for(|stop| *stop) => None,
                };
                let Some(Ok(r)) = r else { break };
                let (state, authorization) = (state.clone(), authorization.clone());
                tokio::spawn(async move {
                    let id = r.id;
                    let reply = match serve(&state, authorization.as_deref(), r).await {
                        Ok((batch, term)) => pb::ForwardReply {
                            id,
                            batch: Some(batch),
                            term,
                            ..Default::default()
                        },
                        Err(status) => pb::ForwardReply {
                            id,
                            code: status.code() as u32,
                            message: status.message().to_string(),
                            ..Default::default()
                        },
                    };
                    place.send(reply);
                });
            }
        });
        let out = futures_util::stream::unfold(
            (out, self.stop.clone()),
            |(mut out, mut stop)| async move {
                let reply = tokio::select! {
                    reply = out.recv() => reply,
                    // The follower sees the stream end, fails what it had pending (to be asked
                    // again of the next leader) and opens a stream to that one.
                    _ = stop.wait_for(|stop| *stop) => None,
                };
                reply.map(|reply| (Ok(reply), (out, stop)))
            },
        );
        Ok(Response::new(Box::pin(out)))
    }
}

/// One forwarded request: the IDs and their term, or why not.
async fn serve(
    state: &AppState,
    authorization: Option<&str>,
    r: pb::ForwardRequest,
) -> Result<(pb::IdBatch, i64), Status> {
    state
        .auth
        .authorize(authorization, Target::Name(&r.name), access::ISSUE)?;
    let count = bounded("count", r.count, state.max_count)?;
    let source = state.generators.get(&r.name)?;
    let Some(answer) = source.next_for_peer(count).await else {
        return Err(Error::invalid(format!(
            "{:?} is not a tso generator; only a tso follower forwards to its leader",
            r.name
        ))
        .into());
    };
    let (ids, term) = answer?;
    let batch = convert::batch(&r.name, source.kind(), ids, None)?;
    Ok((batch, term))
}
