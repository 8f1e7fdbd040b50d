//! `[[generator]]`: one generator of any kind, with every kind's keys (the plan refuses
//! those its kind does not take).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::duration_text;

/// What a generator produces: the wire contract's, so the config file, the HTTP and gRPC
/// answers and the clients name kinds alike.
pub use snowdrift_proto::Kind;

/// One `[[generator]]`. Keys that do not apply to its kind are errors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// The name it is served under (`/v1/ids/{name}`); shares one namespace with tags.
    pub name: String,
    /// What it produces.
    pub kind: Kind,
    /// `snowflake`: a preset (`twitter`, `sonyflake`, ...). `objectid`: `random` (the
    /// default) or `legacy` (machine hash and process ID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// `snowflake`: a custom layout, e.g. `time:41,datacenter:5,worker:5,seq:12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<String>,
    /// `snowflake` with `bits`: the time unit (`1ms`, `10ms`, `1s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// `snowflake`, `tso`: the epoch (RFC 3339, a date, or ms since 1970). With a preset it
    /// replaces the preset's (a `baidu` layout that ran out, moved to 2025-01-01); with
    /// `bits` default Twitter's; for `tso` default the Unix epoch, as PD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
    /// `snowflake`: how long a start may wait for the clock to pass the worker ID's
    /// high-water mark (a restart behind it, or a clock that stepped back), before
    /// `on_backward` decides. Default `worker.max_mark_wait`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text::option"
    )]
    pub backward_wait: Option<Duration>,
    /// `snowflake`: beyond `backward_wait`, `extension` (the default: go on at once under
    /// the layout's next extension value, refusing when there is no extension field or
    /// every value is used), `wait` (refuse) or `refuse` (wait only for the window the
    /// last holder wrote ahead, never for a clock that went back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_backward: Option<OnBackwardPolicy>,
    /// `snowflake`: future time a generator may borrow when a tick's sequence is used up
    /// under a burst, instead of waiting for the next tick (bounded; the high-water mark
    /// covers it). Below `worker.window`. Default 0: wait.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text::option"
    )]
    pub max_lead: Option<Duration>,
    /// `snowflake`: start each tick's sequence at a pseudo-random value below this (Leaf
    /// uses 100), so a generator issuing a few IDs per tick does not issue only multiples
    /// of the sequence size (every ID even, `id % shards` skewed). Costs up to that many
    /// IDs per tick. Default: start at 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_sequence_start: Option<u64>,
    /// `snowflake`: `plain` (the default) or `bit-reversed`: each ID's bits reversed within
    /// the layout's width (Spanner's bit-reversed sequences), so consecutive IDs land far
    /// apart in a range-sharded key space. Still unique and decodable (decode reverses
    /// first), no longer in time order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Output>,
    /// `segment`: the tag served under this name (default: the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// `ticket`: the ticket servers' URLs, in the order of their classes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// `ticket`: the table (MySQL/MariaDB) or sequence (PostgreSQL) on every server
    /// (default `tickets64`). `snowflake` with `layout = "mastodon"`: the table name
    /// hashed into each ID's low bits, as Mastodon's (default: the generator's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// `counter`: the Redis URL. `tso`: the etcd cluster the leader is elected on and the
    /// window saved in (`etcd://HOST:2379[,HOST:2379...]`). `zk-version`: the ZooKeeper
    /// cluster (`zookeeper://HOST:2181[,...]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `zk-version`: the znode whose data version is the ID (default
    /// `/snowdrift/versions/{name}`), created if missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub znode: Option<String>,
    /// `counter`: a template such as `ORD{date:%Y%m%d}{seq:08}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// `counter`: how many values one Redis round trip reserves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u64>,
    /// `uuid1`, `uuid2`, `uuid6`: the node ID, 12 hex digits (`01:23:45:67:89:ab` also
    /// reads); default a random value with the multicast bit set, new at every start, so no
    /// MAC address leaks and no two processes share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `uuid3`, `uuid5`: the namespace the request's name is hashed under: `dns`, `url`,
    /// `oid`, `x500` or a UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `uuid2`: the local domain, `person` (default), `group` or `org`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// `uuid2`: the local ID (a UID, GID or organisation number); default the server
    /// process's effective UID for `person`, its effective GID for `group`; `org` needs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_id: Option<u32>,
    /// 64-bit kinds (snowflake, segment, ticket, plain counter): the key, 32 hex digits,
    /// that `format=obfuscated...` permutes IDs under. A secret: `--check-config` masks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obfuscate_key: Option<String>,
    /// With `obfuscate_key`: the width of obfuscated IDs in bits, 1 to 64 (default: the
    /// layout's width for snowflake, 63 otherwise; 53 keeps them exact in JavaScript).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obfuscate_bits: Option<u8>,
    /// `tso`: how far past the time in use the leader saves its window in etcd (default
    /// `3s`, as PD): longer means fewer saves and a larger jump forward at each failover.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text::option"
    )]
    pub window: Option<Duration>,
    /// `tso`: bits of the logical part, 1 to 32 (default 18, as PD): IDs per millisecond
    /// are `2^logical_bits`, and at least `limits.max_count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_bits: Option<u8>,
    /// `tso`: the leader's lease on etcd (default `3s`, as PD). A leader that stops
    /// renewing (killed, cut off) is replaced about this long after; it stops issuing a
    /// fifth of it before then.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text::option"
    )]
    pub ttl: Option<Duration>,
    /// `tso` with auth on: the bearer token this node presents when it forwards a request
    /// to the leader (a `read` token of the leader's config whose scope has this
    /// generator). A secret: `--check-config` masks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_token: Option<String>,
    /// `tso` with auth on: let this node send `forward_token` to a leader whose URL is plain
    /// `http://` (default false: it refuses to forward there, saying why, since anyone on
    /// the path, or a fake leader named in etcd, would read the token). Set it only on a
    /// network you trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_plaintext: Option<bool>,
    /// `tso`: run although the election's etcd takes requests from clients without a user or
    /// client certificate, or followers cannot check that a leader named there is a member
    /// of the cluster (plain `http://` nodes, or TLS without `server.tls_cert`). Anyone who
    /// could then write the leader key would have every node serve their IDs; refused
    /// without it. Only where nothing but the cluster can reach etcd and the nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_coordinator: Option<bool>,
    /// `typeid`: the type prefix of its IDs (`user` gives `user_01h455vb4pex5vsknk084sn02q`):
    /// up to 63 characters of `a`-`z` and `_`, starting and ending with a letter, or `""`
    /// for IDs without one. Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// `snowflake` with `layout = "mastodon"`: the secret the low bits' hash is keyed with,
    /// at least 16 bytes (Mastodon's is 32 hex digits). A secret: `--check-config` masks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// `xid`: the machine ID, 0 to 16777215 (rs/xid's `XID_MACHINE_ID`); default rs/xid's
    /// rule: the first 3 bytes of the SHA-256 of `/etc/machine-id` (else the host name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<u64>,
    /// `nanoid`: the characters IDs are drawn from, 2 to 256 distinct (default nanoid's
    /// `A-Za-z0-9_-`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alphabet: Option<String>,
    /// `nanoid`: characters per ID, 1 to 255 (default 21).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `nanoid`, `cuid2`: the IDs per second this generator is expected to issue, for the
    /// collision report: a 1% chance of a repeat within a day is refused (unless
    /// `accept_collision_risk`), within a year warned about by `--check-config` and at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_rate: Option<f64>,
    /// `cuid2`: characters per ID, 2 to 32 (default 24).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    /// `nanoid`, `cuid2`: start even when the shape's IDs may repeat: within one answer of
    /// `limits.max_count` IDs with a chance over 1 in a million, or within a day at
    /// `expected_rate`. Refused without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_collision_risk: Option<bool>,
}

word_enum!(
    /// `output`: how a snowflake generator writes its IDs.
    Output {
        /// As the layout composes them: time-ordered.
        Plain = "plain",
        /// Bits reversed within the layout's width: spread over the key space.
        BitReversed = "bit-reversed",
    }
);

word_enum!(
    /// `on_backward`: what a snowflake generator does when its clock is behind the time it
    /// (or the last holder of its worker ID) used.
    OnBackwardPolicy {
        /// Wait up to `backward_wait`, then the next extension value.
        Extension = "extension",
        /// Wait up to `backward_wait`, then refuse.
        Wait = "wait",
        /// Never wait for a clock that went back.
        Refuse = "refuse",
    }
);

impl GeneratorConfig {
    /// A generator of `kind` named `name` with every optional key unset.
    pub fn new(name: &str, kind: Kind) -> Self {
        Self {
            name: name.into(),
            kind,
            layout: None,
            bits: None,
            unit: None,
            epoch: None,
            backward_wait: None,
            on_backward: None,
            max_lead: None,
            random_sequence_start: None,
            output: None,
            tag: None,
            servers: Vec::new(),
            table: None,
            url: None,
            znode: None,
            template: None,
            batch: None,
            node: None,
            namespace: None,
            domain: None,
            local_id: None,
            obfuscate_key: None,
            obfuscate_bits: None,
            window: None,
            logical_bits: None,
            ttl: None,
            forward_token: None,
            forward_plaintext: None,
            insecure_coordinator: None,
            prefix: None,
            secret: None,
            machine_id: None,
            alphabet: None,
            size: None,
            expected_rate: None,
            length: None,
            accept_collision_risk: None,
        }
    }
}
