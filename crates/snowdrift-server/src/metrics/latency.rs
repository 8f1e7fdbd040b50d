//! `snowdrift_request_duration_seconds{route,method,status}`: how long each HTTP request and
//! gRPC call took, by route.
//!
//! Every label value comes from a bounded set, so no client can grow the series without
//! end: the route is the router's pattern (or a gRPC method that exists), the method one of
//! the standard nine or `other`, the status an HTTP status or a gRPC code.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use super::text::{Out, family, sample};

use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use http_body::{Frame, SizeHint};
use metrics::Histogram;
use pin_project_lite::pin_project;
use tonic::Code;
use tower::{Layer, Service};

use super::handles::Handles;

/// The histograms, by route and then by method and outcome.
static DURATIONS: LazyLock<Handles<(&'static str, Outcome), Histogram>> =
    LazyLock::new(Handles::default);

/// The route label of a request no route matched.
const UNMATCHED: &str = "unmatched";

/// How a request ended: the status label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// An HTTP status (every HTTP request; a gRPC path answered without a gRPC status).
    Http(u16),
    /// The `grpc-status` a gRPC call ended with.
    Grpc(Code),
}

impl Outcome {
    fn label(self) -> String {
        match self {
            Outcome::Http(status) => status.to_string(),
            Outcome::Grpc(code) => code_name(code).to_string(),
        }
    }
}

/// The timing layer around each route: [`Track::HTTP`] for the HTTP router, times a request
/// until its response; [`Track::GRPC`] for the gRPC routes, times a call until its last
/// message and status are sent, so a stream is timed whole. A call to a gRPC method the
/// server does not have counts under its route pattern, so made-up names cannot add series.
///
/// A plain tower layer rather than `axum::middleware::from_fn`, which clones the route and
/// boxes two futures per request: measured at a tenth of a single-ID request's CPU time.
#[derive(Debug, Clone, Copy)]
pub struct Track {
    grpc: bool,
}

impl Track {
    /// Times HTTP requests by route (the route pattern, not the raw path).
    pub const HTTP: Track = Track { grpc: false };
    /// Times gRPC calls by method (`/snowdrift.v1.IdService/Next`).
    pub const GRPC: Track = Track { grpc: true };
}

impl<S> Layer<S> for Track {
    type Service = Tracked<S>;

    fn layer(&self, inner: S) -> Tracked<S> {
        Tracked {
            inner,
            grpc: self.grpc,
        }
    }
}

/// A route behind [`Track`].
#[derive(Debug, Clone)]
pub struct Tracked<S> {
    inner: S,
    grpc: bool,
}

impl<S> Service<Request> for Tracked<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = TrackedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let call = Call {
            grpc_path: self.grpc.then(|| req.uri().clone()),
            pattern: req.extensions().get::<MatchedPath>().cloned(),
            method: method_label(req.method()),
            start: Instant::now(),
        };
        TrackedFuture {
            inner: self.inner.call(req),
            call: Some(call),
        }
    }
}

pin_project! {
    /// The response of a [`Tracked`] route.
    pub struct TrackedFuture<F> {
        #[pin]
        inner: F,
        call: Option<Call>,
    }
}

impl<F> Future for TrackedFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Ok(response) = ready!(this.inner.poll(cx));
        Poll::Ready(Ok(match this.call.take() {
            Some(call) => call.answered(response),
            None => response,
        }))
    }
}

/// A request or call being timed.
struct Call {
    /// The path called, for a gRPC call: it names the method.
    grpc_path: Option<Uri>,
    pattern: Option<MatchedPath>,
    method: &'static str,
    start: Instant,
}

impl Call {
    /// Records the call now that `response` answers it, or, for a gRPC call that goes on
    /// sending, wraps the body to record it when the status goes out.
    fn answered(self, response: Response) -> Response {
        if self.grpc_path.is_none() {
            self.finish(Outcome::Http(response.status().as_u16()));
            return response;
        }
        if let Some(code) = response.headers().get("grpc-status") {
            // A trailers-only answer: the call ended (mostly with an error) before any message.
            self.finish(Outcome::Grpc(Code::from_bytes(code.as_bytes())));
            return response;
        }
        if !is_grpc(response.headers()) {
            // A plain HTTP answer on a gRPC path (the 404 of an unknown two-segment path).
            self.finish(Outcome::Http(response.status().as_u16()));
            return response;
        }
        response.map(|body| {
            Body::new(Timed {
                body,
                call: Some(self),
            })
        })
    }

    fn finish(self, outcome: Outcome) {
        // The path names the method called, but only a method that exists may name a
        // series; any other path would let a client mint new ones.
        let route = match (outcome, &self.grpc_path) {
            (Outcome::Grpc(code), Some(path)) if code != Code::Unimplemented => path.path(),
            _ => self.pattern.as_ref().map_or(UNMATCHED, MatchedPath::as_str),
        };
        record(route, self.method, outcome, self.start);
    }
}

/// A gRPC response body that records its call once the status in its trailers has gone
/// out, or when it is dropped before that (the client went away: CANCELLED).
struct Timed {
    body: Body,
    call: Option<Call>,
}

impl Timed {
    fn finish(&mut self, outcome: Outcome) {
        if let Some(call) = self.call.take() {
            call.finish(outcome);
        }
    }
}

impl http_body::Body for Timed {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(code) = frame.trailers_ref().and_then(|t| t.get("grpc-status")) {
                    self.finish(Outcome::Grpc(Code::from_bytes(code.as_bytes())));
                }
            }
            // The body failed or ended without a status: the client sees no code it
            // could trust.
            Poll::Ready(Some(Err(_)) | None) => self.finish(Outcome::Grpc(Code::Unknown)),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        self.finish(Outcome::Grpc(Code::Cancelled));
    }
}

/// Requests the fast path answered, for `snowdrift_http_fast_requests_total`: one relaxed
/// add per request rather than a registry lookup.
static FAST_ANSWERS: AtomicU64 = AtomicU64::new(0);

/// Records an HTTP request answered outside the router (the fast path, `crate::fast`) as
/// [`Track::HTTP`] records the router's: under `route`'s pattern.
pub(crate) fn record_http(route: &'static str, method: &'static str, status: u16, start: Instant) {
    FAST_ANSWERS.fetch_add(1, Ordering::Relaxed);
    record(route, method, Outcome::Http(status), start);
}

/// Writes `snowdrift_http_fast_requests_total`.
pub(crate) fn write_fast(out: &mut Out) {
    let name = "snowdrift_http_fast_requests_total";
    family(
        out,
        name,
        "counter",
        "HTTP/1.1 single-ID requests the fast path answered itself, refusals included (every \
         other request went through hyper and the router).",
    );
    sample(out, name, &[], FAST_ANSWERS.load(Ordering::Relaxed));
}

fn record(route: &str, method: &'static str, outcome: Outcome, start: Instant) {
    let seconds = start.elapsed().as_secs_f64();
    DURATIONS.with(
        route,
        (method, outcome),
        || {
            metrics::histogram!(
                "snowdrift_request_duration_seconds",
                "route" => route.to_string(),
                "method" => method,
                "status" => outcome.label(),
            )
        },
        |h| h.record(seconds),
    );
}

fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// The standard methods; any other is labelled `other`.
static METHODS: [Method; 9] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::HEAD,
    Method::OPTIONS,
    Method::CONNECT,
    Method::PATCH,
    Method::TRACE,
];

fn method_label(method: &Method) -> &'static str {
    METHODS
        .iter()
        .find(|m| *m == method)
        .map_or("other", Method::as_str)
}

/// The code's name as the gRPC specification writes it (`OK`, `NOT_FOUND`, ...).
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_come_from_bounded_sets() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        let brew = Method::from_bytes(b"BREW").unwrap();
        assert_eq!(method_label(&brew), "other");
        assert_eq!(Outcome::Http(503).label(), "503");
        assert_eq!(Outcome::Grpc(Code::Ok).label(), "OK");
        assert_eq!(Outcome::Grpc(Code::from_bytes(b"5")).label(), "NOT_FOUND");
    }
}
