//! `snowdrift verify`: checks a recorded history of requests for linearizability.

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use snowdrift_bench::report::group_digits;
use snowdrift_history::{CheckOptions, History};

/// Check a recorded history of ID requests: no ID twice, the IDs of one answer
/// consecutive, and real-time order (an answer received before another request was sent
/// holds smaller IDs than that request gets). Exits non-zero on any violation.
#[derive(Debug, clap::Args)]
#[command(after_help = "The history is JSON lines, one request per line:\n  \
{\"client\": \"c1\", \"invoke\": 1700000000000000000, \"complete\": 1700000000000250000, \"ids\": [\"7124820000000000\", \"7124820000000001\"]}\n\
invoke and complete are nanoseconds (any origin, one clock shared by all clients) when the\n\
request was sent and its answer received; ids are decimal strings or numbers, [] for a\n\
failed request. Other keys are ignored.\n\
Examples:\n  snowdrift verify --history run1.jsonl\n  snowdrift verify --history client1.jsonl --history client2.jsonl\n  cat *.jsonl | snowdrift verify --history -\n  snowdrift verify --history segment.jsonl --allow-gaps")]
pub struct Args {
    /// The history file, or `-` for standard input. Give it several times for one file
    /// per client or process (all recorded on the same clock): they are checked as one
    /// history.
    #[arg(long, value_name = "FILE", required = true)]
    history: Vec<PathBuf>,
    /// Do not require the IDs of one answer to be consecutive (for kinds whose batches
    /// skip numbers, such as snowflake blocks spanning ticks).
    #[arg(long)]
    allow_gaps: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let mut history = History::new();
    let names: Vec<String> = args
        .history
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if names.iter().filter(|n| *n == "-").count() > 1 {
        bail!("--history - (standard input) can be given only once");
    }
    // With one file, reports give line numbers alone; with several, the file too.
    let label = |name: &str| {
        if names.len() == 1 {
            String::new()
        } else {
            name.to_string()
        }
    };
    for (path, name) in args.history.iter().zip(&names) {
        if name == "-" {
            history.read(std::io::stdin().lock(), &label(name))
        } else {
            let file = File::open(path).with_context(|| format!("cannot open {name}"))?;
            history.read(BufReader::new(file), &label(name))
        }
        .with_context(|| format!("history {name} is malformed"))?;
    }
    let name = names.join(", ");

    let report = history.check_with(CheckOptions {
        consecutive: !args.allow_gaps,
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "history: {name}")?;
    writeln!(
        out,
        "operations: {}",
        group_digits(report.operations as u64)
    )?;
    writeln!(out, "IDs: {}", group_digits(report.ids as u64))?;
    writeln!(out, "clients: {}", report.clients)?;
    writeln!(
        out,
        "violations: {} (duplicates: {}, gaps within an answer: {}, real-time order: {})",
        report.violation_count(),
        report.duplicate_count,
        if args.allow_gaps {
            "not checked".to_string()
        } else {
            report.gap_count.to_string()
        },
        report.real_time_count
    )?;
    if !report.violations.is_empty() {
        writeln!(out, "first violations (up to 100 of each kind):")?;
        for v in &report.violations {
            writeln!(out, "  {v}")?;
        }
    }
    out.flush()?;
    if !report.is_clean() {
        bail!(
            "history {name} is not linearizable: {} violation(s)",
            report.violation_count()
        );
    }
    Ok(())
}
