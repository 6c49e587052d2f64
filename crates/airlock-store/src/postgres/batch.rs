//! Group commit for the gate's most frequent write on PostgreSQL: recording a call that
//! needs no approval.
//!
//! Every write on a workspace holds its `audit_heads` row until it commits (`audit`),
//! so calls of one workspace commit one after another, one WAL flush each, however many
//! connections carry them. Here they are queued instead, and one committer per node
//! records every queued call in one transaction — one multi-row statement per table, one
//! flush — then answers each caller, only after that commit. While a batch commits, the
//! next one queues. A batch whose statements fail is recorded again call by call, each in
//! its own savepoint, so a bad call fails alone.
//!
//! The committer runs on a thread of its own with a connection of its own (opened there,
//! so the database's answers wake it directly): a batch is a string of round trips, and on
//! the server's runtime each of them waited behind the HTTP tasks the batch before had
//! just answered. It does not borrow from the pool, which pings a connection when it lends
//! it and when it gets it back, two more round trips per batch. [`record_batch`] says how
//! a connection that died meanwhile is noticed without ever acknowledging a call that was
//! not committed.

use super::sql::calls::{fail_each, record_calls, Batched, CallWrite, QueuedCall};
use crate::codec::database;
use crate::{StoreError, StoreResult};
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, Executor, PgConnection};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// The queue and its committer thread (which ends when this is dropped).
pub(super) struct Batcher {
    shared: Arc<Shared>,
}

struct Shared {
    queue: Mutex<Vec<QueuedCall>>,
    wake: Notify,
    /// Set when the store is dropped: the committer ends.
    closed: AtomicBool,
    /// The store's count of committed transactions.
    commits: Arc<AtomicU64>,
}

/// Prepared statements the committer's connection keeps: four multi-row statements for
/// each batch size up to the 64 clients a busy node typically has, and the rest.
pub(super) const STATEMENTS: usize = 512;

/// How the committer opens its connection: the pool's server and the settings each of
/// the pool's connections gets when it opens.
pub(super) struct Connector {
    pub options: PgConnectOptions,
    pub settings: String,
    pub timeout: Duration,
}

impl Connector {
    async fn connect(&self) -> StoreResult<PgConnection> {
        let mut conn =
            tokio::time::timeout(self.timeout, PgConnection::connect_with(&self.options))
                .await
                .map_err(|_| {
                    StoreError::Database(format!("no connection within {:?}", self.timeout))
                })?
                .map_err(database)?;
        conn.execute(self.settings.as_str())
            .await
            .map_err(database)?;
        Ok(conn)
    }
}

impl Batcher {
    /// Starts the committer on a thread of its own, with a single-threaded runtime (the
    /// module documentation says why).
    pub(super) fn new(connector: Connector, commits: Arc<AtomicU64>) -> StoreResult<Batcher> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Vec::new()),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
            commits,
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| StoreError::Database(format!("starting the batcher: {error}")))?;
        let committer = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("airlock-pg-batch".into())
            .spawn(move || runtime.block_on(commit_loop(committer, connector)))
            .map_err(|error| StoreError::Database(format!("starting the batcher: {error}")))?;
        Ok(Batcher { shared })
    }

    /// Records a call that needs no approval (the caller checks) with the calls queued
    /// beside it, and returns once it is committed.
    pub(super) async fn record_call(&self, batched: Batched) -> StoreResult<()> {
        QueuedCall::wait(&self.shared.queue, &self.shared.wake, batched).await
    }
}

impl Drop for Batcher {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.wake.notify_one();
    }
}

async fn commit_loop(shared: Arc<Shared>, connector: Connector) {
    let mut conn: Option<PgConnection> = None;
    loop {
        shared.wake.notified().await;
        let queued = match shared.queue.lock() {
            Ok(mut queue) => std::mem::take(&mut *queue),
            Err(_) => Vec::new(),
        };
        if queued.is_empty() {
            if shared.closed.load(Ordering::Acquire) {
                break;
            }
            continue;
        }
        let outcomes = record_batch(&connector, &mut conn, &queued, &shared.commits).await;
        for (queued, outcome) in queued.into_iter().zip(outcomes) {
            // A caller that stopped waiting no longer needs its answer.
            let _ = queued.reply.send(outcome);
        }
    }
    if let Some(conn) = conn {
        if let Err(error) = conn.close().await {
            tracing::debug!(%error, "closing the batcher's connection");
        }
    }
}

/// How one attempt at a batch ended.
enum Attempt {
    /// Every call has its final outcome (committed, refused alone, or failed together).
    Done(Vec<StoreResult<()>>),
    /// The connection failed before `COMMIT` was sent: nothing of the batch can have been
    /// committed (PostgreSQL ends an open transaction with its connection), so the batch
    /// may be tried again on another connection.
    Broken(StoreError),
    /// `COMMIT` was sent and failed: the batch's outcome is unknown, so it is failed and
    /// never retried, and the connection is dropped.
    Unknown(StoreError),
}

/// Records `queued` in one transaction on the committer's own connection; one outcome
/// per call, final once committed.
///
/// The connection is the committer's and is not pinged before each batch (a ping is a
/// round trip). A connection that died while idle (the server restarted, an administrator
/// ended it) fails the batch's first statement instead; that is before `COMMIT`, so the
/// batch is tried once more on a freshly opened connection. A failure after `COMMIT` was
/// sent is never retried: the commit's outcome is unknown, so every call of the batch is
/// told it failed.
async fn record_batch(
    connector: &Connector,
    conn: &mut Option<PgConnection>,
    queued: &[QueuedCall],
    commits: &AtomicU64,
) -> Vec<StoreResult<()>> {
    let writes: Vec<CallWrite<'_>> = queued.iter().map(QueuedCall::write).collect();
    let fail_all = |error: StoreError| fail_each(writes.len(), &error);
    let mut retried = false;
    loop {
        let live = match conn {
            Some(live) => live,
            None => match connector.connect().await {
                Ok(fresh) => conn.insert(fresh),
                Err(error) => return fail_all(error),
            },
        };
        match attempt(live, &writes, commits).await {
            Attempt::Done(outcomes) => return outcomes,
            Attempt::Unknown(error) => {
                *conn = None;
                return fail_all(error);
            }
            Attempt::Broken(error) => {
                *conn = None;
                if retried {
                    return fail_all(error);
                }
                retried = true;
                tracing::debug!(%error, "the batch's connection failed before its commit; trying a fresh one");
            }
        }
    }
}

/// One attempt at recording `writes` in one transaction on `conn`. The batch is first
/// written without a savepoint (the transaction holds nothing else); when it fails the
/// transaction is rolled back and the calls are recorded one by one, each in a savepoint
/// of a new transaction, so a bad call fails alone.
async fn attempt(
    conn: &mut PgConnection,
    writes: &[CallWrite<'_>],
    commits: &AtomicU64,
) -> Attempt {
    let fail_all = |error: StoreError| Attempt::Done(fail_each(writes.len(), &error));
    if let Err(error) = conn.execute("BEGIN").await {
        return Attempt::Broken(database(error));
    }
    let outcomes = match record_calls(&mut *conn, writes).await {
        Ok(()) => writes.iter().map(|_| Ok(())).collect(),
        Err(error) => {
            // A rollback that fails means the connection failed: nothing is committed.
            if let Err(error) = conn.execute("ROLLBACK").await {
                return Attempt::Broken(database(error));
            }
            if writes.len() == 1 {
                return Attempt::Done(vec![Err(error)]);
            }
            if let Err(error) = conn.execute("BEGIN").await {
                return Attempt::Broken(database(error));
            }
            let mut outcomes = Vec::with_capacity(writes.len());
            for write in writes.chunks(1) {
                match in_savepoint(&mut *conn, write).await {
                    Ok(outcome) => outcomes.push(outcome),
                    // The transaction cannot be trusted any more (PostgreSQL would turn
                    // the COMMIT of an aborted transaction into a silent rollback).
                    Err(error) => {
                        if let Err(error) = conn.execute("ROLLBACK").await {
                            return Attempt::Broken(database(error));
                        }
                        return fail_all(error);
                    }
                }
            }
            outcomes
        }
    };
    match conn.execute("COMMIT").await {
        Ok(_) => {
            commits.fetch_add(1, Ordering::Relaxed);
            Attempt::Done(outcomes)
        }
        // The commit's outcome is unknown: every call is told it failed, and the
        // connection, in whatever state the failure left it, is not used again.
        Err(error) => Attempt::Unknown(database(error)),
    }
}

/// Runs [`record_calls`] in a savepoint: kept when it succeeds, rolled back when not.
/// The outer error is the savepoint's own failure: the transaction is then unusable.
async fn in_savepoint(
    conn: &mut PgConnection,
    writes: &[CallWrite<'_>],
) -> StoreResult<StoreResult<()>> {
    conn.execute("SAVEPOINT call").await.map_err(database)?;
    match record_calls(&mut *conn, writes).await {
        Ok(()) => conn
            .execute("RELEASE SAVEPOINT call")
            .await
            .map_err(database)
            .map(|_| Ok(())),
        Err(error) => {
            conn.execute("ROLLBACK TO SAVEPOINT call; RELEASE SAVEPOINT call")
                .await
                .map_err(database)?;
            Ok(Err(error))
        }
    }
}
