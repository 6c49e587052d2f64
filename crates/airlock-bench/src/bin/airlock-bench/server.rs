//! The servers under load: a real airlock (gate over a store, `airlock_server::serve` on
//! `127.0.0.1:0`, with the built-in runtime) and, as the limit of the HTTP stack itself, a
//! bare axum endpoint that parses the same JSON body and answers a JSON body.
//!
//! Both run on the benchmark's tokio runtime in this process; the load comes from another
//! process (`load.rs`), so the two do not share a scheduler.

use airlock_agent::{Runtime, RuntimeConfig};
use airlock_gate::clock::SystemClock;
use airlock_gate::Gate;
use airlock_store::postgres::{PgOptions, PostgresStore};
use airlock_store::sqlite::SqliteStore;
use airlock_store::Store;
use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::sync::Arc;
use tempfile::TempDir;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The database an airlock runs on.
#[derive(Debug, Clone)]
pub enum Backend {
    /// `airlock.db` in the server's temporary data folder.
    Sqlite,
    /// A fresh database (from `pg::Database::create`).
    Postgres { url: String },
}

impl Backend {
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres { .. } => "postgres",
        }
    }
}

/// A running airlock with workspace `default` and its owner.
pub struct Airlock {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    pub owner_token: String,
    pub http: reqwest::Client,
    pub gate: Gate,
    shutdown: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
    // INVARIANT: declared last, so the folder outlives everything that uses it.
    pub data: TempDir,
}

impl Airlock {
    /// Starts a server the way `airlock serve` does (as the testkit does, minus its test
    /// shortcuts): store, gate, bootstrap, runtime, listener.
    pub async fn start(backend: &Backend) -> anyhow::Result<Airlock> {
        Airlock::start_with(backend, airlock_server::ServeOptions::default()).await
    }

    /// The same with `options` (telemetry on, for `telemetry.rs`).
    pub async fn start_with(
        backend: &Backend,
        options: airlock_server::ServeOptions,
    ) -> anyhow::Result<Airlock> {
        let data = TempDir::new()?;
        let store: Arc<dyn Store> = match backend {
            Backend::Sqlite => Arc::new(SqliteStore::open(&data.path().join("airlock.db")).await?),
            Backend::Postgres { url } => {
                Arc::new(PostgresStore::connect(url, PgOptions::default()).await?)
            }
        };
        let gate = Gate::new(store, Arc::new(SystemClock)).await?;
        let owner_token = gate
            .bootstrap("default", "owner")
            .await?
            .context("workspace `default` exists in a fresh database")?
            .owner_token;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let shutdown = CancellationToken::new();
        let mut config = RuntimeConfig::under(data.path());
        config.single_node = matches!(backend, Backend::Sqlite);
        let runtime = Runtime::new(gate.clone(), config);
        let task = tokio::spawn(airlock_server::serve_with(
            listener,
            runtime,
            options,
            shutdown.clone(),
        ));
        Ok(Airlock {
            url,
            owner_token,
            http: reqwest::Client::new(),
            gate,
            shutdown,
            task: Some(task),
            data,
        })
    }

    /// Sends a request as `token` and returns the JSON body, failing on any other status
    /// than `expected`.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<&Value>,
        expected: u16,
    ) -> anyhow::Result<Value> {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.url))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let reply = request.send().await?;
        let status = reply.status().as_u16();
        let text = reply.text().await?;
        if status != expected {
            bail!("{method} {path}: expected {expected}, got {status}: {text}");
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Puts `policy` in force as the owner.
    pub async fn put_policy(&self, policy: &str) -> anyhow::Result<()> {
        let reply = self
            .http
            .put(format!("{}/v1/policy", self.url))
            .bearer_auth(&self.owner_token)
            .header("content-type", "application/toml")
            .body(policy.to_owned())
            .send()
            .await?;
        let status = reply.status();
        if !status.is_success() {
            bail!("PUT /v1/policy: {status}: {}", reply.text().await?);
        }
        Ok(())
    }

    /// Creates an agent with `settings` (`{"name": …}` and more); returns id and token.
    pub async fn create_agent(&self, settings: &Value) -> anyhow::Result<(String, String)> {
        let body = self
            .send(
                reqwest::Method::POST,
                "/v1/agents",
                &self.owner_token,
                Some(settings),
                201,
            )
            .await?;
        let text = |value: &Value| value.as_str().map(str::to_owned);
        match (text(&body["agent"]["id"]), text(&body["token"])) {
            (Some(id), Some(token)) => Ok((id, token)),
            _ => bail!("unexpected agent answer: {body}"),
        }
    }

    /// Stops the server and waits for it.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.await??;
        }
        Ok(())
    }
}

impl Drop for Airlock {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A bare axum endpoint: `POST /v1/calls` parses the JSON body and answers 201 with a JSON
/// body of the same shape as airlock's answer, with nothing behind it.
pub struct Bare {
    pub url: String,
    shutdown: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

impl Bare {
    pub async fn start() -> anyhow::Result<Bare> {
        use axum::routing::post;
        async fn submit(
            axum::Json(body): axum::Json<Value>,
        ) -> (axum::http::StatusCode, axum::Json<Value>) {
            let answer = json!({
                "id": "call_0000000000000000000000000",
                "tool": body["tool"],
                "arguments": body["arguments"],
                "status": "allowed",
                "decided_by": "rule",
                "rule": "bench-allowed",
                "grant_id": "grant_000000000000000000000000",
            });
            (axum::http::StatusCode::CREATED, axum::Json(answer))
        }
        let router = axum::Router::new().route("/v1/calls", post(submit));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
        });
        Ok(Bare {
            url,
            shutdown,
            task,
        })
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        self.task.await??;
        Ok(())
    }
}
