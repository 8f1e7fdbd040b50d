//! One module per subcommand.

pub mod bench;
pub mod decode;
pub mod layout;
pub mod next;
mod next_kinds;
