//! `snowdrift layout migrate`: whether a fleet may move a generator from one layout to
//! another by a rolling restart without a new node issuing an ID an old node issued, or one
//! below it.

use anyhow::{Context, Result, bail};
use snowdrift_core::clock::Clock;
use snowdrift_core::layout::migrate::{self, Migration, Verdict};
use snowdrift_core::layout::{Layout, format_ms, parse_epoch, resolve};

/// Checks a switch of a running generator from one layout to another by a rolling restart:
/// the largest ID the old layout can have issued (every worker, every sequence), the
/// smallest the new one issues, until when nodes still on the old layout stay below it,
/// from when the switch is safe however long the move takes, the new layout's lifetime,
/// and the config change to make. Exits 1 when the switch is unsafe for a rolling restart
/// that takes up to --rollout.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "A layout is a preset (twitter, baidu, js53, ...) or a spec of fields \
(time:41,worker:10,seq:12) with --from-unit/--to-unit; --from-epoch/--to-epoch move a preset's \
epoch or set a spec's (default Twitter's), as `snowdrift layout` takes them.\n\
Examples:\n  snowdrift layout migrate --from js53 --to twitter\n  \
snowdrift layout migrate --from baidu --to time:31,worker:19,seq:13 --to-unit 1s --to-epoch 2016-05-20\n  \
snowdrift layout migrate --from twitter --to twitter --to-epoch 2020-01-01 --json"
)]
pub struct Args {
    /// The layout the generator runs now: a preset or a spec.
    #[arg(long, value_name = "LAYOUT")]
    from: String,
    /// Time unit of a --from spec (1ms, 10ms, 1s, ...).
    #[arg(long, value_name = "UNIT")]
    from_unit: Option<String>,
    /// Epoch of a --from spec, or the moved epoch of a --from preset.
    #[arg(long, value_name = "EPOCH")]
    from_epoch: Option<String>,
    /// The layout to move to: a preset or a spec.
    #[arg(long, value_name = "LAYOUT")]
    to: String,
    /// Time unit of a --to spec.
    #[arg(long, value_name = "UNIT")]
    to_unit: Option<String>,
    /// Epoch of a --to spec, or the moved epoch of a --to preset.
    #[arg(long, value_name = "EPOCH")]
    to_epoch: Option<String>,
    /// When the switch happens (RFC 3339, a date or ms since 1970); default now.
    #[arg(long, value_name = "INSTANT")]
    at: Option<String>,
    /// How long the rolling restart may take, from the switch until the last node runs the
    /// new layout (30m, 24h, 168h, ...). A switch whose old nodes must stop sooner is unsafe.
    #[arg(long, value_name = "DURATION", default_value = "168h", value_parser = parse_rollout)]
    rollout: u64,
    /// The highest extension value a node of the old layout issues under (`/v1/generators`
    /// shows each node's); the new layout keeps it if it has an extension field.
    #[arg(long, value_name = "N", default_value_t = 0)]
    extension: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// A layout as given, resolved, with the config keys that name it.
struct Named {
    layout: Layout,
    name: String,
    config: Vec<(&'static str, String)>,
}

fn named(which: &str, text: &str, unit: Option<&str>, epoch: Option<&str>) -> Result<Named> {
    let is_spec = text.contains(':');
    let (preset, bits) = if is_spec {
        (None, Some(text))
    } else {
        (Some(text), None)
    };
    let epoch = epoch.or(is_spec.then_some(snowdrift_core::layout::DEFAULT_EPOCH));
    let (layout, name) = resolve(preset, bits, unit, epoch).with_context(|| {
        format!("--{which} {text:?}: a preset (twitter, sonyflake, baidu, discord, instagram, js53, tsid, sonyflake-v2, mastodon) or fields such as time:41,worker:10,seq:12")
    })?;
    let mut config = Vec::new();
    if is_spec {
        config.push(("bits", migrate::spec(&layout)));
        config.push(("unit", unit_text(layout.unit_ms())));
        config.push(("epoch", format_ms(layout.epoch_ms())));
    } else {
        config.push(("layout", name.clone()));
        if epoch.is_some() {
            config.push(("epoch", format_ms(layout.epoch_ms())));
        }
    }
    Ok(Named {
        layout,
        name,
        config,
    })
}

/// `snowdrift layout migrate`'s check of a switch from `from` to `to` at `at_ms`, and its
/// report as that command prints it, for `snowdrift import`: the layouts given as specs
/// (named `from_name` and `to_name`), every node of the old one stopped before the switch
/// (a rollout of 0).
pub(crate) fn report(
    from: &Layout,
    from_name: &str,
    to: &Layout,
    to_name: &str,
    at_ms: u64,
) -> (Migration, String) {
    let spec = |layout: &Layout, name: &str| Named {
        layout: layout.clone(),
        name: name.to_string(),
        config: vec![
            ("bits", migrate::spec(layout)),
            ("unit", unit_text(layout.unit_ms())),
            ("epoch", format_ms(layout.epoch_ms())),
        ],
    };
    let (from, to) = (spec(from, from_name), spec(to, to_name));
    let m = migrate::check(&from.layout, 0, &to.layout, at_ms);
    let text = Report {
        from: &from,
        to: &to,
        m: &m,
        at_is_now: true,
        rollout_ms: 0,
    }
    .text();
    (m, text)
}

/// A rollout duration in ms, as `jiff` reads durations (`30m`, `24h`, `168h`).
fn parse_rollout(text: &str) -> Result<u64, String> {
    let d: jiff::SignedDuration = text
        .trim()
        .parse()
        .map_err(|e| format!("{text:?} is not a duration ({e}); use e.g. 30m, 24h or 168h"))?;
    u64::try_from(d.as_millis())
        .map_err(|_| format!("{text:?} is negative; use e.g. 30m, 24h or 168h"))
}

fn unit_text(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

fn years(ms: i128) -> f64 {
    ms as f64 / (365.25 * 86_400_000.0)
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let from = named(
        "from",
        &args.from,
        args.from_unit.as_deref(),
        args.from_epoch.as_deref(),
    )?;
    let to = named(
        "to",
        &args.to,
        args.to_unit.as_deref(),
        args.to_epoch.as_deref(),
    )?;
    let now = crate::clock::process_clock()?.now_ms();
    let at = match &args.at {
        Some(text) => parse_epoch(text).context("--at")?,
        None => now,
    };
    let max_ext = snowdrift_core::layout::mask(from.layout.extension_bits());
    if args.extension > max_ext {
        bail!(
            "--extension {} does not fit the old layout's extension field (values 0 to {max_ext})",
            args.extension
        );
    }
    let m = migrate::check(&from.layout, args.extension, &to.layout, at);
    let report = Report {
        from: &from,
        to: &to,
        m: &m,
        at_is_now: args.at.is_none(),
        rollout_ms: args.rollout,
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report.json())?)?;
    } else {
        out!("{}", report.text())?;
    }
    if !m.safe_for_rollout(args.rollout) {
        bail!(
            "moving from {} to {} at {} is unsafe{}: the new layout may issue IDs at or below IDs the old one issues",
            from.name,
            to.name,
            format_ms(at),
            match m.verdict {
                Verdict::SafeIfOldStopsBy(_) => format!(
                    " for a rolling restart that takes up to {} (--rollout)",
                    duration_text(args.rollout)
                ),
                _ => String::new(),
            }
        );
    }
    Ok(())
}

fn duration_text(ms: u64) -> String {
    let d = jiff::SignedDuration::from_millis(i64::try_from(ms).unwrap_or(i64::MAX));
    format!("{d:#}")
}

struct Report<'a> {
    from: &'a Named,
    to: &'a Named,
    m: &'a Migration,
    at_is_now: bool,
    rollout_ms: u64,
}

impl Report<'_> {
    fn describe(&self, n: &Named) -> String {
        let l = &n.layout;
        let end = l.lifetime().end_ms;
        let life = if end <= self.m.at_ms {
            format!("ended {}", format_ms(end))
        } else {
            format!(
                "until {} ({:.1} years after the switch)",
                format_ms(end),
                years(i128::from(end) - i128::from(self.m.at_ms))
            )
        };
        format!(
            "{} = {}, {} from {}, {life}",
            n.name,
            migrate::spec(l),
            unit_text(l.unit_ms()),
            format_ms(l.epoch_ms())
        )
    }

    fn config_toml(&self, epoch: Option<u64>) -> String {
        let mut keys = self.to.config.clone();
        if let Some(e) = epoch {
            let e = format_ms(e);
            match keys.iter_mut().find(|(k, _)| *k == "epoch") {
                Some(slot) => slot.1 = e,
                None => keys.push(("epoch", e)),
            }
        }
        keys.iter()
            .map(|(k, v)| format!("{k} = \"{v}\""))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn verdict_text(&self) -> String {
        let m = self.m;
        match m.verdict {
            Verdict::Safe => "SAFE: every ID the new layout issues from the switch on is above every ID the old one can ever issue, from any node, however long the move takes".into(),
            Verdict::SafeIfOldStopsBy(by) if m.safe_for_rollout(self.rollout_ms) => format!(
                "SAFE IF every node runs the new layout before {} ({} after the switch, more than the rollout of {}): until then every ID the new layout issues is above every ID a node still on the old layout can issue; from then on such a node reaches them",
                format_ms(by),
                duration_text(by - m.at_ms),
                duration_text(self.rollout_ms)
            ),
            Verdict::SafeIfOldStopsBy(by) => format!(
                "UNSAFE for a rolling restart: a node still on the old layout at {} ({} after the switch, within the rollout of {}) issues IDs at or above the new layout's first ones, from other worker IDs too",
                format_ms(by),
                duration_text(by - m.at_ms),
                duration_text(self.rollout_ms)
            ),
            Verdict::Unsafe => {
                let why = match (m.new_first_id, m.old_last_id) {
                    (None, _) if m.at_ms < self.to.layout.epoch_ms() => "the new layout's epoch is after the switch".to_string(),
                    (None, _) => "the new layout's time field is full at the switch".to_string(),
                    (Some(n), Some(o)) => format!("the new layout's first ID {n} is not above {o}, the largest the old layout can have issued; it may repeat IDs the old one issued"),
                    _ => "the new layout's IDs are not above the old one's".to_string(),
                };
                format!("UNSAFE: {why}")
            }
        }
    }

    fn advice(&self) -> String {
        let m = self.m;
        let config = |e| {
            self.config_toml(e)
                .lines()
                .map(|l| format!("            {l}\n"))
                .collect::<String>()
        };
        match m.verdict {
            Verdict::Safe => format!(
                "in each [[generator]] on {}, replace its layout keys with\n{}          and restart the nodes (one by one is fine)\n",
                self.from.name,
                config(None)
            ),
            Verdict::SafeIfOldStopsBy(by) if m.safe_for_rollout(self.rollout_ms) => format!(
                "replace the layout keys with\n{}          and restart every node before {}{}\n",
                config(None),
                format_ms(by),
                match m.safe_epoch_ms {
                    Some(e) => format!(
                        ", or use epoch = \"{}\" (same fields), safe however long the move takes",
                        format_ms(e)
                    ),
                    None => String::new(),
                }
            ),
            _ => {
                let mut s = String::new();
                if let Some(c) = m.safe_from_ms.filter(|c| *c > m.at_ms) {
                    s.push_str(&format!(
                        "switch at {} or later (from then on it is safe however long the move takes), or ",
                        format_ms(c)
                    ));
                }
                if let Verdict::SafeIfOldStopsBy(by) = m.verdict {
                    s.push_str(&format!(
                        "stop every node of the old layout first and start them under the new one, all before {}, or ",
                        format_ms(by)
                    ));
                }
                match m.safe_epoch_ms {
                    Some(e) => {
                        let mut moved = self.to.layout.clone();
                        moved = Layout::new(moved.fields().to_vec(), moved.unit_ms(), e)
                            .unwrap_or(moved);
                        s.push_str(&format!(
                            "move the new layout's epoch back to make its IDs start above every old one:\n{}          (its time field then lasts until {})\n",
                            config(Some(e)),
                            moved.lifetime()
                        ));
                    }
                    None => s.push_str(&format!(
                        "no epoch for these fields puts their IDs above every ID the old layout can issue ({}): the old layout's time field {} the top of the ID's bits. Keep the old layout (with a new epoch only once nothing depends on IDs increasing), or give the new layout more bits below its time field, so that its IDs grow faster than the old ones did\n",
                        m.old_last_id.map_or("none".into(), |v| v.to_string()),
                        if self.from.layout.lifetime().end_ms <= m.at_ms { "has reached" } else { "reaches" }
                    )),
                }
                s
            }
        }
    }

    fn text(&self) -> String {
        let m = self.m;
        let id = |v: Option<u64>| v.map_or("none".into(), |v| v.to_string());
        format!(
            "from      {}\nto        {}\nswitch    {}{}\nold last  {} (the largest ID the old layout can have issued by then: every worker, every sequence)\nnew first {} (the smallest ID the new layout issues then)\nold below {}\nsafe from {}\nverdict   {}\nlifetime  the new layout issues until {}\nto do     {}",
            self.describe(self.from),
            self.describe(self.to),
            format_ms(m.at_ms),
            if self.at_is_now { " (now)" } else { "" },
            id(m.old_last_id),
            id(m.new_first_id),
            match m.old_reaches_new_ms {
                Some(r) => format!(
                    "until {}: a node still on the old layout from then on issues IDs at or above the new first one",
                    format_ms(r)
                ),
                None => "for ever: the old layout ends before it reaches the new first ID".into(),
            },
            match m.safe_from_ms {
                Some(c) => format!(
                    "{}: a switch from then on is safe however long the move takes",
                    format_ms(c)
                ),
                None => "never: within its lifetime the new layout's IDs do not get above every ID the old one can issue".into(),
            },
            self.verdict_text(),
            self.to.layout.lifetime(),
            self.advice(),
        )
    }

    fn json(&self) -> serde_json::Value {
        let m = self.m;
        let side = |n: &Named| {
            let l = &n.layout;
            serde_json::json!({
                "layout": n.name,
                "fields": migrate::spec(l),
                "unit_ms": l.unit_ms(),
                "epoch": format_ms(l.epoch_ms()),
                "lifetime_end": l.lifetime().to_string(),
                "expired": l.is_expired_at(m.at_ms),
            })
        };
        let (verdict, stop_by) = match m.verdict {
            Verdict::Safe => ("safe", None),
            Verdict::SafeIfOldStopsBy(t) => ("safe_if_old_stops_by", Some(format_ms(t))),
            Verdict::Unsafe => ("unsafe", None),
        };
        serde_json::json!({
            "from": side(self.from),
            "to": side(self.to),
            "at": format_ms(m.at_ms),
            "at_ms": m.at_ms,
            "old_last_id": m.old_last_id.map(|v| v.to_string()),
            "new_first_id": m.new_first_id.map(|v| v.to_string()),
            "safe_from": m.safe_from_ms.map(format_ms),
            "old_reaches_new_first": m.old_reaches_new_ms.map(format_ms),
            "verdict": verdict,
            "old_must_stop_by": stop_by,
            "rollout_ms": self.rollout_ms,
            "safe_for_rollout": m.safe_for_rollout(self.rollout_ms),
            "new_lifetime_end": self.to.layout.lifetime().to_string(),
            "config": self.config_toml(None),
            "safe_epoch": m.safe_epoch_ms.map(format_ms),
            "safe_epoch_config": m.safe_epoch_ms.map(|e| self.config_toml(Some(e))),
        })
    }
}
