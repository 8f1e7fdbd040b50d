use std::collections::HashSet;

use md5::{Digest, Md5};
use proptest::prelude::*;

use super::*;
use crate::clock::ManualClock;
use crate::generator::SnowflakeGenerator;

const TABLE: &str = "statuses";
const SECRET: &str = "5f1e0c9a27b34d6e8a91c2d3e4f50617";
/// 2023-11-14T22:13:20Z.
const MS: u64 = 1_700_000_000_000;

/// Mastodon's own layout: one database, so no worker bits and all 16 low bits hashed.
fn one_database() -> Layout {
    Layout::from_spec("time:48,seq:16", 1, 0).unwrap()
}

fn preset() -> Layout {
    Layout::preset(PRESET).unwrap()
}

/// The first four hex digits of the MD5 of `table || secret || time_part`, as a number:
/// Mastodon's `sequence_base`, on text as its SQL takes it.
fn base(table: &str, secret: &str, time_part: u64) -> u64 {
    let hex: String = Md5::digest(format!("{table}{secret}{time_part}"))
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    u64::from_str_radix(&hex[..4], 16).unwrap()
}

/// Mastodon's `timestamp_id` as it reads: the base plus the sequence value, cut to the
/// tail's bits, below the time part.
fn reference(table: &str, secret: &str, time_part: u64, seq: u64, bits: u8) -> u64 {
    time_part | ((base(table, secret, time_part) + seq) & mask(bits))
}

/// IDs computed outside Rust: Ruby's `Digest::MD5` on Mastodon's formula
/// (`Digest::MD5.hexdigest(table + secret + time_part.to_s)[0, 4].to_i(16)`), and for the
/// rows without worker bits also PostgreSQL's `md5()` in the expression of Mastodon's
/// `timestamp_id` function; both gave these values.
#[test]
fn ids_match_values_computed_by_ruby_and_postgresql() {
    let mastodon = MastodonTail::new(&one_database(), TABLE, SECRET).unwrap();
    for (ms, seq, want) in [
        // Gargron's status 103270115826048975 was made in this millisecond.
        (1_575_776_913_849u64, 0u64, 103_270_115_826_017_847u64),
        (1_575_776_913_849, 1, 103_270_115_826_017_848),
        // The sum wraps past the tail's top, as `& 65535` makes it.
        (1_575_776_913_849, 65_535, 103_270_115_826_017_846),
        (MS, 0, 111_411_200_000_019_268),
        (MS, 40_000, 111_411_200_000_059_268),
    ] {
        assert_eq!(mastodon.apply((ms << 16) | seq), want, "{ms} {seq}");
        assert_eq!(mastodon.remove(want), (ms << 16) | seq);
    }
    // The preset: the worker's 6 bits are kept and hashed in, the sequence's 10 hashed.
    let tail = MastodonTail::new(&preset(), TABLE, SECRET).unwrap();
    for (ms, worker, seq, want) in [
        (MS, 5u64, 0u64, 111_411_200_000_005_647u64),
        (MS, 5, 1023, 111_411_200_000_005_646),
        (MS, 6, 0, 111_411_200_000_006_661),
        (1_575_776_913_849, 63, 17, 103_270_115_826_073_323),
    ] {
        let plain = (ms << 16) | (worker << 10) | seq;
        assert_eq!(tail.apply(plain), want, "{ms} {worker} {seq}");
    }
}

/// Without worker bits the tail is Mastodon's to the bit, sequence by sequence, every
/// value of the sequence (wraps included) in several milliseconds.
#[test]
fn one_database_is_mastodons_timestamp_id() {
    let tail = MastodonTail::new(&one_database(), TABLE, SECRET).unwrap();
    for ms in [MS, MS + 1, MS + 999, 1_575_776_913_849] {
        for seq in 0..1 << 16 {
            let time_part = ms << 16;
            assert_eq!(
                tail.apply(time_part | seq),
                reference(TABLE, SECRET, time_part, seq, 16),
                "{ms} {seq}"
            );
        }
    }
}

/// With worker bits, the hashed input is the ID with its sequence cleared (Mastodon's
/// `time_part` plus the worker), and the worker bits stay as they are.
#[test]
fn the_preset_hashes_time_and_worker_and_keeps_the_worker() {
    let tail = MastodonTail::new(&preset(), TABLE, SECRET).unwrap();
    for worker in [0u64, 1, 17, 63] {
        for seq in [0u64, 1, 511, 1023] {
            let time_part = (MS << 16) | (worker << 10);
            let hashed = tail.apply(time_part | seq);
            assert_eq!(hashed, reference(TABLE, SECRET, time_part, seq, 10));
            assert_eq!(hashed >> 10, time_part >> 10, "time and worker kept");
            let d = preset().decode(hashed).unwrap();
            assert_eq!((d.time_ms, d.values[1]), (MS, worker));
        }
    }
}

/// The generator's IDs for 64 workers over 5 milliseconds, each worker issuing every
/// sequence number of every millisecond (the layout's whole ID space for that time): all
/// 64 * 1024 * 5 hashed IDs differ, and each millisecond's fill all 2^16 tails.
#[test]
fn sixty_four_workers_filling_their_milliseconds_never_collide() {
    let clock = ManualClock::new(MS);
    let tail = MastodonTail::new(&preset(), TABLE, SECRET).unwrap();
    let generators: Vec<_> = (0..64)
        .map(|w| {
            SnowflakeGenerator::builder(preset())
                .node_id(w)
                .unwrap()
                .build(clock.clone())
                .unwrap()
        })
        .collect();
    let mut seen = HashSet::new();
    for ms in 0..5 {
        let mut tails = HashSet::new();
        for g in &generators {
            let block = g.next_block(1024).unwrap();
            assert_eq!(block.len(), 1024);
            for (id, plain) in tail.ids(&block).zip(&block) {
                assert_eq!(id, tail.apply(plain), "runs and single IDs agree");
                assert_eq!(id >> 16, MS + ms, "one millisecond per round");
                assert!(seen.insert(id), "{id} issued twice");
                tails.insert(id & 0xFFFF);
            }
        }
        assert_eq!(tails.len(), 1 << 16);
        clock.advance(1);
    }
    assert_eq!(seen.len(), 64 * 1024 * 5);
}

/// Workers under different secrets or table names (a misconfigured node) still never
/// collide: the worker bits are outside the hashed sum.
#[test]
fn workers_with_different_secrets_do_not_collide_either() {
    let clock = ManualClock::new(MS);
    let mut seen = HashSet::new();
    let mut issued = 0;
    for (w, table, secret) in [
        (1u64, TABLE, SECRET),
        (2, TABLE, "another secret, at least 16 bytes"),
        (3, "accounts", SECRET),
    ] {
        let tail = MastodonTail::new(&preset(), table, secret).unwrap();
        let g = SnowflakeGenerator::builder(preset())
            .node_id(w)
            .unwrap()
            .build(clock.clone())
            .unwrap();
        // A block holds at most the rest of a tick; the manual clock moves on when the
        // generator waits for the next one.
        for _ in 0..3 {
            let block = g.next_block(1024).unwrap();
            issued += block.len();
            for id in tail.ids(&block) {
                assert!(seen.insert(id), "{id} twice");
            }
        }
    }
    assert_eq!(seen.len() as u64, issued);
    assert_eq!(issued, 3 * 3 * 1024);
}

/// What the hash is for: the first ID of each millisecond does not start at 0, and its
/// tail is spread over the field, so a reader cannot count a millisecond's IDs from it.
#[test]
fn the_first_tail_of_each_millisecond_is_spread() {
    let clock = ManualClock::new(MS);
    let tail = MastodonTail::new(&preset(), TABLE, SECRET).unwrap();
    let g = SnowflakeGenerator::builder(preset())
        .node_id(9)
        .unwrap()
        .build(clock.clone())
        .unwrap();
    let mut firsts = HashSet::new();
    for _ in 0..1000 {
        firsts.insert(tail.apply(g.next().unwrap()) & 1023);
        clock.advance(1);
    }
    // 1000 draws from 1024 values give about 638 distinct ones; plain IDs give 1 (seq 0).
    assert!(firsts.len() > 500, "{} distinct first tails", firsts.len());
}

#[test]
fn offsets_depend_on_table_secret_time_and_worker() {
    let a = MastodonTail::new(&preset(), TABLE, SECRET).unwrap();
    let b = MastodonTail::new(&preset(), "accounts", SECRET).unwrap();
    let c = MastodonTail::new(&preset(), TABLE, "0123456789abcdef0123").unwrap();
    // Over 64 milliseconds an equal offset every time would be chance of 2^-640.
    let offsets = |t: &MastodonTail, worker: u64| -> Vec<u64> {
        (0..64)
            .map(|ms| t.offset(((MS + ms) << 16) | (worker << 10)))
            .collect()
    };
    let base = offsets(&a, 0);
    assert_ne!(base, offsets(&b, 0), "the table");
    assert_ne!(base, offsets(&c, 0), "the secret");
    assert_ne!(base, offsets(&a, 1), "the worker");
    assert!(base.windows(2).any(|w| w[0] != w[1]), "the millisecond");
}

#[test]
fn what_is_refused() {
    let e = MastodonTail::new(&preset(), TABLE, "short").unwrap_err();
    assert!(e.to_string().contains("at least 16 bytes"), "{e}");
    let e = MastodonTail::new(&preset(), "a\nb", SECRET).unwrap_err();
    assert!(e.to_string().contains("control characters"), "{e}");
    let e = MastodonTail::new(&preset(), &"t".repeat(129), SECRET).unwrap_err();
    assert!(e.to_string().contains("at most 128 bytes"), "{e}");
    let wide = Layout::from_spec("time:40,seq:17", 1, 0).unwrap();
    let e = MastodonTail::new(&wide, TABLE, SECRET).unwrap_err();
    assert!(e.to_string().contains("at most 16 bits"), "{e}");
    // The secret stays out of Debug output.
    let shown = format!("{:?}", MastodonTail::new(&preset(), TABLE, SECRET).unwrap());
    assert!(!shown.contains(SECRET) && shown.contains("***"), "{shown}");
}

/// A layout with node bits below the sequence (Sonyflake's shape): only the sequence field
/// moves, the machine bits below it are kept and hashed in.
#[test]
fn a_sequence_above_node_bits_is_hashed_in_place() {
    let layout = Layout::from_spec("time:39,seq:8,machine:16", 10, 0).unwrap();
    let tail = MastodonTail::new(&layout, TABLE, SECRET).unwrap();
    let plain = (12_345u64 << 24) | (7 << 16) | 0xBEEF;
    let hashed = tail.apply(plain);
    assert_eq!(hashed & !(0xFF << 16), plain & !(0xFF << 16));
    assert_eq!(tail.remove(hashed), plain);
    let time_part = plain & !(0xFF << 16);
    let seq = (base(TABLE, SECRET, time_part) + 7) & 0xFF;
    assert_eq!(hashed, time_part | (seq << 16));
}

proptest! {
    /// Within one millisecond of one worker, every sequence value gets its own tail: the
    /// tails of all 2^10 sequence numbers are all 2^10 values, and time and worker bits
    /// never change.
    #[test]
    fn a_millisecond_of_one_worker_never_repeats_a_tail(
        ms in 0u64..(1 << 47),
        worker in 0u64..64,
        table in "[a-z_]{0,20}",
        secret in "[ -~]{16,40}",
    ) {
        let tail = MastodonTail::new(&preset(), &table, &secret).unwrap();
        let high = (ms << 16) | (worker << 10);
        let mut tails = HashSet::new();
        for seq in 0..1024u64 {
            let id = tail.apply(high | seq);
            prop_assert_eq!(id >> 10, high >> 10);
            prop_assert!(tails.insert(id & 1023), "sequence {} repeats a tail", seq);
            prop_assert_eq!(tail.remove(id), high | seq);
        }
    }

    /// `apply` is a bijection on the whole ID space (so distinct plain IDs, of any worker
    /// and time, stay distinct), whatever IDs came before it through the cache.
    #[test]
    fn apply_is_injective_and_undone_by_remove(
        ids in prop::collection::vec(any::<u64>(), 2..40),
        secret in "[0-9a-f]{32}",
    ) {
        let tail = MastodonTail::new(&preset(), TABLE, &secret).unwrap();
        let fresh = |id: u64| MastodonTail::new(&preset(), TABLE, &secret).unwrap().apply(id);
        let mut out = HashSet::new();
        let distinct: HashSet<u64> = ids.iter().copied().collect();
        for &id in &ids {
            let hashed = tail.apply(id);
            prop_assert_eq!(hashed, fresh(id), "the cache never answers for another key");
            prop_assert_eq!(tail.remove(hashed), id);
            out.insert(hashed);
        }
        prop_assert_eq!(out.len(), distinct.len());
    }

    /// The runs of a block, tails applied, hold exactly the block's IDs tails applied, in
    /// at most two runs per tick.
    #[test]
    fn runs_hold_exactly_the_hashed_ids(
        worker in 0u64..64,
        skip in 0u64..1024,
        n in 1u64..3000,
        lead in any::<bool>(),
    ) {
        let clock = ManualClock::new(MS);
        let g = SnowflakeGenerator::builder(preset())
            .node_id(worker)
            .unwrap()
            .max_lead(std::time::Duration::from_millis(if lead { 5 } else { 0 }))
            .build(clock)
            .unwrap();
        let tail = MastodonTail::new(&preset(), TABLE, SECRET).unwrap();
        if skip > 0 {
            let _ = g.next_block(skip).unwrap();
        }
        let block = g.next_block(n).unwrap();
        let want: Vec<u64> = block.iter().map(|id| tail.apply(id)).collect();
        let got: Vec<u64> = tail.ids(&block).collect();
        prop_assert_eq!(&got, &want);
        let ticks = block.runs().count();
        prop_assert!(tail.runs(&block).count() <= 2 * ticks);
    }
}
