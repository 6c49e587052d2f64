//! The two migration sets describe one schema: the same tables, columns (with compatible
//! types) and indexes, read back from a real SQLite file and a real PostgreSQL database
//! after every migration ran. A table, column or index added to one set only fails here.
//!
//! PostgreSQL has exactly one kind of addition, listed below: the `ord` columns that
//! stand in for SQLite's rowid. (Both keep `audit_heads`, each workspace's chain head:
//! PostgreSQL's appends lock and move it, SQLite's a trigger moves.)

use airlock_store::postgres::{PgOptions, PostgresStore};
use airlock_store::sqlite::SqliteStore;
use sqlx::{Connection, PgConnection, SqliteConnection};
use std::collections::BTreeSet;

/// (table, column, type class) of every column.
type Columns = BTreeSet<(String, String, &'static str)>;

/// The tables whose `ord` column stands in for SQLite's rowid.
const ORD_TABLES: &[&str] = &[
    "agents",
    "approvals",
    "messages",
    "outbox",
    "runs",
    "standing_rules",
    "tasks",
    "users",
];

/// A declared type as one of the classes both databases share.
fn class(declared: &str) -> &'static str {
    let declared = declared.to_ascii_lowercase();
    if declared.contains("int") {
        "integer"
    } else if declared.contains("text") || declared.contains("char") {
        "text"
    } else if declared.contains("blob") || declared.contains("bytea") {
        "bytes"
    } else {
        "other"
    }
}

async fn sqlite_schema() -> (Columns, BTreeSet<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("airlock.db");
    SqliteStore::open(&path)
        .await
        .unwrap()
        .close()
        .await
        .unwrap();
    let mut conn = SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let columns: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT m.name, c.name, c.type FROM sqlite_master m, pragma_table_info(m.name) c
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> '_sqlx_migrations'",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master
         WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex_%'",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let columns = columns
        .into_iter()
        .map(|(table, column, declared)| (table, column, class(&declared)))
        .collect();
    (columns, indexes.into_iter().collect())
}

async fn postgres_schema() -> (Columns, BTreeSet<String>) {
    let url = airlock_pgtest::fresh_database().await;
    PostgresStore::connect(&url, PgOptions::default())
        .await
        .unwrap()
        .close()
        .await;
    let mut conn = PgConnection::connect(&url).await.unwrap();
    let columns: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name <> '_sqlx_migrations'",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    // Indexes made by CREATE INDEX; those behind a PRIMARY KEY or UNIQUE constraint are
    // named by each database its own way (SQLite: sqlite_autoindex_*).
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT indexname::text FROM pg_indexes i
         WHERE schemaname = 'public' AND tablename <> '_sqlx_migrations'
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let columns = columns
        .into_iter()
        .map(|(table, column, declared)| (table, column, class(&declared)))
        .collect();
    (columns, indexes.into_iter().collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_migration_sets_make_the_same_schema() {
    let (sqlite_columns, sqlite_indexes) = sqlite_schema().await;
    let (postgres_columns, postgres_indexes) = postgres_schema().await;
    assert!(sqlite_columns.len() > 100, "{sqlite_columns:?}");

    let sqlite_only: Vec<_> = sqlite_columns.difference(&postgres_columns).collect();
    assert!(
        sqlite_only.is_empty(),
        "columns only SQLite has: {sqlite_only:?}"
    );
    let postgres_only: BTreeSet<_> = postgres_columns
        .difference(&sqlite_columns)
        .map(|(table, column, class)| (table.as_str(), column.as_str(), *class))
        .collect();
    let expected: BTreeSet<_> = ORD_TABLES
        .iter()
        .map(|table| (*table, "ord", "integer"))
        .collect();
    assert_eq!(postgres_only, expected, "columns only PostgreSQL has");

    assert!(sqlite_indexes.len() > 10, "{sqlite_indexes:?}");
    assert_eq!(sqlite_indexes, postgres_indexes, "indexes by name");
}
