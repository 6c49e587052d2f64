//! Group commit for the gate's most frequent write on PostgreSQL: recording a call that
//! needs no approval.
//!
//! Every write on a workspace holds its `audit_heads` row until it commits (`audit`),
//! so calls of one workspace commit one after another, one WAL flush each, however many
//! connections carry them. Here they are queued instead, and recorded in batches: each
//! batch in one transaction — one flush — and each caller answered only after the commit
//! that holds its call. A batch is one statement per workspace (`statement.rs`: `BEGIN`,
//! the statement, `COMMIT`), chained on the heads the batch before it moved and checked
//! against the database's. A batch whose statement fails is recorded again the general
//! way (`sql::calls::record_calls`), and if that fails too, call by call, each in its own
//! savepoint, so a bad call fails alone.
//!
//! Two lanes, each with a connection of its own, take turns ([`lane`]): while one
//! batch's `COMMIT` waits for its flush, the next batch is sent on the other lane, and
//! its statement waits only for the head row. The lanes keep their connections rather
//! than borrowing one from the pool for each batch: the pool pings a connection when it
//! lends it and when it gets it back, two network round trips per batch.
//! [`write_batch`] says how a connection that died meanwhile is noticed without ever
//! acknowledging a call that was not committed.

mod statement;

use super::dialect::chain_head;
use super::sql::calls::{fail_each, record_calls, CallWrite, QueuedCall};
use crate::codec::database;
use crate::{StoreError, StoreResult};
use sqlx::{Executor, PgConnection, PgPool};
use statement::Head;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The queue and its two lanes (stopped when this is dropped).
pub(super) struct Batcher {
    shared: Arc<Shared>,
    lanes: [JoinHandle<()>; 2],
}

struct Shared {
    queue: Mutex<Vec<QueuedCall>>,
    wake: Notify,
    /// Held by the lane that takes the queue and writes a batch, until the batch is
    /// written; released before its `COMMIT`, so the other lane writes the next batch
    /// while this one commits.
    turn: tokio::sync::Mutex<()>,
    /// The chain heads the last batch written moved, or that were read, per workspace:
    /// where the next batch's records go unless another write moved them meanwhile. Only
    /// a guess: the batch's statement checks it against the database (`statement.rs`).
    heads: Mutex<Heads>,
    /// The store's count of committed transactions.
    commits: Arc<AtomicU64>,
}

impl Batcher {
    pub(super) fn new(pool: PgPool, commits: Arc<AtomicU64>) -> Batcher {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Vec::new()),
            wake: Notify::new(),
            turn: tokio::sync::Mutex::new(()),
            heads: Mutex::new(Heads::new()),
            commits,
        });
        let lanes = [
            tokio::spawn(lane(Arc::clone(&shared), pool.clone())),
            tokio::spawn(lane(Arc::clone(&shared), pool)),
        ];
        Batcher { shared, lanes }
    }

    /// Records a call that needs no approval (the caller checks) with the calls queued
    /// beside it, and returns once it is committed.
    pub(super) async fn record_call(&self, write: CallWrite<'_>) -> StoreResult<()> {
        QueuedCall::wait(&self.shared.queue, &self.shared.wake, write).await
    }
}

impl Drop for Batcher {
    fn drop(&mut self) {
        for lane in &self.lanes {
            lane.abort();
        }
    }
}

/// Chain heads by workspace.
type Heads = HashMap<String, Head>;

/// One of the batcher's two lanes, each with a connection of its own: in turn, takes
/// every queued call, writes them as one batch, passes the turn and commits.
///
/// The batch the other lane writes meanwhile is chained on this batch's heads, and its
/// statement waits for this batch's `COMMIT` (it needs the head row this batch holds
/// locked). When this batch does not commit, the head row stays where it was, the
/// other batch's statement finds the head it expected missing, writes nothing, and is
/// written again on the head read then (`statement.rs`): a batch never commits on the
/// records of one that did not. Each batch's callers are answered after its own commit.
async fn lane(shared: Arc<Shared>, pool: PgPool) {
    let mut conn: Option<PgConnection> = None;
    loop {
        let turn = shared.turn.lock().await;
        let queued = loop {
            let queued = match shared.queue.lock() {
                Ok(mut queue) => std::mem::take(&mut *queue),
                Err(_) => Vec::new(),
            };
            if !queued.is_empty() {
                break queued;
            }
            shared.wake.notified().await;
        };
        let writes: Vec<CallWrite<'_>> = queued.iter().map(QueuedCall::write).collect();
        let written = write_batch(&pool, &mut conn, &writes, &shared).await;
        drop(turn);
        let outcomes = match written {
            Written::Open => commit(&mut conn, writes.len(), &shared.commits).await,
            Written::Done(outcomes) => outcomes,
        };
        drop(writes);
        for (queued, outcome) in queued.into_iter().zip(outcomes) {
            // A caller that stopped waiting no longer needs its answer.
            let _ = queued.reply.send(outcome);
        }
    }
}

/// How one attempt at a batch ended.
enum Attempt {
    /// Written in the open transaction; `COMMIT` is what is left.
    Open,
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

/// How [`write_batch`] left a batch.
enum Written {
    /// Written in the open transaction on the lane's connection, to be committed.
    Open,
    /// Final outcomes, one per call.
    Done(Vec<StoreResult<()>>),
}

/// Writes `writes` in one transaction on the lane's own connection: left open for
/// [`commit`] when written as one statement per workspace, else (the general way)
/// committed here, one outcome per call.
///
/// The connection is the lane's, not lent by the pool for each batch: the pool pings a
/// connection before lending it and again when it comes back (two network round trips
/// per batch). Without the ping a connection that died while idle (the server
/// restarted, an administrator ended it) fails the batch's first statement instead;
/// that is before `COMMIT`, so the batch is tried once more on a fresh connection from
/// the pool, which is pinged. A failure after `COMMIT` was sent is never retried: the
/// commit's outcome is unknown, so every call of the batch is told it failed.
async fn write_batch(
    pool: &PgPool,
    conn: &mut Option<PgConnection>,
    writes: &[CallWrite<'_>],
    shared: &Shared,
) -> Written {
    let fail_all = |error: StoreError| Written::Done(fail_each(writes.len(), &error));
    let mut retried = false;
    loop {
        let live = match conn {
            Some(live) => live,
            None => match pool.acquire().await {
                Ok(lent) => conn.insert(lent.detach()),
                Err(error) => return fail_all(database(error)),
            },
        };
        match attempt(live, writes, shared).await {
            Attempt::Open => return Written::Open,
            Attempt::Done(outcomes) => return Written::Done(outcomes),
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

/// Commits the batch [`write_batch`] left open on `conn`: `count` outcomes.
async fn commit(
    conn: &mut Option<PgConnection>,
    count: usize,
    commits: &AtomicU64,
) -> Vec<StoreResult<()>> {
    let Some(live) = conn else {
        return fail_each(
            count,
            &StoreError::Database("the batch lost its connection".into()),
        );
    };
    match live.execute("COMMIT").await {
        Ok(_) => {
            commits.fetch_add(1, Ordering::Relaxed);
            (0..count).map(|_| Ok(())).collect()
        }
        // The commit's outcome is unknown: every call is told it failed, and the
        // connection, in whatever state the failure left it, is not used again. The
        // heads it moved stay as the next batch's guess, which its statement checks.
        Err(error) => {
            *conn = None;
            fail_each(count, &database(error))
        }
    }
}

/// One attempt at recording `writes` in one transaction on `conn`: first as one
/// statement per workspace ([`in_one_statement`]); when that fails, the general way,
/// without a savepoint (the transaction holds nothing else); when that fails too the
/// transaction is rolled back and the calls are recorded one by one, each in a savepoint
/// of a new transaction, so a bad call fails alone.
async fn attempt(conn: &mut PgConnection, writes: &[CallWrite<'_>], shared: &Shared) -> Attempt {
    if let Some(attempt) = in_one_statement(conn, writes, &shared.heads).await {
        return attempt;
    }
    let commits = &shared.commits;
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

/// Writes `writes` as one statement per workspace (`statement.rs`), in workspace order,
/// after `BEGIN`, and leaves the transaction open ([`Attempt::Open`]): with its
/// `COMMIT`, three round trips for a batch of one workspace, where the general way takes
/// ten. The heads it moved become `heads`, the next batch's guess. `None` (after a
/// rollback) when a statement failed: the general way then finds out which call it was.
async fn in_one_statement(
    conn: &mut PgConnection,
    writes: &[CallWrite<'_>],
    heads: &Mutex<Heads>,
) -> Option<Attempt> {
    if writes.iter().any(|write| write.call.approval.is_some()) {
        return None;
    }
    let mut workspaces: Vec<&str> = writes.iter().map(|write| write.workspace).collect();
    workspaces.sort_unstable();
    workspaces.dedup();
    if let Err(error) = conn.execute("BEGIN").await {
        return Some(Attempt::Broken(database(error)));
    }
    for workspace in workspaces {
        let group: Vec<CallWrite<'_>> = writes
            .iter()
            .filter(|write| write.workspace == workspace)
            .copied()
            .collect();
        let known = heads
            .lock()
            .ok()
            .and_then(|heads| heads.get(workspace).cloned());
        let written = on_head(conn, workspace, &group, known).await;
        if let Ok(mut heads) = heads.lock() {
            match &written {
                Ok(head) => heads.insert(workspace.to_owned(), head.clone()),
                Err(_) => heads.remove(workspace),
            };
        }
        if let Err(error) = written {
            // A rollback that fails means the connection failed: nothing is committed.
            if let Err(error) = conn.execute("ROLLBACK").await {
                return Some(Attempt::Broken(database(error)));
            }
            tracing::debug!(%error, "the batch as one statement failed; recording it the general way");
            return None;
        }
    }
    Some(Attempt::Open)
}

/// Records `group` (calls of `workspace`) on the head the batcher knows, or when it knows
/// none or another write moved it, on the head read (and locked) now. The new head.
async fn on_head(
    conn: &mut PgConnection,
    workspace: &str,
    group: &[CallWrite<'_>],
    known: Option<Head>,
) -> StoreResult<Head> {
    if let Some(head) = known {
        if let Some(moved) = statement::record(&mut *conn, workspace, group, head).await? {
            return Ok(moved);
        }
    }
    let head = chain_head(&mut *conn, workspace).await?;
    statement::record(&mut *conn, workspace, group, head)
        .await?
        .ok_or_else(|| {
            StoreError::Database(format!("the chain head of {workspace} moved while locked"))
        })
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
