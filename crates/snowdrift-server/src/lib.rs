//! # snowdrift-server
//!
//! The snowdrift server: every ID kind over HTTP, with Leaf-compatible routes, tag admin,
//! health and Prometheus metrics, shaped after mini-redis: the library exposes [`run`] over a
//! bound listener and a shutdown future; the binary only parses flags and binds.
//!
//! ```no_run
//! # async fn demo() -> Result<(), snowdrift_server::StartError> {
//! use snowdrift_server::{Config, Server};
//! let plan = Config::load(None, std::env::vars())?.plan()?;
//! let listener = tokio::net::TcpListener::bind(plan.listen()).await?;
//! let server = Server::from_plan(plan).await?;
//! snowdrift_server::run(listener, server, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod answer;
pub mod auth;
pub mod build_info;
pub mod config;
pub mod conn;
mod deadline;
pub mod decode;
pub mod error;
mod fast;
pub mod format;
pub mod grpc;
mod handover;
pub mod http;
pub mod kinds;
pub mod metrics;
pub mod open_coordinator;
pub mod plan;
pub mod resp;
mod serve;
pub mod source;
pub mod state;
pub mod tls;
mod trim;
pub mod tso;

use std::future::Future;

use std::sync::Arc;

pub use config::Config;
pub use error::{ConfigError, Error, ErrorKind, StartError};
pub use plan::Plan;
pub use state::{AuthSwitch, Reloaded, Reloader};

use state::{AppState, Generators};

/// A server ready to serve: stores connected, generators built.
#[derive(Debug)]
pub struct Server {
    state: Arc<AppState>,
    max_body: usize,
    max_stream: u64,
    max_streams: usize,
    grpc_max_message: usize,
    shutdown_timeout: std::time::Duration,
    /// The RESP listener, bound at start when `server.resp_listen` is set.
    resp: Option<tokio::net::TcpListener>,
    tls: Option<tls::Tls>,
    reloader: Reloader,
}

impl Server {
    /// Checks and resolves `config` ([`Config::plan`]), then starts from it.
    pub async fn start(config: &Config) -> Result<Self, StartError> {
        Self::from_plan(config.plan()?).await
    }

    /// Connects what `plan` names and starts its generators; fails with a message naming
    /// the generator or store at fault.
    pub async fn from_plan(plan: Plan) -> Result<Self, StartError> {
        metrics::install_recorder();
        metrics::spawn_upkeep();
        let generators = Generators::start(&plan).await?;
        let resp = resp::bind(plan.server().resp_listen).await?;
        let Plan {
            config,
            tls,
            tokens,
            ..
        } = plan;
        let limits = &config.limits;
        let conns = conn::Admission::new(conn::ConnLimits::resolve(limits));
        tracing::info!(
            max_connections = conns.limits().max_connections,
            "connections beyond limits.max_connections are refused"
        );
        let state = Arc::new(AppState {
            generators,
            max_count: config.limits.max_count,
            auth: auth::Auth::new(tokens),
            conns,
            leaf_errors: config.leaf.errors,
            tinyid: config.tinyid.enabled,
        });
        Ok(Self {
            reloader: Reloader::new(state.clone(), &config),
            state,
            max_body: config.limits.max_body,
            max_stream: config.limits.max_stream,
            max_streams: config.limits.max_streams,
            grpc_max_message: config.limits.grpc_max_message,
            shutdown_timeout: config.server.shutdown_timeout,
            resp,
            tls,
        })
    }

    /// The address the RESP listener is bound to (`server.resp_listen`, with the port
    /// the system chose for port 0), or `None` when it is off.
    pub fn resp_addr(&self) -> Option<std::net::SocketAddr> {
        self.resp.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// A handle that reloads the tokens while the server runs (`snowdrift serve` calls it on
    /// `SIGHUP`); it stays valid after [`run`] takes the server.
    pub fn reloader(&self) -> Reloader {
        self.reloader.clone()
    }

    /// The generators, for status.
    pub fn generators(&self) -> &Generators {
        &self.state.generators
    }
}

/// Serves `server` on `listener` (and its RESP listener, if any) until `shutdown` completes,
/// then stops accepting, finishes the requests in flight (waiting for them at most
/// `server.shutdown_timeout`), and stops
/// the snowflake generators: their final high-water marks are written and their worker IDs
/// released.
pub async fn run(
    listener: tokio::net::TcpListener,
    server: Server,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let (shutdown, resp) = resp::spawn(
        server.resp,
        server.state.clone(),
        server.shutdown_timeout,
        shutdown,
    );
    let calls = grpc::limit::CallLimit::new(server.max_streams);
    let watched = vec![server.state.conns.watched(), calls.watched()];
    let (grpc, shutdown) = grpc::router(
        server.state.clone(),
        server.max_stream,
        server.grpc_max_message,
        calls,
        shutdown,
    )
    .await;
    let app = http::router(server.state.clone(), server.max_body).merge(grpc);
    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let signal = async move {
        shutdown.await;
        let _ = stopping_tx.send(());
    };
    let admission = server.state.conns.clone();
    let serving: std::pin::Pin<Box<dyn Future<Output = ()> + Send>> = match server.tls.clone() {
        Some(acceptor) => Box::pin(serve::serve(
            tls::TlsListener::new(listener, acceptor, admission)?,
            app,
            server.state.clone(),
            signal,
        )),
        None => Box::pin(serve::serve(
            conn::Admitted::new(listener, admission),
            app,
            server.state.clone(),
            signal,
        )),
    };
    // Started once nothing can fail before the end of this function, which stops it.
    let trimmer = trim::spawn(watched);
    tokio::pin!(serving);
    tokio::select! {
        () = &mut serving => {}
        Ok(()) = stopping_rx => {
            if tokio::time::timeout(server.shutdown_timeout, serving).await.is_err() {
                tracing::warn!(
                    timeout = ?server.shutdown_timeout,
                    "requests still in flight at the shutdown timeout were cut off"
                );
            }
        }
    }
    trimmer.abort();
    resp.finish().await;
    server.state.generators.shutdown().await;
    Ok(())
}
