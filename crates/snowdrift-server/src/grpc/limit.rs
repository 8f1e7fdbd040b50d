//! A server-wide bound on the `IdService` calls and `TsoPeer.Forward` streams in flight
//! (`limits.max_streams`), on top of
//! hyper's per-connection bound: each call holds a place until its response body ends or
//! is dropped, and a call that finds none is answered UNAVAILABLE at once, so clients try
//! another server. With HTTP/2's send buffer bounded per stream (`serve.rs`), this bounds
//! what streams a client never reads can make the server hold.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{Layer, Service};

use crate::error::Error;

/// Holds each call to one of `max` places.
#[derive(Debug, Clone)]
pub struct CallLimit {
    places: Arc<Semaphore>,
    max: usize,
    /// The most calls in flight since the last check ([`crate::trim`]).
    peak: crate::trim::Peak,
}

impl CallLimit {
    /// Room for `max` calls at once.
    pub fn new(max: usize) -> Self {
        Self {
            places: Arc::new(Semaphore::new(max)),
            max,
            peak: crate::trim::Peak::default(),
        }
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.max - self.places.available_permits()
    }

    /// The calls' peak, for [`crate::trim`]: memory streams that never read held is handed
    /// back once they are gone.
    pub fn watched(&self) -> crate::trim::Watched {
        let limit = self.clone();
        crate::trim::Watched::new(self.peak.clone(), move || limit.in_flight())
    }
}

impl<S> Layer<S> for CallLimit {
    type Service = Limited<S>;

    fn layer(&self, inner: S) -> Limited<S> {
        Limited {
            inner,
            limit: self.clone(),
        }
    }
}

/// A service behind [`CallLimit`].
#[derive(Debug, Clone)]
pub struct Limited<S> {
    inner: S,
    limit: CallLimit,
}

impl<S, B, R> Service<Request<B>> for Limited<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
    R: Body<Data = bytes::Bytes> + Send + Unpin + 'static,
    R::Error: Into<tonic::codegen::StdError>,
{
    type Response = Response<tonic::body::Body>;
    type Error = S::Error;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let Ok(place) = Arc::clone(&self.limit.places).try_acquire_owned() else {
            let status = tonic::Status::from(Error::unavailable(format!(
                "this server has limits.max_streams ({}) gRPC calls in flight; try again, or \
                 another server",
                self.limit.max
            )));
            return Box::pin(async move { Ok(status.into_http()) });
        };
        self.limit.peak.note(self.limit.in_flight());
        let call = self.inner.call(request);
        Box::pin(async move {
            let response = call.await?;
            Ok(response.map(|body| {
                tonic::body::Body::new(Held {
                    body,
                    _place: place,
                })
            }))
        })
    }
}

/// A response body that keeps its call's place until it ends or is dropped.
struct Held<B> {
    body: B,
    _place: OwnedSemaphorePermit,
}

impl<B: Body + Unpin> Body for Held<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
