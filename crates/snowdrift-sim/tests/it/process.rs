//! A stopped simulated process (`--freeze-pauses`): its code makes no step while it is
//! stopped, and once it runs again every timer that ran out meanwhile is due at once,
//! while an answer that waited out the stop is read before its own timeout fires (as
//! tokio's `timeout` polls the call before its deadline once a process continued after
//! SIGSTOP finds both ready).

use std::sync::Arc;
use std::time::Duration;

use snowdrift_store::process::{self, Stopped};
use tokio::time::Instant;

/// A process that runs, is stopped at `from` and runs again at `until`.
fn stopped_between(from: Instant, until: Instant) -> Stopped {
    Arc::new(move || {
        let now = Instant::now();
        (from <= now && now < until).then_some(until)
    })
}

/// A process that is never stopped.
fn never_stopped() -> Stopped {
    Arc::new(|| None)
}

#[test]
fn a_stopped_process_makes_no_step_until_it_runs_again() {
    snowdrift_sim::run::on_this_thread(&[], async {
        let t0 = Instant::now();
        // The sleep is set before the stop and runs out during it (1 s in; stopped from
        // 0.5 s to 5 s): the code after it runs at 5 s, not at 1 s.
        let stop = stopped_between(t0 + Duration::from_millis(500), t0 + Duration::from_secs(5));
        let woke = process::run(stop, async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Instant::now()
        })
        .await;
        assert_eq!(woke - t0, Duration::from_secs(5));
        // Not stopped, the same code runs after its 1 s.
        let t1 = Instant::now();
        let woke = process::run(never_stopped(), async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Instant::now()
        })
        .await;
        assert_eq!(woke - t1, Duration::from_secs(1));
    });
}

#[test]
fn an_answer_that_waited_out_the_stop_beats_its_own_timeout() {
    snowdrift_sim::run::on_this_thread(&[], async {
        // The answer arrives 4 s in; the call waits at most 3 s. Stopped from 0.5 s to
        // 5 s, the process finds both the answer and the deadline there at 5 s, and reads
        // the answer; never stopped, it gives up at 3 s.
        for (stopped, answered) in [(true, true), (false, false)] {
            let t0 = Instant::now();
            let stop = if stopped {
                stopped_between(t0 + Duration::from_millis(500), t0 + Duration::from_secs(5))
            } else {
                never_stopped()
            };
            let (tx, rx) = tokio::sync::oneshot::channel();
            // The answerer is another process: it runs while this one is stopped.
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(4)).await;
                let _ = tx.send("answer");
            });
            let got = process::run(stop, async {
                tokio::time::timeout(Duration::from_secs(3), rx).await
            })
            .await;
            assert_eq!(
                matches!(got, Ok(Ok("answer"))),
                answered,
                "stopped: {stopped}, got {got:?}"
            );
        }
    });
}
