use super::*;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::ConnectOptions;
use std::sync::atomic::Ordering;
use std::time::Duration;

async fn writer(dir: &tempfile::TempDir) -> (Writer, sqlx::SqlitePool) {
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("w.db"))
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal);
    let mut conn = options.connect().await.unwrap();
    conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        .await
        .unwrap();
    let reader = sqlx::SqlitePool::connect_with(options).await.unwrap();
    (Writer::new(conn), reader)
}

async fn insert(writer: &Writer, x: i64) -> StoreResult<()> {
    let mut operation = writer.begin().await?;
    let outcome = match operation.conn() {
        Ok(conn) => sqlx::query("INSERT INTO t (x) VALUES (?)")
            .bind(x)
            .execute(conn)
            .await
            .map(drop)
            .map_err(database),
        Err(error) => Err(error),
    };
    operation.finish(outcome).await
}

async fn rows(reader: &sqlx::SqlitePool) -> Vec<i64> {
    sqlx::query_scalar("SELECT x FROM t ORDER BY x")
        .fetch_all(reader)
        .await
        .unwrap()
}

/// Writes queued behind a running one share the next commit, each acknowledged
/// after it: when every task has its answer, every row is readable from another
/// connection, in far fewer commits than writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_that_wait_together_commit_together() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, reader) = writer(&dir).await;
    let writer = Arc::new(writer);
    let first = writer.begin().await.unwrap();
    let mut tasks = Vec::new();
    for x in 1..=32 {
        let writer = Arc::clone(&writer);
        tasks.push(tokio::spawn(async move { insert(&writer, x).await }));
    }
    // Let all 32 queue behind the running operation.
    writer.until_queued(32).await;
    first.finish(Ok::<(), StoreError>(())).await.unwrap();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(rows(&reader).await, (1..=32).collect::<Vec<_>>());
    let commits = writer.shared.commits.load(Ordering::Relaxed);
    assert!(commits <= 3, "{commits} commits for 33 writes");
}

/// A refused write inside a batch rolls back only itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_leaves_its_batch_mates_committed() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, reader) = writer(&dir).await;
    insert(&writer, 1).await.unwrap();
    let writer = Arc::new(writer);
    let held = writer.begin().await.unwrap();
    let (w2, w3) = (Arc::clone(&writer), Arc::clone(&writer));
    let two = tokio::spawn(async move { insert(&w2, 2).await });
    // A duplicate key: refused by the database after inserting nothing.
    let dup = tokio::spawn(async move { insert(&w3, 1).await });
    writer.until_queued(2).await;
    held.finish(Ok::<(), StoreError>(())).await.unwrap();
    two.await.unwrap().unwrap();
    assert!(dup.await.unwrap().is_err());
    assert_eq!(rows(&reader).await, vec![1, 2]);
}

/// A refusal that rests on a batch-mate's write (a key it just inserted) is answered
/// only once that write is committed, so that what the refusal says is readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_answered_after_the_batch_it_saw_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, reader) = writer(&dir).await;
    let writer = Arc::new(writer);
    let held = writer.begin().await.unwrap();
    let spawn_insert = |x| {
        let writer = Arc::clone(&writer);
        tokio::spawn(async move { insert(&writer, x).await })
    };
    let first = spawn_insert(2);
    writer.until_queued(1).await;
    let mut refused = spawn_insert(2);
    writer.until_queued(2).await;
    // A third batch-mate keeps the batch from committing until it is told to end.
    let (end, ended) = tokio::sync::oneshot::channel::<()>();
    let last = {
        let writer = Arc::clone(&writer);
        tokio::spawn(async move {
            let operation = writer.begin().await?;
            ended.await.ok();
            operation.finish(Ok::<(), StoreError>(())).await
        })
    };
    writer.until_queued(3).await;
    // `held` is answered only when the batch commits, so the checks run beside it.
    let checks = async {
        let early = tokio::time::timeout(Duration::from_millis(300), &mut refused).await;
        assert!(
            early.is_err(),
            "refused before its batch committed: {early:?}"
        );
        assert!(rows(&reader).await.is_empty());
        end.send(()).unwrap();
    };
    let (held, ()) = tokio::join!(held.finish(Ok::<(), StoreError>(())), checks);
    held.unwrap();
    assert!(refused.await.unwrap().is_err());
    assert_eq!(rows(&reader).await, vec![2]);
    first.await.unwrap().unwrap();
    last.await.unwrap().unwrap();
}

/// An operation dropped midway leaves nothing behind, and the writer keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_operation_is_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, reader) = writer(&dir).await;
    let mut operation = writer.begin().await.unwrap();
    sqlx::query("INSERT INTO t (x) VALUES (7)")
        .execute(operation.conn().unwrap())
        .await
        .unwrap();
    drop(operation);
    insert(&writer, 8).await.unwrap();
    assert_eq!(rows(&reader).await, vec![8]);
    writer.close().await.unwrap();
    assert_eq!(rows(&reader).await, vec![8]);
}

/// A refusal alone does not keep the database's write lock: another connection can
/// write right after (it would wait out its busy timeout and fail otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_refusal_releases_the_write_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, _reader) = writer(&dir).await;
    insert(&writer, 1).await.unwrap();
    assert!(insert(&writer, 1).await.is_err());
    let mut other = SqliteConnectOptions::new()
        .filename(dir.path().join("w.db"))
        .busy_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    other.execute("INSERT INTO t (x) VALUES (5)").await.unwrap();
}

/// An operation that fails after SQLite ended the whole transaction itself (here it
/// runs `ROLLBACK`, as SQLite does on an I/O error or a full disk): the writes released
/// into that transaction by its batch-mates are lost, so they are answered with an
/// error, never acknowledged — and the writer carries on with a new transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_lost_under_a_batch_acknowledges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, reader) = writer(&dir).await;
    let writer = Arc::new(writer);
    let held = writer.begin().await.unwrap();
    let mate = {
        let writer = Arc::clone(&writer);
        tokio::spawn(async move { insert(&writer, 1).await })
    };
    // `mate` must be ahead of `breaker` in the writer's (fair) queue: it then runs in
    // the transaction `breaker` loses.
    writer.until_queued(1).await;
    let breaker = {
        let writer = Arc::clone(&writer);
        tokio::spawn(async move {
            let mut operation = writer.begin().await?;
            let outcome = match operation.conn() {
                Ok(conn) => match conn.execute("ROLLBACK").await {
                    Ok(_) => Err(StoreError::Database("the disk is full".into())),
                    Err(error) => Err(database(error)),
                },
                Err(error) => Err(error),
            };
            operation.finish::<(), StoreError>(outcome).await
        })
    };
    writer.until_queued(2).await;
    // The held operation and `mate` release into the transaction `breaker` then loses.
    let held = held.finish(Ok::<(), StoreError>(())).await;
    assert!(held.is_err(), "{held:?}");
    assert!(
        mate.await.unwrap().is_err(),
        "a lost write was acknowledged"
    );
    assert!(breaker.await.unwrap().is_err());
    assert_eq!(rows(&reader).await, Vec::<i64>::new());
    insert(&writer, 2).await.unwrap();
    assert_eq!(rows(&reader).await, vec![2]);
}
