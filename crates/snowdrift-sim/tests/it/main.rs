//! The simulator's own tests: a fixed set of seeds passes, a seed replays exactly, every
//! planted mistake is caught, and the fleet scales to a thousand nodes (and twice as many
//! as there are worker IDs).

mod mistakes;
mod replay;
mod scale;
mod seeds;
