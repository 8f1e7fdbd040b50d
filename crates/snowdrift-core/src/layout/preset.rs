//! Well-known layouts, by name.
//!
//! | name | fields (high to low) | unit | epoch |
//! |---|---|---|---|
//! | `twitter` | time 41, datacenter 5, worker 5, seq 12 | 1 ms | 2010-11-04T01:42:54.657Z |
//! | `sonyflake` | time 39, seq 8, machine 16 | 10 ms | 2014-09-01 |
//! | `baidu` | time 28, worker 22, seq 13 | 1 s | 2016-05-20 (time field full since 2024-11-20) |
//! | `discord` | time 42, worker 5, process 5, increment 12 | 1 ms | 2015-01-01 |
//! | `instagram` | time 41, shard 13, seq 10 | 1 ms | 2011-08-24T21:07:01.721Z |
//! | `js53` | time 38, worker 5, seq 10 | 10 ms | 2025-01-01 |
//! | `tsid` | time 41, node 10, counter 12 | 1 ms | 2020-01-01 |
//! | `sonyflake-v2` | time 39, seq 8, machine 16 | 10 ms | 2025-01-01 |
//! | `mastodon` | time 48, worker 6, hashed_seq 10 | 1 ms | 1970-01-01 |
//!
//! `tsid` is TSID's (tsid-creator's) default: a 1,024-node TSID is `time:42, node:10,
//! counter:12` since 2020-01-01, so its values are this preset's until 2089, when TSID's
//! 42nd time bit is first set and TSIDs go negative as Java `long`s; snowdrift layouts stay
//! within 63 bits, so this preset ends there instead. Its 13-character string form is the
//! `tsid` format. `sonyflake-v2` is Sonyflake v2's defaults: v1's bits (with the sequence
//! above the machine ID) from a new start time, 2025-01-01.
//!
//! `js53` keeps every ID below 2^53, so JavaScript `number`s hold them exactly, until 2112
//! (87 years). The price of fitting 53 bits: 10 ms ticks instead of 1 ms, 32 nodes instead
//! of 1024, and 102,400 IDs per second per node instead of 4,096,000. Borrowing future
//! ticks (`max_lead`) lifts the short-burst rate when needed.
//!
//! `mastodon` is Mastodon's 48 bits of Unix milliseconds above 16 low bits, of which the
//! worker ID takes 6 and the sequence 10. Its sequence is meant to be issued hashed: a
//! [`MastodonTail`](crate::generator::MastodonTail) adds a keyed hash of the millisecond to
//! it, as Mastodon's `timestamp_id` does, so the low bits do not count IDs.

use super::{Field, Layout, Role};
use crate::error::{Error, Result};

/// Names of all presets.
pub const NAMES: &[&str] = &[
    "twitter",
    "sonyflake",
    "baidu",
    "discord",
    "instagram",
    "js53",
    "tsid",
    "sonyflake-v2",
    "mastodon",
];

fn layout(fields: &[(&str, u8, Role)], unit_ms: u64, epoch_ms: u64) -> Layout {
    let fields = fields
        .iter()
        .map(|&(n, b, r)| Field::new(n, b, r))
        .collect();
    // Presets are constants checked by the tests below; a failure here is a bug in this file.
    Layout::new(fields, unit_ms, epoch_ms).expect("preset layouts are valid")
}

/// A preset layout by name (case-insensitive).
pub fn get(name: &str) -> Result<Layout> {
    use Role::{Node, Sequence as Seq, Time};
    Ok(match name.to_ascii_lowercase().as_str() {
        "twitter" => layout(
            &[
                ("time", 41, Time),
                ("datacenter", 5, Node),
                ("worker", 5, Node),
                ("seq", 12, Seq),
            ],
            1,
            1_288_834_974_657,
        ),
        "sonyflake" => layout(
            &[("time", 39, Time), ("seq", 8, Seq), ("machine", 16, Node)],
            10,
            1_409_529_600_000,
        ),
        "baidu" => layout(
            &[("time", 28, Time), ("worker", 22, Node), ("seq", 13, Seq)],
            1000,
            1_463_702_400_000,
        ),
        "discord" => layout(
            &[
                ("time", 42, Time),
                ("worker", 5, Node),
                ("process", 5, Node),
                ("increment", 12, Seq),
            ],
            1,
            1_420_070_400_000,
        ),
        "instagram" => layout(
            &[("time", 41, Time), ("shard", 13, Node), ("seq", 10, Seq)],
            1,
            1_314_220_021_721,
        ),
        "js53" => layout(
            &[("time", 38, Time), ("worker", 5, Node), ("seq", 10, Seq)],
            10,
            1_735_689_600_000,
        ),
        "tsid" => layout(
            &[("time", 41, Time), ("node", 10, Node), ("counter", 12, Seq)],
            1,
            1_577_836_800_000,
        ),
        "sonyflake-v2" => layout(
            &[("time", 39, Time), ("seq", 8, Seq), ("machine", 16, Node)],
            10,
            1_735_689_600_000,
        ),
        "mastodon" => layout(
            &[
                ("time", 48, Time),
                ("worker", 6, Node),
                ("hashed_seq", 10, Seq),
            ],
            1,
            0,
        ),
        _ => return Err(Error::UnknownPreset(name.to_string())),
    })
}
