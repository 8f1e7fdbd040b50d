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

use crate::Kind;

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
    /// The kind that issued the batch: `kind_code` when the server set it, else the `kind`
    /// string, which servers from before `kind_code` send alone. `None` for a kind this
    /// build does not know (a newer server's).
    pub fn kind_value(&self) -> Option<Kind> {
        KindCode::try_from(self.kind_code)
            .ok()
            .and_then(KindCode::kind)
            .or_else(|| self.kind.parse().ok())
    }

    /// The IDs of `runs`, in order: what a client does with a batch of a 64-bit kind. A run
    /// that would pass `u64::MAX` (never sent by a snowdrift server) stops there.
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.runs.iter().flat_map(|r| {
            (0..r.count).map_while(move |k| r.first.checked_add(k.checked_mul(r.stride)?))
        })
    }
}

impl KindCode {
    /// The kind it stands for; `None` for `KIND_CODE_UNSPECIFIED`. The inverse of
    /// `From<Kind>`, so the table is written once.
    pub fn kind(self) -> Option<Kind> {
        Kind::ALL
            .iter()
            .copied()
            .find(|&kind| KindCode::from(kind) == self)
    }
}

impl From<Kind> for KindCode {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::Snowflake => KindCode::Snowflake,
            Kind::Segment => KindCode::Segment,
            Kind::Ticket => KindCode::Ticket,
            Kind::Counter => KindCode::Counter,
            Kind::Uuid1 => KindCode::Uuid1,
            Kind::Uuid2 => KindCode::Uuid2,
            Kind::Uuid3 => KindCode::Uuid3,
            Kind::Uuid4 => KindCode::Uuid4,
            Kind::Uuid5 => KindCode::Uuid5,
            Kind::Uuid6 => KindCode::Uuid6,
            Kind::Uuid7 => KindCode::Uuid7,
            Kind::Ulid => KindCode::Ulid,
            Kind::Objectid => KindCode::Objectid,
            Kind::Tso => KindCode::Tso,
            Kind::ZkVersion => KindCode::ZkVersion,
            Kind::Typeid => KindCode::Typeid,
            Kind::Ksuid => KindCode::Ksuid,
            Kind::Xid => KindCode::Xid,
            Kind::Nanoid => KindCode::Nanoid,
            Kind::Cuid2 => KindCode::Cuid2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch from a server before `kind_code` (the string alone) and one with the code
    /// alone say the same kind, for every kind; the code is what a client reads when both
    /// are there.
    #[test]
    fn the_string_of_old_servers_and_the_code_agree() {
        for &kind in Kind::ALL {
            let code = KindCode::from(kind);
            assert_ne!(code, KindCode::Unspecified);
            assert_eq!(code.kind(), Some(kind));
            let old = IdBatch {
                kind: kind.as_str().to_string(),
                ..Default::default()
            };
            let new_only = IdBatch {
                kind_code: code.into(),
                ..Default::default()
            };
            assert_eq!(old.kind_value(), Some(kind));
            assert_eq!(new_only.kind_value(), Some(kind));
            let both = IdBatch {
                kind: "segment".to_string(),
                kind_code: code.into(),
                ..Default::default()
            };
            assert_eq!(both.kind_value(), Some(kind));
        }
        // Every code but UNSPECIFIED is a kind's, so none is left over for the string.
        let codes = (0..=i32::from(u8::MAX))
            .filter_map(|n| KindCode::try_from(n).ok())
            .filter_map(KindCode::kind)
            .count();
        assert_eq!(codes, Kind::ALL.len());
    }

    /// A kind newer than this build (a code and a name it does not know) is no kind, so the
    /// client treats its IDs as plain, as it did every unknown name.
    #[test]
    fn an_unknown_kind_is_none() {
        let newer = IdBatch {
            kind: "snowflake2".to_string(),
            kind_code: 999,
            ..Default::default()
        };
        assert_eq!(newer.kind_value(), None);
        let newer_code_known_name = IdBatch {
            kind: "tso".to_string(),
            kind_code: 999,
            ..Default::default()
        };
        assert_eq!(newer_code_known_name.kind_value(), Some(Kind::Tso));
    }
}
