//! The 128-, 160- and 96-bit ID kinds and the text ones: UUID (v1 to v7), ULID, MongoDB's
//! ObjectId, TypeID, KSUID, xid, Nano ID and cuid2.
//!
//! These are for when an ID's size does not matter and no node needs a worker ID: any
//! process can make them with no coordination, at the cost of randomness standing in for
//! uniqueness. UUIDs and ULIDs are the `uuid` and `ulid` crates' own types, re-exported;
//! this module adds what the crates leave to the caller: a [`Clock`](crate::clock::Clock)
//! for the time, and generator state that the caller owns (no process-wide globals), so two
//! generators in one process, or a test with a manual clock, never interfere. (The one
//! process-wide value is [`os_random`]'s per-thread pool of OS random bytes.)
//!
//! | kind | bits | sorts by time | made by |
//! | --- | --- | --- | --- |
//! | UUID v4 | 122 random | no | [`uuid::v4`], [`uuid::v4_from_bytes`] |
//! | UUID v7 | 48 ms + 74 counter/random | yes, monotonic per generator | [`uuid::UuidV7Generator`] |
//! | UUID v1, v6 | 60 × 100 ns + 14 clock sequence + 48 node | v6 yes, v1 no | [`uuid::GregorianUuidGenerator`] |
//! | UUID v2 | v1 with a local domain and ID over the low 32 time bits | no | [`uuid::v2::DceSecurityGenerator`] |
//! | UUID v3, v5 | MD5 / SHA-1 of a name | no | [`uuid::v3`], [`uuid::v5`] |
//! | ULID | 48 ms + 80 random | yes, monotonic per generator | [`ulid::UlidGenerator`] |
//! | ObjectId | 32 s + 40 process + 24 counter | by second | [`objectid::ObjectIdGenerator`] |
//! | TypeID | a type prefix and a UUID v7 in base32 | yes, monotonic per generator | [`typeid::TypeIdGenerator`] |
//! | KSUID | 32 s since 2014 + 128 random | by second | [`ksuid::KsuidGenerator`] |
//! | xid | 32 s + 24 machine + 16 process + 24 counter | by second | [`xid::XidGenerator`] |
//! | Nano ID | `size` random characters of an alphabet | no | [`nanoid::Nanoid`] |
//! | cuid2 | a letter and a SHA3 of time, salt, counter, fingerprint | no | [`cuid2::Cuid2Generator`] |

pub mod cuid2;
pub mod ksuid;
pub mod nanoid;
pub mod objectid;
pub mod os_random;
pub mod typeid;
pub mod ulid;
pub mod uuid;
pub mod xid;

pub use self::ksuid::{Ksuid, KsuidGenerator};
pub use self::objectid::{ObjectId, ObjectIdGenerator};
pub use self::typeid::{TypeId, TypeIdGenerator};
pub use self::ulid::{Ulid, UlidGenerator};
pub use self::uuid::{GregorianUuidGenerator, Uuid, UuidV7Generator};
pub use self::xid::{Xid, XidGenerator};
