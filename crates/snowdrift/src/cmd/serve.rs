//! `snowdrift serve`: the server.

use std::path::PathBuf;

use anyhow::{Context, Result};
use snowdrift_server::config::Flag;
use snowdrift_server::{Config, Plan, Reloader, Server};

/// Run the snowdrift server: every generator over HTTP, Leaf-compatible routes, tag admin,
/// /healthz, /readyz and /metrics.
///
/// With no config it serves the generators snowflake (Twitter layout), uuid7, ulid and
/// objectid, and segment tags from ./snowdrift.db (SQLite), on 127.0.0.1:8080. Every config key
/// can also be set as SNOWDRIFT_<SECTION>__<KEY> (e.g. SNOWDRIFT_SERVER__LISTEN); flags win
/// over both. A value of the wrong type, a key that has no effect where it is set, a value
/// outside its range and any other SNOWDRIFT_ variable are refused, naming the key and the
/// file's line, the variable or the flag.
///
/// On SIGHUP it reads the config again and puts its [[auth.token]]s in force without a
/// restart; a config that does not load keeps the old tokens, and changes to other sections
/// are logged as needing a restart.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift serve\n  snowdrift serve --config snowdrift.toml\n  snowdrift serve --listen 127.0.0.1:9000 --store postgres://root@127.0.0.1/test\n  snowdrift serve --config snowdrift.toml --check-config\n  snowdrift serve --config snowdrift.toml --check-config=connect\n  kill -HUP $(pidof snowdrift)    # reload the tokens\n\nThen:\n  curl 'http://127.0.0.1:8080/v1/ids/snowflake?count=3'\n  curl -X POST http://127.0.0.1:8080/v1/tags -d '{\"tag\": \"order\"}' -H 'content-type: application/json'\n  curl http://127.0.0.1:8080/api/segment/get/order"
)]
pub struct Args {
    /// The TOML config file.
    #[arg(long, value_name = "FILE", env = "SNOWDRIFT_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on (server.listen).
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::SocketAddr>,
    /// Segment store URL (store.url): sqlite://FILE, postgres://..., mysql://...,
    /// redis://..., zookeeper://...
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// PEM certificate chain for TLS (server.tls_cert); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for TLS (server.tls_key); needs --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Allow a non-loopback listen address although auth is off (server.insecure_bind).
    #[arg(long)]
    insecure_bind: bool,
    /// Validate the config, print the effective config (passwords masked) and exit. With
    /// `=connect`, also reach every store, worker registry, ticket server, Redis counter and
    /// etcd cluster it names (as start would, creating what start creates), list each, and
    /// exit non-zero naming those that cannot be reached.
    #[arg(
        long,
        value_name = "connect",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "plan"
    )]
    check_config: Option<CheckLevel>,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// How far `--check-config` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CheckLevel {
    /// Everything that needs no network (the default).
    Plan,
    /// Also reach every store, registry and server.
    Connect,
}

/// How logs are written (to stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per event.
    Json,
}

/// Runs the command. `--check-config` and start share one path: both build the plan, which
/// is every check start makes before it connects to anything.
pub fn run(args: Args) -> Result<()> {
    let plan = load(&args)?.plan()?;
    if let Some(level) = args.check_config {
        print!("{}", plan.config().to_masked_toml());
        // As TOML comments, so the output still parses; on stderr too, where a script that
        // keeps stdout still shows them.
        for warning in plan.warnings() {
            println!("# warning: {warning}");
            eprintln!("warning: {warning}");
        }
        if level == CheckLevel::Connect {
            return check_connections(&plan);
        }
        return Ok(());
    }
    init_logs(args.log_format);
    for warning in plan.warnings() {
        tracing::warn!("{warning}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(serve(args, plan))
}

/// `--check-config=connect`: reaches what the plan names and lists it after the config, as
/// TOML comments (so the output still parses); fails naming what could not be reached.
fn check_connections(plan: &Plan) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let reached = runtime.block_on(plan.reach());
    println!();
    let mut failed = Vec::new();
    for r in &reached {
        match &r.error {
            None => println!("# reached: {} {}", r.what, r.url),
            Some(e) => {
                println!("# NOT reached: {} {}: {e}", r.what, r.url);
                failed.push(format!("{} {} ({e})", r.what, r.url));
            }
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "{} of {} could not be reached: {}",
        failed.len(),
        reached.len(),
        failed.join("; ")
    )
}

/// The config from the file, the environment and the flags, each flag the highest layer for
/// the key it stands for (and named as the flag in messages).
fn load(args: &Args) -> Result<Config> {
    let mut flags = Vec::new();
    if let Some(listen) = args.listen {
        flags.push(Flag::new("--listen", "server.listen", listen.to_string()));
    }
    if let Some(store) = &args.store {
        flags.push(Flag::new("--store", "store.url", store.clone()));
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        flags.push(Flag::new(
            "--tls-cert",
            "server.tls_cert",
            cert.display().to_string(),
        ));
        flags.push(Flag::new(
            "--tls-key",
            "server.tls_key",
            key.display().to_string(),
        ));
    }
    if args.insecure_bind {
        flags.push(Flag::new("--insecure-bind", "server.insecure_bind", "true"));
    }
    Ok(Config::load_with_flags(
        args.config.as_deref(),
        std::env::vars(),
        flags,
    )?)
}

async fn serve(args: Args, plan: Plan) -> Result<()> {
    let listen = plan.listen();
    let tls = plan.server().tls_cert.is_some();
    // Before the connection cap is worked out from it: the cap, not the kernel, should
    // decide how many clients there may be.
    match snowdrift_server::conn::raise_open_file_limit() {
        Ok((before, after)) => {
            tracing::info!(before, after, "open-file limit raised to the hard limit")
        }
        Err(e) => tracing::warn!(error = %e, "could not raise the open-file limit"),
    }
    let server = Server::from_plan(plan).await?;
    // Before the "listening" line, so a SIGHUP, SIGTERM or SIGINT sent once the server is
    // up never finds the default action (which ends the process).
    reload_on_sighup(args, server.reloader())?;
    let stop = shutdown_signal()?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "snowdrift serving");
    // Scripts (and tests binding port 0) read the address from this line.
    let scheme = if tls { "https" } else { "http" };
    if let Some(resp) = server.resp_addr() {
        eprintln!("snowdrift: RESP listening on redis://{resp}");
    }
    eprintln!("snowdrift: listening on {scheme}://{addr}");
    snowdrift_server::run(listener, server, stop).await?;
    tracing::info!("snowdrift stopped");
    Ok(())
}

/// Reloads the tokens from the config (file, environment and flags, as at start) on every
/// SIGHUP, for as long as the runtime runs.
#[cfg(unix)]
fn reload_on_sighup(args: Args, reloader: Reloader) -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups = signal(SignalKind::hangup()).context("cannot listen for SIGHUP")?;
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            reload(&args, &reloader);
        }
    });
    Ok(())
}

/// Without SIGHUP there is nothing to listen for: tokens change at a restart.
#[cfg(not(unix))]
fn reload_on_sighup(_args: Args, _reloader: Reloader) -> Result<()> {
    Ok(())
}

/// One reload, logged: what changed, what needs a restart, or why nothing did.
#[cfg_attr(not(unix), allow(dead_code))]
fn reload(args: &Args, reloader: &Reloader) {
    let reloaded = load(args).and_then(|config| Ok(reloader.reload(&config)?));
    match reloaded {
        Ok(r) => {
            tracing::info!("config reloaded: {r}");
            if !r.needs_restart.is_empty() {
                tracing::warn!(
                    "config reload: changes to [{}] need a restart; they were not applied",
                    r.needs_restart.join("], [")
                );
            }
        }
        Err(e) => tracing::error!("config reload failed, the tokens in force stay: {e:#}"),
    }
}

/// A future that completes on SIGINT or SIGTERM, listening from this call on rather than
/// from its first poll: the accept loop polls it only between connections, and a signal
/// that arrives before then (under load, after the "listening" line and the first
/// requests) would otherwise find the default action and end the process without the
/// graceful stop that hands its worker ID back.
fn shutdown_signal() -> Result<impl Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    let stopped = {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        let mut int = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
        async move {
            tokio::select! {
                _ = term.recv() => {},
                _ = int.recv() => {},
            }
        }
    };
    #[cfg(not(unix))]
    let stopped = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    Ok(async move {
        stopped.await;
        tracing::info!("shutting down: finishing requests in flight");
    })
}

fn init_logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SNOWDRIFT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(super::colour_logs())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
