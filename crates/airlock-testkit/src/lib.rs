//! Test helpers for airlock: a real server on `127.0.0.1:0` over a SQLite database in a
//! temporary folder, and a thin JSON client to talk to it the way any client would.
//!
//! With `AIRLOCK_TEST_BACKEND=postgres` every server runs on a fresh PostgreSQL database
//! instead (`airlock-pgtest`), so the same end-to-end tests pin both backends;
//! `scripts/test.sh` runs them both ways.
//!
//! - [`TestServer`] (this file): start (system or manual clock), stop, restart on the same
//!   data, a second workspace, users and agents.
//! - [`client`]: [`Client`] and [`Reply`], status + body of each request.
//!
//! Helpers return [`TestkitError`]; tests unwrap.

pub mod client;

pub use client::{Client, Reply};

use airlock_agent::toolset::ClientOptionsSpec;
use airlock_agent::{Runtime, RuntimeConfig};
use airlock_gate::clock::{Clock, ManualClock, SystemClock};
use airlock_gate::{Gate, GateError};
use airlock_protocol::Role;
use airlock_store::postgres::{PgOptions, PostgresStore};
use airlock_store::sqlite::SqliteStore;
use airlock_store::Store;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The name of the database file inside the data folder.
pub const DATABASE_FILE: &str = "airlock.db";

/// What can go wrong while setting up a test.
#[derive(Debug, thiserror::Error)]
pub enum TestkitError {
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("gate: {0}")]
    Gate(#[from] GateError),
    #[error("store: {0}")]
    Store(#[from] airlock_store::StoreError),
    #[error("http: {0}")]
    Http(#[from] reqwest::Error),
    #[error("unexpected answer: {0}")]
    Unexpected(String),
}

pub type Result<T> = std::result::Result<T, TestkitError>;

/// The environment variable that selects the backend: `sqlite` (default) or `postgres`.
pub const BACKEND_VAR: &str = "AIRLOCK_TEST_BACKEND";

/// The database a test server runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// `airlock.db` in the server's data folder.
    Sqlite,
    /// A fresh database of its own on the test cluster.
    Postgres { url: String },
}

impl Backend {
    /// The backend `AIRLOCK_TEST_BACKEND` names, with a fresh database when it is PostgreSQL.
    pub async fn from_env() -> Result<Backend> {
        match std::env::var(BACKEND_VAR).as_deref() {
            Err(_) | Ok("") | Ok("sqlite") => Ok(Backend::Sqlite),
            Ok("postgres") => Ok(Backend::Postgres {
                url: airlock_pgtest::fresh_database().await,
            }),
            Ok(other) => Err(TestkitError::Unexpected(format!(
                "{BACKEND_VAR}={other}: expected sqlite or postgres"
            ))),
        }
    }
}

/// A running server with its own data folder. Stops gracefully on [`TestServer::stop`];
/// dropping it cancels the server too (without waiting).
pub struct TestServer {
    /// `http://127.0.0.1:<port>` (changes on restart).
    pub url: String,
    /// The owner of workspace `default`.
    pub owner_token: String,
    /// A client for this server.
    pub client: Client,
    /// Set when the server runs on a manual clock.
    pub clock: Option<Arc<ManualClock>>,
    /// The database it runs on (kept across restarts).
    pub backend: Backend,
    /// What runs beside the API: notifier, telemetry (kept across restarts).
    options: airlock_server::ServeOptions,
    gate: Gate,
    /// The store behind the gate, for tests that look at what was written.
    store: Arc<dyn Store>,
    shutdown: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
    // INVARIANT: declared last, so the folder is removed after everything using it.
    data: Arc<TempDir>,
}

impl TestServer {
    /// A server on the system clock.
    pub async fn start() -> Result<TestServer> {
        let backend = Backend::from_env().await?;
        TestServer::launch(
            Arc::new(TempDir::new()?),
            None,
            None,
            backend,
            Default::default(),
        )
        .await
    }

    /// A server with a notifier or telemetry beside it (`options`), on `clock` when given.
    pub async fn start_with_options(
        clock: Option<Arc<ManualClock>>,
        options: airlock_server::ServeOptions,
    ) -> Result<TestServer> {
        let backend = Backend::from_env().await?;
        TestServer::launch(Arc::new(TempDir::new()?), clock, None, backend, options).await
    }

    /// A server whose time only moves when the test moves `clock`.
    pub async fn start_with_clock(clock: Arc<ManualClock>) -> Result<TestServer> {
        let backend = Backend::from_env().await?;
        TestServer::launch(
            Arc::new(TempDir::new()?),
            Some(clock),
            None,
            backend,
            Default::default(),
        )
        .await
    }

    /// A server on a manual clock that starts at the current time.
    pub async fn start_manual() -> Result<TestServer> {
        TestServer::start_with_clock(Arc::new(ManualClock::new(jiff::Timestamp::now()))).await
    }

    async fn launch(
        data: Arc<TempDir>,
        clock: Option<Arc<ManualClock>>,
        owner_token: Option<String>,
        backend: Backend,
        options: airlock_server::ServeOptions,
    ) -> Result<TestServer> {
        let store = open_store(&backend, data.path()).await?;
        let gate_clock: Arc<dyn Clock> = match &clock {
            Some(clock) => clock.clone(),
            None => Arc::new(SystemClock),
        };
        let gate = Gate::new(store.clone(), gate_clock).await?;
        let owner_token = match owner_token {
            Some(token) => token,
            None => bootstrap(&gate, "default").await?,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let shutdown = CancellationToken::new();
        let mut config = RuntimeConfig::under(data.path());
        config.single_node = matches!(backend, Backend::Sqlite);
        // Tests use a local fake model: fail fast instead of waiting minutes.
        config.client = ClientOptionsSpec {
            idle_timeout: std::time::Duration::from_secs(2),
            max_retries: 2,
            backoff: std::time::Duration::from_millis(20),
        };
        let runtime = Runtime::new(gate.clone(), config);
        let task = tokio::spawn(airlock_server::serve_with(
            listener,
            runtime,
            options.clone(),
            shutdown.clone(),
        ));
        Ok(TestServer {
            client: Client::new(&url),
            url,
            owner_token,
            clock,
            backend,
            options,
            gate,
            store,
            shutdown,
            task: Some(task),
            data,
        })
    }

    /// A gate of its own over this server's database, on the server's clock, with no
    /// server and no runtime: what another process sharing the database would do (stop
    /// the server first on SQLite, whose file one process writes).
    pub async fn offline_gate(&self) -> Result<Gate> {
        let store = open_store(&self.backend, self.data.path()).await?;
        let clock: Arc<dyn Clock> = match &self.clock {
            Some(clock) => clock.clone(),
            None => Arc::new(SystemClock),
        };
        Ok(Gate::new(store, clock).await?)
    }

    /// The data folder (holds `airlock.db` and its `-wal` and `-shm` files).
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// The database file.
    pub fn database_path(&self) -> PathBuf {
        self.data.path().join(DATABASE_FILE)
    }

    /// Everything the database holds, as bytes to search: the SQLite files (`airlock.db`,
    /// `-wal`, `-shm`), or a plain-text `pg_dump` of the PostgreSQL database.
    pub async fn database_bytes(&self) -> Result<Vec<u8>> {
        match &self.backend {
            Backend::Sqlite => {
                let mut bytes = Vec::new();
                for suffix in ["", "-wal", "-shm"] {
                    let path = self.data.path().join(format!("{DATABASE_FILE}{suffix}"));
                    if let Ok(file) = std::fs::read(&path) {
                        bytes.extend(file);
                    }
                }
                Ok(bytes)
            }
            Backend::Postgres { url } => {
                let output = tokio::process::Command::new("pg_dump")
                    .args(["--data-only", "-d", url])
                    .output()
                    .await?;
                if !output.status.success() {
                    return Err(TestkitError::Unexpected(format!(
                        "pg_dump failed: {}",
                        String::from_utf8_lossy(&output.stderr)
                    )));
                }
                Ok(output.stdout)
            }
        }
    }

    /// Rewrites the `data` of audit record `seq` of workspace `default` behind the
    /// server's back, as someone with access to the database could. Returns rows changed.
    pub async fn tamper_audit_data(&self, seq: u64, data: &Value) -> Result<u64> {
        use sqlx::ConnectOptions;
        let seq = i64::try_from(seq).map_err(|e| TestkitError::Unexpected(e.to_string()))?;
        let sql_error = |e: sqlx::Error| TestkitError::Unexpected(format!("tampering: {e}"));
        match &self.backend {
            Backend::Sqlite => {
                let mut connection = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(self.database_path())
                    .connect()
                    .await
                    .map_err(sql_error)?;
                let changed = sqlx::query("UPDATE audit SET data = ? WHERE seq = ?")
                    .bind(data.to_string())
                    .bind(seq)
                    .execute(&mut connection)
                    .await
                    .map_err(sql_error)?;
                Ok(changed.rows_affected())
            }
            Backend::Postgres { url } => {
                let options: sqlx::postgres::PgConnectOptions = url.parse().map_err(sql_error)?;
                let mut connection = options.connect().await.map_err(sql_error)?;
                let changed = sqlx::query("UPDATE audit SET data = $1 WHERE seq = $2")
                    .bind(data.to_string())
                    .bind(seq)
                    .execute(&mut connection)
                    .await
                    .map_err(sql_error)?;
                Ok(changed.rows_affected())
            }
        }
    }

    /// The gate behind the server, for what HTTP cannot do (sweeping on demand).
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The store behind the server's gate, for assertions on what was written that no
    /// API reads (the gate keeps its own store private).
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Moves a manual clock forward; an error on a system clock.
    pub fn advance(&self, by: std::time::Duration) -> Result<()> {
        let clock = self.clock.as_ref().ok_or_else(|| {
            TestkitError::Unexpected("this server runs on the system clock".into())
        })?;
        clock.advance(by);
        Ok(())
    }

    /// Stops the server gracefully and waits until it has stopped.
    pub async fn stop(&mut self) -> Result<()> {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.await
                .map_err(|e| TestkitError::Unexpected(format!("server task: {e}")))??;
        }
        Ok(())
    }

    /// Stops the server and starts a new one (new gate, new store, new port) on the same
    /// data folder and clock, as a process restart would.
    pub async fn restart(&mut self) -> Result<()> {
        self.stop().await?;
        let next = TestServer::launch(
            self.data.clone(),
            self.clock.clone(),
            Some(self.owner_token.clone()),
            self.backend.clone(),
            self.options.clone(),
        )
        .await?;
        // Replacing `self` drops the old (stopped) server and its gate.
        *self = next;
        Ok(())
    }

    /// Creates another workspace with its owner; returns the owner's token.
    pub async fn second_workspace(&self, name: &str) -> Result<String> {
        bootstrap(&self.gate, name).await
    }

    /// Replaces the policy as the owner; returns the upload's answer.
    pub async fn put_policy(&self, source: &str) -> Result<Value> {
        self.client
            .put_text("/v1/policy", &self.owner_token, source)
            .await?
            .expect_status(200)
    }

    /// Creates an agent as `token`'s user; returns its id and token.
    pub async fn create_agent_as(&self, token: &str, name: &str) -> Result<(String, String)> {
        let body = self
            .client
            .post("/v1/agents", token, &json!({"name": name}))
            .await?
            .expect_status(201)?;
        Ok((text(&body["agent"]["id"])?, text(&body["token"])?))
    }

    /// Creates an agent in workspace `default`; returns its id and token.
    pub async fn create_agent(&self, name: &str) -> Result<(String, String)> {
        self.create_agent_as(&self.owner_token, name).await
    }

    /// Creates a user in workspace `default`; returns its id and token.
    pub async fn create_user(&self, name: &str, role: Role) -> Result<(String, String)> {
        let body = self
            .client
            .post(
                "/v1/users",
                &self.owner_token,
                &json!({"name": name, "role": role}),
            )
            .await?
            .expect_status(201)?;
        Ok((text(&body["user"]["id"])?, text(&body["token"])?))
    }

    /// Submits a call as an agent.
    pub async fn submit(&self, agent_token: &str, tool: &str, arguments: Value) -> Result<Reply> {
        self.client
            .post(
                "/v1/calls",
                agent_token,
                &json!({"tool": tool, "arguments": arguments}),
            )
            .await
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Creates a workspace with its owner (the gate puts the starter policy in force); returns
/// the owner's token.
async fn bootstrap(gate: &Gate, workspace: &str) -> Result<String> {
    let created = gate
        .bootstrap(workspace, "owner")
        .await?
        .ok_or_else(|| TestkitError::Unexpected(format!("workspace `{workspace}` exists")))?;
    Ok(created.owner_token)
}

async fn open_store(backend: &Backend, data: &Path) -> Result<Arc<dyn Store>> {
    Ok(match backend {
        Backend::Sqlite => Arc::new(SqliteStore::open(&data.join(DATABASE_FILE)).await?),
        Backend::Postgres { url } => {
            Arc::new(PostgresStore::connect(url, PgOptions::default()).await?)
        }
    })
}

fn text(value: &Value) -> Result<String> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| TestkitError::Unexpected(format!("expected a string, got {value}")))
}
