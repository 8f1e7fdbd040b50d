//! `snowdrift`: the command-line tool and server of the snowdrift ID service.

mod clock;
mod cmd;
mod layout_args;
mod mastodon_args;
mod obfuscate_args;
mod store_args;
mod uuid_args;

use clap::{Parser, Subcommand};

/// What `--version` prints after the name: the version, the commit it was built from, and
/// whether the tree had changes (the build script reads git).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SNOWDRIFT_BUILD_COMMIT"),
    ", dirty: ",
    env!("SNOWDRIFT_BUILD_DIRTY"),
    ")"
);

/// The build, as the server reports it (`/healthz`, `snowdrift_build_info`).
fn build_info() -> snowdrift_server::build_info::BuildInfo {
    snowdrift_server::build_info::BuildInfo {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("SNOWDRIFT_BUILD_COMMIT"),
        dirty: matches!(env!("SNOWDRIFT_BUILD_DIRTY").as_bytes(), b"true"),
    }
}

/// Distributed unique IDs: snowflake IDs with any bit layout, database segments (Leaf),
/// UUID v1 to v7, ULID and ObjectId, from one binary.
#[derive(Debug, Parser)]
#[command(name = "snowdrift", version = VERSION, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Next(Box<cmd::next::Args>),
    Decode(cmd::decode::Args),
    Layout(cmd::layout::Args),
    Bench(cmd::bench::Args),
    Tags(cmd::tags::Args),
    Tickets(cmd::tickets::Args),
    Import(cmd::import::Args),
    Serve(cmd::serve::Args),
    Token(cmd::token::Args),
    Verify(cmd::verify::Args),
    Workers(cmd::workers::Args),
    Sql(cmd::sql::Args),
}

fn main() -> std::process::ExitCode {
    snowdrift_server::build_info::set(build_info());
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Next(a) => cmd::next::run(*a),
        Command::Decode(a) => cmd::decode::run(a),
        Command::Layout(a) => cmd::layout::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Tags(a) => cmd::tags::run(a),
        Command::Tickets(a) => cmd::tickets::run(a),
        Command::Import(a) => cmd::import::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Token(a) => cmd::token::run(a),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Workers(a) => cmd::workers::run(a),
        Command::Sql(a) => cmd::sql::run(a),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // A reader that stopped reading (`snowdrift next -n 1000000 | head -1`) is not a
        // failure: the command stopped at its first unread line, as `head` meant, and had
        // its cleanup run on the way out (a held worker ID released).
        Err(e) if closed_stdout(&e) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line a person can act on: the chain of causes, outermost first, each said
            // once (an error that already quotes its cause hides the cause's own line).
            let mut msg: Vec<String> = Vec::new();
            for cause in e.chain().map(ToString::to_string) {
                if !msg.last().is_some_and(|outer| outer.contains(&cause)) {
                    msg.push(cause);
                }
            }
            eprintln!("snowdrift: error: {}", msg.join(": "));
            std::process::ExitCode::FAILURE
        }
    }
}

/// Whether `e` is a write to a stdout whose reader has gone.
fn closed_stdout(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
