//! One module per subcommand.

pub mod bench;
mod bench_client;
mod bench_grpc;
mod bench_load;
mod bench_tls;
mod bench_wire;
pub mod decode;
pub mod layout;
pub mod next;
mod next_kinds;
mod next_segment;

pub mod serve;
pub mod tags;
pub mod tickets;
pub mod token;
pub mod verify;
