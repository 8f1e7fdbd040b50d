//! `[server]`, `[leaf]` and `[tinyid]`: the listeners, how Leaf's routes answer, and whether
//! Tinyid's are served.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::duration_text;

/// `[server]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Address of the Redis-protocol (RESP) listener, where `INCR name` issues IDs; off
    /// when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resp_listen: Option<SocketAddr>,
    /// PEM certificate chain: with `tls_key`, the listener speaks TLS (HTTP/1.1 and HTTP/2,
    /// so gRPC too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key of `tls_cert`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<std::path::PathBuf>,
    /// The URL other nodes reach this node's gRPC at (`http://10.0.0.5:8080`), which a
    /// `tso` generator's leader publishes so that followers can forward to it. Default:
    /// `http://` (`https://` with TLS) and `listen`, when that is not a wildcard address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertise: Option<String>,
    /// Allow listening on a non-loopback address without auth.
    pub insecure_bind: bool,
    /// How long shutdown waits for in-flight requests.
    #[serde(with = "duration_text")]
    pub shutdown_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            resp_listen: None,
            tls_cert: None,
            tls_key: None,
            advertise: None,
            insecure_bind: false,
            shutdown_timeout: Duration::from_secs(10),
        }
    }
}

/// `[leaf]`: Meituan Leaf's routes, for clients written for Leaf.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LeafConfig {
    /// `snowdrift` (the default: a non-200 status with the error as text) or `leaf` (as Leaf
    /// answers: status 500 with Spring Boot's JSON error body, whose `message` is Leaf's
    /// `Result{id=-N, status=EXCEPTION}`; and `/decodeSnowflakeId` answers a bad ID with 200
    /// and `errorMsg`).
    pub errors: LeafErrors,
}

word_enum!(
    /// `leaf.errors`: how Leaf's routes answer an error.
    LeafErrors {
        /// A non-200 status with the error as text.
        Snowdrift = "snowdrift",
        /// Leaf's own answers.
        Leaf = "leaf",
    }
);

// word_enum! fixes the derives, so the default is written out.
#[allow(clippy::derivable_impls)]
impl Default for LeafErrors {
    fn default() -> Self {
        LeafErrors::Snowdrift
    }
}

/// `[tinyid]`: Didi Tinyid's routes (`/tinyid/id/nextId`, `nextIdSimple`, `nextSegmentId`,
/// `nextSegmentIdSimple`), for Tinyid's own client and callers written for Tinyid.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TinyidConfig {
    /// Serve Tinyid's routes (on by default, as Leaf's are); `false` answers them 404 and
    /// leaves them out of `/openapi.json`.
    pub enabled: bool,
}

impl Default for TinyidConfig {
    fn default() -> Self {
        Self { enabled: true }
    }
}
