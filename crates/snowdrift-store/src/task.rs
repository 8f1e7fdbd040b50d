//! Where the store's background tasks start (a lease's keeper, a tso term's loop, renewals
//! and window saves, a segment buffer's refills): on tokio, and, under the simulator (cargo
//! feature `sim`), inside the simulated process that started them, so that stopping the
//! process ([`process`]: SIGSTOP, a GC pause) stops their timers too.

use std::future::Future;

use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// Spawns `task` on the current runtime (inside the current simulated process, if any).
pub(crate) fn spawn<F>(task: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    #[cfg(feature = "sim")]
    let task = process::inside_current(task);
    tokio::spawn(task)
}

/// Spawns `task` on `runtime` (inside the current simulated process, if any).
pub(crate) fn spawn_on<F>(runtime: &Handle, task: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    #[cfg(feature = "sim")]
    let task = process::inside_current(task);
    runtime.spawn(task)
}

/// Simulated processes that can be stopped: the code of a process, and every task the
/// store spawns from it, makes no step while its process is stopped, and takes up where
/// it stood once it runs again, with every timer that ran out meanwhile due at once, as a
/// process continued after SIGSTOP (or a stop-the-world pause) finds them. A simulation
/// that only held a stopped node's messages back let its own timeouts run during the
/// stop: a renewal whose answer waited out the stop was given up by its own timeout
/// before the process could read it, which a real stopped process cannot do.
#[cfg(feature = "sim")]
pub mod process {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use tokio::time::{Instant, Sleep};

    /// Says whether the process is stopped now, and until when: `Some(until)` while it
    /// is (a later call may say a later time: the stop was made longer).
    pub type Stopped = Arc<dyn Fn() -> Option<Instant> + Send + Sync>;

    tokio::task_local! {
        static PROCESS: Stopped;
    }

    /// Runs `code` as the code of the process `stopped` describes.
    pub fn run<F: Future>(stopped: Stopped, code: F) -> Inside<F> {
        Inside::new(Some(stopped), code)
    }

    /// Calls `code` as the code of the process `stopped` describes: the tasks it spawns
    /// through the store are that process's.
    pub fn enter<T>(stopped: Stopped, code: impl FnOnce() -> T) -> T {
        PROCESS.sync_scope(stopped, code)
    }

    /// `task` inside the current process (none: `task` as it is).
    pub(crate) fn inside_current<F: Future>(task: F) -> Inside<F> {
        Inside::new(PROCESS.try_with(Arc::clone).ok(), task)
    }

    /// A future that makes no step while its process is stopped.
    pub struct Inside<F> {
        process: Option<Stopped>,
        code: Pin<Box<F>>,
        stop: Option<Pin<Box<Sleep>>>,
    }

    impl<F> std::fmt::Debug for Inside<F> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Inside")
                .field("in_a_process", &self.process.is_some())
                .finish_non_exhaustive()
        }
    }

    impl<F: Future> Inside<F> {
        fn new(process: Option<Stopped>, code: F) -> Self {
            Self {
                process,
                code: Box::pin(code),
                stop: None,
            }
        }
    }

    impl<F: Future> Future for Inside<F> {
        type Output = F::Output;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
            let this = &mut *self;
            let Some(process) = this.process.clone() else {
                return this.code.as_mut().poll(cx);
            };
            if let Some(until) = process() {
                let stop = this
                    .stop
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
                stop.as_mut().reset(until);
                if stop.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
            PROCESS.sync_scope(process, || this.code.as_mut().poll(cx))
        }
    }
}
