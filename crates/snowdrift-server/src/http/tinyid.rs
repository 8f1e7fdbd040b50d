//! Didi Tinyid's routes as axum handlers, for every method (Tinyid's controller maps them
//! without one), their answers from `crate::answer::tinyid`; OPTIONS is answered as Spring
//! answers it for such a mapping, TRACE refused as Tomcat refuses it. Each request is logged at
//! debug level with its query string and form, the token masked, as Tinyid's own request
//! filter logged them (with the token in the clear).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawQuery, State};
use axum::http::header::{ALLOW, AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use snowdrift_proto::http::Route;

use super::error::to_response;
use crate::answer::tinyid::{self, Body, Request};
use crate::state::AppState;

/// What Spring's `HttpOptionsHandler` answers OPTIONS with for a mapping without a method:
/// every method but TRACE, in the order of Spring's `HttpMethod`.
const ALLOWED: &str = "GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS";

/// The handlers of Tinyid route `route`, one per method of [`Route::methods`], and OPTIONS.
pub(super) fn handlers(route: Route) -> MethodRouter<Arc<AppState>> {
    let answer = move |state: State<Arc<AppState>>,
                       method: Method,
                       query: RawQuery,
                       headers: HeaderMap,
                       body: Result<Bytes, BytesRejection>| {
        answer(route, state, method, query, headers, body)
    };
    get(answer)
        .post(answer)
        .put(answer)
        .patch(answer)
        .delete(answer)
        .options(options)
}

/// OPTIONS, as Tinyid's server answers it: Spring does not call the controller for it but
/// answers 200 with the methods the mapping takes (all of them, the controller naming
/// none), and no body. It issues nothing, whatever the parameters.
async fn options() -> Response {
    (StatusCode::OK, [(ALLOW, HeaderValue::from_static(ALLOWED))]).into_response()
}

async fn answer(
    route: Route,
    State(state): State<Arc<AppState>>,
    method: Method,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // A body over limits.max_body is refused as every route refuses one; Tinyid's servlet
    // container would have dropped its parameters without a word.
    let body = match body {
        Ok(body) => body,
        Err(e) => {
            let message = format!("request body: {}", e.body_text());
            return super::error::respond(e.status(), "invalid_request", &message);
        }
    };
    let content_type = headers
        .get(CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("(not text)"))
        .unwrap_or_default();
    // Tomcat reads a form's parameters on POST only, and Spring Boot's form filter adds PUT
    // and PATCH; every other body Tinyid's server left unread.
    let parts = if !body.is_empty()
        && is_form(content_type)
        && matches!(method, Method::POST | Method::PUT | Method::PATCH)
    {
        Body::Form(&body)
    } else {
        Body::Empty
    };
    let authorization = headers
        .get(AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or_default());
    let answered = tinyid::answer(
        &state,
        Request {
            route,
            query: query.as_deref(),
            body: parts,
            authorization,
        },
    )
    .await;
    crate::metrics::tinyid_answered(route.pattern(), answered.code);
    tracing::debug!(
        route = route.pattern(),
        query = %tinyid::masked(query.as_deref().unwrap_or_default().as_bytes()),
        form = %match parts {
            Body::Form(form) => tinyid::masked(form),
            _ => String::new(),
        },
        code = answered.code,
        reason = answered.reason.as_deref().unwrap_or_default(),
        "Tinyid request"
    );
    to_response(answered.answer)
}

/// Whether `content_type` is a form (`application/x-www-form-urlencoded`, any parameters,
/// any case), whose body holds parameters as the query string does.
fn is_form(content_type: &str) -> bool {
    content_type.split(';').next().is_some_and(|t| {
        t.trim()
            .eq_ignore_ascii_case("application/x-www-form-urlencoded")
    })
}
