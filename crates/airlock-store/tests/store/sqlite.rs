//! What only the SQLite backend promises: the file and its folder are created, the
//! database is in WAL mode, and the schema is migrated once however often it is opened.

use airlock_store::sqlite::SqliteStore;
use airlock_store::Store;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::ConnectOptions;

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
