//! The crate's integration tests, one module per area, in one binary: each test binary
//! links the whole dependency tree, and linking was much of CI's time.

mod common;
mod compat;
mod coordinator_auth;
mod counter_redis;
mod raise;
mod segment_buffer;
mod segment_dated;
mod segment_faults;
mod segment_local;
mod segment_service;
mod segment_store;
mod segment_striped;
mod sql_first_start;
mod sql_functions_both;
mod sql_functions_db;
mod sql_functions_mariadb;
mod sql_functions_pg;
mod sql_functions_registries;
mod ticket;
mod ticket_grow;
mod tso_etcd;
mod tso_node;
mod worker_backends;
mod worker_file;
mod worker_file_disk;
mod worker_node;
mod zk_version;
