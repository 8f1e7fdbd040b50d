//! The crate's integration tests, one module per area, in one binary: each test binary
//! links the whole dependency tree, and linking was much of CI's time.

mod auth;
mod auth_reload;
mod backends;
mod body_limits;
mod compat;
mod dated_tags;
mod decode;
mod fast_path;
mod grpc;
mod hostile;
mod http_api;
mod leaf_compat;
mod mastodon;
mod metrics;
mod obfuscation;
mod openapi_routes;
mod resp;
mod segment_options;
mod strict_config;
mod support;
mod tinyid;
mod tls;
mod tso;
mod tso_forward;
mod tso_trust;
mod typeid_ksuid;
mod ui_chromium;
mod uuid_kinds;
mod worker_lease;
