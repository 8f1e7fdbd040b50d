//! The gRPC API (`snowdrift.v1`), generated from `proto/snowdrift.proto`.
//!
//! ```no_run
//! # async fn demo(channel: tonic::transport::Channel) -> Result<(), tonic::Status> {
//! use snowdrift_proto::grpc::{NextRequest, id_service_client::IdServiceClient};
//! let mut client = IdServiceClient::new(channel);
//! let request = NextRequest { name: "snowflake".into(), count: Some(1000), ..Default::default() };
//! let batch = client.next(request).await?.into_inner();
//! let ids: Vec<u64> = batch.ids().collect();
//! # Ok(()) }
//! ```

#[allow(missing_docs, clippy::all, clippy::pedantic)]
mod generated {
    tonic::include_proto!("snowdrift.v1");
}

#[allow(missing_docs, clippy::all, clippy::pedantic)]
mod generated_server {
    include!(concat!(env!("OUT_DIR"), "/server/snowdrift.v1.rs"));
}

mod codec;

pub use codec::StrictCodec;
pub use generated::*;
pub use generated_server::*;

/// The encoded descriptor set of `snowdrift.proto`, which the reflection service serves.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/snowdrift_descriptor.bin"));

/// The metadata key of an error's stable code (`not_found`, `unavailable`, ...: the HTTP
/// API's `error.code`).
pub const ERROR_CODE_KEY: &str = "snowdrift-error-code";

/// The metadata key of how many whole seconds to wait after RESOURCE_EXHAUSTED.
pub const RETRY_AFTER_KEY: &str = "retry-after";

impl IdBatch {
    /// The IDs of `runs`, in order: what a client does with a batch of a 64-bit kind. A run
    /// that would pass `u64::MAX` (never sent by a snowdrift server) stops there.
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.runs.iter().flat_map(|r| {
            (0..r.count).map_while(move |k| r.first.checked_add(k.checked_mul(r.stride)?))
        })
    }
}
