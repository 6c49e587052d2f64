//! The SQLite store's own tests: connection settings and the writer's batching.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use crate::test_calls::{allowed_call, workspace_with_agent};
use crate::{Effects, Store};
use jiff::Timestamp;
use sqlx::{ConnectOptions, Executor};

/// The per-connection settings durability and integrity rest on (G7), and the writer's
/// checkpoint size, and a reader's mapping: they are not visible from another
/// connection, so they are checked on the store's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_durable_checked_and_readers_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("airlock.db"))
        .await
        .unwrap();
    let checked = store.writer.with_conn(|writer| {
        Box::pin(async move {
            let pragma = |name: &'static str| format!("PRAGMA {name}");
            let synchronous: i64 = sqlx::query_scalar(&pragma("synchronous"))
                .fetch_one(&mut *writer)
                .await
                .unwrap();
            assert_eq!(synchronous, 2, "synchronous=FULL");
            let foreign_keys: i64 = sqlx::query_scalar(&pragma("foreign_keys"))
                .fetch_one(&mut *writer)
                .await
                .unwrap();
            assert_eq!(foreign_keys, 1);
            let journal: String = sqlx::query_scalar(&pragma("journal_mode"))
                .fetch_one(&mut *writer)
                .await
                .unwrap();
            assert_eq!(journal, "wal");
            let busy: i64 = sqlx::query_scalar(&pragma("busy_timeout"))
                .fetch_one(&mut *writer)
                .await
                .unwrap();
            assert_eq!(busy, 5000);
            let checkpoint: i64 = sqlx::query_scalar(&pragma("wal_autocheckpoint"))
                .fetch_one(&mut *writer)
                .await
                .unwrap();
            assert_eq!(checkpoint, i64::from(CHECKPOINT_PAGES));
        })
    });
    checked.await.unwrap();
    let refused = sqlx::query("INSERT INTO workspaces (id, name, created_at) VALUES ('w', 'w', 0)")
        .execute(&store.readers)
        .await;
    assert!(refused.is_err(), "a reader connection wrote");
    // A reader maps the file only while it reads the audit chain (what reading sealed
    // segments fast rests on), and is unmapped again after.
    let mut reader = store.readers.acquire().await.unwrap();
    assert_eq!(map_size(&mut reader).await, 0);
    dialect::map_file(&mut reader, true).await.unwrap();
    assert_eq!(map_size(&mut reader).await, MAP_BYTES);
    dialect::map_file(&mut reader, false).await.unwrap();
    assert_eq!(map_size(&mut reader).await, 0);
    drop(reader);
    store.close().await.unwrap();
}

/// How much of the database file `conn` maps.
async fn map_size(conn: &mut dialect::Conn) -> u64 {
    let bytes: i64 = sqlx::query_scalar("PRAGMA mmap_size")
        .fetch_one(conn)
        .await
        .unwrap();
    bytes.unsigned_abs()
}

/// The hot path's readers (`hot_reads.rs`) are read-only like the pool's, a connection
/// whose read failed is closed rather than lent again, and a good one is reused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lent_readers_are_read_only_and_only_good_ones_are_reused() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_call_0(&dir).await;
    let mut lent = store.lend_reader().await.unwrap();
    let refused = sqlx::query("INSERT INTO workspaces (id, name, created_at) VALUES ('w', 'w', 0)")
        .execute(lent.conn())
        .await;
    assert!(refused.is_err(), "a lent reader wrote");
    lent.give_back(false);
    assert_eq!(store.hot.idle(), 0, "a failed reader was kept");
    let mut lent = store.lend_reader().await.unwrap();
    let calls: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM calls")
        .fetch_one(lent.conn())
        .await
        .unwrap();
    assert_eq!(calls, 1);
    lent.give_back(true);
    assert_eq!(store.hot.idle(), 1);
}

fn allowed_effects(id: &str) -> Effects {
    Effects::none().audit(crate::AuditEntry {
        at: Timestamp::from_second(1_800_000_000).unwrap(),
        actor: "agent:agt_a".into(),
        kind: "call.allowed".into(),
        subject: format!("call_{id}"),
        data: serde_json::json!({"id": id}).into(),
    })
}

/// Lets `held` go once every task's call has queued behind it, and returns which calls
/// (numbered from 1 in task order) failed; they must all have been committed together.
async fn release_the_batch(
    store: &SqliteStore,
    held: super::writer::Operation<'_>,
    tasks: Vec<tokio::task::JoinHandle<StoreResult<()>>>,
) -> Vec<usize> {
    store.writer.until_queued(tasks.len()).await;
    let commits_before = store.writer.commits();
    held.finish(Ok::<(), StoreError>(())).await.unwrap();
    let mut failed = Vec::new();
    for (n, task) in (1..).zip(tasks) {
        if task.await.unwrap().is_err() {
            failed.push(n);
        }
    }
    assert_eq!(store.writer.commits() - commits_before, 1, "one batch");
    failed
}

/// A store in `dir` with workspace `ws_a`, agent `agt_a` and call 0 recorded.
async fn store_with_call_0(dir: &tempfile::TempDir) -> std::sync::Arc<SqliteStore> {
    let store = std::sync::Arc::new(
        SqliteStore::open(&dir.path().join("airlock.db"))
            .await
            .unwrap(),
    );
    workspace_with_agent(store.as_ref()).await;
    store
        .record_call("ws_a", allowed_call("0"), allowed_effects("0"))
        .await
        .unwrap();
    store
}

/// Calls queued while the writer is busy are recorded by the committer in one batch;
/// when one of them cannot be stored (its id is taken) the batch is recorded again
/// call by call: that call fails alone, the others are committed, and the audit chain
/// has no gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_call_in_a_batch_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_call_0(&dir).await;

    let held = store.writer.begin().await.unwrap();
    let mut tasks = Vec::new();
    for n in 1..=10 {
        // Call 5 reuses call 0's id.
        let id = if n == 5 {
            "0".to_owned()
        } else {
            n.to_string()
        };
        let store = std::sync::Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            store
                .record_call("ws_a", allowed_call(&id), allowed_effects(&id))
                .await
        }));
    }
    let failed = release_the_batch(&store, held, tasks).await;
    assert_eq!(failed, vec![5]);
    let records = store.audit_after("ws_a", 0, 100).await.unwrap();
    let seqs: Vec<u64> = records.iter().map(|record| record.seq).collect();
    assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    for pair in records.windows(2) {
        assert_eq!(pair[1].prev_hash, pair[0].hash);
    }
}

/// The batch's inserts are one string of statements: when a later one fails (a grant
/// whose id is taken) after the call rows went in, those rows are undone with it, the
/// batch is recorded again call by call, and the call whose grant failed leaves no row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_grant_fails_in_a_batch_leaves_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_call_0(&dir).await;

    let held = store.writer.begin().await.unwrap();
    let mut tasks = Vec::new();
    for n in 1..=4 {
        let mut call = allowed_call(&n.to_string());
        if n == 3 {
            // Its own call id, call 0's grant id.
            if let Some(grant) = call.grant.as_mut() {
                grant.id = "grt_0".into();
            }
            call.call.grant_id = Some("grt_0".into());
        }
        let store = std::sync::Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            store
                .record_call("ws_a", call.clone(), allowed_effects(&n.to_string()))
                .await
        }));
    }
    let failed = release_the_batch(&store, held, tasks).await;
    assert_eq!(failed, vec![3]);
    assert!(store.get_call("ws_a", "call_3").await.unwrap().is_none());
    for n in [1, 2, 4] {
        let id = format!("call_{n}");
        assert!(store.get_call("ws_a", &id).await.unwrap().is_some(), "{id}");
    }
    let records = store.audit_after("ws_a", 0, 100).await.unwrap();
    // The spawned calls queue in whatever order the runtime runs them, so the chain
    // holds them in that order: which calls are audited is what is checked.
    let mut subjects: Vec<&str> = records
        .iter()
        .map(|record| record.subject.as_str())
        .collect();
    subjects.sort_unstable();
    assert_eq!(subjects, ["call_0", "call_1", "call_2", "call_4"]);
    for pair in records.windows(2) {
        assert_eq!(pair[1].prev_hash, pair[0].hash);
    }
}

/// When a batch's `COMMIT` itself fails (here on a foreign key that the operation beside
/// the calls broke, checked only at commit), neither the calls nor the operation are
/// acknowledged, none of them is kept, and the writer records the next call afresh on an
/// unbroken chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_commit_fails_acknowledges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_call_0(&dir).await;

    let mut held = store.writer.begin().await.unwrap();
    held.conn()
        .unwrap()
        .execute(
            "PRAGMA defer_foreign_keys = ON;
             INSERT INTO events (workspace, kind, at, data) VALUES ('ws_none', 'x', 0, '{}')",
        )
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for n in 1..=3 {
        let store = std::sync::Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let id = n.to_string();
            store
                .record_call("ws_a", allowed_call(&id), allowed_effects(&id))
                .await
        }));
    }
    store.writer.until_queued(tasks.len()).await;
    let commits_before = store.writer.commits();
    let held = held.finish(Ok::<(), StoreError>(())).await;
    assert!(held.is_err(), "{held:?}");
    for task in tasks {
        let outcome = task.await.unwrap();
        assert!(
            outcome.is_err(),
            "a call of a failed commit was acknowledged"
        );
    }
    assert_eq!(store.writer.commits(), commits_before);
    for n in 1..=3 {
        let id = format!("call_{n}");
        assert!(store.get_call("ws_a", &id).await.unwrap().is_none(), "{id}");
    }

    store
        .record_call("ws_a", allowed_call("4"), allowed_effects("4"))
        .await
        .unwrap();
    let records = store.audit_after("ws_a", 0, 100).await.unwrap();
    let subjects: Vec<&str> = records
        .iter()
        .map(|record| record.subject.as_str())
        .collect();
    assert_eq!(subjects, ["call_0", "call_4"]);
    assert_eq!(records[1].prev_hash, records[0].hash);
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE workspace = 'ws_none'")
        .fetch_one(&store.readers)
        .await
        .unwrap();
    assert_eq!(events, 0);
}

/// The audit records of `ws_a`, checked to form one chain: seqs 1, 2, … and each
/// `prev_hash` the hash before it.
async fn whole_chain(store: &SqliteStore) -> Vec<airlock_protocol::AuditRecord> {
    let records = store.audit_after("ws_a", 0, 1000).await.unwrap();
    for (seq, record) in (1..).zip(&records) {
        assert_eq!(record.seq, seq, "{records:?}");
    }
    for pair in records.windows(2) {
        assert_eq!(pair[1].prev_hash, pair[0].hash, "{records:?}");
    }
    records
}

/// A call that finds the writer idle is committed in one round trip, chained on the head
/// the writer's last commit left. That head is never trusted past a change made another
/// way: after an operation that appended, and after a record appended by another
/// connection to the file (the batch is refused by the primary key, nothing of it is kept,
/// and the call is recorded the general way), the chain stays one chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_writer_commits_a_call_at_once_on_the_head_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_call_0(&dir).await;
    let record = |n: u32| {
        let store = std::sync::Arc::clone(&store);
        async move {
            let id = n.to_string();
            store
                .record_call("ws_a", allowed_call(&id), allowed_effects(&id))
                .await
        }
    };

    // Two calls one after the other, each alone on an idle writer.
    let at_once = store.writer.at_once();
    record(1).await.unwrap();
    record(2).await.unwrap();
    assert_eq!(store.writer.at_once() - at_once, 2);
    whole_chain(&store).await;

    // An operation that appends to the chain, then a call: on the new head.
    let agent = crate::test_calls::agent("agt_b", "second");
    store
        .create_agent("ws_a", &agent, "hash_b", &allowed_effects("agent_b"))
        .await
        .unwrap();
    let at_once = store.writer.at_once();
    record(3).await.unwrap();
    assert_eq!(store.writer.at_once() - at_once, 1);
    let before = whole_chain(&store).await;
    assert_eq!(before.last().unwrap().subject, "call_3");

    // Another connection appends a record behind the writer's back.
    let head = before.last().unwrap();
    let mut other = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.path().join("airlock.db"))
        .busy_timeout(std::time::Duration::from_secs(5))
        .connect()
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO audit (workspace, seq, at, actor, kind, subject, data, prev_hash, hash)
         VALUES ('ws_a', ?, 'at', 'admin', 'outside', 'outside', '{}', ?, ?)",
    )
    .bind(i64::try_from(head.seq + 1).unwrap())
    .bind(&head.hash)
    .bind("e".repeat(64))
    .execute(&mut other)
    .await
    .unwrap();
    let (at_once, commits) = (store.writer.at_once(), store.writer.commits());
    record(4).await.unwrap();
    assert_eq!(store.writer.at_once(), at_once, "chained on a stale head");
    assert_eq!(store.writer.commits() - commits, 1);
    let records = whole_chain(&store).await;
    let subjects: Vec<&str> = records[before.len() - 1..]
        .iter()
        .map(|record| record.subject.as_str())
        .collect();
    assert_eq!(subjects, ["call_3", "outside", "call_4"]);
    let calls: i64 = sqlx::query_scalar("SELECT count(*) FROM calls WHERE id = 'call_4'")
        .fetch_one(&store.readers)
        .await
        .unwrap();
    assert_eq!(calls, 1);

    // And the heads are read again for the next call alone on the writer.
    let at_once = store.writer.at_once();
    record(5).await.unwrap();
    assert_eq!(store.writer.at_once() - at_once, 1);
    assert_eq!(whole_chain(&store).await.last().unwrap().subject, "call_5");
}

/// A hook's lookup of a held call goes through the retry-key index, whatever the number
/// of calls: SQLite once answered it by walking every call of the workspace in creation
/// order (for the `ORDER BY`), so every hook call cost more as the history grew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_held_call_lookup_uses_the_retry_key_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("airlock.db"))
        .await
        .unwrap();
    let plan: Vec<String> =
        sqlx::query(&format!("EXPLAIN QUERY PLAN {}", sql::retries::held_sql()))
            .bind("ws_a")
            .bind("key")
            .fetch_all(&store.readers)
            .await
            .unwrap()
            .iter()
            .map(|row| sqlx::Row::get::<String, _>(row, "detail"))
            .collect();
    assert!(
        plan.iter().any(|step| step.contains("calls_retry_key")),
        "{plan:?}"
    );
    assert!(
        !plan.iter().any(|step| step.contains("calls_by_workspace")),
        "{plan:?}"
    );
}

/// A hook call's reads in one statement (`sql::hook_reads`) each go through their own
/// index, as the separate reads do: no table is walked, whatever its size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_calls_reads_use_their_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("airlock.db"))
        .await
        .unwrap();
    let explain = format!("EXPLAIN QUERY PLAN {}", sql::hook_reads::hook_reads_sql());
    let mut query = sqlx::query(&explain);
    for value in ["ws_a", "agt_a", "ses_a", "key", "retry", "email.send", "{}"] {
        query = query.bind(value);
    }
    let plan: Vec<String> = query
        .fetch_all(&store.readers)
        .await
        .unwrap()
        .iter()
        .map(|row| sqlx::Row::get::<String, _>(row, "detail"))
        .collect();
    for index in [
        "grants_by_idempotency_key",
        "calls_retry_key",
        "calls_ambiguous",
    ] {
        assert!(
            plan.iter().any(|step| step.contains(index)),
            "{index}: {plan:?}"
        );
    }
    // Only the one-row `SELECT 1` is scanned; every table is searched.
    let scans: Vec<&String> = plan
        .iter()
        .filter(|step| {
            step.starts_with("SCAN") && !step.contains("here") && !step.contains("CONSTANT ROW")
        })
        .collect();
    assert!(scans.is_empty(), "{plan:?}");
    assert!(
        !plan.iter().any(|step| step.contains("calls_by_workspace")),
        "{plan:?}"
    );
}

/// A long walk (verifying the audit chain) overlaps its reads on the reader pool, but
/// always leaves one reader free for the calls served beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_walk_leaves_a_reader_free() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("airlock.db"))
        .await
        .unwrap();
    let at_once = store.long_reads_at_once();
    assert!(
        (2..READERS as usize).contains(&at_once),
        "{at_once} of {READERS} readers"
    );
    store.close().await.unwrap();
}

/// The database is the owner's alone (it holds the link-signing key): a folder made for
/// it is 0700, the file and its `-wal` and `-shm` are 0600 whatever the umask, and an
/// existing file others can read is tightened.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_and_its_folder_are_the_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("data");
    let path = folder.join("airlock.db");
    let store = SqliteStore::open(&path).await.unwrap();
    workspace_with_agent(&store).await;
    store
        .record_call("ws_a", allowed_call("one"), allowed_effects("one"))
        .await
        .unwrap();
    assert_eq!(mode(&folder), 0o700);
    for suffix in ["", "-wal", "-shm"] {
        let file = folder.join(format!("airlock.db{suffix}"));
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    store.close().await.unwrap();

    // A database made readable to others (an older airlock, a copy) is tightened.
    for suffix in ["", "-wal", "-shm"] {
        let file = folder.join(format!("airlock.db{suffix}"));
        if file.exists() {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(mode(&path), 0o600);
    store.close().await.unwrap();
}
