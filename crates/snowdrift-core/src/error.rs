//! The one error type of `snowdrift-core`.

use std::time::Duration;

/// Everything that can go wrong in `snowdrift-core`.
///
/// Each message says what happened and what a person can do about it. The enum is
/// `#[non_exhaustive]`: match the variants you handle and keep a catch-all arm.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A layout's fields need more than the 63 bits a positive `i64` has.
    #[error(
        "layout needs {total} bits ({breakdown}) but an ID has 63; remove {over} bit(s), for example from the sequence or a node field"
    )]
    LayoutTooWide {
        /// Bits the layout asks for.
        total: u32,
        /// `time 37 + server 20 + sequence 16` style listing.
        breakdown: String,
        /// How many bits over 63.
        over: u32,
    },
    /// A layout is malformed (missing time or sequence field, zero-width field, bad unit...).
    #[error("invalid layout: {0}")]
    InvalidLayout(String),
    /// A layout spec string (`time:41,worker:10,seq:12`) could not be parsed.
    #[error("invalid layout spec {spec:?}: {reason}")]
    InvalidSpec {
        /// The text as given.
        spec: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A preset name is not known.
    #[error("unknown layout preset {0:?}; known presets: {known}", known = crate::layout::preset::NAMES.join(", "))]
    UnknownPreset(String),
    /// The layout's epoch lies after the current time.
    #[error("layout epoch {epoch} is in the future (now is {now}); pick an epoch in the past")]
    EpochInFuture {
        /// The epoch, RFC 3339.
        epoch: String,
        /// The current time, RFC 3339.
        now: String,
    },
    /// The time field of the layout cannot hold the current time any more.
    #[error(
        "the layout's time field is full: it ran out on {ended}; use a later epoch, a coarser unit or more time bits"
    )]
    TimeExhausted {
        /// When the last representable tick ended, RFC 3339.
        ended: String,
    },
    /// The clock reads a time before the layout's epoch.
    #[error(
        "the clock reads {now_ms} ms since 1970, before the layout epoch {epoch_ms}; check the clock or the epoch"
    )]
    ClockBeforeEpoch {
        /// Clock reading, ms since the Unix epoch.
        now_ms: u64,
        /// The epoch, ms since the Unix epoch.
        epoch_ms: u64,
    },
    /// The clock went back further than the generator may wait for, and no extension
    /// value is left to absorb the step.
    #[error(
        "clock is {behind:?} behind the last time used for IDs; refusing to issue until it catches up (wait bound {bound:?}, extension values left: {ext_left})"
    )]
    ClockBehind {
        /// How far the clock is behind the last tick used.
        behind: Duration,
        /// The configured bound on waiting.
        bound: Duration,
        /// Extension-field values still unused (0 when the layout has none).
        ext_left: u64,
    },
    /// A field value does not fit its width.
    #[error("{field} = {value} does not fit in {bits} bit(s); allowed: 0..={max}")]
    FieldOutOfRange {
        /// Field name (`worker`, `datacenter`, ...).
        field: String,
        /// The value given.
        value: u64,
        /// Width of the field.
        bits: u8,
        /// Largest allowed value.
        max: u64,
    },
    /// A field named in a compose/decode request does not exist in the layout.
    #[error("layout has no field {name:?}; its fields are: {fields}")]
    UnknownField {
        /// The name asked for.
        name: String,
        /// The layout's field names.
        fields: String,
    },
    /// An ID does not decode under the layout (negative, or too large).
    #[error("{id} is not an ID of this layout: {reason}")]
    InvalidId {
        /// The ID as given.
        id: String,
        /// Why it does not fit.
        reason: String,
    },
    /// A string is not valid in an encoding.
    #[error("{input:?} is not valid {codec}: {reason}")]
    InvalidEncoding {
        /// The codec (`base62`, `crockford32`, `sqids`, `friendly`, ...).
        codec: &'static str,
        /// The input, truncated if long.
        input: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A count or batch size is out of the allowed range.
    #[error("count {count} is out of range; allowed: {allowed}")]
    InvalidCount {
        /// The count given.
        count: u64,
        /// The allowed range.
        allowed: String,
    },
    /// A value is outside the domain of an obfuscator.
    #[error("{value} is outside the obfuscation domain of {bits} bits (max {max})")]
    OutOfDomain {
        /// The value given.
        value: u64,
        /// Domain width.
        bits: u8,
        /// Largest value in the domain.
        max: u64,
    },
    /// Invalid configuration of a codec, obfuscator or generator.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A counter (ObjectId, ULID, UUID v7...) ran out within one tick.
    #[error("{kind} generator overflowed within one time unit; retry in the next millisecond")]
    Overflow {
        /// Which ID kind.
        kind: &'static str,
    },
    /// A UUID v2 (DCE Security) generator used all 64 clock-sequence values of the current
    /// time window: the local ID takes the low 32 bits of the time, so one domain and ID on
    /// one node get 64 UUIDs per 2^32 × 100 ns (7 min 9.5 s).
    #[error(
        "UUID v2 gives 64 UUIDs per domain, local ID and node in each 7 min 9.5 s window (DCE 1.1's layout) and this window's are used; the next window opens in {wait_ms} ms: wait, or use another local_id, node or a UUID version without this limit (v1, v6, v7)"
    )]
    DceWindowFull {
        /// Milliseconds until the next window opens.
        wait_ms: u64,
    },
    /// The clock reads a time that an ID kind's time field cannot hold (an ObjectId's 32-bit
    /// seconds end in 2106, a ULID's or UUID v7's 48-bit milliseconds in 10889).
    #[error(
        "the clock reads {now_ms} ms since 1970, outside what a {kind} can hold ({range}); check the clock"
    )]
    ClockOutOfRange {
        /// Which ID kind.
        kind: &'static str,
        /// Clock reading, ms since the Unix epoch.
        now_ms: u64,
        /// The times the kind can hold.
        range: &'static str,
    },
    /// A counter template (`ORD{date:%Y%m%d}{seq:08}`) could not be parsed.
    #[error("invalid counter template {template:?} at column {column}: {reason}")]
    InvalidTemplate {
        /// The template as given, truncated if long.
        template: String,
        /// Where the problem is: 1-based, counted in characters.
        column: usize,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A counter's sequence value does not fit its template's `{seq}` field.
    #[error(
        "sequence value {seq} does not fit the counter's {field} (largest {max}); counters error instead of wrapping: widen the field or start a new counter"
    )]
    CounterOverflow {
        /// The value that did not fit.
        seq: u64,
        /// The largest value the field holds.
        max: u64,
        /// The field, e.g. `{seq:08}`.
        field: String,
    },
    /// A fenced generator may not issue: its fence is closed.
    #[error("not issuing: {reason}")]
    NotIssuing {
        /// Why the fence is closed.
        reason: crate::generator::ClosedReason,
    },
    /// A fenced generator's lease deadline passed before the keeper renewed the lease.
    #[error(
        "not issuing: the worker ID's lease could not be renewed in time; issuing stopped at {deadline_ms} ms since 1970 (now {now_ms}); the node resumes when the coordinator answers again"
    )]
    LeaseExpired {
        /// The deadline, ms since 1970 on the generator's clock.
        deadline_ms: u64,
        /// The clock reading that passed it.
        now_ms: u64,
    },
    /// The next ID's time would pass the durable high-water mark: the keeper has not
    /// extended the window yet (the coordinator is slow or unreachable).
    #[error(
        "not issuing: the next ID's time would pass the durable high-water mark {window_end_ms} ms since 1970 (now {now_ms}); the lease keeper has not extended it yet, check the coordinator"
    )]
    WindowNotExtended {
        /// The window end (high-water mark), ms since 1970.
        window_end_ms: u64,
        /// The clock reading.
        now_ms: u64,
    },
    /// A timestamp oracle was asked for IDs while it does not lead: no term was started,
    /// or its leadership ended.
    #[error(
        "not issuing: this node does not lead the timestamp oracle (no term started, or its leadership ended); ask the leader"
    )]
    NotLeading,
    /// A timestamp-oracle window was reported saved for a term that is not the current one:
    /// the save began under a leadership that has since ended, so it cannot vouch for the
    /// current term.
    #[error(
        "the timestamp window saved under term {term} arrived after that term ended (current term: {current}; 0 = none); start the save again under the current term"
    )]
    StaleTerm {
        /// The term the save was made for.
        term: u64,
        /// The current term, 0 when none.
        current: u64,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
