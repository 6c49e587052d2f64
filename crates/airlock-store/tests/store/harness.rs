//! What a backend must provide to run the suite, the per-test context, and the SQLite
//! backend.
//!
//! The suite talks to the store through the trait only. Three things are out of the
//! trait's reach and so come from the backend: reopening the same database (restarts),
//! revoking a token (the trait has no operation for it yet), and raw row counts (to show
//! that a refusal wrote nothing to *any* table, not only to what the getters return).

use airlock_store::sqlite::SqliteStore;
use airlock_store::Store;
use async_trait::async_trait;
use jiff::Timestamp;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, SqliteConnection};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// The tables whose row counts [`Ctx::row_counts`] reports.
pub const TABLES: &[&str] = &[
    "workspaces",
    "users",
    "agents",
    "tokens",
    "policies",
    "sessions",
    "calls",
    "approvals",
    "grants",
    "standing_rules",
    "audit",
    "audit_segments",
    "events",
    "runs",
    "run_events",
    "run_steps",
    "messages",
    "outbox",
];

/// One database of one backend, for one test.
#[async_trait]
pub trait Backend: Send + Sync {
    /// Opens the database: migrated and empty the first time, as left afterwards.
    async fn open(&self) -> Arc<dyn Store>;

    /// Marks the token with this hash revoked at `at`, behind the store's back.
    async fn revoke_token(&self, token_hash: &str, at: Timestamp);

    /// The number of rows in each of [`TABLES`].
    async fn row_counts(&self) -> BTreeMap<String, i64>;
}

/// What a behaviour gets: the store under test and the backend behind it.
pub struct Ctx {
    pub store: Arc<dyn Store>,
    backend: Box<dyn Backend>,
}

impl Ctx {
    /// Drops the store (every clone must be gone) and opens the same database again, as
    /// a process restart would.
    pub async fn restart(self) -> Ctx {
        let Ctx { store, backend } = self;
        assert_eq!(
            Arc::strong_count(&store),
            1,
            "a clone of the store is still alive"
        );
        drop(store);
        let store = backend.open().await;
        Ctx { store, backend }
    }

    /// Another store on the same database: a second node (PostgreSQL), or a second
    /// handle on the same file (SQLite).
    pub async fn another_node(&self) -> Arc<dyn Store> {
        self.backend.open().await
    }

    pub async fn revoke_token(&self, token_hash: &str, at: Timestamp) {
        self.backend.revoke_token(token_hash, at).await;
    }

    pub async fn row_counts(&self) -> BTreeMap<String, i64> {
        self.backend.row_counts().await
    }
}

/// Runs one behaviour on a fresh database of `backend`.
pub async fn run<F, Fut>(backend: Box<dyn Backend>, behaviour: F)
where
    F: FnOnce(Ctx) -> Fut,
    Fut: Future<Output = ()>,
{
    let store = backend.open().await;
    behaviour(Ctx { store, backend }).await;
}

/// The embedded backend: a database file in a temporary folder removed after the test.
pub struct Sqlite {
    // Held so that the folder lives as long as the test.
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Sqlite {
    pub fn fresh() -> Sqlite {
        let dir = tempfile::tempdir().unwrap();
        // A folder that does not exist yet: `open` must create it.
        let path = dir.path().join("data").join("airlock.db");
        Sqlite { _dir: dir, path }
    }

    async fn raw(&self) -> SqliteConnection {
        SqliteConnectOptions::new()
            .filename(&self.path)
            .connect()
            .await
            .unwrap()
    }
}

#[async_trait]
impl Backend for Sqlite {
    async fn open(&self) -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(&self.path).await.unwrap())
    }

    async fn revoke_token(&self, token_hash: &str, at: Timestamp) {
        let mut conn = self.raw().await;
        let done = sqlx::query("UPDATE tokens SET revoked_at = ? WHERE hash = ?")
            .bind(at.as_millisecond())
            .bind(token_hash)
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(done.rows_affected(), 1);
    }

    async fn row_counts(&self) -> BTreeMap<String, i64> {
        let mut conn = self.raw().await;
        let mut counts = BTreeMap::new();
        for table in TABLES {
            let count: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
                .fetch_one(&mut conn)
                .await
                .unwrap();
            counts.insert((*table).to_owned(), count);
        }
        counts
    }
}
