//! `counter`: a Redis counter, plain (64-bit IDs) or rendered through a template (text).

mod plan;
mod source;

pub use plan::CounterPlan;
pub use source::CounterSource;
