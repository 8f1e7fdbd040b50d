//! Whether each configured generator can issue now, and why not: what `/readyz` reports and
//! the gRPC health service follows.

use std::borrow::Cow;

use super::Generators;
use crate::kinds::IdSource;

/// Whether one generator, or one tag served under its own name, can issue now, and why not.
pub struct Readiness<'a> {
    /// The generator's or tag's name.
    pub name: Cow<'a, str>,
    /// True when it can issue now.
    pub ready: bool,
    /// Why it cannot.
    pub reason: Option<String>,
}

/// The readiness of every configured generator and of every tag this node serves under its
/// own name (so a tag that fails requests makes the node unready too): what `/readyz`
/// reports, and what the gRPC health service follows.
pub async fn check(generators: &Generators) -> Vec<Readiness<'_>> {
    let mut report = Vec::new();
    for (name, source) in generators.configured() {
        let answer = source.readiness().await;
        let (ready, reason) = (answer.is_ok(), answer.err());
        report.push(Readiness {
            name: Cow::Borrowed(name),
            ready,
            reason,
        });
    }
    for (tag, _) in generators.segments().status() {
        if generators.is_generator(&tag) {
            continue;
        }
        let answer = crate::kinds::segment::readiness(generators.segments(), &tag).await;
        let (ready, reason) = (answer.is_ok(), answer.err());
        report.push(Readiness {
            name: Cow::Owned(tag),
            ready,
            reason,
        });
    }
    report
}
