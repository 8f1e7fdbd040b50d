//! `ticket`: Flickr-style ticket servers in round-robin.

mod plan;
mod source;

pub use plan::TicketPlan;
pub use source::TicketSource;
