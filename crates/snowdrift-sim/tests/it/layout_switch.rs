//! Layout switches during a rolling restart: the rolling restart moves the fleet from its
//! layout to another one mid-run, under every fault. The targets are classified by
//! `snowdrift layout migrate`'s own check (`migrate::check`, `safe_for_rollout`); the ones
//! it calls safe must pass, the ones it calls unsafe must be refused by the real keeper,
//! and an unsafe one forced through (the keeper's layout checks skipped) must repeat IDs,
//! which only a fleet-wide check of the integers sees: the two IDs carry different worker
//! IDs.

use snowdrift_sim::layouts::{Pick, targets};
use snowdrift_sim::{Backend, Mistake, Scenario, Settings, run};

use crate::run_clean;

fn switching(seed: u64, nodes: usize, pick: Pick) -> Settings {
    let mut s = Settings::new(seed, nodes);
    s.layout_switch = Some(pick);
    s
}

/// Starts refused for a layout check, by the error's kind.
fn layout_refusals(o: &snowdrift_sim::Outcome) -> u64 {
    ["LayoutPeerUnsafe", "LayoutSwitchUnsafe"]
        .iter()
        .filter_map(|k| o.counts.refusals.get(*k))
        .sum()
}

#[test]
fn the_products_check_calls_some_targets_safe_and_others_unsafe() {
    for bits in 1..=10 {
        let s = Scenario::draw(Settings::new(1, 1));
        let at = snowdrift_sim::layouts::rollout_at_ms(s.rolling_restart_at());
        let all = targets(&snowdrift_sim::run::layout(bits), at);
        let safe = all.iter().filter(|t| t.safe).count();
        assert!(
            safe >= 2 && all.len() - safe >= 2,
            "{bits} worker bits: {:?}",
            all.iter().map(|t| (t.name, t.verdict)).collect::<Vec<_>>()
        );
    }
}

#[test]
fn switches_the_product_calls_safe_pass_across_seeds() {
    let mut drawn = std::collections::BTreeSet::new();
    for seed in 1..=8 {
        let nodes = if seed % 2 == 0 { 5 } else { 3 };
        let o = run_clean(switching(seed, nodes, Pick::Safe));
        let target = o.scenario.switch_to.clone().expect("a safe target");
        assert!(target.safe, "seed {seed}: {}", target.name);
        drawn.insert(target.name);
        // The fleet moved: the new layout issued, and no start was refused for its peers'.
        assert!(
            o.ranges_by_layout[0] > 100 && o.ranges_by_layout[1] > 100,
            "seed {seed}: {:?}",
            o.ranges_by_layout
        );
        assert_eq!(
            o.counts.refusals.get("LayoutPeerUnsafe"),
            None,
            "seed {seed}: {:?}",
            o.counts.refusals
        );
    }
    assert!(drawn.len() >= 2, "{drawn:?}");
}

#[test]
fn switches_the_product_calls_unsafe_are_refused_while_old_peers_run() {
    for seed in [1, 2, 9] {
        let o = run_clean(switching(seed, 5, Pick::Unsafe));
        let target = o.scenario.switch_to.clone().expect("an unsafe target");
        assert!(!target.safe, "seed {seed}: {}", target.name);
        assert!(
            layout_refusals(&o) > 0,
            "seed {seed} ({}): {:?}",
            target.name,
            o.counts.refusals
        );
    }
}

#[test]
fn an_unsafe_switch_forced_through_repeats_ids_of_another_worker_id() {
    // The worker field moved below the sequence on the same epoch: worker 1's IDs under
    // the new layout are worker 0's under the old one, in the same millisecond.
    let pick = Pick::Named("worker-below-seq".into());
    let clean = run_clean(switching(9, 5, pick.clone()));
    assert!(!clean.scenario.switch_to.as_ref().is_some_and(|t| t.safe));
    assert!(layout_refusals(&clean) > 0, "{:?}", clean.counts.refusals);
    let mut forced = switching(9, 5, pick);
    forced.mistakes = vec![Mistake::IgnoreLayoutChecks];
    let o = run(forced);
    let first = o.failures.first().unwrap_or_else(|| {
        panic!(
            "forced through, seed 9 repeated no ID ({})",
            o.replay_command()
        )
    });
    assert!(first.what.starts_with("DUPLICATE IDs"), "{}", first.what);
    // Of two layouts and two worker IDs: a check per worker ID would not have seen it.
    assert_eq!(
        first.what.matches(" of layout 1 ").count(),
        1,
        "{}",
        first.what
    );
    let workers: Vec<&str> = first
        .what
        .split("under worker ID ")
        .skip(1)
        .filter_map(|rest| rest.split(' ').next())
        .collect();
    assert!(
        workers.len() == 2 && workers[0] != workers[1],
        "{}",
        first.what
    );
    assert!(
        o.replay_command()
            .contains("--layout-switch worker-below-seq")
    );
}

/// The same checks on the other registries (each records the layout beside its marks and
/// lists its live peers' in its own way): a switch `snowdrift layout migrate` calls unsafe
/// is refused by the real keeper, and forced through it repeats IDs.
#[test]
fn an_unsafe_switch_is_refused_and_forced_through_is_caught_on_every_registry() {
    // An epoch a minute later: a restarted node issues what its worker ID issued a minute
    // before.
    let pick = Pick::Named("epoch-1min-later".into());
    for registry in [
        Backend::ZooKeeper,
        Backend::Redis,
        Backend::Sql,
        Backend::File,
    ] {
        let mut s = switching(1, 5, pick.clone());
        s.registry = registry;
        // Two and a half minutes (the rolling restart at one), for CI's budget.
        s.duration = std::time::Duration::from_secs(150);
        let clean = run_clean(s.clone());
        assert!(
            layout_refusals(&clean) > 0,
            "{registry:?}: {:?}",
            clean.counts.refusals
        );
        s.mistakes = vec![Mistake::IgnoreLayoutChecks];
        let forced = run(s);
        assert!(
            !forced.failures.is_empty(),
            "{registry:?}: forced through, seed 1 repeated no ID ({})",
            forced.replay_command()
        );
    }
}
