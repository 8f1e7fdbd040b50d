use super::*;

fn ok(ids: std::ops::Range<u64>) -> Result<Vec<u64>, Error> {
    Ok(ids.collect())
}

fn got(t: &mut Ticket) -> Answer {
    t.answer.try_recv().expect("answered")
}

#[test]
fn the_first_call_dispatches_and_the_dispatcher_ends_when_nothing_waits() {
    let m = Merge::default();
    let a = m.join(1);
    assert!(a.dispatch);
    let b = m.join(1);
    assert!(!b.dispatch, "a dispatcher runs already");
    let g = m.take().unwrap();
    assert_eq!((g.total(), g.calls()), (2, 2));
    g.answer(ok(10..12));
    assert!(m.take().is_none());
    assert!(
        m.join(1).dispatch,
        "the dispatcher ended: the next call starts one"
    );
}

/// The property linearizability rests on: a fetch is for exactly the calls that were
/// waiting when it was taken; a call that comes while it is in flight is not in it.
#[test]
fn a_call_that_arrives_while_a_fetch_is_in_flight_waits_for_the_next() {
    let m = Merge::default();
    let mut a = m.join(2);
    let mut b = m.join(1);
    let in_flight = m.take().unwrap();
    let mut late = m.join(3);
    assert!(late.answer.try_recv().is_err());
    assert_eq!(in_flight.answer(ok(100..103)), 0);
    assert_eq!(got(&mut a).unwrap(), vec![100, 101]);
    assert_eq!(got(&mut b).unwrap(), vec![102]);
    assert!(
        late.answer.try_recv().is_err(),
        "the late call got IDs of a fetch sent before it came"
    );
    let next = m.take().unwrap();
    assert_eq!((next.total(), next.calls()), (3, 1));
    next.answer(ok(200..203));
    assert_eq!(got(&mut late).unwrap(), vec![200, 201, 202]);
}

#[test]
fn each_call_gets_a_contiguous_part_in_arrival_order() {
    let m = Merge::default();
    let mut t: Vec<Ticket> = [3, 1, 4, 1, 5].iter().map(|&n| m.join(n)).collect();
    let g = m.take().unwrap();
    assert_eq!(g.total(), 14);
    g.answer(ok(1000..1014));
    let parts: Vec<Vec<u64>> = t.iter_mut().map(|t| got(t).unwrap()).collect();
    assert_eq!(
        parts,
        vec![
            vec![1000, 1001, 1002],
            vec![1003],
            vec![1004, 1005, 1006, 1007],
            vec![1008],
            vec![1009, 1010, 1011, 1012, 1013],
        ]
    );
}

#[test]
fn a_fetch_asks_for_at_most_max_merged_and_the_rest_wait_in_order() {
    let m = Merge::default();
    let big = MAX_MERGED - 10;
    let _a = m.join(big);
    let _b = m.join(20);
    let _c = m.join(5);
    let first = m.take().unwrap();
    assert_eq!((first.total(), first.calls()), (big, 1));
    let second = m.take().unwrap();
    assert_eq!((second.total(), second.calls()), (25, 2));
    // A single call of the largest size goes alone.
    let _d = m.join(MAX_MERGED);
    let _e = m.join(1);
    assert_eq!(m.take().unwrap().total(), MAX_MERGED);
    assert_eq!(m.take().unwrap().total(), 1);
    assert!(m.take().is_none());
}

#[test]
fn a_failed_fetch_fails_every_call_in_it_and_a_short_one_hands_out_nothing() {
    let m = Merge::default();
    let mut a = m.join(1);
    let mut b = m.join(1);
    let e = Error::new(ErrorKind::Unavailable, "down");
    m.take().unwrap().answer(Err(e.clone()));
    assert_eq!(got(&mut a).unwrap_err(), e);
    assert_eq!(got(&mut b).unwrap_err(), e);
    let mut c = m.join(2);
    m.take().unwrap().answer(ok(5..6));
    assert_eq!(got(&mut c).unwrap_err().kind(), ErrorKind::Unavailable);
}

#[test]
fn ids_of_a_call_that_stopped_waiting_are_counted_and_not_given_to_another() {
    let m = Merge::default();
    let gone = m.join(4);
    let mut kept = m.join(1);
    drop(gone);
    let g = m.take().unwrap();
    assert_eq!(g.answer(ok(0..5)), 4);
    assert_eq!(got(&mut kept).unwrap(), vec![4]);
}

/// Many tasks calling through a dispatcher: every call is answered, no ID twice, and each
/// call's IDs come from a fetch taken after it joined (its fetch's sequence number is
/// above the number of fetches taken when it joined).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_each_get_ids_of_a_fetch_sent_after_they_joined() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let m = Arc::new(Merge::default());
    // Fetches taken so far; a fetch's IDs encode its number (number << 32 | index).
    let taken = Arc::new(AtomicU64::new(0));
    let dispatch = {
        let (m, taken) = (m.clone(), taken.clone());
        move || {
            let (m, taken) = (m.clone(), taken.clone());
            tokio::spawn(async move {
                loop {
                    // Counted before the take: a call that joins after the take sees a
                    // count at least this one's.
                    let number = taken.load(Ordering::SeqCst) + 1;
                    let Some(g) = m.take() else { break };
                    taken.store(number, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    let ids = (0..g.total()).map(|k| number << 32 | k).collect();
                    g.answer(Ok(ids));
                }
            });
        }
    };
    let mut tasks = Vec::new();
    for t in 0..16u64 {
        let (m, taken, dispatch) = (m.clone(), taken.clone(), dispatch.clone());
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            for k in 0..200 {
                let n = 1 + (t + k) % 3;
                let before = taken.load(Ordering::SeqCst);
                let ticket = m.join(n);
                if ticket.dispatch {
                    dispatch();
                }
                let ids = ticket.answer.await.unwrap().unwrap();
                assert_eq!(ids.len() as u64, n);
                for id in &ids {
                    assert!(
                        id >> 32 > before,
                        "an ID of fetch {} went to a call that joined after fetch {before} was taken",
                        id >> 32
                    );
                }
                assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
                seen.extend(ids);
            }
            seen
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "an ID was handed out twice");
    assert!(
        taken.load(Ordering::SeqCst) < 16 * 200,
        "no call was merged"
    );
}

/// Gathering ends at once when the calls it waits for are there, and ends by itself (at
/// [`GATHER_MOST`]) when they never come, whatever bound it was given.
#[tokio::test(flavor = "current_thread")]
async fn gathering_ends_when_the_calls_are_there_or_at_its_bound() {
    use std::future::Future;
    use std::task::{Context, Waker};
    let m = Merge::default();
    let _a = m.join(1);
    let _b = m.join(2);
    {
        let mut gathering = std::pin::pin!(m.gather(2, Duration::from_secs(3600)));
        assert!(
            gathering
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_ready(),
            "two calls wait: no wait"
        );
    }
    let g = m.take().unwrap();
    assert_eq!(g.calls(), 2);
    // Nobody waits now; the bound is an hour, the wait is capped.
    tokio::time::timeout(
        Duration::from_secs(10),
        m.gather(2, Duration::from_secs(3600)),
    )
    .await
    .expect("gathering is capped at GATHER_MOST");
    // A call that joins while it gathers ends it.
    let m = std::sync::Arc::new(m);
    let joiner = {
        let m = m.clone();
        tokio::spawn(async move { m.join(1) })
    };
    m.gather(1, GATHER_MOST).await;
    let _c = joiner.await.unwrap();
    assert_eq!(m.take().unwrap().calls(), 1);
}
