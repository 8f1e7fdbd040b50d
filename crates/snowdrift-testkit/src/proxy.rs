//! A TCP proxy that cuts, stalls or slows the connections through it, on command.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// What a [`FaultProxy`] does to the bytes passing through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Forward everything as it comes.
    Pass,
    /// Close every connection, and close new ones as soon as they are accepted.
    Cut,
    /// Keep connections open but forward nothing either way: peers hang.
    BlackHole,
    /// Hold every chunk going from the upstream to the client for this long after it
    /// reached the proxy (the client-to-upstream direction is not delayed).
    Delay(Duration),
    /// Deliver the bytes going from the upstream to the client one at a time, this long
    /// apart, as over a congested link: every answer arrives in pieces, so a client that
    /// gives up waiting does so in the middle of one.
    Trickle(Duration),
}

/// A TCP proxy on `127.0.0.1:0` in front of one upstream address, for fault injection.
///
/// Point a client at [`addr`](Self::addr) (or rewrite its URL with
/// [`url_for`](Self::url_for)), then switch modes while it runs. A mode change applies at
/// once to every live connection as well as to new ones:
///
/// - [`pass`](Self::pass) / [`heal`](Self::heal): forward everything.
/// - [`cut`](Self::cut): close every live connection (the client sees EOF) and close new
///   connections right after accepting them, until the mode changes again.
/// - [`black_hole`](Self::black_hole): accept connections and keep them open, but forward
///   nothing in either direction, like a network that drops every packet. Bytes that
///   arrive meanwhile are held, not lost: after a heal they are delivered, as TCP would
///   after retransmitting.
/// - [`delay`](Self::delay): every chunk from the upstream to the client is delivered
///   `d` after it reached the proxy. Requests are not delayed, so a request/response
///   round trip (one SQL statement, one Redis command) takes `d` longer; chunks keep their
///   order and are not slowed further by each other (latency, not a bandwidth cap).
/// - [`trickle`](Self::trickle): bytes from the upstream to the client are delivered one at
///   a time, `pause` apart (a bandwidth cap of one byte per `pause`).
///
/// The proxy runs on the tokio runtime it was started on; dropping it closes the
/// listener and every connection.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use snowdrift_testkit::FaultProxy;
/// let proxy = FaultProxy::start("127.0.0.1:5432").await?;
/// let url = proxy.url_for("postgres://root:root@127.0.0.1:5432/test");
/// // ... connect through `url`, then:
/// proxy.cut();
/// proxy.heal();
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    mode: watch::Sender<Mode>,
    accepted: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy in front of `upstream` (a `SocketAddr`, `"host:port"`, ...), in
    /// [`Mode::Pass`]. The upstream is resolved once, here; it is connected to once per
    /// client connection.
    pub async fn start(upstream: impl ToSocketAddrs) -> io::Result<Self> {
        let upstream = tokio::net::lookup_host(upstream)
            .await?
            .next()
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "upstream resolved to no address",
                )
            })?;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let (mode, watcher) = watch::channel(Mode::Pass);
        let accepted = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(accept_loop(listener, upstream, watcher, accepted.clone()));
        Ok(Self {
            addr,
            upstream,
            mode,
            accepted,
            task,
        })
    }

    /// Starts a proxy in front of the host and port of a service URL
    /// (`postgres://user@host:port/db`, `mysql://...`, `redis://...`; a missing port is the
    /// scheme's default) and returns it with the same URL pointed at the proxy.
    pub async fn start_for_url(url: &str) -> io::Result<(Self, String)> {
        let (_, host_port, _) = split_url(url);
        let upstream = if has_port(host_port) {
            host_port.to_string()
        } else {
            let scheme = url.split("://").next().unwrap_or_default();
            let port = default_port(scheme).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{scheme}:// URL has no port and no known default port"),
                )
            })?;
            format!("{host_port}:{port}")
        };
        let proxy = Self::start(upstream).await?;
        let proxied = proxy.url_for(url);
        Ok((proxy, proxied))
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address the proxy forwards to.
    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// `url` with its `host:port` replaced by the proxy's address; user, password, path and
    /// query are kept. A string without `://` is taken as a bare `host:port`.
    pub fn url_for(&self, url: &str) -> String {
        let (head, _, tail) = split_url(url);
        format!("{head}{}{tail}", self.addr)
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        *self.mode.borrow()
    }

    /// Connections accepted since the start, including those closed at once by a cut.
    pub fn connections(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Sets the mode (the named methods below are shorthands).
    pub fn set_mode(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// Forwards everything.
    pub fn pass(&self) {
        self.set_mode(Mode::Pass);
    }

    /// Same as [`pass`](Self::pass).
    pub fn heal(&self) {
        self.pass();
    }

    /// Closes every connection now and every new one on accept.
    pub fn cut(&self) {
        self.set_mode(Mode::Cut);
    }

    /// Keeps connections open but forwards nothing.
    pub fn black_hole(&self) {
        self.set_mode(Mode::BlackHole);
    }

    /// Delivers every upstream-to-client chunk `latency` after it arrived.
    pub fn delay(&self, latency: Duration) {
        self.set_mode(Mode::Delay(latency));
    }

    /// Delivers upstream-to-client bytes one at a time, `pause` apart.
    pub fn trickle(&self, pause: Duration) {
        self.set_mode(Mode::Trickle(pause));
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        // The accept task owns the connections' JoinSet: aborting it drops them all.
        self.task.abort();
    }
}

/// Splits a URL into (everything up to the host, `host:port`, the rest).
fn split_url(url: &str) -> (&str, &str, &str) {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return ("", url, "");
    };
    let rest = &url[scheme_end..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_len];
    // The password may hold '@' only percent-encoded, so the last '@' ends the userinfo.
    let host_start = authority.rfind('@').map_or(0, |i| i + 1);
    let host_at = scheme_end + host_start;
    let host_end = scheme_end + authority_len;
    (&url[..host_at], &url[host_at..host_end], &url[host_end..])
}

fn has_port(host_port: &str) -> bool {
    // "[::1]:5432" has a port, "[::1]" does not; "host:5432" has one.
    match host_port.rfind(':') {
        Some(i) => !host_port[i..].contains(']'),
        None => false,
    }
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "postgres" | "postgresql" => Some(5432),
        "mysql" | "mariadb" => Some(3306),
        "redis" => Some(6379),
        "http" => Some(80),
        _ => None,
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    mode: watch::Receiver<Mode>,
    accepted: Arc<AtomicU64>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            incoming = listener.accept() => match incoming {
                Ok((client, _)) => {
                    accepted.fetch_add(1, Ordering::Relaxed);
                    if *mode.borrow() == Mode::Cut {
                        drop(client);
                        continue;
                    }
                    connections.spawn(connection(client, upstream, mode.clone()));
                }
                // Out of file descriptors and the like: wait a little instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Returns once the mode is [`Mode::Cut`] or the proxy is gone.
async fn until_cut(mode: &mut watch::Receiver<Mode>) {
    let _ = mode.wait_for(|m| *m == Mode::Cut).await;
}

async fn connection(client: TcpStream, upstream: SocketAddr, mut mode: watch::Receiver<Mode>) {
    let upstream = tokio::select! {
        connected = TcpStream::connect(upstream) => match connected {
            Ok(stream) => stream,
            // The client sees its connection closed, as if the upstream refused it.
            Err(_) => return,
        },
        () = until_cut(&mut mode) => return,
    };
    // Small round trips (SQL statements) are what the tests time: do not batch them.
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    let (up_mode, down_mode) = (mode.clone(), mode.clone());
    let both = async move {
        tokio::try_join!(
            pump(client_read, upstream_write, false, up_mode),
            pump(upstream_read, client_write, true, down_mode),
        )
    };
    // Returning drops both sockets, which closes them.
    tokio::select! {
        _ = both => {}
        () = until_cut(&mut mode) => {}
    }
}

/// Copies one direction. A reader and a writer joined by a queue, so a delay is latency
/// (each chunk held until its own arrival time plus the delay) and not a pause per chunk.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    to_client: bool,
    mode: watch::Receiver<Mode>,
) -> io::Result<()> {
    let (queue, mut queued) = mpsc::channel::<(Instant, Vec<u8>)>(64);
    let mut read_mode = mode.clone();
    let reader = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            // A black hole reads nothing, so the sender's buffers fill as on a dead link.
            let _ = read_mode.wait_for(|m| *m != Mode::BlackHole).await;
            let n = from.read(&mut buf).await?;
            if n == 0
                || queue
                    .send((Instant::now(), buf[..n].to_vec()))
                    .await
                    .is_err()
            {
                // Dropping the queue lets the writer drain it and pass the EOF on.
                return Ok::<(), io::Error>(());
            }
        }
    };
    let mut write_mode = mode;
    let writer = async move {
        while let Some((arrived, chunk)) = queued.recv().await {
            hold(&mut write_mode, to_client, arrived).await;
            let trickle = match *write_mode.borrow() {
                Mode::Trickle(pause) if to_client => Some(pause),
                _ => None,
            };
            match trickle {
                Some(pause) => {
                    for byte in chunk {
                        to.write_all(&[byte]).await?;
                        tokio::time::sleep(pause).await;
                    }
                }
                None => to.write_all(&chunk).await?,
            }
        }
        to.shutdown().await
    };
    tokio::try_join!(reader, writer).map(|_| ())
}

/// Waits until a chunk that arrived at `arrived` may be written under the current mode,
/// re-reading the mode whenever it changes.
async fn hold(mode: &mut watch::Receiver<Mode>, to_client: bool, arrived: Instant) {
    loop {
        let current = *mode.borrow_and_update();
        match current {
            Mode::BlackHole => {
                if mode.changed().await.is_err() {
                    return;
                }
            }
            Mode::Delay(latency) if to_client => {
                tokio::select! {
                    () = tokio::time::sleep_until(arrived + latency) => return,
                    changed = mode.changed() => if changed.is_err() { return },
                }
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_rewritten_around_the_host() {
        assert_eq!(
            split_url("postgres://root:root@127.0.0.1:5432/test?x=1"),
            ("postgres://root:root@", "127.0.0.1:5432", "/test?x=1")
        );
        assert_eq!(
            split_url("redis://127.0.0.1:6379"),
            ("redis://", "127.0.0.1:6379", "")
        );
        assert_eq!(
            split_url("mysql://root@[::1]/test"),
            ("mysql://root@", "[::1]", "/test")
        );
        assert_eq!(split_url("host:1"), ("", "host:1", ""));
        assert!(has_port("[::1]:5432"));
        assert!(!has_port("[::1]"));
        assert!(!has_port("localhost"));
    }
}
