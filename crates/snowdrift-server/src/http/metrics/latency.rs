//! `snowdrift_request_duration_seconds{route,method,status}`: how long each HTTP request and
//! gRPC call took, by route.
//!
//! Every label value comes from a bounded set, so no client can grow the series without
//! end: the route is the router's pattern (or a gRPC method that exists), the method one of
//! the standard nine or `other`, the status an HTTP status or a gRPC code.

use std::pin::Pin;
use std::sync::LazyLock;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Method, Uri};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use metrics::Histogram;
use tonic::Code;

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

/// Times every HTTP request by route (the route pattern, not the raw path).
pub async fn track(req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().cloned();
    let method = method_label(req.method());
    let start = Instant::now();
    let response = next.run(req).await;
    let route = route.as_ref().map_or(UNMATCHED, MatchedPath::as_str);
    record(
        route,
        method,
        Outcome::Http(response.status().as_u16()),
        start,
    );
    response
}

/// Times every gRPC call by method (`/snowdrift.v1.IdService/Next`), until its last message
/// and status are sent: a stream is timed whole. A call to a method the server does not have
/// counts under its route pattern, so made-up names cannot add series.
pub async fn track_grpc(req: Request, next: Next) -> Response {
    let call = Call {
        path: req.uri().clone(),
        pattern: req.extensions().get::<MatchedPath>().cloned(),
        method: method_label(req.method()),
        start: Instant::now(),
    };
    let response = next.run(req).await;
    if let Some(code) = response.headers().get("grpc-status") {
        // A trailers-only answer: the call ended (mostly with an error) before any message.
        call.finish(Outcome::Grpc(Code::from_bytes(code.as_bytes())));
        return response;
    }
    if !is_grpc(response.headers()) {
        // A plain HTTP answer on a gRPC path (the 404 of an unknown two-segment path).
        call.finish(Outcome::Http(response.status().as_u16()));
        return response;
    }
    response.map(|body| {
        Body::new(Timed {
            body,
            call: Some(call),
        })
    })
}

/// A gRPC call being timed.
struct Call {
    path: Uri,
    pattern: Option<MatchedPath>,
    method: &'static str,
    start: Instant,
}

impl Call {
    fn finish(self, outcome: Outcome) {
        // The path names the method called, but only a method that exists may name a
        // series; any other path would let a client mint new ones.
        let route = match outcome {
            Outcome::Grpc(code) if code != Code::Unimplemented => self.path.path(),
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
