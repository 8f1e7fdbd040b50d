//! `snowdrift layout`: what a bit layout gives and how long it lasts.

use anyhow::{Result, bail};
use snowdrift_core::clock::Clock;
use snowdrift_core::layout::{Layout, format_ms};

use crate::layout_args::LayoutArgs;
use snowdrift_bench::report::group_digits;

/// Show a layout's bit budget, lifetime, rate, node count and JavaScript safety; exits
/// non-zero if the layout is invalid or its time field is already full.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Presets: twitter, sonyflake, baidu, discord, instagram, js53.\n\
Examples:\n  snowdrift layout twitter\n  snowdrift layout --bits time:39,worker:12,seq:12 --unit 10ms --epoch 2024-01-01\n  snowdrift layout js53 --json\n  snowdrift layout migrate --from js53 --to twitter",
    args_conflicts_with_subcommands = true
)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// A preset (same as --layout).
    #[arg(value_name = "PRESET")]
    preset: Option<String>,
    #[command(flatten)]
    layout: LayoutArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    Migrate(super::layout_migrate::Args),
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    if let Some(Command::Migrate(a)) = args.command {
        return super::layout_migrate::run(a);
    }
    let (layout, name) = args.layout.resolve(args.preset.as_deref())?;
    let now = crate::clock::process_clock()?.now_ms();
    let report = Report::new(&layout, &name, now);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report.json())?)?;
    } else {
        out!("{}", report.text())?;
    }
    if let Err(e) = layout.check_at(now) {
        bail!("layout {name} cannot issue IDs now: {e}");
    }
    Ok(())
}

struct Report<'a> {
    layout: &'a Layout,
    name: &'a str,
    now: u64,
}

impl<'a> Report<'a> {
    fn new(layout: &'a Layout, name: &'a str, now: u64) -> Self {
        Self { layout, name, now }
    }

    fn fields(&self) -> String {
        self.layout
            .fields()
            .iter()
            .map(|f| format!("{}:{}", f.name(), f.bits()))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn lifetime_text(&self) -> String {
        let end = self.layout.lifetime().end_ms;
        let years = |ms: u64| ms as f64 / (365.25 * 86_400_000.0);
        if end <= self.now {
            format!(
                "{} (EXPIRED {:.1} years ago)",
                format_ms(end),
                years(self.now - end)
            )
        } else {
            format!(
                "{} ({:.1} years from now)",
                format_ms(end),
                years(end - self.now)
            )
        }
    }

    fn js_text(&self) -> String {
        match self.layout.js_unsafe_from_ms() {
            None => "yes: every ID stays below 2^53 for the whole lifetime".into(),
            Some(t) if t > self.now => format!("until {}: IDs reach 2^53 after that", format_ms(t)),
            Some(t) => format!("no: IDs may exceed 2^53 since {}", format_ms(t)),
        }
    }

    fn text(&self) -> String {
        let l = self.layout;
        let total = l.total_bits();
        let spare = if total > 63 {
            " (top time bit kept clear: IDs stay below 2^63)"
        } else {
            ""
        };
        format!(
            "layout    {}\nfields    {} = {total} bits{spare}\nunit      {} ms\nepoch     {}\nlifetime  {}\nrate      {} IDs/s per node\nnodes     {}\njs-safe   {}\n",
            self.name,
            self.fields(),
            l.unit_ms(),
            format_ms(l.epoch_ms()),
            self.lifetime_text(),
            group_digits(l.max_ids_per_second().round() as u64),
            group_digits(l.max_nodes()),
            self.js_text(),
        )
    }

    fn json(&self) -> serde_json::Value {
        let l = self.layout;
        serde_json::json!({
            "layout": self.name,
            "fields": l.fields().iter().map(|f| serde_json::json!({"name": f.name(), "bits": f.bits()})).collect::<Vec<_>>(),
            "total_bits": l.total_bits(),
            "unit_ms": l.unit_ms(),
            "epoch": format_ms(l.epoch_ms()),
            "epoch_ms": l.epoch_ms(),
            "lifetime_end": l.lifetime().to_string(),
            "expired": l.is_expired_at(self.now),
            "ids_per_second_per_node": l.max_ids_per_second(),
            "max_nodes": l.max_nodes(),
            "js_safe_now": l.is_js_safe(self.now),
            "js_unsafe_from": l.js_unsafe_from_ms().map(format_ms),
        })
    }
}
