//! `GET /ui`: the dashboard. A page, a script and a style sheet embedded in the binary (no
//! build step, nothing fetched from elsewhere); the script polls `/v1/generators`, `/metrics`
//! and `/readyz` every second and draws what they say.

use axum::http::header;
use axum::response::IntoResponse;

const PAGE: &str = include_str!("../../ui/index.html");
const SCRIPT: &str = include_str!("../../ui/app.js");
const STYLE: &str = include_str!("../../ui/style.css");

/// The page only loads its own script and style and talks only to this server, so an
/// injected name or message could not run code or send data elsewhere.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            // Small and embedded: always fresh after an upgrade, never stale.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
}

/// The dashboard page.
pub async fn page() -> impl IntoResponse {
    asset("text/html; charset=utf-8", PAGE)
}

/// The dashboard's script.
pub async fn script() -> impl IntoResponse {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

/// The dashboard's style sheet.
pub async fn style() -> impl IntoResponse {
    asset("text/css; charset=utf-8", STYLE)
}
