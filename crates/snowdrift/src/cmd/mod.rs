//! One module per subcommand.

/// `println!` that returns the write's error rather than panicking: a reader that closes
/// stdout early (`snowdrift workers list | head`) ends the command with `BrokenPipe`, which
/// `main` takes as a quiet exit, after the command's own cleanup (a lease released) ran.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)
    }};
}

/// `print!` that returns the write's error (see [`outln!`]).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout(), $($arg)*)
    }};
}

pub mod bench;
pub mod decode;
pub mod import;
pub mod layout;
mod layout_migrate;
pub mod next;
mod next_kinds;
mod next_segment;
pub(crate) mod next_text;

pub mod serve;
pub mod sql;
pub mod tags;
pub mod tickets;
pub mod token;
pub mod verify;
pub mod workers;

/// Whether log lines (written to standard error) carry ANSI colours: only on a terminal, and
/// not when `NO_COLOR` is set, so a log piped to a file or a journal holds no escape codes.
pub(crate) fn colour_logs() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
