//! The crate's integration tests, one module per area, in one binary: each test binary
//! links the whole dependency tree, and linking was much of CI's time.

mod check_config;
mod cli;
mod client_chaos;
mod common;
mod compat;
mod dated_segments;
mod docs;
mod generator_options;
mod id_references;
mod import;
mod layout_migrate;
mod mastodon_ruby;
mod memory_limits;
mod next_server;
mod reload_cli;
mod restart_ready;
mod segment_cli;
mod serve_cli;
mod sql_ids;
mod sql_registry_cli;
mod text_kinds;
mod tickets_cli;
mod tinyid_client;
mod token_cli;
mod tso_chaos;
mod tso_merge;
mod uuid_python;
mod verify_cli;
mod worker_cli;
mod workers_list;
