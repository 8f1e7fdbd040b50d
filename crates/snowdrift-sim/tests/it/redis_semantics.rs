//! The simulated Redis keeps Redis's semantics that the registry depends on: TTLs in ms by
//! the server's clock, `SET NX`, scripts that run atomically in Lua 5.1 with Redis's
//! conversions, `SCAN` finding every key that exists throughout, and an asynchronous
//! replica that a crash failover promotes without the writes it had not applied.

use std::time::Duration;

use snowdrift_sim::redis::Redis;
use snowdrift_store::worker::sim::Value;
use tokio::time::Instant;

fn cmd(redis: &mut Redis, now: Instant, args: &[&str]) -> Value {
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    redis.command(&args, now).unwrap()
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

#[test]
fn a_key_set_with_px_is_gone_at_its_expiry_and_nx_refuses_a_live_one() {
    let t0 = Instant::now();
    let mut r = Redis::new(t0, Duration::from_millis(1), (0, 0));
    assert_eq!(
        cmd(&mut r, t0, &["SET", "k", "a", "NX", "PX", "1000"]),
        Value::Okay
    );
    assert_eq!(
        cmd(&mut r, t0, &["SET", "k", "b", "NX", "PX", "1000"]),
        Value::Nil
    );
    let almost = t0 + Duration::from_millis(999);
    assert_eq!(cmd(&mut r, almost, &["PTTL", "k"]), Value::Int(1));
    assert_eq!(cmd(&mut r, almost, &["GET", "k"]), bulk("a"));
    let at = t0 + Duration::from_millis(1000);
    assert_eq!(cmd(&mut r, at, &["GET", "k"]), Value::Nil);
    assert_eq!(cmd(&mut r, at, &["PTTL", "k"]), Value::Int(-2));
    assert_eq!(
        cmd(&mut r, at, &["SET", "k", "b", "NX", "PX", "1000"]),
        Value::Okay
    );
}

#[test]
fn a_script_runs_in_lua_with_redis_conversions() {
    let t0 = Instant::now();
    let mut r = Redis::new(t0, Duration::from_millis(1), (0, 0));
    let script = r"
local missing = redis.call('GET', KEYS[1])
local set = redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local t = redis.call('TIME')
return {tostring(missing), set['ok'], redis.call('PTTL', KEYS[1]), 3.9, true, #t}
";
    let keys = vec!["k".to_string()];
    let args = vec!["v".to_string(), "500".to_string()];
    let answer = r.eval(script, &keys, &args, t0).unwrap();
    assert_eq!(
        answer,
        Value::Array(vec![
            bulk("false"),
            bulk("OK"),
            Value::Int(500),
            Value::Int(3),
            Value::Int(1),
            Value::Int(2),
        ])
    );
    // An error inside a script is Redis's error reply.
    let bad = r.eval("return redis.call('NOSUCH')", &[], &[], t0);
    assert!(bad.unwrap_err().contains("unknown command"));
}

#[test]
fn scan_finds_every_key_that_exists_throughout() {
    let t0 = Instant::now();
    let mut r = Redis::new(t0, Duration::from_millis(1), (0, 0));
    for i in 0..50 {
        cmd(&mut r, t0, &["SET", &format!("p:worker:{i}"), "x"]);
    }
    let mut cursor = "0".to_string();
    let mut seen = std::collections::BTreeSet::new();
    let mut round = 0;
    loop {
        // Keys come and go between the calls.
        cmd(
            &mut r,
            t0,
            &["SET", &format!("p:worker:{}", 100 + round), "x"],
        );
        cmd(&mut r, t0, &["DEL", &format!("p:worker:{}", 40 + round)]);
        let Value::Array(reply) = cmd(
            &mut r,
            t0,
            &["SCAN", &cursor, "MATCH", "p:worker:*", "COUNT", "7"],
        ) else {
            panic!("not an array")
        };
        let [Value::BulkString(next), Value::Array(keys)] = reply.as_slice() else {
            panic!("{reply:?}")
        };
        for k in keys {
            if let Value::BulkString(k) = k {
                seen.insert(String::from_utf8(k.clone()).unwrap());
            }
        }
        cursor = String::from_utf8(next.clone()).unwrap();
        round += 1;
        if cursor == "0" {
            break;
        }
    }
    for i in 0..40 {
        assert!(
            seen.contains(&format!("p:worker:{i}")),
            "p:worker:{i} missed"
        );
    }
}

#[test]
fn a_crash_failover_loses_what_the_replica_had_not_applied_and_a_planned_one_does_not() {
    for planned in [true, false] {
        let t0 = Instant::now();
        let mut r = Redis::new(t0, Duration::from_millis(50), (0, 0));
        cmd(&mut r, t0, &["SET", "early", "1"]);
        r.replicate(t0 + Duration::from_millis(60));
        let late = t0 + Duration::from_millis(100);
        assert_eq!(
            cmd(&mut r, late, &["SET", "acknowledged", "1"]),
            Value::Okay
        );
        r.failover(
            late + Duration::from_millis(10),
            Duration::from_secs(1),
            planned,
        );
        let after = late + Duration::from_secs(2);
        assert_eq!(r.live_value("early", after).as_deref(), Some("1"));
        let kept = r.live_value("acknowledged", after);
        assert_eq!(kept.is_some(), planned, "planned {planned}");
    }
}
