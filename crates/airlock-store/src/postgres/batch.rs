//! Group commit for the gate's most frequent write on PostgreSQL: recording a call that
//! needs no approval.
//!
//! Every write on a workspace holds its `audit_heads` row until it commits (`audit`),
//! so calls of one workspace commit one after another, one WAL flush each, however many
//! connections carry them. Here they are queued instead, and one committer task per node
//! records every queued call in one transaction — one multi-row statement per table, one
//! flush — then answers each caller, only after that commit. While a batch commits, the
//! next one queues. A batch whose statements fail is recorded again call by call, each in
//! its own savepoint, so a bad call fails alone.

use super::sql::calls::{record_calls, CallWrite, QueuedCall};
use crate::codec::database;
use crate::{StoreError, StoreResult};
use sqlx::{Acquire, PgPool};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The queue and its committer task (stopped when this is dropped).
pub(super) struct Batcher {
    shared: Arc<Shared>,
    committer: JoinHandle<()>,
}

struct Shared {
    queue: Mutex<Vec<QueuedCall>>,
    wake: Notify,
    /// The store's count of committed transactions.
    commits: Arc<AtomicU64>,
}

impl Batcher {
    pub(super) fn new(pool: PgPool, commits: Arc<AtomicU64>) -> Batcher {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Vec::new()),
            wake: Notify::new(),
            commits,
        });
        let committer = tokio::spawn(commit_loop(Arc::clone(&shared), pool));
        Batcher { shared, committer }
    }

    /// Records a call that needs no approval (the caller checks) with the calls queued
    /// beside it, and returns once it is committed.
    pub(super) async fn record_call(&self, write: CallWrite<'_>) -> StoreResult<()> {
        QueuedCall::wait(&self.shared.queue, &self.shared.wake, write).await
    }
}

impl Drop for Batcher {
    fn drop(&mut self) {
        self.committer.abort();
    }
}

async fn commit_loop(shared: Arc<Shared>, pool: PgPool) {
    loop {
        shared.wake.notified().await;
        let queued = match shared.queue.lock() {
            Ok(mut queue) => std::mem::take(&mut *queue),
            Err(_) => Vec::new(),
        };
        if queued.is_empty() {
            continue;
        }
        let outcomes = record_batch(&pool, &queued, &shared.commits).await;
        for (queued, outcome) in queued.into_iter().zip(outcomes) {
            // A caller that stopped waiting no longer needs its answer.
            let _ = queued.reply.send(outcome);
        }
    }
}

/// Records `queued` in one transaction; one outcome per call, final once committed.
async fn record_batch(
    pool: &PgPool,
    queued: &[QueuedCall],
    commits: &AtomicU64,
) -> Vec<StoreResult<()>> {
    let writes: Vec<CallWrite<'_>> = queued.iter().map(QueuedCall::write).collect();
    let fail_all = |error: StoreError| {
        let text = error.to_string();
        writes
            .iter()
            .map(|_| Err(StoreError::Database(text.clone())))
            .collect::<Vec<_>>()
    };
    let mut transaction = match pool.begin().await {
        Ok(transaction) => transaction,
        Err(error) => return fail_all(database(error)),
    };
    let outcomes = match in_savepoint(&mut transaction, &writes).await {
        Ok(Ok(())) => writes.iter().map(|_| Ok(())).collect(),
        Ok(Err(error)) if writes.len() == 1 => vec![Err(error)],
        Ok(Err(_)) => {
            let mut outcomes = Vec::with_capacity(writes.len());
            for write in writes.chunks(1) {
                match in_savepoint(&mut transaction, write).await {
                    Ok(outcome) => outcomes.push(outcome),
                    // The transaction cannot be trusted any more (PostgreSQL would turn
                    // the COMMIT of an aborted transaction into a silent rollback).
                    Err(error) => return fail_all(error),
                }
            }
            outcomes
        }
        Err(error) => return fail_all(error),
    };
    match transaction.commit().await {
        Ok(()) => {
            commits.fetch_add(1, Ordering::Relaxed);
            outcomes
        }
        Err(error) => fail_all(database(error)),
    }
}

/// Runs [`record_calls`] in a savepoint: kept when it succeeds, rolled back when not.
/// The outer error is the savepoint's own failure: the transaction is then unusable.
async fn in_savepoint(
    transaction: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    writes: &[CallWrite<'_>],
) -> StoreResult<StoreResult<()>> {
    let mut savepoint = transaction.begin().await.map_err(database)?;
    match record_calls(&mut savepoint, writes).await {
        Ok(()) => savepoint.commit().await.map_err(database).map(Ok),
        Err(error) => {
            savepoint.rollback().await.map_err(database)?;
            Ok(Err(error))
        }
    }
}
