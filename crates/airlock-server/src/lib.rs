//! The HTTP API of airlock (DESIGN.md §6): the only crate that knows axum.
//!
//! - [`router`]: every route, in one table.
//! - [`handlers`]: one module per resource; each handler authenticates, asks the gate,
//!   shapes the answer.
//! - [`auth`]: `Authorization: Bearer` as an extractor.
//! - [`body`]: JSON/text bodies (1 MiB), query strings and path ids, refused as problems.
//! - [`error`]: [`ApiError`], its status table and problem+json bodies.
//! - [`metrics`]: Prometheus counters.
//! - [`openapi`]: the spec served at `/openapi.json`, generated from the handlers.
//! - [`query`]: every API route refuses a query parameter it does not declare (422).
//! - [`web`]: the web inbox: server-rendered pages, session cookies, CSRF.
//! - [`notify`]: notifications of new approvals (webhooks, email, interactive Slack) with
//!   signed links.
//! - [`telemetry`]: OpenTelemetry spans of calls and of people's waits.
//! - [`serve`] (this file): run the router with the gate's expiry sweeper until shutdown.
//!
//! INVARIANT: handlers hold no state of their own; everything durable is behind the gate,
//! so any number of servers can share one store.

pub mod auth;
pub mod body;
pub mod error;
pub mod handlers;
pub mod metrics;
pub mod notify;
pub mod openapi;
pub mod query;
pub mod router;
pub mod telemetry;
pub mod web;

pub use error::ApiError;
pub use router::router;

use airlock_agent::Runtime;
use airlock_gate::Gate;
use metrics::Metrics;
use notify::config::Settings;
use notify::Notifier;
use std::io;
use std::sync::Arc;
use telemetry::Telemetry;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What every handler gets: one shared [`Shared`], so that the copy axum makes for each
/// extractor of each request is one reference count, not one per part.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The parts of [`AppState`], reached through it (`state.gate`).
pub struct Shared {
    pub gate: Gate,
    /// The built-in agent runtime (it shares the gate).
    pub runtime: Runtime,
    pub metrics: Arc<Metrics>,
    /// Cancelled on shutdown: long-polls answer with the call as it is and event streams
    /// end, so that graceful shutdown does not wait for them.
    pub shutdown: CancellationToken,
    /// The notifier, when channels are configured (the Slack action endpoint decides
    /// through it and updates its messages).
    pub notifier: Option<Notifier>,
    /// OpenTelemetry, on when the `OTEL_*` environment asks for it.
    pub telemetry: Telemetry,
}

impl AppState {
    /// No notifier, telemetry off.
    pub fn new(runtime: Runtime, shutdown: CancellationToken) -> AppState {
        AppState::with(runtime, shutdown, None, Telemetry::disabled())
    }

    pub fn with(
        runtime: Runtime,
        shutdown: CancellationToken,
        notifier: Option<Notifier>,
        telemetry: Telemetry,
    ) -> AppState {
        AppState(Arc::new(Shared {
            gate: runtime.gate().clone(),
            runtime,
            metrics: Arc::new(Metrics::default()),
            shutdown,
            notifier,
            telemetry,
        }))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What `serve_with` runs besides the API. Cheap to clone (a test server restarts with
/// the same options).
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The notification channels of the config file; the notifier runs beside the server
    /// when set.
    pub notifications: Option<Settings>,
    pub telemetry: Telemetry,
}

/// [`serve_with`] with no notifier and telemetry off.
pub async fn serve(
    listener: TcpListener,
    runtime: Runtime,
    shutdown: CancellationToken,
) -> io::Result<()> {
    serve_with(listener, runtime, ServeOptions::default(), shutdown).await
}

/// Serves the API on `listener` until `shutdown` is cancelled, then finishes the requests
/// in flight. Runs the gate's expiry sweeper, its audit sealer, its listener for other nodes' changes and
/// the runtime's background work (resuming runs, the outbox) for as long, with the same
/// token.
/// With `options`, also runs the notifier (same token) and records telemetry.
pub async fn serve_with(
    listener: TcpListener,
    runtime: Runtime,
    options: ServeOptions,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let gate = runtime.gate().clone();
    let notifier = match options.notifications {
        Some(settings) => {
            let url = format!("http://{}", listener.local_addr()?);
            Some(Notifier::new(gate.clone(), settings, &url).map_err(io::Error::other)?)
        }
        None => None,
    };
    let notifier_task = notifier.clone().map(|notifier| {
        let stop = shutdown.clone();
        tokio::spawn(async move { notifier.run(stop).await })
    });
    let background = tokio::spawn({
        let runtime = runtime.clone();
        let stop = shutdown.clone();
        async move { runtime.run_background(stop).await }
    });
    let sweeper = tokio::spawn({
        let gate = gate.clone();
        let stop = shutdown.clone();
        async move { gate.run_sweeper(stop).await }
    });
    // The audit chain's oldest records move into sealed segments at lulls (`seal.rs`).
    let sealer = tokio::spawn({
        let gate = gate.clone();
        let stop = shutdown.clone();
        async move { gate.run_sealer(stop).await }
    });
    // Other nodes' decisions wake this node's waiters (PostgreSQL; ends at once on SQLite).
    let listener_task = tokio::spawn({
        let gate = gate.clone();
        let stop = shutdown.clone();
        async move { gate.run_listener(stop).await }
    });
    let state = AppState::with(
        runtime.clone(),
        shutdown.clone(),
        notifier,
        options.telemetry.clone(),
    );
    let app = router(state);
    // Streams (SSE journals and event feeds) write small frames one after another: with
    // Nagle's algorithm on, a frame written while the previous one is unacknowledged waits
    // for the peer's delayed ACK (40 ms on Linux) before it leaves. Every write goes out
    // at once instead.
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY on a connection");
        }
    });
    // `into_make_service`: each connection shares the one router. Handing axum the bare
    // `Router` makes it rebuild the whole route table (`Router::with_state`) for every
    // connection accepted, ~36 KiB a connection, held as long as the connection lives:
    // with 10,000 long-polling callers that was half of the server's memory.
    let served = axum::serve(listener, app.into_make_service())
        .with_graceful_shutdown(shutdown.clone().cancelled_owned())
        .await;
    // The server may also end on an error: the sweeper stops with it either way.
    shutdown.cancel();
    if let Err(error) = sweeper.await {
        tracing::warn!(%error, "the expiry sweeper ended abnormally");
    }
    if let Err(error) = sealer.await {
        tracing::warn!(%error, "the audit sealer ended abnormally");
    }
    if let Err(error) = listener_task.await {
        tracing::warn!(%error, "the change listener ended abnormally");
    }
    if let Err(error) = background.await {
        tracing::warn!(%error, "the runtime's background work ended abnormally");
    }
    if let Some(task) = notifier_task {
        if let Err(error) = task.await {
            tracing::warn!(%error, "the notifier ended abnormally");
        }
    }
    runtime.shutdown().await;
    served
}
