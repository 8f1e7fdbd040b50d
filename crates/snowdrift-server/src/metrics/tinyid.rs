//! `snowdrift_tinyid_answers_total{route,code}`: Tinyid's routes answer every refusal with
//! HTTP 200, so the request histogram's status cannot tell a refusal from an answer; this
//! counts them by Tinyid's code (200, 5 for the token, 6 for anything else).

/// The counter's name.
pub(crate) const NAME: &str = "snowdrift_tinyid_answers_total";

/// Counts one answer of the Tinyid route `route` (its pattern) with Tinyid code `code`.
pub(crate) fn answered(route: &'static str, code: i32) {
    // Both labels come from fixed sets: four routes, three codes.
    let code = match code {
        200 => "200",
        5 => "5",
        _ => "6",
    };
    metrics::counter!(NAME, "route" => route, "code" => code).increment(1);
}
