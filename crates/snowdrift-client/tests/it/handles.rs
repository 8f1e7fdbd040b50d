//! ID handles (`client.ids(name)`) against a real server: no ID twice and each thread's IDs
//! in order across many threads, handles, `next(name)` and `next_n` (segment and snowflake
//! names); snowflake IDs past `max_age` not served from the threads' blocks; a dropped
//! client's blocks not served to a new client.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use snowdrift_client::blocking;

use crate::server::{self, Server, create_tag};

fn blocking_client(
    base: &str,
    f: impl FnOnce(snowdrift_client::ClientBuilder) -> snowdrift_client::ClientBuilder,
) -> blocking::Client {
    blocking::Client::builder()
        .endpoints([base.to_string()])
        .with(|b| f(b.deadline(Duration::from_secs(2))))
        .build()
        .unwrap()
}

/// Threads taking IDs of two names every way the client offers: one handle shared by all,
/// a handle each made on the thread, `next(name)`, `next_n` on both; small batches so that
/// blocks and batches end often.
#[test]
fn handles_never_repeat_an_id_and_each_threads_ids_increase() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = server::dir("client-handles");
    let s = runtime.block_on(Server::start(&dir, 0, None));
    runtime.block_on(create_tag(&s.base(), "order", 500));
    let client = blocking_client(&s.base(), |b| b.batch(50, 400));
    let shared = client.ids("order");
    let flakes = client.ids("snowflake");
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let (client, shared, flakes) = (client.clone(), shared.clone(), flakes.clone());
            std::thread::spawn(move || {
                let own = client.ids("order");
                let mut got: HashMap<&str, Vec<u64>> = HashMap::new();
                for i in 0..3_000usize {
                    let order = got.entry("order").or_default();
                    match (i + t) % 5 {
                        0 => order.push(shared.next().unwrap()),
                        1 => order.push(own.next().unwrap()),
                        2 => order.push(client.next("order").unwrap()),
                        3 if i % 50 == 3 => order.extend(shared.next_n(1 + i % 70).unwrap()),
                        _ => order.push(shared.next().unwrap()),
                    }
                    let flake = got.entry("snowflake").or_default();
                    if i % 3 == 0 {
                        flake.push(flakes.next().unwrap());
                    } else if i % 100 == 1 {
                        flake.extend(client.next_n("snowflake", 20).unwrap());
                    } else {
                        flake.push(client.next("snowflake").unwrap());
                    }
                }
                got
            })
        })
        .collect();
    let mut seen: HashMap<&str, HashSet<u64>> = HashMap::new();
    for t in threads {
        for (name, ids) in t.join().unwrap() {
            // One server: its segments and its snowflake IDs increase, so a thread's IDs
            // of a name increase too (blocks are taken in the order the cache hands out).
            assert!(
                ids.windows(2).all(|w| w[0] < w[1]),
                "{name}: a thread's IDs went back: {:?}",
                ids.windows(2).find(|w| w[0] >= w[1])
            );
            let seen = seen.entry(name).or_default();
            for id in ids {
                assert!(seen.insert(id), "{name}: {id} handed out twice");
            }
        }
    }
    assert!(seen["order"].len() > 6 * 3_000);
    assert!(
        client.stats("order").unwrap().fetches > 20,
        "batches did not end often"
    );
    runtime.block_on(s.stop());
}

/// The time part of a Twitter-layout snowflake ID, in ms.
fn time_of(id: u64) -> u64 {
    id >> 22
}

/// Threads hold blocks of snowflake IDs, wait past `max_age`, and take again: what their
/// blocks still held is dropped (counted as wasted), and the next ID is a fresh one. The
/// age is checked on the kernel's coarse clock, which moves while the threads wait.
#[test]
fn snowflake_ids_past_max_age_are_not_served_from_a_threads_block() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = server::dir("client-handles-age");
    let s = runtime.block_on(Server::start(&dir, 0, None));
    let client = blocking_client(&s.base(), |b| {
        b.max_age(Duration::from_millis(400)).batch(1000, 1000)
    });
    let flakes = client.ids("snowflake");
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let flakes = flakes.clone();
            std::thread::spawn(move || {
                // The second ID comes from the thread's block, which keeps the next ones.
                flakes.next().unwrap();
                let before = flakes.next().unwrap();
                let slept = Instant::now();
                std::thread::sleep(Duration::from_millis(600));
                let after = flakes.next().unwrap();
                (before, after, slept.elapsed())
            })
        })
        .collect();
    for t in threads {
        let (before, after, slept) = t.join().unwrap();
        let waited = time_of(after).saturating_sub(time_of(before));
        // A fresh ID was issued after the wait; a kept one would be from before it.
        assert!(
            u128::from(waited) + 50 >= slept.as_millis(),
            "an ID {waited} ms newer than one taken {} ms before: served past max_age",
            slept.as_millis()
        );
    }
    let st = flakes.stats();
    assert!(st.wasted > 0, "{st:?}");
    runtime.block_on(s.stop());
}

/// A client is dropped while this thread holds a block of its IDs; a new client's handle
/// (which takes over the freed slot: the most recently freed index is reused first) must
/// serve its own name's IDs, never the old block's. Both tags count from the same first
/// ID, so a leftover ID would come again from the new tag: a repeat.
#[test]
fn a_dropped_clients_block_is_never_served_by_another() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = server::dir("client-handles-drop");
    let s = runtime.block_on(Server::start(&dir, 0, None));
    runtime.block_on(create_tag(&s.base(), "old", 1000));
    runtime.block_on(create_tag(&s.base(), "new", 1000));
    let old = blocking_client(&s.base(), |b| b.batch(100, 100));
    let ids = old.ids("old");
    // The first ID comes from the cache, the second from this thread's new block of 8,
    // which keeps the next 7.
    let first = ids.next().unwrap();
    assert_eq!(ids.next().unwrap(), first + 1);
    drop(ids);
    drop(old);
    let new = blocking_client(&s.base(), |b| b.batch(100, 100));
    let ids = new.ids("new");
    let mut seen = HashSet::new();
    for _ in 0..300 {
        let id = ids.next().unwrap();
        assert!(
            seen.insert(id),
            "{id} twice from \"new\": the old block was served"
        );
    }
    assert!(seen.contains(&first), "\"new\" starts where \"old\" did");
    runtime.block_on(s.stop());
}

/// `thread_block` bounds a thread's block: out of range is refused with what to give; a
/// block of 1 (every ID from the shared cache) and of 1,024 serve every ID once.
#[test]
fn thread_block_is_checked_and_any_size_serves_each_id_once() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for bad in [0, (1 << 16) + 1] {
        let e = blocking::Client::builder()
            .endpoints(["http://127.0.0.1:1"])
            .with(|b| b.thread_block(bad))
            .build()
            .unwrap_err();
        assert_eq!(e.kind(), snowdrift_client::ErrorKind::InvalidInput, "{e}");
        assert!(e.message().contains("thread_block"), "{e}");
    }
    let dir = server::dir("client-handles-block");
    let s = runtime.block_on(Server::start(&dir, 0, None));
    runtime.block_on(create_tag(&s.base(), "order", 1000));
    let mut seen = HashSet::new();
    for most in [1, 1024] {
        let client = blocking_client(&s.base(), |b| b.thread_block(most));
        let ids = client.ids("order");
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let ids = ids.clone();
                std::thread::spawn(move || {
                    (0..3_000).map(|_| ids.next().unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        for t in threads {
            for id in t.join().unwrap() {
                assert!(seen.insert(id), "{id} twice (thread_block {most})");
            }
        }
    }
    runtime.block_on(s.stop());
}
