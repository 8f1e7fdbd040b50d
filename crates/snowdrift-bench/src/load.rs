//! Load on a running server (or Redis) from one thread, with N connections each holding one
//! request in flight: closed loop (as fast as answers come), or at a fixed total rate
//! (`snowdrift bench --target URL`).
//!
//! One thread and one epoll set, no async runtime: at a fixed rate the latency of a request
//! counts from when it was due, so anything between the due time and the write (a task hop,
//! a timer's millisecond, a thread's wake-up) would be charged to the server. Here the loop
//! polls without sleeping, sends what is due on the first free connection and times each
//! answer as its last byte is read.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mio::{Events, Interest, Poll, Token};

use crate::error::{Context, Error};
use crate::report::{count_line, latency_histogram, outcome_line, percentiles};
use crate::tls::{Blocking, Polled, Tls};
use crate::wire::{Answer, Target};

/// A request without an answer for this long fails and its connection is dropped.
const ANSWER_LIMIT: Duration = Duration::from_secs(10);

/// A gap this long between two turns of the (never sleeping) fixed-rate loop is reported as
/// the client stalling.
const STALL: Duration = Duration::from_millis(1);

/// What to load and how hard.
pub struct Load {
    /// `http://HOST:PORT/PATH?QUERY` to GET, or `redis://HOST:PORT` to INCR `incr`.
    pub target: String,
    /// With a `redis://` target: the key each request increments.
    pub incr: Option<String>,
    /// A token: a bearer token over HTTP, `AUTH` once per RESP connection.
    pub token: Option<String>,
    /// With an `https://` or `rediss://` target: the CA certificate(s) to trust (PEM),
    /// instead of the system's roots.
    pub ca: Option<std::path::PathBuf>,
    /// Concurrent connections, each with one request in flight.
    pub connections: usize,
    /// Total requests per second across connections; `None`: as fast as possible.
    pub rate: Option<f64>,
    /// How long to load.
    pub duration: Duration,
}

/// What a run counted.
struct Totals {
    requests: u64,
    ids: u64,
    errors: u64,
    first_error: Option<String>,
    /// Requests that came due at the fixed rate but had not been sent [`ANSWER_LIMIT`] after
    /// the run ended.
    unsent: u64,
    /// Times the polling loop itself did not run for over [`STALL`], and how long in all:
    /// at a fixed rate the loop never sleeps, so such a gap is the client's thread kept off
    /// its CPU, and due requests waited on the client, not the server.
    stalls: u64,
    stalled: Duration,
    longest_stall: Duration,
    latency: Histogram<u64>,
}

impl Totals {
    fn record(&mut self, origin: Instant, outcome: Result<u64, String>) {
        self.latency
            .saturating_record(origin.elapsed().as_nanos() as u64);
        self.requests += 1;
        match outcome {
            Ok(ids) => self.ids += ids,
            Err(e) => {
                self.errors += 1;
                self.first_error.get_or_insert(e);
            }
        }
    }
}

/// Runs the load and prints throughput and latency percentiles.
pub fn run(load: Load) -> Result<(), Error> {
    if load.connections == 0 || load.connections > 10_000 {
        return Err(Error::Options(
            "--connections must be between 1 and 10000".into(),
        ));
    }
    if load.rate.is_some_and(|r| !r.is_finite() || r <= 0.0) {
        return Err(Error::Options(
            "--rate must be above 0 requests per second".into(),
        ));
    }
    let target = Target::parse(&load.target, load.incr.as_deref(), load.token.as_deref())?;
    let tls = match &target.tls_host {
        Some(host) => Some(Tls::new(host, load.ca.as_deref())?),
        None if load.ca.is_some() => {
            return Err(Error::Options(
                "--ca is for https:// and rediss:// targets".into(),
            ));
        }
        None => None,
    };
    let target = Wired { target, tls };
    println!(
        "bench: {} with {} connection(s), {}, {:?}",
        target.label,
        load.connections,
        load.rate.map_or("closed loop".to_string(), |r| format!(
            "{} requests/s in total",
            r as u64
        )),
        load.duration
    );
    probe(&target)?;
    let totals = Driver::new(&target, &load)?.run()?;
    let secs = load.duration.as_secs_f64();
    println!(
        "{}",
        outcome_line(
            "requests",
            totals.requests,
            secs,
            "requests",
            totals.errors,
            totals.first_error.as_deref()
        )
    );
    println!("{}", count_line("ids", totals.ids, secs, "IDs"));
    println!("latency    {}", percentiles(&totals.latency));
    if load.rate.is_some() {
        println!(
            "client     stalled {} time(s) for over {STALL:?}, {:?} in all, longest {:?}{}",
            totals.stalls,
            totals.stalled,
            totals.longest_stall,
            if totals.stalls > 0 {
                " (its thread was kept off its CPU; requests due then waited on the client)"
            } else {
                ""
            }
        );
    }
    if totals.unsent > 0 {
        println!(
            "unsent     {} request(s) were due but not sent {ANSWER_LIMIT:?} after the run ended: every connection was waiting for an answer",
            totals.unsent
        );
    }
    Ok(())
}

/// One request before timing: the target answers, and with success.
fn probe(target: &Wired) -> Result<(), Error> {
    let mut stream = connect(target)
        .with_context(|| format!("cannot reach {}; is the server running?", target.addr))?;
    let answer = exchange(target, &mut stream, target.request())?;
    if let Err(e) = answer {
        return Err(Error::Target(format!("{} answered {e}", target.label)));
    }
    Ok(())
}

/// A target and, for `https://` and `rediss://`, its TLS.
struct Wired {
    target: Target,
    tls: Option<Tls>,
}

impl std::ops::Deref for Wired {
    type Target = Target;
    fn deref(&self) -> &Target {
        &self.target
    }
}

/// A blocking connection to the target, past its handshakes (TLS, RESP's `AUTH`, if any).
fn connect(target: &Wired) -> Result<Blocking, Error> {
    let mut stream = std::net::TcpStream::connect_timeout(&target.addr, ANSWER_LIMIT)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(ANSWER_LIMIT))?;
    let mut stream = match &target.tls {
        Some(tls) => {
            let session = tls.handshake(&mut stream)?;
            Blocking::Tls(Box::new(rustls::StreamOwned::new(session, stream)))
        }
        None => Blocking::Plain(stream),
    };
    if let Some(hello) = target.handshake()
        && let Err(e) = exchange(target, &mut stream, hello)?
    {
        return Err(Error::Target(format!(
            "{} refused the token: {e}",
            target.addr
        )));
    }
    Ok(stream)
}

/// Sends `request` on a blocking connection and reads its whole answer.
fn exchange(
    target: &Target,
    stream: &mut Blocking,
    request: &[u8],
) -> Result<Result<u64, String>, Error> {
    stream.write_all(request)?;
    stream.flush()?;
    let mut read = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = stream
            .read(&mut chunk)
            .with_context(|| format!("no answer from {}", target.addr))?;
        if n == 0 {
            return Err(Error::Target(format!(
                "{} closed the connection without an answer",
                target.addr
            )));
        }
        read.extend_from_slice(&chunk[..n]);
        if let Some(answer) = target
            .answer(&read)
            .map_err(|e| Error::Target(format!("{}: {e}", target.label)))?
        {
            return Ok(answer.outcome);
        }
    }
}

/// One connection and the request it has in flight.
struct Connection {
    stream: Polled,
    read: Vec<u8>,
    /// Bytes of the request not yet written (a full socket buffer can take part of it).
    unwritten: usize,
    /// With a request in flight: when its latency started (its due time, or when sent).
    origin: Option<Instant>,
    sent: Instant,
}

struct Driver<'a> {
    target: &'a Wired,
    poll: Poll,
    /// Slot `i` is `Token(i)`; `None` while it has no open connection.
    slots: Vec<Option<Connection>>,
    /// Slots with nothing in flight.
    free: Vec<usize>,
    /// Due times not yet sent, oldest first (fixed rate only).
    due: VecDeque<Instant>,
    every: Option<Duration>,
    duration: Duration,
    totals: Totals,
}

impl<'a> Driver<'a> {
    fn new(target: &'a Wired, load: &Load) -> Result<Self, Error> {
        let mut driver = Self {
            target,
            poll: Poll::new().context("creating the epoll set")?,
            slots: (0..load.connections).map(|_| None).collect(),
            free: (0..load.connections).rev().collect(),
            due: VecDeque::new(),
            every: load.rate.map(|r| Duration::from_secs_f64(1.0 / r)),
            duration: load.duration,
            totals: Totals {
                requests: 0,
                ids: 0,
                errors: 0,
                first_error: None,
                unsent: 0,
                stalls: 0,
                stalled: Duration::ZERO,
                longest_stall: Duration::ZERO,
                latency: latency_histogram()?,
            },
        };
        for slot in 0..load.connections {
            driver
                .open(slot)
                .with_context(|| format!("opening connection {} to {}", slot + 1, target.addr))?;
        }
        Ok(driver)
    }

    fn run(mut self) -> Result<Totals, Error> {
        let mut events = Events::with_capacity(1024);
        let start = Instant::now();
        let end = start + self.duration;
        // At a fixed rate, requests still unsent this long after the end are given up.
        let give_up = end + ANSWER_LIMIT;
        let mut next_due = start;
        let mut last_sweep = start;
        let mut last_turn = start;
        loop {
            let now = Instant::now();
            let sending = match self.every {
                Some(every) => {
                    let gap = now - last_turn;
                    if gap > STALL {
                        self.totals.stalls += 1;
                        self.totals.stalled += gap;
                        self.totals.longest_stall = self.totals.longest_stall.max(gap);
                    }
                    // Every request due before the end is sent, also one the loop reaches
                    // late because its thread was kept off the CPU across the end: that
                    // wait is in its latency, as the server's own waits are.
                    while next_due <= now && next_due < end {
                        self.due.push_back(next_due);
                        next_due += every;
                    }
                    (next_due < end || !self.due.is_empty()) && now < give_up
                }
                None => now < end,
            };
            last_turn = now;
            if sending {
                self.send_what_is_due(now);
            } else if self.free.len() == self.slots.len() {
                break;
            }
            // At a fixed rate the loop never sleeps, so neither a due time nor an answer
            // waits for a wake-up; closed, it sleeps until an answer comes.
            let wait = match (self.every, sending) {
                (Some(_), _) => Duration::ZERO,
                (None, true) => (end - now).min(Duration::from_millis(100)),
                (None, false) => Duration::from_millis(100),
            };
            self.poll
                .poll(&mut events, Some(wait))
                .context("waiting for answers")?;
            for event in events.iter() {
                let slot = event.token().0;
                if event.is_writable() {
                    self.write(slot);
                }
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    self.read(slot);
                }
            }
            if now - last_sweep > Duration::from_millis(100) {
                last_sweep = now;
                self.fail_overdue(now);
            }
        }
        self.totals.unsent = self.due.len() as u64;
        Ok(self.totals)
    }

    /// Sends on free connections: at a fixed rate one request per due time, oldest first;
    /// closed, one on every free connection.
    fn send_what_is_due(&mut self, now: Instant) {
        while let Some(&slot) = self.free.last() {
            let origin = match self.every {
                Some(_) => match self.due.pop_front() {
                    Some(due) => due,
                    None => return,
                },
                None => now,
            };
            self.free.pop();
            if self.slots[slot].is_none()
                && let Err(e) = self.open(slot)
            {
                // Counted as a failed request; the slot tries again with the next one.
                self.totals.record(origin, Err(e.chain()));
                self.free.push(slot);
                if self.every.is_none() {
                    return;
                }
                continue;
            }
            if let Some(connection) = self.slots[slot].as_mut() {
                connection.origin = Some(origin);
                connection.sent = now;
                connection.unwritten = self.target.request().len();
            }
            self.write(slot);
        }
    }

    fn open(&mut self, slot: usize) -> Result<(), Error> {
        let stream = connect(self.target)
            .with_context(|| format!("cannot connect to {}", self.target.addr))?;
        let mut stream = stream.into_polled()?;
        self.poll.registry().register(
            stream.socket(),
            Token(slot),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        self.slots[slot] = Some(Connection {
            stream,
            read: Vec::with_capacity(4096),
            unwritten: 0,
            origin: None,
            sent: Instant::now(),
        });
        Ok(())
    }

    /// Writes what is left of the request; the rest waits for the socket to be writable.
    fn write(&mut self, slot: usize) {
        let request = self.target.request();
        let Some(connection) = self.slots[slot].as_mut() else {
            return;
        };
        // Over TLS, what the socket could not take before goes first.
        if let Err(e) = connection.stream.flush_pending() {
            return self.fail(slot, format!("writing the request: {e}"));
        }
        while connection.unwritten > 0 {
            let from = request.len() - connection.unwritten;
            match connection.stream.write(&request[from..]) {
                Ok(n) => connection.unwritten -= n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return self.fail(slot, format!("writing the request: {e}")),
            }
        }
    }

    /// Reads all the socket has (epoll is edge-triggered) and takes the answer if whole.
    fn read(&mut self, slot: usize) {
        let mut chunk = [0u8; 64 * 1024];
        let Some(connection) = self.slots[slot].as_mut() else {
            return;
        };
        let mut closed = false;
        loop {
            match connection.stream.read(&mut chunk) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => connection.read.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return self.fail(slot, format!("reading the answer: {e}")),
            }
        }
        if !connection.read.is_empty() {
            let Some(origin) = connection.origin else {
                return self.fail(slot, "the server sent bytes nobody asked for".into());
            };
            match self.target.answer(&connection.read) {
                Ok(None) => {}
                Ok(Some(Answer {
                    len,
                    outcome,
                    closes,
                })) => {
                    self.totals.record(origin, outcome);
                    connection.read.drain(..len);
                    connection.origin = None;
                    if !connection.read.is_empty() {
                        return self.fail(slot, "the server sent bytes nobody asked for".into());
                    }
                    if closes {
                        self.drop_connection(slot);
                    }
                    self.free.push(slot);
                    return;
                }
                Err(e) => return self.fail(slot, e),
            }
        }
        if closed {
            self.fail(slot, "the server closed the connection".into());
        }
    }

    /// Drops a connection whose state is no longer known, failing its request if it had
    /// one; its slot opens a new connection for its next request.
    fn fail(&mut self, slot: usize, why: String) {
        let in_flight = self.slots[slot].as_ref().and_then(|c| c.origin);
        self.drop_connection(slot);
        if let Some(origin) = in_flight {
            self.totals.record(origin, Err(why));
            self.free.push(slot);
        }
        // A connection the server closed while idle (say, after a keep-alive timeout) fails
        // nothing: its slot is already free and reopens when next used.
    }

    fn drop_connection(&mut self, slot: usize) {
        if let Some(mut connection) = self.slots[slot].take() {
            let _ = self.poll.registry().deregister(connection.stream.socket());
        }
    }

    fn fail_overdue(&mut self, now: Instant) {
        for slot in 0..self.slots.len() {
            let overdue = self.slots[slot]
                .as_ref()
                .is_some_and(|c| c.origin.is_some() && now - c.sent > ANSWER_LIMIT);
            if overdue {
                self.fail(slot, format!("no answer within {ANSWER_LIMIT:?}"));
            }
        }
    }
}
