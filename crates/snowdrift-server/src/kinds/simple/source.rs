//! 128- and 96-bit kinds that need no coordination: UUID v4/v7, ULID, ObjectId.

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::kinds::objectid::{ObjectIdGenerator, legacy_process};
use snowdrift_core::kinds::ulid::UlidGenerator;
use snowdrift_core::kinds::uuid::{self as uuid_kind, UuidV7Generator};

use serde_json::Value;
use snowdrift_core::codec::IdFormat;
use snowdrift_core::obfuscate::Obfuscator;

use crate::config::Kind;
use crate::error::Error;
use crate::kinds::{IdSource, Ids};

/// A generator of a kind whose IDs are unique by construction (time plus randomness).
#[derive(Debug)]
pub enum SimpleSource {
    /// Random UUIDs.
    Uuid4,
    /// Time-ordered UUIDs, monotonic within this process.
    Uuid7(UuidV7Generator<MonotonicClock>),
    /// ULIDs, monotonic within this process.
    Ulid(UlidGenerator<MonotonicClock>),
    /// ObjectIds with this process's value.
    ObjectId {
        /// The generator.
        generator: ObjectIdGenerator<MonotonicClock>,
        /// The process value is the legacy layout's machine hash and process ID, not 5
        /// random bytes.
        legacy: bool,
    },
}

impl SimpleSource {
    /// A source of `kind`, which must be one of the simple kinds.
    pub fn new(kind: Kind) -> Option<Self> {
        Some(match kind {
            Kind::Uuid4 => SimpleSource::Uuid4,
            Kind::Uuid7 => SimpleSource::Uuid7(UuidV7Generator::new(MonotonicClock::new())),
            Kind::Ulid => SimpleSource::Ulid(UlidGenerator::new(MonotonicClock::new())),
            Kind::Objectid => {
                let mut seed = [0u8; 9];
                // Without OS randomness two processes could share a process value; refuse
                // rather than risk it.
                getrandom::fill(&mut seed).ok()?;
                let process = [seed[0], seed[1], seed[2], seed[3], seed[4]];
                let counter = u32::from_le_bytes([seed[5], seed[6], seed[7], seed[8]]);
                SimpleSource::ObjectId {
                    generator: ObjectIdGenerator::new(MonotonicClock::new(), process, counter),
                    legacy: false,
                }
            }
            _ => return None,
        })
    }

    /// ObjectIds under the legacy layout: this host's name hashed and this process's ID in
    /// place of the random value (the counter still starts at a random value).
    pub fn legacy_objectid() -> Option<Self> {
        let mut seed = [0u8; 4];
        getrandom::fill(&mut seed).ok()?;
        let process = legacy_process(&snowdrift_store::worker::hostname(), std::process::id());
        Some(SimpleSource::ObjectId {
            generator: ObjectIdGenerator::new(
                MonotonicClock::new(),
                process,
                u32::from_le_bytes(seed),
            ),
            legacy: true,
        })
    }

    /// True for ObjectIds under the legacy layout.
    pub fn is_legacy_objectid(&self) -> bool {
        matches!(self, SimpleSource::ObjectId { legacy: true, .. })
    }
}

impl IdSource for SimpleSource {
    fn kind(&self) -> Kind {
        match self {
            SimpleSource::Uuid4 => Kind::Uuid4,
            SimpleSource::Uuid7(_) => Kind::Uuid7,
            SimpleSource::Ulid(_) => Kind::Ulid,
            SimpleSource::ObjectId { .. } => Kind::Objectid,
        }
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        Ids::text(count, || {
            Ok(match self {
                SimpleSource::Uuid4 => uuid_kind::v4().to_string(),
                SimpleSource::Uuid7(g) => g.next()?.to_string(),
                SimpleSource::Ulid(g) => g.next()?.to_string(),
                SimpleSource::ObjectId { generator, .. } => generator.next()?.to_string(),
            })
        })
    }

    fn numeric(&self) -> bool {
        false
    }

    fn decode(
        &self,
        _name: &str,
        text: &str,
        _format: Option<IdFormat>,
        _obfuscator: Option<&Obfuscator>,
    ) -> Result<Value, Error> {
        super::decode::decode(self, text)
    }
}
