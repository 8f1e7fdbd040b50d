//! Each planted mistake is caught: a seed that passes with the real keeper fails with the
//! mistake planted, naming what broke. The seeds are the first that caught each mistake in
//! a scan of seeds 1 to 300 (docs/src/simulation.md has the table).

use snowdrift_sim::{Backend, Mistake, Settings, run};

use crate::run_clean;

/// Runs `seed` on `nodes` nodes with and without `mistake`; returns what the checker said.
fn caught(mistake: Mistake, seed: u64, nodes: usize) -> String {
    caught_on(Backend::Etcd, mistake, seed, nodes)
}

/// [`caught`] on the registry `registry`.
pub(crate) fn caught_on(registry: Backend, mistake: Mistake, seed: u64, nodes: usize) -> String {
    let settings = || {
        let mut s = Settings::new(seed, nodes);
        s.registry = registry;
        s
    };
    // Without the mistake the seed passes.
    run_clean(settings());
    let mut s = settings();
    s.mistakes = vec![mistake];
    let planted = run(s);
    let first = planted.failures.first().unwrap_or_else(|| {
        panic!(
            "{} was not caught by seed {seed} ({})",
            mistake.name(),
            planted.replay_command()
        )
    });
    assert!(planted.replay_command().contains(mistake.name()));
    first.what.clone()
}

#[test]
fn skipping_the_marks_write_ahead_is_caught() {
    // A crash right after a start, then a start whose clock is behind: the mark the crashed
    // process never wrote lets the next issue below its IDs.
    let what = caught(Mistake::SkipMarkWriteAhead, 3, 1);
    assert!(
        what.contains("went back") || what.contains("DUPLICATE"),
        "{what}"
    );
}

#[test]
fn a_renewal_that_ignores_a_lost_lease_is_caught() {
    let what = caught(Mistake::RenewWithoutFence, 4, 1);
    assert!(what.contains("ISSUED WITHOUT THE LEASE"), "{what}");
}

#[test]
fn trusting_a_lease_after_a_pause_is_caught() {
    let what = caught(Mistake::TrustLeaseAfterPause, 7, 2);
    assert!(what.contains("ISSUED WITHOUT THE LEASE"), "{what}");
}

#[test]
fn forgetting_the_clock_check_on_restart_is_caught() {
    let what = caught(Mistake::ForgetClockBackOnRestart, 8, 2);
    assert!(
        what.contains("went back") || what.contains("DUPLICATE"),
        "{what}"
    );
}
