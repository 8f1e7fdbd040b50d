use proptest::prelude::*;

use super::*;
use crate::error::Error;

const NOV_2026: u64 = 1_795_000_000_000; // 2026-11-18

fn spec(s: &str) -> crate::Result<Layout> {
    Layout::from_spec(s, 1, 1_288_834_974_657)
}

#[test]
fn too_wide_says_by_how_much() {
    let err = spec("time:37,server:20,seq:16").unwrap_err();
    assert_eq!(
        err,
        Error::LayoutTooWide {
            total: 73,
            breakdown: "time 37 + server 20 + seq 16 = 73 bits".into(),
            over: 10
        }
    );
    assert!(err.to_string().contains("remove 10 bit(s)"), "{err}");
}

#[test]
fn structural_rules() {
    let msg = |s: &str| spec(s).unwrap_err().to_string();
    assert!(msg("time:41,worker:10,seq:0").contains("sequence field has zero width"));
    assert!(msg("worker:10,time:41,seq:12").contains("time field must be the highest"));
    assert!(msg("time:41,worker:10").contains("exactly one sequence"));
    assert!(msg("worker:10,seq:12").contains("exactly one time"));
    assert!(msg("time:41,worker:5,worker:5,seq:12").contains("used twice"));
    assert!(msg("time:41,ext:2,seq:12").contains("time field must be the highest"));
    assert!(msg("time:41,work er:5,seq:12").contains("lowercase"));
    assert!(msg("time:41,worker:64,seq:12").contains("wider than 63"));
    assert!(msg("time:41,worker,seq:12").contains("not name:bits"));
    assert!(msg("time:41,worker:x,seq:12").contains("not a bit count"));
    assert!(msg("").contains("empty"));
    assert!(
        Layout::from_spec("time:41,seq:12", 0, 0)
            .unwrap_err()
            .to_string()
            .contains("at least 1 ms")
    );
    // Extension above time and a sequence in the middle (Sonyflake) are allowed.
    assert!(spec("ext:2,time:39,worker:10,seq:12").is_ok());
    assert!(spec("time:39,seq:8,machine:16").is_ok());
}

#[test]
fn epoch_in_future_and_expired() {
    let l = Layout::from_spec("time:41,seq:12", 1, NOV_2026 + 1000).unwrap();
    assert!(matches!(
        l.check_at(NOV_2026),
        Err(Error::EpochInFuture { .. })
    ));
    let old = Layout::from_spec("time:20,seq:12", 1000, 0).unwrap(); // 12 days of 1970
    let err = old.check_at(NOV_2026).unwrap_err();
    assert!(matches!(err, Error::TimeExhausted { .. }));
    assert!(err.to_string().contains("1970-01-13"), "{err}");
    assert!(spec("time:41,seq:12").unwrap().check_at(NOV_2026).is_ok());
}

#[test]
fn presets_match_their_sources() {
    let t = Layout::preset("twitter").unwrap();
    assert_eq!(t.field_names(), ["time", "datacenter", "worker", "seq"]);
    assert_eq!(t.lifetime().to_string(), "2080-07-10T17:30:30.209Z");
    assert_eq!(t.max_ids_per_second(), 4_096_000.0);
    assert_eq!(t.max_nodes(), 1024);

    let s = Layout::preset("sonyflake").unwrap();
    assert_eq!(s.field_names(), ["time", "seq", "machine"]);
    assert_eq!(s.max_ids_per_second(), 25_600.0);
    assert_eq!(s.lifetime().to_string()[..4], *"2188"); // "174 years"

    let b = Layout::preset("baidu").unwrap();
    assert_eq!(b.lifetime().to_string(), "2024-11-20T21:24:16.000Z");
    assert!(matches!(
        b.check_at(NOV_2026),
        Err(Error::TimeExhausted { .. })
    ));

    // Discord's and Instagram's layouts add up to 64 bits: the top time bit is spare, and
    // their lifetimes end when IDs would pass i64::MAX.
    let d = Layout::preset("discord").unwrap();
    assert_eq!(d.total_bits(), 64);
    assert_eq!(d.lifetime().to_string(), "2084-09-06T15:47:35.552Z");
    assert!(Layout::from_spec("ext:1,time:41,worker:10,seq:12", 1, 0).is_err());
    let top = d.compose(&[1 << 41, 0, 0, 0]).unwrap_err();
    assert!(matches!(top, Error::FieldOutOfRange { max, .. } if max == (1 << 41) - 1));

    let i = Layout::preset("instagram").unwrap();
    assert_eq!(i.max_nodes(), 8192);
    assert_eq!(i.max_ids_per_second(), 1_024_000.0);

    assert!(
        Layout::preset("nope")
            .unwrap_err()
            .to_string()
            .contains("twitter")
    );
    assert_eq!(Layout::preset("TWITTER").unwrap(), t);
}

/// A TSID from TSID Creator's PHP port's README (`388400145978465528`, `0ARYZVZXW377R`):
/// its time, node and counter as TSID defines them (42-bit ms time since 2020-01-01, 10 node
/// bits, 12 counter bits).
#[test]
fn tsid_reads_a_published_tsid() {
    let t = Layout::preset("tsid").unwrap();
    let d = t.decode(388_400_145_978_465_528).unwrap();
    assert_eq!(format_ms(d.time_ms), "2022-12-07T18:43:30.927Z");
    assert_eq!(d.values[t.field_index("node").unwrap()], 25);
    assert_eq!(d.values[t.field_index("counter").unwrap()], 3320);
    assert_eq!(t.max_nodes(), 1024);
    assert!(t.check_at(NOV_2026).is_ok());
    let tsid = crate::codec::Format::Tsid.codec(&t);
    assert_eq!(
        tsid.encode(388_400_145_978_465_528).unwrap(),
        "0ARYZVZXW377R"
    );
    assert_eq!(
        tsid.decode("0ARYZVZXW377R").unwrap(),
        388_400_145_978_465_528
    );
    assert_eq!(
        tsid.encode(1).unwrap(),
        "0000000000001",
        "always 13 characters"
    );
    // Until 2089, where TSID's 42nd time bit would be set.
    assert_eq!(&format_ms(t.lifetime().end_ms)[..4], "2089");
}

#[test]
fn sonyflake_v2_is_v1_from_2025() {
    let v1 = Layout::preset("sonyflake").unwrap();
    let v2 = Layout::preset("sonyflake-v2").unwrap();
    assert_eq!(v1.fields(), v2.fields());
    assert_eq!(v1.unit_ms(), v2.unit_ms());
    assert_eq!(format_ms(v2.epoch_ms()), "2025-01-01T00:00:00.000Z");
}

#[test]
fn js53_is_safe_for_fifty_years_and_useful() {
    let j = Layout::preset("js53").unwrap();
    let fifty_years_after_epoch = j.epoch_ms() + 50 * 365 * 86_400_000;
    assert!(j.is_js_safe(fifty_years_after_epoch));
    assert!(j.is_js_safe(u64::MAX));
    assert!(j.lifetime().end_ms > fifty_years_after_epoch);
    assert!(j.max_nodes() >= 32);
    assert!(j.max_ids_per_second() >= 100_000.0);
    assert!(j.check_at(NOV_2026).is_ok());
}

#[test]
fn js_safety_of_twitter_ends_early() {
    let t = Layout::preset("twitter").unwrap();
    // 2^53 >> 22 ticks after the epoch: about 2^31 ms = 24.8 days.
    assert_eq!(t.js_unsafe_from_ms(), Some(t.epoch_ms() + (1 << 31)));
    assert!(!t.is_js_safe(NOV_2026));
    assert!(t.is_js_safe(t.epoch_ms() + (1 << 31) - 1));
    // The largest ID of the last safe tick is exactly 2^53 - 1.
    let last_safe_tick = (1u64 << 31) - 1;
    let id = t.compose(&[last_safe_tick, 31, 31, 4095]).unwrap();
    assert_eq!(id, (1 << 53) - 1);
}

#[test]
fn decodes_documented_twitter_and_discord_ids() {
    // Twitter API docs, Tweet object example: created_at "Wed Oct 10 20:19:24 +0000 2018".
    let t = Layout::preset("twitter").unwrap();
    let d = t.decode(1_050_118_621_198_921_728).unwrap();
    assert_eq!(format_ms(d.time_ms), "2018-10-10T20:19:24.211Z");
    assert_eq!(d.values[1..], [10, 27, 0]);
    // Discord API reference, "Snowflakes": 175928847299117063 is 2016-04-30 11:18:25.796
    // UTC, worker 1, process 0, increment 7.
    let dc = Layout::preset("discord").unwrap();
    let d = dc.decode(175_928_847_299_117_063).unwrap();
    assert_eq!(format_ms(d.time_ms), "2016-04-30T11:18:25.796Z");
    assert_eq!(d.values[1..], [1, 0, 7]);
    assert_eq!(d.value_of(&dc, Role::Sequence), Some(7));
}

#[test]
fn decode_rejects_ids_wider_than_layout() {
    let j = Layout::preset("js53").unwrap();
    assert!(
        j.decode(1 << 53)
            .unwrap_err()
            .to_string()
            .contains("53 usable bits")
    );
    let t = Layout::preset("twitter").unwrap();
    assert!(t.decode(u64::MAX).is_err());
}

#[test]
fn compose_checks_ranges_and_arity() {
    let t = Layout::preset("twitter").unwrap();
    assert_eq!(
        t.compose(&[0, 32, 0, 0]).unwrap_err(),
        Error::FieldOutOfRange {
            field: "datacenter".into(),
            value: 32,
            bits: 5,
            max: 31
        }
    );
    assert!(
        t.compose(&[1, 2])
            .unwrap_err()
            .to_string()
            .contains("expected 4")
    );
}

#[test]
fn units_and_epochs_parse() {
    assert_eq!(parse_unit("1ms").unwrap(), 1);
    assert_eq!(parse_unit("10ms").unwrap(), 10);
    assert_eq!(parse_unit("1s").unwrap(), 1000);
    assert_eq!(parse_unit("250").unwrap(), 250);
    for bad in ["0ms", "", "1h", "-1ms", "1.5s", "99999999999999999999s"] {
        assert!(parse_unit(bad).is_err(), "{bad}");
    }
    assert_eq!(parse_epoch("2014-09-01").unwrap(), 1_409_529_600_000);
    assert_eq!(
        parse_epoch("2010-11-04T01:42:54.657Z").unwrap(),
        1_288_834_974_657
    );
    assert_eq!(parse_epoch(" 0 ").unwrap(), 0);
    for bad in ["", "yesterday", "1969-12-31", "2010-13-01", "-5"] {
        assert!(parse_epoch(bad).is_err(), "{bad}");
    }
}

fn arb_layout() -> impl Strategy<Value = Layout> {
    (
        0u8..=3,
        1u8..=41,
        prop::collection::vec(1u8..=8, 0..4),
        1u8..=16,
        any::<bool>(),
    )
        .prop_filter_map("fits 63 bits", |(ext, time, nodes, seq, seq_mid)| {
            let mut fields = Vec::new();
            if ext > 0 {
                fields.push(Field::new("ext", ext, Role::Extension));
            }
            fields.push(Field::new("time", time, Role::Time));
            let node = |i: usize, b| Field::new(format!("n{i}"), b, Role::Node);
            let split = if seq_mid {
                1.min(nodes.len())
            } else {
                nodes.len()
            };
            fields.extend(nodes[..split].iter().enumerate().map(|(i, &b)| node(i, b)));
            fields.push(Field::new("seq", seq, Role::Sequence));
            fields.extend(
                nodes[split..]
                    .iter()
                    .enumerate()
                    .map(|(i, &b)| node(i + split, b)),
            );
            Layout::new(fields, 1, 0).ok()
        })
}

proptest! {
    #[test]
    fn decode_compose_round_trip(layout in arb_layout(), raw in any::<u64>()) {
        let id = raw & layout.max_id();
        let d = layout.decode(id).unwrap();
        prop_assert_eq!(layout.compose(&d.values).unwrap(), id);
    }

    #[test]
    fn compose_decode_round_trip(layout in arb_layout(), seed in any::<u64>()) {
        let values: Vec<u64> = layout.fields().iter().enumerate()
            .map(|(i, f)| {
                let max = if f.role() == Role::Time { layout.max_tick() } else { f.max() };
                seed.rotate_left(i as u32 * 7) & max
            }).collect();
        let id = layout.compose(&values).unwrap();
        prop_assert_eq!(layout.decode(id).unwrap().values, values);
    }

    #[test]
    fn ids_sort_by_time(layout in arb_layout(), a in any::<u64>(), b in any::<u64>()) {
        let m = layout.max_id();
        let (a, b) = (a & m, b & m);
        let (da, db) = (layout.decode(a).unwrap(), layout.decode(b).unwrap());
        if da.time_ms < db.time_ms && da.values.first() == db.values.first() {
            // Same extension value (or no extension): earlier time, smaller ID.
            prop_assert!(a < b);
        }
    }

    #[test]
    fn js_unsafe_boundary_is_exact(time in 1u8..=45, rest in 1u8..=18) {
        let l = Layout::from_spec(&format!("time:{time},seq:{rest}"), 1, 0).unwrap();
        match l.js_unsafe_from_ms() {
            None => prop_assert!(l.total_bits() <= 53),
            Some(t) => {
                let tick = t; // unit 1 ms, epoch 0
                let max_id = |tick: u64| (tick << rest) | mask(rest);
                prop_assert!(max_id(tick) >= 1 << 53);
                if tick > 0 { prop_assert!(max_id(tick - 1) < 1 << 53); }
            }
        }
    }
}

proptest! {
    /// Reversing bits is its own inverse within the layout's width, so distinct IDs stay
    /// distinct and decode back; results never reach the sign bit.
    #[test]
    fn reversed_bits_come_back_and_stay_in_range(id in 0u64..(1 << 63), preset in 0..super::preset::NAMES.len()) {
        let layout = Layout::preset(super::preset::NAMES[preset]).unwrap();
        let id = id & layout.max_id();
        let reversed = layout.reverse_bits(id);
        prop_assert!(reversed <= layout.max_id());
        prop_assert_eq!(layout.reverse_bits(reversed), id);
    }
}

#[test]
fn consecutive_ids_reversed_land_far_apart() {
    let t = Layout::preset("twitter").unwrap();
    let a = t.reverse_bits(1_000_000);
    let b = t.reverse_bits(1_000_001);
    assert!(a.abs_diff(b) >= 1 << 61, "{a} {b}");
}
