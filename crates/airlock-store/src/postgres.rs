//! The PostgreSQL backend: several airlock nodes sharing one database.
//!
//! Every operation is one transaction at READ COMMITTED on a connection of a pool, and
//! runs beside the other nodes' transactions; row locks order them:
//!
//! - INVARIANT: a write transaction on a workspace first locks the workspace's
//!   `audit_heads` row (`audit::lock_workspace`), and only then reads for update or
//!   writes other rows of it; the sweeper, the one operation spanning workspaces, locks
//!   their heads in workspace order. So writes of one workspace are serialised across
//!   nodes (the audit chain, event ids, policy versions and rule deduplication rely on
//!   it), transactions queue instead of deadlocking, and no retry loop is needed.
//! - Within that, each operation takes the locks its guarantee rests on by itself:
//!   `decide` locks the approval (`FOR UPDATE`) and updates it only from `pending`,
//!   `redeem` is one conditional update on `consumed_at IS NULL`, the sweeper takes
//!   approvals `FOR UPDATE SKIP LOCKED`.
//! - Commits are synchronous (`synchronous_commit = on`, G7), and every statement has a
//!   time limit (`statement_timeout`) so a stuck lock surfaces as an error, not a hang.
//! - Every event appended is also announced with `pg_notify` in its transaction
//!   (delivered on commit); [`crate::Store::listen`] turns the announcements into [`Change`]s.
//!
//! The schema is embedded and migrated at connect; sqlx's migrator holds an advisory lock
//! while it runs, so nodes starting together migrate once. The database being away is a
//! [`StoreError::Database`] with the reason, and the pool reconnects by itself when it
//! is back.
//!
//! The operations themselves are written once for both databases, in `src/sql/`
//! (`store.rs` maps the [`crate::Store`] trait onto them), and compiled here with this backend's
//! `dialect`. Only what is PostgreSQL's alone lives in this folder:
//!
//! - `dialect`: the types, the workspace lock and chain head (`audit_heads`), the
//!   announcement of events, the sweeper's row locks.
//! - `batch`: group commit of the calls that need no approval.
//! - `listen`: other nodes' changes (LISTEN/NOTIFY).
//!
//! Notification rows are the one exception to the workspace lock (`sql/notify.rs` says
//! why).

mod batch;
mod dialect;
mod listen;

use crate::codec::database;
use crate::{Change, StoreError, StoreResult};
use sql::calls::Batched;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, PgPool};
use std::str::FromStr;
use std::time::Duration;

/// The schema, embedded at build time and brought up to date by
/// [`PostgresStore::connect`].
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// How a node uses the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    /// Connections of this node's pool (one of them is held by [`crate::Store::listen`]).
    pub max_connections: u32,
    /// How long an operation waits for a connection — including the time to (re)connect
    /// to the server — before failing with [`StoreError::Database`].
    pub acquire_timeout: Duration,
    /// The longest any one statement may run, lock waits included.
    pub statement_timeout: Duration,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(30),
        }
    }
}

/// Pages of a long walk (verifying the audit chain) read at once. Each is a round trip
/// the server answers: four overlapped gave 1.16× two on a two-core host, with the
/// server on the same cores (BENCHMARKS.md, "The store's verification reads pages").
const LONG_READS: usize = 4;

/// The PostgreSQL store. Cheap to share behind an `Arc`; one per node.
pub struct PostgresStore {
    pool: PgPool,
    /// Group commit of the calls that need no approval (`batch.rs`).
    batcher: batch::Batcher,
    /// Transactions this node committed (`Store::commits`), shared with the batcher.
    commits: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://…`) and migrates it.
    ///
    /// A database that cannot be reached is a [`StoreError::Database`] saying why, within
    /// `options.acquire_timeout`.
    pub async fn connect(url: &str, options: PgOptions) -> StoreResult<PostgresStore> {
        let connect_options = PgConnectOptions::from_str(url)
            .map_err(|error| StoreError::Database(format!("invalid database URL: {error}")))?
            .application_name("airlock");
        // One direct connection first: the pool retries a refused connection until its
        // timeout and then reports only that it timed out; this reports the reason.
        let mut probe = tokio::time::timeout(
            options.acquire_timeout,
            PgConnection::connect_with(&connect_options),
        )
        .await
        .map_err(|_| {
            StoreError::Database(format!(
                "no answer from the database within {:?}",
                options.acquire_timeout
            ))
        })?
        .map_err(database)?;
        // The schema is migrated on that connection, which has none of the settings below:
        // the statement time limit is for requests (a stuck lock), not for an upgrade,
        // whose DDL over a large table may take longer, and on a busy machine has taken
        // more than a short limit on an empty database. Nodes starting together queue on
        // the migrator's own lock. (`run_direct` because `run`'s `Acquire` bound cannot be
        // met by a `&mut PgConnection` inside this `Send` future; it is what `run` calls.)
        MIGRATOR
            .run_direct(&mut probe)
            .await
            .map_err(|error| StoreError::Database(format!("migrating the schema: {error}")))?;
        if let Err(error) = probe.close().await {
            tracing::debug!(%error, "closing the probe connection");
        }
        let settings = format!(
            "SET statement_timeout = {}; SET synchronous_commit = on",
            options.statement_timeout.as_millis()
        );
        let connector = batch::Connector {
            // A batch's multi-row statements have a text for each number of rows, and
            // the driver prepares each text once per connection: room for all of them,
            // or the batcher would prepare again (one more round trip) most batches.
            options: connect_options
                .clone()
                .statement_cache_capacity(batch::STATEMENTS),
            settings: settings.clone(),
            timeout: options.acquire_timeout,
        };
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .after_connect(move |conn, _| {
                let settings = settings.clone();
                Box::pin(async move {
                    conn.execute(settings.as_str()).await?;
                    Ok(())
                })
            })
            .connect_lazy_with(connect_options);
        let commits = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let batcher = batch::Batcher::new(connector, std::sync::Arc::clone(&commits))?;
        Ok(PostgresStore {
            pool,
            batcher,
            commits,
        })
    }

    /// Closes every connection (and ends every [`crate::Store::listen`] task).
    pub async fn close(self) {
        self.pool.close().await;
    }
}

/// Runs `$body` (an expression using `$conn: &mut PgConnection`, returning a `Result`)
/// as one transaction on a pooled connection: committed when it returns `Ok`, rolled
/// back when it returns `Err` — a refusal writes nothing. If the caller's future is
/// dropped midway, dropping the transaction rolls it back before the connection is
/// reused.
macro_rules! write_transaction {
    ($store:expr, |$conn:ident| $body:expr) => {{
        let mut transaction = $store.pool.begin().await.map_err($crate::codec::database)?;
        let outcome = {
            let $conn: &mut sqlx::PgConnection = &mut transaction;
            $body.await
        };
        match outcome {
            Ok(value) => {
                transaction.commit().await.map_err($crate::codec::database)?;
                $store
                    .commits
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(value)
            }
            Err(error) => {
                if let Err(rollback) = transaction.rollback().await {
                    tracing::warn!(error = %rollback, "rolling back a refused write failed");
                }
                Err(error)
            }
        }
    }};
}

/// The store the shared operations (`sql/store.rs`, `sql/notify.rs`) are implemented on.
type Backend = PostgresStore;

impl PostgresStore {
    /// Other nodes' changes, as they commit.
    async fn changes(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
        listen::listen(&self.pool).await.map(Some)
    }

    /// [`crate::Store::long_reads_at_once`]: [`LONG_READS`], and at most half the pool
    /// (at least one; the gate reads two pages at once whatever the store says).
    fn long_reads(&self) -> usize {
        let pool = usize::try_from(self.pool.options().get_max_connections()).unwrap_or(1);
        LONG_READS.min(pool / 2).max(1)
    }

    /// [`crate::Store::chain_reader`]: none; PostgreSQL's reads are round trips its
    /// server answers, which the pages of `audit_rows_after` already overlap.
    fn open_chain_reader(&self) -> StoreResult<Option<Box<dyn crate::ChainReader>>> {
        Ok(None)
    }

    /// Write transactions committed since the store connected.
    fn committed(&self) -> u64 {
        self.commits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Records a call that needs no approval in this node's next batch.
    async fn record_batched(&self, batched: Batched) -> StoreResult<()> {
        self.batcher.record_call(batched).await
    }

    /// A pooled connection for one of the hot path's reads (SQLite lends its own, see
    /// `sqlite/hot_reads.rs`; here the pool's checks are what notices a lost connection).
    async fn lend_reader(&self) -> StoreResult<Lent> {
        self.pool.acquire().await.map(Lent).map_err(database)
    }

    /// The pool plain reads run on: the one the writes use.
    fn reads(&self) -> &PgPool {
        &self.pool
    }
}

/// A pooled connection lent for one read ([`PostgresStore::lend_reader`]).
struct Lent(sqlx::pool::PoolConnection<sqlx::Postgres>);

impl Lent {
    fn conn(&mut self) -> &mut PgConnection {
        &mut self.0
    }

    /// Back to the pool, which checks it either way.
    fn give_back(self, _reusable: bool) {}
}

// The operations, written once for both backends; declared after `write_transaction!`,
// which they use.
#[path = "sql/mod.rs"]
mod sql;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// The per-connection settings durability rests on (G7): they are not visible from
    /// another connection, so they are checked on the store's own.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_commit_synchronously_with_a_statement_timeout() {
        let url = airlock_pgtest::fresh_database().await;
        let options = PgOptions {
            statement_timeout: Duration::from_millis(1234),
            ..PgOptions::default()
        };
        let store = PostgresStore::connect(&url, options).await.unwrap();
        let mut conn = store.pool.acquire().await.unwrap();
        for (setting, expected) in [
            ("synchronous_commit", "on"),
            ("statement_timeout", "1234ms"),
            ("transaction_isolation", "read committed"),
        ] {
            let value: String = sqlx::query_scalar(&format!("SHOW {setting}"))
                .fetch_one(&mut *conn)
                .await
                .unwrap();
            assert_eq!(value, expected, "{setting}");
        }
        drop(conn);
        store.close().await;
    }

    /// Migrating is not held to the requests' statement time limit: with a limit no DDL
    /// meets, a new database is still migrated, and the requests still get the limit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn migrations_run_without_the_statement_timeout() {
        let url = airlock_pgtest::fresh_database().await;
        let options = PgOptions {
            statement_timeout: Duration::from_millis(1),
            ..PgOptions::default()
        };
        let store = PostgresStore::connect(&url, options).await.unwrap();
        let mut conn = store.pool.acquire().await.unwrap();
        // On a loaded machine the `SHOW` itself may take over 1 ms and be cancelled by the
        // limit (57014): that, too, shows the requests get it.
        let shown: Result<String, sqlx::Error> = sqlx::query_scalar("SHOW statement_timeout")
            .fetch_one(&mut *conn)
            .await;
        let cancelled = matches!(
            &shown,
            Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("57014")
        );
        assert!(
            cancelled || shown.as_deref().ok() == Some("1ms"),
            "{shown:?}"
        );
        drop(conn);
        store.close().await;
        // Read on a connection of the test's own, which the 1 ms limit does not bind.
        let mut own = PgConnection::connect(&url).await.unwrap();
        let migrated: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
            .fetch_one(&mut own)
            .await
            .unwrap();
        assert_eq!(usize::try_from(migrated).unwrap(), MIGRATOR.iter().count());
        own.close().await.unwrap();
    }
}
