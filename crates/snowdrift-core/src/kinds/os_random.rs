//! Random bytes from the operating system's CSPRNG, drawn a few KiB at a time into a pool
//! per thread (as nanoid's own pool does), so an ID costs no system call of its own. Each
//! byte is handed out once.
//!
//! This is the one piece of process-wide state in this crate besides the clocks: a pool of
//! random bytes, which holds nothing an ID depends on but randomness. A process that forks
//! and goes on making IDs in both parent and child must not share a pool across the fork
//! (the child would hand out the bytes the parent still holds); snowdrift never forks.

use std::cell::RefCell;

use crate::error::{Error, Result};

/// Bytes drawn from the OS per refill.
const POOL: usize = 4096;

struct Pool {
    bytes: Box<[u8; POOL]>,
    /// Bytes from here on are not handed out yet.
    at: usize,
}

thread_local! {
    static POOL_OF_THREAD: RefCell<Pool> = RefCell::new(Pool {
        bytes: Box::new([0; POOL]),
        at: POOL,
    });
}

/// Fills `buf` with bytes from the operating system's CSPRNG (through this thread's pool).
/// Fails only when the OS gives no randomness.
pub fn fill(buf: &mut [u8]) -> Result<()> {
    if buf.len() > POOL {
        return getrandom::fill(buf).map_err(no_randomness);
    }
    POOL_OF_THREAD.with(|pool| {
        let Ok(mut pool) = pool.try_borrow_mut() else {
            // Re-entered (a panic hook making an ID, say): straight from the OS.
            return getrandom::fill(buf).map_err(no_randomness);
        };
        if POOL - pool.at < buf.len() {
            getrandom::fill(&mut pool.bytes[..]).map_err(no_randomness)?;
            pool.at = 0;
        }
        let at = pool.at;
        buf.copy_from_slice(&pool.bytes[at..at + buf.len()]);
        pool.at += buf.len();
        Ok(())
    })
}

/// A random `u32` from [`fill`].
pub fn u32() -> Result<u32> {
    let mut b = [0u8; 4];
    fill(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn no_randomness(e: getrandom::Error) -> Error {
    Error::InvalidConfig(format!(
        "the operating system gave no random bytes ({e}); IDs made of random characters \
         cannot be made without them"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_never_handed_out_twice() {
        // Two draws that together pass the pool's end: a refill, not a reuse.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..3 * POOL / 32 {
            let mut b = [0u8; 32];
            fill(&mut b).unwrap();
            assert!(seen.insert(b), "a 32-byte draw came twice");
        }
        let mut big = vec![0u8; POOL + 1];
        fill(&mut big).unwrap();
        assert!(big.iter().any(|&b| b != 0));
        assert_ne!(u32().unwrap(), u32().unwrap());
    }
}
