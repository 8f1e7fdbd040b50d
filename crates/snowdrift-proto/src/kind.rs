//! [`Kind`]: what a generator produces, one value type for the config file, the HTTP and
//! gRPC answers, the command line and the client, so none of them compares kind names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a generator produces. Written in config files, JSON and `IdBatch.kind` as
/// [`as_str`](Kind::as_str) gives it (`snowflake`, `zk-version`, ...).
///
/// Non-exhaustive: later versions add kinds, so a `match` outside this crate needs an arm
/// for kinds it does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// 64-bit time-ordered IDs under a bit layout.
    Snowflake,
    /// Leaf segments of a tag in the store.
    Segment,
    /// Flickr ticket servers.
    Ticket,
    /// Redis counters.
    Counter,
    /// UUID version 1 (time, clock sequence, node).
    Uuid1,
    /// UUID version 2 (DCE Security: v1 with a local domain and ID).
    Uuid2,
    /// UUID version 3 (MD5 of a namespace and a name from the request).
    Uuid3,
    /// UUID version 4 (random).
    Uuid4,
    /// UUID version 5 (SHA-1 of a namespace and a name from the request).
    Uuid5,
    /// UUID version 6 (v1 with the time's bytes in order, so it sorts by time).
    Uuid6,
    /// UUID version 7 (time-ordered).
    Uuid7,
    /// ULID.
    Ulid,
    /// MongoDB ObjectId.
    Objectid,
    /// A timestamp oracle (TiKV PD's TSO): strictly increasing across every node, from
    /// one leader elected on etcd.
    Tso,
    /// A ZooKeeper znode's data version after an unconditional `setData`: one quorum
    /// write per ID.
    ZkVersion,
    /// TypeID (jetify-com/typeid v0.3): a type prefix and a UUID v7 in base32.
    Typeid,
    /// KSUID (segmentio/ksuid): 32-bit seconds since 2014 and 128 random bits, base62.
    Ksuid,
    /// xid (rs/xid): seconds, machine ID, process ID and counter in 20 base32hex characters.
    Xid,
    /// Nano ID: random characters of an alphabet, uniformly drawn.
    Nanoid,
    /// cuid2: a letter and a SHA3 of time, salt, counter and fingerprint, in base 36.
    Cuid2,
}

impl Kind {
    /// Every kind, in the order messages list them.
    pub const ALL: &'static [Kind] = &[
        Kind::Snowflake,
        Kind::Segment,
        Kind::Ticket,
        Kind::Counter,
        Kind::Uuid1,
        Kind::Uuid2,
        Kind::Uuid3,
        Kind::Uuid4,
        Kind::Uuid5,
        Kind::Uuid6,
        Kind::Uuid7,
        Kind::Ulid,
        Kind::Objectid,
        Kind::Tso,
        Kind::ZkVersion,
        Kind::Typeid,
        Kind::Ksuid,
        Kind::Xid,
        Kind::Nanoid,
        Kind::Cuid2,
    ];

    /// The config name, as [`as_str`](Self::as_str): the name the server's config `Kind`
    /// had before it moved here, kept so code written against it still builds.
    #[deprecated(note = "use as_str")]
    pub const fn name(self) -> &'static str {
        self.as_str()
    }

    /// The name used in config files, JSON, `IdBatch.kind` and messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Snowflake => "snowflake",
            Kind::Segment => "segment",
            Kind::Ticket => "ticket",
            Kind::Counter => "counter",
            Kind::Uuid1 => "uuid1",
            Kind::Uuid2 => "uuid2",
            Kind::Uuid3 => "uuid3",
            Kind::Uuid4 => "uuid4",
            Kind::Uuid5 => "uuid5",
            Kind::Uuid6 => "uuid6",
            Kind::Uuid7 => "uuid7",
            Kind::Ulid => "ulid",
            Kind::Objectid => "objectid",
            Kind::Tso => "tso",
            Kind::ZkVersion => "zk-version",
            Kind::Typeid => "typeid",
            Kind::Ksuid => "ksuid",
            Kind::Xid => "xid",
            Kind::Nanoid => "nanoid",
            Kind::Cuid2 => "cuid2",
        }
    }

    /// Its IDs go stale: snowflake IDs carry the time they were made, so a client that
    /// caches them drops what it held too long instead of handing out old times.
    pub const fn ids_expire(self) -> bool {
        matches!(self, Kind::Snowflake)
    }

    /// Its IDs must never be cached: timestamp-oracle IDs are strictly increasing across
    /// every client only if each is handed out as it comes from the server.
    pub const fn never_cached(self) -> bool {
        matches!(self, Kind::Tso)
    }

    /// Its IDs are always text (UUIDs, ULIDs, ObjectIds, TypeIDs, KSUIDs, xids, Nano IDs,
    /// cuid2s). Counters are text only under a
    /// `template`, so they are not counted here: the batch says which it holds.
    pub const fn is_text(self) -> bool {
        matches!(
            self,
            Kind::Uuid1
                | Kind::Uuid2
                | Kind::Uuid3
                | Kind::Uuid4
                | Kind::Uuid5
                | Kind::Uuid6
                | Kind::Uuid7
                | Kind::Ulid
                | Kind::Objectid
                | Kind::Typeid
                | Kind::Ksuid
                | Kind::Xid
                | Kind::Nanoid
                | Kind::Cuid2
        )
    }

    /// Its uniqueness is in random bits alone (UUID v4 and v7, ULID, TypeID, KSUID, Nano ID,
    /// cuid2), or in the maker's own host and process (xid: machine ID, process ID, counter), so an
    /// application may make its IDs itself instead of asking a server.
    pub const fn needs_no_coordination(self) -> bool {
        matches!(
            self,
            Kind::Uuid4
                | Kind::Uuid7
                | Kind::Ulid
                | Kind::Typeid
                | Kind::Ksuid
                | Kind::Xid
                | Kind::Nanoid
                | Kind::Cuid2
        )
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no [`Kind`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{word:?} is not one of {}", Kind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", "))]
pub struct UnknownKind {
    /// What was given.
    pub word: String,
}

impl FromStr for Kind {
    type Err = UnknownKind;

    fn from_str(text: &str) -> Result<Self, UnknownKind> {
        Kind::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == text)
            .ok_or_else(|| UnknownKind {
                word: text.to_string(),
            })
    }
}

impl Serialize for Kind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are the config file's and the JSON's: changing one breaks every config and
    /// client that wrote it.
    #[test]
    fn every_kind_round_trips_through_its_name_display_and_serde() {
        let names = [
            "snowflake",
            "segment",
            "ticket",
            "counter",
            "uuid1",
            "uuid2",
            "uuid3",
            "uuid4",
            "uuid5",
            "uuid6",
            "uuid7",
            "ulid",
            "objectid",
            "tso",
            "zk-version",
            "typeid",
            "ksuid",
            "xid",
            "nanoid",
            "cuid2",
        ];
        let listed: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(listed, names);
        for &kind in Kind::ALL {
            let name = kind.as_str();
            assert_eq!(kind.to_string(), name);
            assert_eq!(name.parse::<Kind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Kind>(&json).unwrap(), kind);
        }
    }

    #[test]
    fn an_unknown_name_is_refused_with_every_allowed_name() {
        let e = "snowflak".parse::<Kind>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"snowflak\" is not one of snowflake, segment, ticket, counter, uuid1, uuid2, \
             uuid3, uuid4, uuid5, uuid6, uuid7, ulid, objectid, tso, zk-version, typeid, ksuid, \
             xid, nanoid, cuid2"
        );
        let e = serde_json::from_str::<Kind>("\"Snowflake\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("\"Snowflake\" is not one of snowflake,"),
            "{e}"
        );
        assert!(serde_json::from_str::<Kind>("1").is_err());
    }

    #[test]
    fn predicates() {
        let which = |p: fn(Kind) -> bool| -> Vec<&str> {
            Kind::ALL
                .iter()
                .copied()
                .filter(|&k| p(k))
                .map(Kind::as_str)
                .collect()
        };
        assert_eq!(which(Kind::ids_expire), ["snowflake"]);
        assert_eq!(which(Kind::never_cached), ["tso"]);
        assert_eq!(
            which(Kind::is_text),
            [
                "uuid1", "uuid2", "uuid3", "uuid4", "uuid5", "uuid6", "uuid7", "ulid", "objectid",
                "typeid", "ksuid", "xid", "nanoid", "cuid2"
            ]
        );
        assert_eq!(
            which(Kind::needs_no_coordination),
            [
                "uuid4", "uuid7", "ulid", "typeid", "ksuid", "xid", "nanoid", "cuid2"
            ]
        );
    }
}
