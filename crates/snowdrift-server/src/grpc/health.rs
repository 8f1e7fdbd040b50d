//! The standard health service (`grpc.health.v1.Health`) following `/readyz`: the whole
//! server (`""`) and `snowdrift.v1.IdService` are SERVING while every generator can issue
//! and NOT_SERVING while one cannot, checked every second, so a gRPC load balancer or
//! Kubernetes' gRPC probe drops a node that lost its worker lease as an HTTP probe of
//! `/readyz` would. Once the server starts shutting down they are NOT_SERVING for good.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tonic::server::NamedService;
use tonic_health::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::server::HealthReporter;

use super::IdApi;
use super::pb::id_service_server::IdServiceServer;
use crate::error::Error;
use crate::state::AppState;

/// How often readiness is checked.
const EVERY: Duration = Duration::from_secs(1);

/// A check that takes longer counts as not ready: a store or coordinator that does not
/// answer is what it would find.
const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// The services whose status follows readiness.
const FOLLOWING: [&str; 2] = ["", IdServiceServer::<IdApi>::NAME];

/// Keeps the health service's statuses current until [`stop`](Self::stop).
#[derive(Debug)]
pub struct Follower {
    reporter: HealthReporter,
    task: JoinHandle<()>,
}

/// The health service for `state`'s generators, its statuses set from a first check, and
/// the follower that keeps them current.
pub async fn start(state: Arc<AppState>) -> (Follower, HealthServer<impl Health>) {
    let (reporter, service) = tonic_health::server::health_reporter();
    let ready = check(&state).await;
    set(&reporter, &ready).await;
    let task = tokio::spawn(follow(state, reporter.clone(), ready.is_ok()));
    (Follower { reporter, task }, service)
}

impl Follower {
    /// Stops following, marks the services NOT_SERVING and then forgets them, which ends
    /// the Watch streams (after they report NOT_SERVING) that would otherwise hold a
    /// graceful shutdown until its timeout.
    pub async fn stop(mut self) {
        self.task.abort();
        // Once it has stopped, nothing can set a service SERVING again.
        let _ = (&mut self.task).await;
        for name in FOLLOWING {
            self.reporter
                .set_service_status(name, ServingStatus::NotServing)
                .await;
            self.reporter.clear_service_status(name).await;
        }
    }
}

/// Checks every [`EVERY`] and updates the statuses when readiness changes.
async fn follow(state: Arc<AppState>, reporter: HealthReporter, mut ready: bool) {
    let mut every = tokio::time::interval(EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate, and `start` has just checked.
    every.tick().await;
    loop {
        every.tick().await;
        let now = check(&state).await;
        if now.is_ok() != ready {
            ready = now.is_ok();
            set(&reporter, &now).await;
        }
    }
}

async fn set(reporter: &HealthReporter, ready: &Result<(), Error>) {
    let status = match ready {
        Ok(()) => ServingStatus::Serving,
        Err(why) => {
            tracing::warn!(reason = %why, "gRPC health: NOT_SERVING, as /readyz says");
            ServingStatus::NotServing
        }
    };
    for name in FOLLOWING {
        reporter.set_service_status(name, status).await;
    }
}

/// Ok when every generator can issue now, else which cannot and why.
async fn check(state: &AppState) -> Result<(), Error> {
    let report = match tokio::time::timeout(
        CHECK_TIMEOUT,
        crate::state::readiness::check(&state.generators),
    )
    .await
    {
        Ok(report) => report,
        Err(_) => {
            return Err(Error::unavailable(format!(
                "the readiness check took over {CHECK_TIMEOUT:?}"
            )));
        }
    };
    let not_ready: Vec<String> = report
        .iter()
        .filter(|g| !g.ready)
        .map(|g| {
            format!(
                "{:?}: {}",
                g.name,
                g.reason.as_deref().unwrap_or("not ready")
            )
        })
        .collect();
    if not_ready.is_empty() {
        Ok(())
    } else {
        Err(Error::unavailable(not_ready.join("; ")))
    }
}
