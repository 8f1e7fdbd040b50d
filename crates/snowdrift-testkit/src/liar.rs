//! A gRPC server that speaks snowdrift's `IdService` contract and lies: every `Next` and
//! `Stream` answers the same IDs (a server that repeats itself: a restored backup, a copied
//! worker ID, a hostile neighbour on the endpoint's address), or a run that passes
//! `u64::MAX` and would wrap around to 0. It is a real server on a real socket (tonic's
//! generated service under axum, HTTP/2 by prior knowledge as snowdrift's own), so the
//! client is tested over its real transport; its health service says SERVING, as a
//! hostile server's would, so the client picks it in turn like any other.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use snowdrift_proto::grpc::id_service_server::{IdService, IdServiceServer};
use snowdrift_proto::grpc::{
    DecodeRequest, DecodeResponse, IdBatch, IdRun, NextRequest, StreamRequest,
};
use tonic::codegen::tokio_stream;
use tonic::server::NamedService;
use tonic::{Request, Response, Status};

/// What the liar answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lie {
    /// The IDs `first, first + 1, ...` (as many as asked) on every call.
    Repeat {
        /// The first ID of every answer.
        first: u64,
    },
    /// As many IDs as asked from `u64::MAX - 2`: three exist, the rest would wrap to 0, 1, 2.
    Wrap,
    /// New IDs `first, first + 1, ...` on every call (never the same twice), but under
    /// another name than the one asked for: `other-` and the name.
    OtherName {
        /// The first ID of the first answer.
        first: u64,
    },
}

/// A running lying server; stopped when dropped.
#[derive(Debug)]
pub struct Liar {
    /// Where it listens.
    pub addr: SocketAddr,
    calls: Arc<AtomicU64>,
    _health: tonic_health::server::HealthReporter,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Liar {
    /// Starts one on a free port of 127.0.0.1, answering `kind` (e.g. `"segment"`) for any
    /// name. Call from within a tokio runtime, which then runs it.
    pub async fn start(kind: &str, lie: Lie) -> std::io::Result<Self> {
        Self::serve(kind, lie, None).await
    }

    /// Starts one that answers each `Next` call with the next of `batches`, as recorded
    /// from a real server (a compatibility fixture), whatever was asked; UNAVAILABLE once
    /// they are used up. `Stream` answers as [`Lie::Repeat`] from 1.
    pub async fn replay(batches: Vec<IdBatch>) -> std::io::Result<Self> {
        Self::serve("segment", Lie::Repeat { first: 1 }, Some(batches)).await
    }

    async fn serve(kind: &str, lie: Lie, replay: Option<Vec<IdBatch>>) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let calls = Arc::new(AtomicU64::new(0));
        let service = IdServiceServer::new(Lies {
            kind: kind.to_string(),
            lie,
            calls: calls.clone(),
            given: AtomicU64::new(0),
            replay: replay.map(|b| std::sync::Mutex::new(b.into())),
        });
        let (health, health_service) = tonic_health::server::health_reporter();
        health
            .set_service_status(
                IdServiceServer::<Lies>::NAME,
                tonic_health::ServingStatus::Serving,
            )
            .await;
        let router = axum::Router::new()
            .route_service(&path_of(&service), service)
            .route_service(&path_of(&health_service), health_service);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            calls,
            _health: health,
            _stop: stop,
        })
    }

    /// `http://ADDR`, for a client's endpoint list.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `Next` and `Stream` calls answered so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

fn path_of<S: NamedService>(_: &S) -> String {
    format!("/{}/{{*method}}", S::NAME)
}

struct Lies {
    kind: String,
    lie: Lie,
    calls: Arc<AtomicU64>,
    /// IDs answered so far, for the lies that never repeat.
    given: AtomicU64,
    /// Recorded answers still to give, for [`Liar::replay`].
    replay: Option<std::sync::Mutex<std::collections::VecDeque<IdBatch>>>,
}

impl Lies {
    fn first(&self) -> u64 {
        match self.lie {
            Lie::Repeat { first } => first,
            Lie::Wrap => u64::MAX - 2,
            Lie::OtherName { first } => first,
        }
    }

    fn batch(&self, name: &str, first: u64, count: u64) -> IdBatch {
        let (name, first) = match self.lie {
            Lie::OtherName { .. } => (
                format!("other-{name}"),
                first + self.given.fetch_add(count, Ordering::Relaxed),
            ),
            _ => (name.to_string(), first),
        };
        IdBatch {
            name,
            kind: self.kind.clone(),
            count,
            // Wrapping on purpose: the wire carries whatever a broken server computes.
            runs: vec![IdRun {
                first,
                count,
                stride: 1,
            }],
            text: Vec::new(),
            // As a server from before `kind_code`: the client goes by the string.
            kind_code: 0,
        }
    }
}

#[tonic::async_trait]
impl IdService for Lies {
    async fn next(&self, request: Request<NextRequest>) -> Result<Response<IdBatch>, Status> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if let Some(replay) = &self.replay {
            let next = replay.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
            return next
                .map(Response::new)
                .ok_or_else(|| Status::unavailable("the recording is used up"));
        }
        let r = request.into_inner();
        let count = r.count.unwrap_or(1).max(1);
        Ok(Response::new(self.batch(&r.name, self.first(), count)))
    }

    type StreamStream = tokio_stream::Iter<std::vec::IntoIter<Result<IdBatch, Status>>>;

    async fn stream(
        &self,
        request: Request<StreamRequest>,
    ) -> Result<Response<Self::StreamStream>, Status> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let r = request.into_inner();
        let per = r.batch.unwrap_or(10_000).max(1);
        let mut messages = Vec::new();
        let (mut first, mut left) = (self.first(), r.count);
        while left > 0 {
            let n = left.min(per);
            messages.push(Ok(self.batch(&r.name, first, n)));
            first = first.wrapping_add(n);
            left -= n;
        }
        Ok(Response::new(tokio_stream::iter(messages)))
    }

    async fn decode(
        &self,
        _request: Request<DecodeRequest>,
    ) -> Result<Response<DecodeResponse>, Status> {
        Err(Status::unimplemented("the liar decodes nothing"))
    }
}
