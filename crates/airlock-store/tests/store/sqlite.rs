//! What only the SQLite backend promises: the file and its folder are created, the
//! database is in WAL mode, the schema is migrated once however often it is opened, and
//! a migration that rebuilds a table keeps its rows (a test of the migrations on a file,
//! through the public API, so it lives here rather than in `src/`).

use airlock_store::sqlite::SqliteStore;
use airlock_store::Store;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::ConnectOptions;
use std::path::Path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_creates_folders_uses_wal_and_migrates_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a").join("b").join("airlock.db");
    for _ in 0..3 {
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(store.workspace_by_name("none").await.unwrap(), None);
        store.close().await.unwrap();
    }
    assert!(path.is_file());

    let mut raw = SqliteConnectOptions::new()
        .filename(&path)
        .connect()
        .await
        .unwrap();
    let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut raw)
        .await
        .unwrap();
    assert_eq!(journal, "wal");
    let migrations: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(&mut raw)
        .await
        .unwrap();
    assert!(migrations >= 1);
    let duplicates: i64 =
        sqlx::query_scalar("SELECT COUNT(*) - COUNT(DISTINCT version) FROM _sqlx_migrations")
            .fetch_one(&mut raw)
            .await
            .unwrap();
    assert_eq!(duplicates, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_a_database_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("airlock.db");
    std::fs::write(
        &path,
        b"this is not a database, just some text that is long enough",
    )
    .unwrap();
    let opened = SqliteStore::open(&path).await;
    assert!(opened.is_err());
}

// Migration 0015 rebuilds `runs` (SQLite cannot alter its CHECK): on a database made by
// the migrations before it and holding a run with journal, step and message, the rows
// survive, their children still reference them, foreign keys are enforced afterwards,
// and `paused` is a state a run may take.

/// Creates a database at `path` migrated up to (not including) migration `before`, from
/// copies of this crate's migration files (the same bytes, so the same checksums).
async fn migrated_before(path: &Path, before: i64) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/sqlite");
    let older = path.with_extension("migrations");
    std::fs::create_dir_all(&older).unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let version: i64 = name.split('_').next().unwrap().parse().unwrap();
        if version < before {
            std::fs::copy(entry.path(), older.join(&name)).unwrap();
        }
    }
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true)
                .foreign_keys(true),
        )
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(older.as_path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    sqlx::raw_sql(
        "INSERT INTO workspaces (id, name, created_at) VALUES ('ws_1', 'default', 1);
         INSERT INTO agents (id, workspace, name, mode, created_at)
             VALUES ('agt_1', 'ws_1', 'mailer', 'ask', 1);
         INSERT INTO sessions (id, workspace, agent_id, created_at)
             VALUES ('ses_1', 'ws_1', 'agt_1', 1);
         INSERT INTO runs (id, workspace, session_id, agent_id, state, last_seq, lease_owner,
                           lease_until, created_at, updated_at)
             VALUES ('run_1', 'ws_1', 'ses_1', 'agt_1', 'awaiting_approval', 1, NULL, NULL, 2, 3),
                    ('run_2', 'ws_1', 'ses_1', 'agt_1', 'completed', 0, NULL, NULL, 1, 1);
         INSERT INTO run_events (workspace, run_id, seq, at, kind, data)
             VALUES ('ws_1', 'run_1', 1, 2, 'run_started', '{}');
         INSERT INTO run_steps (workspace, run_id, idx, tool_call_id, tool, arguments, exact,
                                state)
             VALUES ('ws_1', 'run_1', 0, 'tc_1', 'email.send', '{}', 1, 'gated');
         INSERT INTO messages (id, workspace, session_id, run_id, role, text, tool_calls, steps,
                               created_at)
             VALUES ('msg_1', 'ws_1', 'ses_1', 'run_1', 'user', 'hi', '[]', '[]', 2);",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_rebuild_keeps_rows_and_foreign_keys_and_admits_paused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("airlock.db");
    migrated_before(&path, 15).await;

    let store = SqliteStore::open(&path).await.unwrap();
    let run = Store::get_run(&store, "ws_1", "run_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.state, airlock_protocol::RunState::AwaitingApproval);
    assert_eq!(run.last_seq, 1);
    let events = Store::run_events_after(&store, "ws_1", "run_1", 0, 10)
        .await
        .unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        Store::run_steps(&store, "ws_1", "run_1")
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        Store::session_runs(&store, "ws_1", "ses_1")
            .await
            .unwrap()
            .len(),
        2
    );
    store.close().await.unwrap();

    // On a plain connection with foreign keys on: the rebuilt table admits `paused`,
    // still refuses an unknown state, and its children still reference it.
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(&path)
                .foreign_keys(true),
        )
        .await
        .unwrap();
    sqlx::query("UPDATE runs SET state = 'paused' WHERE id = 'run_1'")
        .execute(&pool)
        .await
        .unwrap();
    let unknown = sqlx::query("UPDATE runs SET state = 'sleeping' WHERE id = 'run_1'")
        .execute(&pool)
        .await;
    assert!(unknown.is_err(), "the CHECK still holds");
    let orphan = sqlx::query(
        "INSERT INTO run_events (workspace, run_id, seq, at, kind, data)
         VALUES ('ws_1', 'run_nope', 1, 2, 'run_started', '{}')",
    )
    .execute(&pool)
    .await;
    assert!(orphan.is_err(), "a child row needs its run");
    let parent = sqlx::query("DELETE FROM runs WHERE id = 'run_1'")
        .execute(&pool)
        .await;
    assert!(parent.is_err(), "a run with children cannot vanish");
    let broken: Vec<sqlx::sqlite::SqliteRow> = sqlx::query("PRAGMA foreign_key_check")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert!(broken.is_empty());
    let schema: String =
        sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'runs'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(schema.contains("'paused'"), "{schema}");
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs'
           AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(indexes, vec!["runs_by_session", "runs_by_state"]);
    pool.close().await;
}
