//! Memory freed after a flood, handed back to the system. glibc's allocator keeps freed heap
//! pages for reuse, so a flood of clients that sent big heads (HTTP/1 connections) or held
//! streams they never read (gRPC calls) would leave the server's RSS where the flood took
//! it (measured in BENCHMARKS.md, "Slow and hostile clients"). Each thing that can flood
//! keeps a [`Peak`]; every 10 s, once [`TRIM_AFTER`] of any of them have left since their
//! peak, the free memory is trimmed. A no-op on other allocators.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Connections or calls that must have left since the peak before memory is trimmed.
pub const TRIM_AFTER: usize = 256;

/// The most of something in use at once since the last check.
#[derive(Debug, Clone, Default)]
pub struct Peak(Arc<AtomicUsize>);

impl Peak {
    /// Notes that `in_use` are in use now.
    pub fn note(&self, in_use: usize) {
        self.0.fetch_max(in_use, Ordering::Relaxed);
    }

    /// How many left since the peak, given `in_use` now; the peak restarts from `in_use`.
    fn left(&self, in_use: usize) -> usize {
        self.0
            .swap(in_use, Ordering::Relaxed)
            .saturating_sub(in_use)
    }
}

/// A [`Peak`] and how to count what is in use now.
pub struct Watched {
    peak: Peak,
    in_use: Box<dyn Fn() -> usize + Send + Sync>,
}

impl Watched {
    /// Watches `peak`, counting with `in_use`.
    pub fn new(peak: Peak, in_use: impl Fn() -> usize + Send + Sync + 'static) -> Self {
        Self {
            peak,
            in_use: Box::new(in_use),
        }
    }

    /// Whether at least [`TRIM_AFTER`] left since the peak (which restarts now).
    fn flooded(&self) -> bool {
        self.peak.left((self.in_use)()) >= TRIM_AFTER
    }
}

/// Checks `watched` every 10 s and trims after a flood; stops when the handle is aborted.
pub fn spawn(watched: Vec<Watched>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(10));
        loop {
            every.tick().await;
            // Every peak restarts on each check, flooded or not.
            let flooded = watched.iter().filter(|w| w.flooded()).count();
            if flooded > 0 {
                trim();
            }
        }
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only walks and releases the allocator's own free memory; it
    // takes the allocator's locks and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_what_left_since_the_peak() {
        let peak = Peak::default();
        let now = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&now);
        let w = Watched::new(peak.clone(), move || count.load(Ordering::Relaxed));
        peak.note(300);
        now.store(100, Ordering::Relaxed);
        assert!(!w.flooded(), "200 left: under the bound");
        peak.note(400);
        now.store(0, Ordering::Relaxed);
        assert!(w.flooded(), "400 left");
        assert!(!w.flooded(), "the peak restarted at 0");
    }
}
