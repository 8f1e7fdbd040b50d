//! One node's ZooKeeper client in the simulation: [`ZkConnector`] and [`ZkSession`] over
//! the simulated network, keeping a session as `zookeeper-client` 0.11 (what the registry
//! runs on in production) keeps one.
//!
//! As that client does: from the negotiated timeout `T` it takes a tick of `T/20` (or an
//! eighth of the connection timeout, when one is given and below `3T/5`); it pings after
//! three ticks without sending, and drops the connection after eight ticks without hearing
//! anything (in-flight requests fail with `ConnectionLoss`, and may have taken effect);
//! it then reconnects, first at once, then after 100 ms, 200 ms, 400 ms, ... (plus up to
//! 100 ms of jitter), until `7T/5` after it last heard from the server, when it gives the
//! session up as expired by itself. A request made while it is disconnected waits for the
//! reconnection. It learns that the server expired the session only when a reconnect (or a
//! request) is answered so; from then on every request fails with `SessionExpired`.
//! Opening a session tries the same way until the asked timeout has passed (`Timeout`).
//! While the node's process is paused, the client does nothing (no pings): it sees the
//! time gone when it runs again. A killed process's sessions stop pinging and expire on
//! the server (a killed client closes nothing). Not modelled: `CloseSession` when the
//! client is dropped (a graceful restart's sessions expire too; its lease znode was
//! deleted by the release before), and ordering per connection (each message has its own
//! delay).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rand::RngExt;
use snowdrift_core::clock::Clock;
use snowdrift_store::Error;
use snowdrift_store::worker::sim::{
    Mode, MultiWriteError, Stat, WriteOp, ZkConnector, ZkError, ZkFuture, ZkSession,
};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::clock::SimClock;
use crate::network::send;
use crate::world::{World, lock};
use crate::zookeeper::{Answer, Refused, Request};

/// Node `node`'s ZooKeeper client.
#[derive(Debug, Clone)]
pub struct SimConnector {
    world: Arc<World>,
    node: usize,
    clock: SimClock,
}

impl SimConnector {
    /// The client of node `node`, whose process reads `clock`.
    pub fn new(world: Arc<World>, node: usize, clock: SimClock) -> Self {
        Self { world, node, clock }
    }
}

impl ZkConnector for SimConnector {
    fn connect(
        &self,
        timeout: Duration,
        connection_timeout: Option<Duration>,
    ) -> ZkFuture<'_, Arc<dyn ZkSession>> {
        Box::pin(async move {
            let shared = Arc::new(Shared {
                world: self.world.clone(),
                node: self.node,
                connection_timeout,
                client: Mutex::new(Client::new(timeout, connection_timeout)),
                changes: Arc::new(Notify::new()),
            });
            let deadline = {
                let c = lock(&shared.client);
                c.last_recv + c.timeout
            };
            if !start(&Arc::downgrade(&shared), deadline).await {
                return Err(ZkError::Timeout);
            }
            tokio::spawn(serve(Arc::downgrade(&shared)));
            Ok(Arc::new(SimSession { shared }) as Arc<dyn ZkSession>)
        })
    }

    fn refused(&self, _path: &str, e: ZkError) -> Error {
        e.into()
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Disconnected,
    Connected { epoch: u64 },
    Expired,
}

/// The client's view of its session.
#[derive(Debug)]
struct Client {
    id: i64,
    timeout: Duration,
    ping_every: Duration,
    conn_timeout: Duration,
    expire_after: Duration,
    state: State,
    /// Which connection: moves on each time one drops.
    conn: u64,
    last_recv: Instant,
    last_send: Instant,
    ping_out: bool,
    /// Answers that reached the socket while the process was paused, not read yet.
    unread: u32,
}

impl Client {
    fn new(timeout: Duration, connection_timeout: Option<Duration>) -> Self {
        let now = Instant::now();
        let mut c = Self {
            id: 0,
            timeout,
            ping_every: Duration::ZERO,
            conn_timeout: Duration::ZERO,
            expire_after: Duration::ZERO,
            state: State::Disconnected,
            conn: 0,
            last_recv: now,
            last_send: now,
            ping_out: false,
            unread: 0,
        };
        c.reset_timeout(timeout, connection_timeout);
        c
    }

    /// zookeeper-client's `reset_timeout`.
    fn reset_timeout(&mut self, timeout: Duration, connection_timeout: Option<Duration>) {
        let tick = match connection_timeout {
            Some(c) if !c.is_zero() && c <= timeout * 3 / 5 => c / 8,
            _ => timeout / 20,
        }
        .max(Duration::from_millis(1));
        self.ping_every = Duration::from_secs(10).min(3 * tick);
        self.conn_timeout = 8 * tick;
        self.timeout = timeout.max(self.conn_timeout);
        self.expire_after = self.timeout * 7 / 5;
    }

    fn drop_connection(&mut self) {
        if let State::Connected { .. } = self.state {
            self.state = State::Disconnected;
            self.conn += 1;
            self.ping_out = false;
        }
    }
}

#[derive(Debug)]
struct Shared {
    world: Arc<World>,
    node: usize,
    connection_timeout: Option<Duration>,
    client: Mutex<Client>,
    /// Wakes the waiters on each change of the state or connection. (A `Notify`, whose
    /// waiters wake in the order they came: tokio's `watch` picks one of eight lists at
    /// random for each waiter, which would make a seed's run differ from its replay.)
    changes: Arc<Notify>,
}

impl Shared {
    fn update<T>(&self, f: impl FnOnce(&mut Client) -> T) -> T {
        let t = f(&mut lock(&self.client));
        self.changes.notify_waiters();
        t
    }

    /// What an answer heard on connection `conn` does to the session: the server closed
    /// the connection, or expired the session.
    fn heard(&self, conn: u64, refused: Option<&Refused>) {
        self.update(|c| {
            if c.conn != conn {
                return;
            }
            c.last_recv = Instant::now();
            match refused {
                None => {}
                Some(Refused::Closed) => c.drop_connection(),
                Some(Refused::Expired) => c.state = State::Expired,
            }
        });
    }
}

/// Waits for an answer that arrived for the process of `shared` to read it: when it came
/// while the process was paused, it waits in the socket, counted as unread until then.
async fn read_answer(shared: &Shared) {
    if !shared.world.paused(shared.node) {
        return;
    }
    shared.update(|c| c.unread += 1);
    shared.world.awake(shared.node).await;
    shared.update(|c| c.unread -= 1);
}

/// Waits for `rx`'s answer; a lost message is an answer that never comes.
async fn heard<T>(rx: tokio::sync::oneshot::Receiver<T>) -> T {
    match rx.await {
        Ok(answer) => answer,
        Err(_) => std::future::pending().await,
    }
}

/// Connects (or reconnects) the session until `deadline`: `false` when it could not (the
/// session is expired then, by the client's own count or by the server's answer).
async fn start(weak: &Weak<Shared>, deadline: Instant) -> bool {
    let mut attempt = 0u32;
    loop {
        let Some(shared) = weak.upgrade() else {
            return false;
        };
        let (world, node) = (shared.world.clone(), shared.node);
        drop(shared);
        if attempt > 0 {
            // zookeeper-client's backoff on one host: 100 ms doubling, plus jitter.
            let jitter = Duration::from_millis(world.rng().random_range(0..100));
            let backoff = Duration::from_millis(100) * 2u32.saturating_pow(attempt - 1) + jitter;
            let left = deadline.saturating_duration_since(Instant::now());
            tokio::time::sleep(backoff.min(left)).await;
            world.awake(node).await;
            if Instant::now() >= deadline {
                break;
            }
        }
        attempt += 1;
        let Some(shared) = weak.upgrade() else {
            return false;
        };
        let (id, timeout, wait) = {
            let c = lock(&shared.client);
            let left = deadline.saturating_duration_since(Instant::now());
            (c.id, c.timeout, c.conn_timeout.min(left))
        };
        drop(shared);
        let rx = send(&world, node, move |coordinator, now| {
            coordinator.zookeeper().connect(id, timeout, now)
        });
        let answer = tokio::time::timeout(wait, heard(rx)).await;
        world.awake(node).await;
        let Some(shared) = weak.upgrade() else {
            return false;
        };
        match answer {
            Ok(Ok((id, negotiated, epoch))) => {
                let connection_timeout = shared.connection_timeout;
                shared.update(|c| {
                    c.id = id;
                    c.reset_timeout(negotiated, connection_timeout);
                    c.state = State::Connected { epoch };
                    c.last_recv = Instant::now();
                    c.last_send = c.last_recv;
                });
                return true;
            }
            Ok(Err(Refused::Expired)) => {
                shared.update(|c| c.state = State::Expired);
                return false;
            }
            // The server closed the connection (no leader), or did not answer in time.
            Ok(Err(Refused::Closed)) | Err(_) => {}
        }
    }
    if let Some(shared) = weak.upgrade() {
        shared.update(|c| c.state = State::Expired);
    }
    false
}

/// The client's own work while the process lives: pings, noticing a dead connection, and
/// reconnecting. Holds the session only between waits, so it ends with the process.
async fn serve(weak: Weak<Shared>) {
    loop {
        let Some(shared) = weak.upgrade() else {
            return;
        };
        let (world, node, changes) = (shared.world.clone(), shared.node, shared.changes.clone());
        let changed = changes.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let (state, next) = {
            let c = lock(&shared.client);
            let dead_at = c.last_recv + c.conn_timeout;
            let ping_at = c.last_send + c.ping_every;
            let next = if c.ping_out {
                dead_at
            } else {
                dead_at.min(ping_at)
            };
            (c.state, next)
        };
        drop(shared);
        match state {
            State::Expired => return,
            State::Disconnected => {
                let deadline = {
                    let Some(shared) = weak.upgrade() else {
                        return;
                    };
                    let c = lock(&shared.client);
                    c.last_recv + c.expire_after
                };
                if !start(&weak, deadline).await {
                    return;
                }
            }
            State::Connected { epoch } => {
                // Woken early by a change (a request sent, a connection dropped).
                tokio::select! {
                    biased;
                    () = changed => continue,
                    () = tokio::time::sleep_until(next) => {}
                }
                let was_paused = world.paused(node);
                world.awake(node).await;
                // Back from a pause, the client's loop reads what reached the socket
                // meanwhile before or after its timer checks the connection: either, as
                // the branches of its select are polled in no set order.
                let read_first = was_paused && world.rng().random_bool(0.5);
                if read_first && let Some(shared) = weak.upgrade() {
                    shared.update(|c| {
                        if c.unread > 0 {
                            c.last_recv = Instant::now();
                        }
                    });
                }
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                let now = Instant::now();
                let ping = shared.update(|c| {
                    if c.state != (State::Connected { epoch }) {
                        None
                    } else if now >= c.last_recv + c.conn_timeout {
                        c.drop_connection();
                        None
                    } else if !c.ping_out && now >= c.last_send + c.ping_every {
                        c.ping_out = true;
                        c.last_send = now;
                        Some((c.id, c.conn))
                    } else {
                        None
                    }
                });
                drop(shared);
                if let Some((id, conn)) = ping {
                    tokio::spawn(ping_once(world, node, weak.clone(), id, conn, epoch));
                }
            }
        }
    }
}

/// One ping and what its answer does.
async fn ping_once(
    world: Arc<World>,
    node: usize,
    weak: Weak<Shared>,
    id: i64,
    conn: u64,
    epoch: u64,
) {
    let rx = send(&world, node, move |coordinator, now| {
        coordinator
            .zookeeper()
            .handle(id, epoch, Request::Ping, now)
    });
    let answer = heard(rx).await;
    let Some(shared) = weak.upgrade() else {
        return;
    };
    read_answer(&shared).await;
    shared.heard(conn, answer.as_ref().err());
    shared.update(|c| {
        if c.conn == conn {
            c.ping_out = false;
        }
    });
}

/// A session of [`SimConnector`].
#[derive(Debug)]
struct SimSession {
    shared: Arc<Shared>,
}

impl SimSession {
    /// Sends `request` once the session is connected, and waits for its answer or for the
    /// connection to drop.
    async fn call(&self, request: Request) -> Result<Answer, MultiWriteError> {
        let shared = &self.shared;
        let (world, node) = (shared.world.clone(), shared.node);
        world.awake(node).await;
        let failed = |e| MultiWriteError::RequestFailed { source: e };
        let (id, conn, epoch) = loop {
            let changed = shared.changes.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let (state, id, conn) = {
                let c = lock(&shared.client);
                (c.state, c.id, c.conn)
            };
            match state {
                State::Expired => return Err(failed(ZkError::SessionExpired)),
                State::Connected { epoch } => break (id, conn, epoch),
                State::Disconnected => changed.await,
            }
        };
        shared.update(|c| c.last_send = Instant::now());
        let rx = send(&world, node, move |coordinator, now| {
            coordinator.zookeeper().handle(id, epoch, request, now)
        });
        let dropped = async {
            loop {
                let changed = shared.changes.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if lock(&shared.client).conn != conn {
                    return;
                }
                changed.await;
            }
        };
        let answer = tokio::select! {
            biased;
            answer = heard(rx) => Some(answer),
            () = dropped => None,
        };
        match answer {
            Some(_) => read_answer(shared).await,
            None => world.awake(node).await,
        }
        let Some(answer) = answer else {
            return Err(failed(ZkError::ConnectionLoss));
        };
        if lock(&shared.client).conn != conn {
            return Err(failed(ZkError::ConnectionLoss));
        }
        shared.heard(conn, answer.as_ref().err());
        match answer {
            Ok(outcome) => outcome,
            Err(Refused::Closed) => Err(failed(ZkError::ConnectionLoss)),
            Err(Refused::Expired) => Err(failed(ZkError::SessionExpired)),
        }
    }

    async fn single(&self, request: Request) -> Result<Answer, ZkError> {
        self.call(request).await.map_err(ZkError::from)
    }
}

fn unexpected<T>(answer: Answer) -> Result<T, ZkError> {
    Err(ZkError::UnexpectedError(format!(
        "the simulated ensemble answered {answer:?}"
    )))
}

impl ZkSession for SimSession {
    fn session_id(&self) -> i64 {
        lock(&self.shared.client).id
    }

    fn session_timeout(&self) -> Duration {
        lock(&self.shared.client).timeout
    }

    fn is_terminated(&self) -> bool {
        lock(&self.shared.client).state == State::Expired
    }

    fn create<'a>(&'a self, path: &'a str, data: &'a [u8], mode: Mode) -> ZkFuture<'a, ()> {
        Box::pin(async move {
            match self
                .single(Request::Create(path.to_string(), data.to_vec(), mode))
                .await?
            {
                Answer::Done => Ok(()),
                other => unexpected(other),
            }
        })
    }

    fn get_data<'a>(&'a self, path: &'a str) -> ZkFuture<'a, (Vec<u8>, Stat)> {
        Box::pin(async move {
            match self.single(Request::GetData(path.to_string())).await? {
                Answer::Data(data, stat) => Ok((data, stat)),
                other => unexpected(other),
            }
        })
    }

    fn check_stat<'a>(&'a self, path: &'a str) -> ZkFuture<'a, Option<Stat>> {
        Box::pin(async move {
            match self.single(Request::Exists(path.to_string())).await? {
                Answer::Stat(stat) => Ok(stat),
                other => unexpected(other),
            }
        })
    }

    fn list_children<'a>(&'a self, path: &'a str) -> ZkFuture<'a, Vec<String>> {
        Box::pin(async move {
            match self.single(Request::Children(path.to_string())).await? {
                Answer::Children(names) => Ok(names),
                other => unexpected(other),
            }
        })
    }

    fn set_data<'a>(
        &'a self,
        path: &'a str,
        data: &'a [u8],
        version: Option<i32>,
    ) -> ZkFuture<'a, Stat> {
        Box::pin(async move {
            match self
                .single(Request::SetData(path.to_string(), data.to_vec(), version))
                .await?
            {
                Answer::Stat(Some(stat)) => Ok(stat),
                other => unexpected(other),
            }
        })
    }

    fn delete<'a>(&'a self, path: &'a str, version: Option<i32>) -> ZkFuture<'a, ()> {
        Box::pin(async move {
            match self
                .single(Request::Delete(path.to_string(), version))
                .await?
            {
                Answer::Done => Ok(()),
                other => unexpected(other),
            }
        })
    }

    fn sync<'a>(&'a self, _path: &'a str) -> ZkFuture<'a, ()> {
        Box::pin(async move {
            match self.single(Request::Sync).await? {
                Answer::Done => Ok(()),
                other => unexpected(other),
            }
        })
    }

    fn multi(&self, ops: Vec<WriteOp>) -> ZkFuture<'_, (), MultiWriteError> {
        Box::pin(async move {
            match self.call(Request::Multi(ops)).await? {
                Answer::Done => Ok(()),
                other => {
                    unexpected(other).map_err(|e| MultiWriteError::RequestFailed { source: e })
                }
            }
        })
    }

    /// No client of the simulated ensemble authenticates: as the real client without a
    /// user, there is nothing to secure.
    fn secure<'a>(&'a self, _path: &'a str, _tree: bool) -> ZkFuture<'a, (), Error> {
        Box::pin(async { Ok(()) })
    }
}
