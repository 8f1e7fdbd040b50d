//! Each endpoint's gRPC health service (`grpc.health.v1.Health`, `Watch` on
//! `snowdrift.v1.IdService`), followed in the background for as long as the client lives.
//! A snowdrift server says NOT_SERVING while one of its generators cannot issue (a lost
//! worker lease, a store it cannot reach) and when it starts shutting down, so the client
//! stops sending it fetches before a fetch fails. A watch that breaks (the server went
//! away) counts as not serving and is tried again with the client's backoff; the first
//! SERVING after that brings the endpoint back.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;
use tonic::Code;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use crate::endpoints::{Endpoints, Health, backoff, lock};

/// The service whose status is followed: the one fetches call.
const SERVICE: &str = "snowdrift.v1.IdService";
/// `ServingStatus::Serving` in the health protocol.
const SERVING: i32 = 1;

/// Starts a watcher per endpoint on `runtime`; each ends when `alive` is dropped (the
/// client with it).
fn watch_all(endpoints: &Endpoints, runtime: &tokio::runtime::Handle, alive: &watch::Sender<()>) {
    for e in &endpoints.list {
        let (url, channel, health) = (e.url.clone(), e.channel.clone(), e.health.clone());
        let (stopped, backoff) = (alive.subscribe(), endpoints.backoff);
        runtime.spawn(async move {
            let mut stopped = stopped;
            tokio::select! {
                () = follow(&url, channel, &health, backoff) => {}
                _ = stopped.changed() => {}
            }
        });
    }
}

/// Watches one endpoint until the server says it has no health service.
async fn follow(url: &str, channel: Channel, health: &Mutex<Health>, pace: (Duration, Duration)) {
    let mut client = HealthClient::new(channel);
    let mut broken = 0u32;
    loop {
        let request = HealthCheckRequest {
            service: SERVICE.to_string(),
        };
        match client.watch(request).await {
            Ok(stream) => {
                let mut stream = stream.into_inner();
                while let Ok(Some(answer)) = stream.message().await {
                    broken = 0;
                    set(url, health, answer.status == SERVING);
                }
            }
            // An older server, or a proxy that passes only the ID service: nothing to follow.
            Err(status) if status.code() == Code::Unimplemented => {
                lock(health).serving = None;
                return;
            }
            Err(_) => {}
        }
        set(url, health, false);
        broken += 1;
        tokio::time::sleep(backoff(pace, broken)).await;
    }
}

fn set(url: &str, health: &Mutex<Health>, serving: bool) {
    let mut h = lock(health);
    if h.serving != Some(serving) {
        if serving {
            tracing::info!(endpoint = url, "snowdrift endpoint's health: SERVING");
        } else if h.serving == Some(true) {
            tracing::warn!(endpoint = url, "snowdrift endpoint's health: not serving");
        }
        h.serving = Some(serving);
    }
}

/// Keeps the watchers alive: dropped with the client, which ends them.
#[derive(Debug)]
pub(crate) struct Watchers {
    _alive: watch::Sender<()>,
}

impl Watchers {
    pub(crate) fn start(endpoints: &Endpoints, runtime: &tokio::runtime::Handle) -> Self {
        let (alive, _) = watch::channel(());
        watch_all(endpoints, runtime, &alive);
        Self { _alive: alive }
    }
}
