//! `airlock serve`: open the store, build the gate, bootstrap the workspace, put the
//! policy in force and serve the HTTP API and inbox until Ctrl-C or SIGTERM.
//!
//! - [`watch`]: reloads `--policy FILE` when it changes; a bad edit never replaces the
//!   policy in force (DESIGN.md §4.3).
//! - [`demo`]: `--demo`, a demo agent and policy and two commands to paste.
//! - `--config FILE` (or `DIR/airlock.toml`): notification channels, run by the
//!   server's notifier beside it.
//! - the `OTEL_*` environment: OpenTelemetry traces (`airlock_server::telemetry`).
//!
//! Everything that can be wrong with the command line (a bad `--db`, a policy file that
//! does not load, a config file with an unknown key, an address in use) is found before
//! anything is served, and exits 2.

mod demo;
mod watch;

use crate::Outcome;
use airlock_agent::{Runtime, RuntimeConfig};
use airlock_gate::clock::SystemClock;
use airlock_gate::policy::STARTER_POLICY;
use airlock_gate::Gate;
use airlock_policy::{LoadOptions, Policy, DEFAULT_POLICY};
use airlock_server::notify::config::{ServerConfig, Settings};
use airlock_server::telemetry::Telemetry;
use airlock_server::ServeOptions;
use airlock_store::postgres::{PgOptions, PostgresStore};
use airlock_store::sqlite::SqliteStore;
use airlock_store::Store;
use anyhow::{anyhow, bail, Context};
use clap::Args;
use std::io::{IsTerminal, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The workspace and owner a first start creates.
const WORKSPACE: &str = "default";
const OWNER: &str = "owner";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where the database and the token files live.
    #[arg(long, value_name = "DIR", default_value = "airlock-data")]
    data_dir: PathBuf,
    /// The database: a SQLite file path, sqlite://PATH, or postgres://… to share one
    /// PostgreSQL database between several nodes [default: DIR/airlock.db].
    #[arg(long, value_name = "URL")]
    db: Option<String>,
    /// The address to serve the API and the inbox on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7070")]
    listen: String,
    /// A policy file to put in force and to reload whenever it changes.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Also set up a demo agent and policy and print two commands to try the loop.
    #[arg(long)]
    demo: bool,
    /// The server config file (notifications; see docs/notifications.md)
    /// [default: DIR/airlock.toml when it exists].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

pub fn run(args: ServeArgs) -> anyhow::Result<Outcome> {
    init_logging("info", std::io::stderr);
    airlock_gate::failpoint::check_env().map_err(|error| anyhow!(error))?;
    let database = database_location(args.db.as_deref(), &args.data_dir)?;
    let policy = match &args.policy {
        Some(file) => Some((file.clone(), read_policy(file)?)),
        None => None,
    };
    let notifications = read_config(args.config.as_deref(), &args.data_dir)?;
    // Built before the async runtime: the exporter's HTTP client is a blocking one that
    // runs on the SDK's own thread.
    let telemetry =
        Telemetry::from_env(&|name| std::env::var(name).ok()).map_err(|error| anyhow!(error))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let options = ServeOptions {
        notifications,
        telemetry: telemetry.clone(),
    };
    let served = runtime.block_on(serve(args, database, policy, options));
    // Export what is still queued, outside the runtime (bounded by the export timeout).
    telemetry.shutdown();
    served?;
    Ok(Outcome::Ok)
}

/// Logs to `stderr` (stderr, or a writer to it; never stdout: `airlock mcp proxy` speaks
/// MCP there) at `default` level, or as `RUST_LOG` says.
pub(crate) fn init_logging<W>(default: &str, stderr: W)
where
    W: for<'writer> tracing_subscriber::fmt::MakeWriter<'writer> + Send + Sync + 'static,
{
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Where the data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Database {
    /// An embedded SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL, shared by every node that names it.
    Postgres(String),
}

impl std::fmt::Display for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Database::Sqlite(path) => write!(f, "{}", path.display()),
            // The URL may hold a password: show where, not how.
            Database::Postgres(url) => {
                let host = url.rsplit('@').next().unwrap_or(url);
                let host = host
                    .trim_start_matches("postgres://")
                    .trim_start_matches("postgresql://");
                write!(f, "postgres://…@{host}")
            }
        }
    }
}

fn database_location(db: Option<&str>, data_dir: &Path) -> anyhow::Result<Database> {
    let Some(db) = db else {
        return Ok(Database::Sqlite(data_dir.join("airlock.db")));
    };
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        return Ok(Database::Postgres(db.to_owned()));
    }
    if let Some(rest) = db
        .strip_prefix("sqlite://")
        .or_else(|| db.strip_prefix("sqlite:"))
    {
        let path = rest.split('?').next().unwrap_or_default();
        if path.is_empty() {
            bail!("--db `{db}` names no file; use sqlite://PATH");
        }
        return Ok(Database::Sqlite(PathBuf::from(path)));
    }
    if db.contains("://") {
        bail!(
            "--db `{db}` is not supported: give a SQLite file path, sqlite://PATH or postgres://…"
        );
    }
    Ok(Database::Sqlite(PathBuf::from(db)))
}

/// PostgreSQL pool settings, from `AIRLOCK_PG_POOL` and `AIRLOCK_PG_STATEMENT_TIMEOUT`.
fn postgres_options() -> anyhow::Result<PgOptions> {
    let mut options = PgOptions::default();
    if let Ok(pool) = std::env::var("AIRLOCK_PG_POOL") {
        options.max_connections = pool.parse().ok().filter(|n| *n >= 2).with_context(|| {
            format!("AIRLOCK_PG_POOL `{pool}` must be a number of connections, at least 2")
        })?;
    }
    if let Ok(timeout) = std::env::var("AIRLOCK_PG_STATEMENT_TIMEOUT") {
        options.statement_timeout = humantime::parse_duration(&timeout).with_context(|| {
            format!("AIRLOCK_PG_STATEMENT_TIMEOUT `{timeout}` must be a duration such as 10s")
        })?;
    }
    Ok(options)
}

async fn open_store(database: &Database) -> anyhow::Result<Arc<dyn Store>> {
    Ok(match database {
        Database::Sqlite(path) => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            Arc::new(
                SqliteStore::open(path)
                    .await
                    .with_context(|| format!("cannot open the database {}", path.display()))?,
            )
        }
        Database::Postgres(url) => Arc::new(
            PostgresStore::connect(url, postgres_options()?)
                .await
                .with_context(|| format!("cannot open the database {database}"))?,
        ),
    })
}

/// Reads and checks a policy file; errors carry file:line:column.
fn read_policy(file: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the policy {}", file.display()))?;
    Policy::load(&text, &load_options(file))
        .map_err(|errors| anyhow!("the policy {} does not load:\n{errors}", file.display()))?;
    Ok(text)
}

fn load_options(file: &Path) -> LoadOptions {
    LoadOptions {
        file_name: file.display().to_string(),
        ..LoadOptions::default()
    }
}

async fn serve(
    args: ServeArgs,
    database: Database,
    policy: Option<(PathBuf, String)>,
    options: ServeOptions,
) -> anyhow::Result<()> {
    create_private_dir(&args.data_dir)?;
    let store = open_store(&database).await?;
    let gate = Gate::new(store, Arc::new(SystemClock))
        .await
        .context("cannot start the gate")?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    let url = format!("http://{address}");

    let bootstrapped = gate.bootstrap(WORKSPACE, OWNER).await?;
    let workspace = match &bootstrapped {
        Some(bootstrapped) => bootstrapped.workspace.id.clone(),
        None => gate
            .workspace_id(WORKSPACE)
            .await?
            .context("the workspace `default` is missing from the database")?,
    };
    let owner_token_file = args.data_dir.join("owner.token");
    match &bootstrapped {
        Some(bootstrapped) => write_secret(&owner_token_file, &bootstrapped.owner_token)?,
        None if !owner_token_file.exists() => tracing::warn!(
            file = %owner_token_file.display(),
            "the owner token file is gone; the token was shown only once and cannot be shown again"
        ),
        None => {}
    }

    // The policy in force: the file, else the demo's, else whatever a person stored, else
    // the built-in coding-agent policy (DESIGN.md §11.4). The blank starter that workspace
    // bootstrap stores is replaced by it: nobody chose that one.
    match (&policy, args.demo) {
        (Some((_, text)), _) => {
            gate.replace_policy(&workspace, "policy", text).await?;
        }
        (None, true) => {
            gate.replace_policy(&workspace, "policy", demo::POLICY)
                .await?;
        }
        (None, false) => {
            let current = gate.policy_source(&workspace).await?;
            if current.is_none_or(|source| source == STARTER_POLICY) {
                gate.replace_policy(&workspace, "system", DEFAULT_POLICY)
                    .await?;
            }
        }
    }

    if bootstrapped.is_some() {
        println!("airlock is ready: open the inbox at {url}/");
        println!(
            "the owner token is in {} (client commands read it from there; it is shown nowhere else)",
            owner_token_file.display()
        );
    }
    if args.demo {
        let commands = demo::prepare(&gate, &workspace, &args.data_dir, &url).await?;
        println!("{commands}");
    }
    tracing::info!(%url, database = %database, "airlock listening");

    let shutdown = CancellationToken::new();
    let signals = tokio::spawn(stop_on_signal(shutdown.clone()));
    let watcher = policy.map(|(file, text)| {
        tokio::spawn(watch::watch_policy(
            gate.clone(),
            workspace.clone(),
            file,
            text,
            shutdown.clone(),
        ))
    });
    let mut config = RuntimeConfig::under(&args.data_dir);
    config.single_node = matches!(database, Database::Sqlite(_));
    config.http_allow = http_allow_from_env();
    config.smtp = smtp_from_env()?;
    if let Some(idle) = llm_idle_timeout_from_env()? {
        config.client.idle_timeout = idle;
    }
    let runtime = Runtime::new(gate, config);
    let served = airlock_server::serve_with(listener, runtime, options, shutdown.clone()).await;
    shutdown.cancel();
    if let Some(watcher) = watcher {
        let _ = watcher.await;
    }
    signals.abort();
    served.context("the server stopped")?;
    tracing::info!("airlock stopped");
    Ok(())
}

/// The server config file: `--config FILE`, else `DIR/airlock.toml` when it exists (one
/// file is read, never both: `--config` wins). Its notification channels, resolved and
/// checked (secrets from the environment, SMTP from the file or `AIRLOCK_SMTP*`).
fn read_config(file: Option<&Path>, data_dir: &Path) -> anyhow::Result<Option<Settings>> {
    let default = data_dir.join("airlock.toml");
    let file = match file {
        Some(file) => file.to_path_buf(),
        None if default.is_file() => default,
        None => return Ok(None),
    };
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read the config file {}", file.display()))?;
    let config = ServerConfig::parse(&text, &file.display().to_string())?;
    let env = |name: &str| std::env::var(name).ok();
    let settings = config.notification_settings(&env, smtp_from_env()?)?;
    Ok(settings)
}

/// Cancels `shutdown` on Ctrl-C or SIGTERM.
async fn stop_on_signal(shutdown: CancellationToken) {
    let mut terminate =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => Some(signal),
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM; Ctrl-C still stops airlock");
                None
            }
        };
    let terminated = async {
        match &mut terminate {
            Some(signal) => {
                signal.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("Ctrl-C: shutting down"),
        _ = terminated => tracing::info!("SIGTERM: shutting down"),
        _ = shutdown.cancelled() => {}
    }
    shutdown.cancel();
}

/// Creates the data folder readable by its owner only (it holds tokens).
fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create the data folder {}", dir.display()))
}

/// Writes a token file with mode 0600, replacing any older one.
fn write_secret(path: &Path, secret: &str) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // `mode` only applies to a new file; an older one keeps its bits unless reset.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(format!("{secret}\n").as_bytes())?;
    file.sync_all()?;
    Ok(())
}

/// `AIRLOCK_HTTP_ALLOW`: comma-separated host globs the built-in `http.fetch` may reach
/// (none by default).
fn http_allow_from_env() -> Vec<String> {
    std::env::var("AIRLOCK_HTTP_ALLOW")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|host| !host.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `AIRLOCK_LLM_IDLE_TIMEOUT=SECONDS`: how long the runtime's model may stay silent
/// (before it answers, and between two pieces of a streamed answer) before the request is
/// given up on and retried. Default 120 s; a model that keeps streaming is never cut off.
fn llm_idle_timeout_from_env() -> anyhow::Result<Option<std::time::Duration>> {
    let Some(value) = std::env::var("AIRLOCK_LLM_IDLE_TIMEOUT")
        .ok()
        .filter(|v| !v.trim().is_empty())
    else {
        return Ok(None);
    };
    match value.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0 => {
            Ok(Some(std::time::Duration::from_secs_f64(seconds)))
        }
        _ => anyhow::bail!(
            "AIRLOCK_LLM_IDLE_TIMEOUT must be a number of seconds between 0 and 86400, not `{value}`"
        ),
    }
}

/// `AIRLOCK_SMTP=host:port` (with `AIRLOCK_SMTP_FROM`, and optionally `AIRLOCK_SMTP_USER`,
/// `AIRLOCK_SMTP_PASSWORD_ENV` naming the variable that holds the password, and
/// `AIRLOCK_SMTP_STARTTLS=1`): where the outbox's email is delivered. Without it, email
/// stays in the outbox.
fn smtp_from_env() -> anyhow::Result<Option<airlock_tools::SmtpConfig>> {
    let Some(address) = std::env::var("AIRLOCK_SMTP").ok().filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let (host, port) = address
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host.to_owned(), port.parse::<u16>().ok()?)))
        .ok_or_else(|| anyhow!("AIRLOCK_SMTP must be host:port, got {address:?}"))?;
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    Ok(Some(airlock_tools::SmtpConfig {
        host,
        port,
        from: var("AIRLOCK_SMTP_FROM").unwrap_or_else(|| "airlock@localhost".into()),
        username: var("AIRLOCK_SMTP_USER"),
        password_env: var("AIRLOCK_SMTP_PASSWORD_ENV"),
        starttls: var("AIRLOCK_SMTP_STARTTLS").is_some_and(|v| v == "1" || v == "true"),
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn database_urls() {
        let dir = Path::new("data");
        let sqlite = |path: &str| Database::Sqlite(PathBuf::from(path));
        assert_eq!(
            database_location(None, dir).unwrap(),
            Database::Sqlite(dir.join("airlock.db"))
        );
        assert_eq!(
            database_location(Some("x.db"), dir).unwrap(),
            sqlite("x.db")
        );
        assert_eq!(
            database_location(Some("sqlite:///tmp/a.db?mode=rwc"), dir).unwrap(),
            sqlite("/tmp/a.db")
        );
        assert_eq!(
            database_location(Some("sqlite://a.db"), dir).unwrap(),
            sqlite("a.db")
        );
        let url = "postgres://airlock:secret@db.internal:5432/airlock";
        let postgres = database_location(Some(url), dir).unwrap();
        assert_eq!(postgres, Database::Postgres(url.to_owned()));
        assert_eq!(
            postgres.to_string(),
            "postgres://…@db.internal:5432/airlock"
        );
        assert!(database_location(Some("mysql://x"), dir).is_err());
    }
}
