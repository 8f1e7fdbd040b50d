//! `snowdrift.v1.IdService`: `Next`, `Stream` and `Decode` over the same generators, limits,
//! tokens and errors as the HTTP API. Every method needs a `read` token for its name when auth
//! is on (`authorization: Bearer <token>` metadata), as `/v1/ids/{name}` does; health and
//! reflection stay open, like `/healthz` and `/openapi.json`.

use std::sync::Arc;

use snowdrift_core::codec::Codec;
use tokio::sync::watch;
use tonic::{Request, Response, Status};

use super::convert;
use super::pb;
use super::pb::id_service_server::IdService;
use super::stream::{IdStream, batches};
use crate::answer::access;
use crate::answer::query::bounded;
use crate::auth::Target;
use crate::error::Error;
use crate::kinds::{IdSource, Source};
use crate::state::AppState;
use crate::state::issue;

/// The service: the server's generators, its limits, and the shutdown signal that ends
/// streams.
#[derive(Debug)]
pub struct IdApi {
    state: Arc<AppState>,
    max_stream: u64,
    stop: watch::Receiver<bool>,
}

impl IdApi {
    /// Serves `state`'s generators; `Stream` calls may ask for up to `max_stream` IDs and end
    /// once `stop` turns true.
    pub fn new(state: Arc<AppState>, max_stream: u64, stop: watch::Receiver<bool>) -> Self {
        Self {
            state,
            max_stream,
            stop,
        }
    }

    /// Whether `request`'s token may read `name`; a refusal counts like HTTP's (401, 403,
    /// 429 with `retry-after`).
    fn authorize<T>(&self, request: &Request<T>, name: &str) -> Result<(), Status> {
        let authorization = request
            .metadata()
            .get("authorization")
            .map(|v| v.to_str().unwrap_or_default());
        self.state
            .auth
            .authorize(authorization, Target::Name(name), access::ISSUE)
            .map_err(Status::from)
    }

    /// The codec of a request's `format` (IDs then travel as text), checked before any ID
    /// is issued; `None` when no format is asked for, or for a text kind's own form.
    fn codec(
        &self,
        name: &str,
        source: &Source,
        format: Option<&str>,
    ) -> Result<Option<Codec>, Error> {
        match crate::format::parse_optional(format)? {
            Some(format) => crate::format::codec_for(&self.state.generators, name, source, format),
            None => Ok(None),
        }
    }
}

/// Whether `request` is a tso follower's forwarded call: its `snowdrift-forwarded` metadata
/// is `1`. Any other value is refused rather than guessed at (a "0" meant as "not
/// forwarded" once counted as forwarded).
fn forwarded<T>(request: &Request<T>) -> Result<bool, Status> {
    match request
        .metadata()
        .get(crate::kinds::tso::oracle::FORWARDED_HEADER)
    {
        None => Ok(false),
        Some(v) if v.as_bytes() == crate::kinds::tso::oracle::FORWARDED_VALUE.as_bytes() => {
            Ok(true)
        }
        Some(v) => Err(Status::invalid_argument(format!(
            "{} metadata is {:?}; only {:?} is allowed (a tso follower sets it on a call it \
             forwards to the leader); leave it out otherwise",
            crate::kinds::tso::oracle::FORWARDED_HEADER,
            String::from_utf8_lossy(v.as_bytes()),
            crate::kinds::tso::oracle::FORWARDED_VALUE
        ))),
    }
}

#[tonic::async_trait]
impl IdService for IdApi {
    async fn next(
        &self,
        request: Request<pb::NextRequest>,
    ) -> Result<Response<pb::IdBatch>, Status> {
        self.authorize(&request, &request.get_ref().name)?;
        // A tso follower's call on behalf of its client: answered here or refused.
        let forwarded = forwarded(&request)?;
        let r = request.into_inner();
        let count = bounded("count", r.count.unwrap_or(1), self.state.max_count)?;
        let source = self.state.generators.get(&r.name)?;
        let codec = self.codec(&r.name, &source, r.format.as_deref())?;
        // A tso follower's forwarded call is answered by the leader's oracle with its term,
        // which the follower checks against the leader key it read. Counted as issued by the
        // follower that asked, which answers its client: the cluster's sum of
        // snowdrift_ids_issued_total counts each ID once.
        let peer = match forwarded && r.input.is_none() {
            true => source.next_for_peer(count).await,
            false => None,
        };
        let (ids, term) = match peer {
            Some(answer) => {
                let (ids, term) = answer?;
                (ids, Some(term))
            }
            None => {
                let issuing = issue(&r.name, &source, count, r.input.as_deref());
                (
                    crate::kinds::tso::oracle::serve_forwarded(forwarded, issuing).await?,
                    None,
                )
            }
        };
        let batch = convert::batch(&r.name, source.kind(), ids, codec.as_ref())?;
        let mut response = Response::new(batch);
        if let Some(term) = term {
            response.metadata_mut().insert(
                crate::kinds::tso::oracle::TERM_HEADER,
                tonic::metadata::MetadataValue::from(term),
            );
        }
        Ok(response)
    }

    type StreamStream = IdStream;

    async fn stream(
        &self,
        request: Request<pb::StreamRequest>,
    ) -> Result<Response<IdStream>, Status> {
        self.authorize(&request, &request.get_ref().name)?;
        let r = request.into_inner();
        let total = bounded("count", r.count, self.max_stream)?;
        let max = self.state.max_count;
        let batch = bounded("batch", r.batch.unwrap_or(max), max)?;
        let source = self.state.generators.get(&r.name)?;
        // A name's UUID is one UUID: the stream's whole count is checked here, not each
        // batch's (which would name the batch size, not what the client asked for).
        source.check_stream(&r.name, total, r.input.as_deref())?;
        let codec = self.codec(&r.name, &source, r.format.as_deref())?;
        let text = codec.is_some() || !crate::format::is_64_bit(&source);
        let batch = if text {
            super::stream::text_batch(batch, source.max_text_bytes())
        } else {
            batch
        };
        Ok(Response::new(batches(
            source,
            r.name,
            r.input,
            codec,
            total,
            batch,
            self.stop.clone(),
        )))
    }

    async fn decode(
        &self,
        request: Request<pb::DecodeRequest>,
    ) -> Result<Response<pb::DecodeResponse>, Status> {
        self.authorize(&request, &request.get_ref().name)?;
        let r = request.into_inner();
        let source = self.state.generators.get(&r.name)?;
        let decoded = convert::decode(
            &self.state.generators,
            &r.name,
            &source,
            &r.id,
            r.format.as_deref(),
        )?;
        Ok(Response::new(decoded))
    }
}
