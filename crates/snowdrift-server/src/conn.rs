//! Client connections as the server holds them: each one counts against
//! `limits.max_connections` (one over it is closed as soon as it is accepted, before TLS or
//! any read), and is closed once nothing was read or written on it for
//! `limits.idle_timeout`. The HTTP and RESP listeners share one count, so a flood on either
//! cannot take the file descriptors the stores, the worker lease and the other listener
//! need.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

use crate::config::LimitsConfig;

/// File descriptors kept back from the connections when `limits.max_connections` is 0:
/// for the stores' pools, the worker registry, mark files, the listeners.
const RESERVED_FDS: u64 = 256;

/// The fewest connections the automatic cap allows, however low the open-file limit.
const FEWEST: u64 = 64;

/// The connection limits of `[limits]`, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Longest wait for the rest of a request once its first byte came.
    pub header_timeout: Duration,
    /// Longest wait for a request's body once its head came (for RESP: for the whole
    /// request, with `header_timeout`).
    pub body_timeout: Duration,
    /// A connection idle this long is closed.
    pub idle_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Largest HTTP request head, in bytes.
    pub max_head: usize,
    /// Largest RESP request, in bytes.
    pub resp_max_frame: usize,
}

impl ConnLimits {
    /// The connection limits of `limits`; `max_connections` 0 means the open-file limit
    /// less what the server keeps back.
    pub fn resolve(limits: &LimitsConfig) -> Self {
        let max_connections = if limits.max_connections == 0 {
            auto_cap()
        } else {
            limits.max_connections
        };
        Self {
            header_timeout: limits.header_timeout,
            body_timeout: limits.body_timeout,
            idle_timeout: limits.idle_timeout,
            max_connections,
            max_head: limits.max_head,
            resp_max_frame: limits.resp_max_frame,
        }
    }

    /// How long a RESP request may take from its first byte to its last: it is its own
    /// head and body.
    pub fn resp_timeout(&self) -> Duration {
        self.header_timeout.min(self.body_timeout)
    }
}

/// The cap when none is configured: the soft open-file limit less [`RESERVED_FDS`].
fn auto_cap() -> usize {
    let soft = rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft);
    usize::try_from(soft.saturating_sub(RESERVED_FDS).max(FEWEST)).unwrap_or(usize::MAX)
}

/// Raises this process's soft open-file limit to its hard limit, so the connection cap
/// (and not the kernel) decides how many clients there may be. Returns (before, after).
pub fn raise_open_file_limit() -> io::Result<(u64, u64)> {
    let (before, _) = rlimit::getrlimit(rlimit::Resource::NOFILE)?;
    let after = rlimit::increase_nofile_limit(u64::MAX)?;
    Ok((before, after))
}

/// Sleeps until `deadline`, or forever without one: the request-head timer of a
/// connection loop, armed only while a request is partly read.
pub(crate) async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Admits connections up to the cap.
#[derive(Debug, Clone)]
pub struct Admission {
    slots: Arc<Semaphore>,
    refused: Arc<AtomicU64>,
    /// The most connections open at once since the last check ([`crate::trim`]).
    peak: crate::trim::Peak,
    limits: ConnLimits,
}

impl Admission {
    /// Room for `limits.max_connections` connections.
    pub fn new(limits: ConnLimits) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(limits.max_connections)),
            refused: Arc::default(),
            peak: crate::trim::Peak::default(),
            limits,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &ConnLimits {
        &self.limits
    }

    /// `io` as a held connection, or `None` when the cap is reached (the caller drops it,
    /// which closes it).
    pub fn admit<I>(&self, io: I) -> Option<Conn<I>> {
        let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() else {
            let refused = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
            // One line per 1,000 refusals: a flood must not become a flood of logs.
            if refused % 1000 == 1 {
                tracing::warn!(
                    max_connections = self.limits.max_connections,
                    refused,
                    "connection refused: limits.max_connections are open"
                );
            }
            return None;
        };
        self.peak.note(self.open());
        let now = Instant::now();
        Some(Conn {
            io,
            _slot: slot,
            idle: self.limits.idle_timeout,
            last: now,
            armed: now + self.limits.idle_timeout,
            sleep: Box::pin(tokio::time::sleep_until(now + self.limits.idle_timeout)),
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.limits.max_connections - self.slots.available_permits()
    }

    /// Connections refused at the cap since start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The connections' peak, for [`crate::trim`].
    pub fn watched(&self) -> crate::trim::Watched {
        let admission = self.clone();
        crate::trim::Watched::new(self.peak.clone(), move || admission.open())
    }
}

/// A TCP listener whose connections come out admitted ([`Admission::admit`]): one over the
/// cap is closed as soon as it is accepted.
#[derive(Debug)]
pub struct Admitted {
    tcp: TcpListener,
    admission: Admission,
}

impl Admitted {
    /// Admits `tcp`'s connections by `admission`.
    pub fn new(tcp: TcpListener, admission: Admission) -> Self {
        Self { tcp, admission }
    }
}

impl axum::serve::Listener for Admitted {
    type Io = Conn<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.tcp.accept().await {
                Ok((tcp, peer)) => {
                    // Without TCP_NODELAY, Nagle's algorithm meets the client's delayed ACK
                    // and every gRPC stream of two or more messages stalls for ~40 ms.
                    let _ = tcp.set_nodelay(true);
                    if let Some(conn) = self.admission.admit(tcp) {
                        return (conn, peer);
                    }
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off, as axum does.
                    tracing::warn!(error = %e, "accepting a TCP connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// A client connection: `I`, holding its place under the cap until dropped, whose reads
/// fail with [`io::ErrorKind::TimedOut`] once nothing was read or written for the idle
/// timeout (whoever reads it then closes it).
#[derive(Debug)]
pub struct Conn<I> {
    io: I,
    _slot: OwnedSemaphorePermit,
    idle: Duration,
    /// When something was last read or written.
    last: Instant,
    /// The deadline `sleep` is set to.
    armed: Instant,
    sleep: Pin<Box<Sleep>>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Conn<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    this.last = Instant::now();
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                // Timers are reset only after activity moved the deadline, not per poll.
                let deadline = this.last + this.idle;
                if this.armed != deadline {
                    this.armed = deadline;
                    this.sleep.as_mut().reset(deadline);
                }
                ready!(this.sleep.as_mut().poll(cx));
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "idle longer than limits.idle_timeout",
                )))
            }
        }
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Conn<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.io).poll_write(cx, data));
        if matches!(written, Ok(n) if n > 0) {
            this.last = Instant::now();
        }
        Poll::Ready(written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.io).poll_write_vectored(cx, bufs));
        if matches!(written, Ok(n) if n > 0) {
            this.last = Instant::now();
        }
        Poll::Ready(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn limits(max: usize, idle_ms: u64) -> ConnLimits {
        ConnLimits {
            header_timeout: Duration::from_secs(1),
            body_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_millis(idle_ms),
            max_connections: max,
            max_head: 16 * 1024,
            resp_max_frame: 4096,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_times_out_and_activity_keeps_one_open() {
        let admission = Admission::new(limits(4, 1000));
        let (a, mut peer) = tokio::io::duplex(64);
        let mut conn = admission.admit(a).unwrap();
        // Bytes every 600 ms keep it open past the 1 s timeout.
        for _ in 0..3 {
            tokio::time::advance(Duration::from_millis(600)).await;
            peer.write_all(b"x").await.unwrap();
            let mut byte = [0u8; 1];
            conn.read_exact(&mut byte).await.unwrap();
        }
        // Writing counts too.
        tokio::time::advance(Duration::from_millis(600)).await;
        conn.write_all(b"y").await.unwrap();
        tokio::time::advance(Duration::from_millis(600)).await;
        let start = Instant::now();
        let e = conn.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        // 1 s after the write, which was 600 ms ago.
        assert_eq!(start.elapsed(), Duration::from_millis(400));
    }

    #[tokio::test]
    async fn connections_over_the_cap_are_refused_until_one_closes() {
        let admission = Admission::new(limits(2, 60_000));
        let held: Vec<_> = (0..2)
            .map(|_| admission.admit(tokio::io::duplex(8).0).unwrap())
            .collect();
        assert_eq!(admission.open(), 2);
        assert!(admission.admit(tokio::io::duplex(8).0).is_none());
        assert_eq!(admission.refused(), 1);
        drop(held);
        assert_eq!(admission.open(), 0);
        assert!(admission.admit(tokio::io::duplex(8).0).is_some());
    }

    #[test]
    fn the_automatic_cap_keeps_descriptors_back() {
        let limits = ConnLimits::resolve(&LimitsConfig::default());
        let (soft, _) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
        let want = soft.saturating_sub(RESERVED_FDS).max(FEWEST);
        assert_eq!(limits.max_connections as u64, want);
        let given = ConnLimits::resolve(&LimitsConfig {
            max_connections: 7,
            ..LimitsConfig::default()
        });
        assert_eq!(given.max_connections, 7);
    }
}
