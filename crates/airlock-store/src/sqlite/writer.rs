//! Group commit on the one writer connection: many write operations, one transaction,
//! one fsync, and each operation acknowledged only after the commit that holds it.
//!
//! An operation takes the writer (an async mutex, FIFO-fair), opens the shared
//! transaction with `BEGIN IMMEDIATE` if none is open, and runs inside its own
//! `SAVEPOINT`: when it succeeds the savepoint is released into the shared transaction,
//! when it is refused the savepoint is rolled back, so a refusal writes nothing and
//! leaves its batch-mates untouched. The operation then lets go of the writer and waits
//! for its batch's commit. A committer task commits the open transaction whenever it
//! gets the writer; because the mutex is fair, every operation that queued for the
//! writer before the committer did joins the batch first. While one commit is syncing
//! the disk, the operations that arrive queue up and form the next batch — under load a
//! batch is as large as the number of concurrent writers, alone it is one operation.
//!
//! Cancellation: an operation's future may be dropped anywhere. Dropped while running,
//! it leaves its savepoint open (`dangling`); whoever takes the writer next rolls the
//! savepoint back before anything else. Dropped while waiting for its commit, its write
//! is committed with the batch although nobody hears of it — as if the answer were lost
//! on the way, which a client must already handle.
//!
//! A failed `COMMIT` fails every operation of the batch (none of them was acknowledged)
//! and the transaction is rolled back.
//!
//! The gate's most frequent write, recording a call that needs no approval, takes a
//! shorter way ([`Writer::record_call`]): it is queued with its data, and the committer
//! records every queued call with one multi-row statement per table before it commits.
//! Should the batch's statements fail, the committer records the calls one by one, each
//! in its own savepoint, so a bad call fails alone.
//!
//! Round trips: sqlx runs the connection on its own thread, and every `execute` is a
//! hand-off there and back — on a virtual machine, waking an idle thread costs more than
//! the statement. Statements that always go together are therefore sent as one string
//! (SQLite runs them in order and stops at the first failure): `BEGIN IMMEDIATE; SAVEPOINT
//! op`, `ROLLBACK TO op; RELEASE op`, and the batch's `RELEASE op; COMMIT`; and the
//! batch's inserts are one string too (`sql::calls::record_calls`). A batch of calls that
//! finds no transaction open is one round trip: `BEGIN IMMEDIATE`, its inserts and
//! `COMMIT` as one string (`sql::calls::commit_calls`), its audit records chained on the
//! heads the writer's last commit left ([`State::heads`]). A batch that joins an open
//! transaction is four — open, read the chain heads, insert, commit.
//!
//! The heads kept are only ever the ones this connection committed: any other way of
//! writing (an operation, a batch that failed) forgets them all, and they are read again
//! in the transaction that needs them. A head moved by someone else (another process on
//! the same file) cannot fork the chain: the record chained on the old head takes a `seq`
//! that is already there, the primary key `(workspace, seq)` refuses it, and the batch is
//! rolled back, forgets the heads, and runs the general way.

use super::sql::calls::{commit_calls, fail_each, record_calls, Batched, CallWrite, QueuedCall};
use crate::codec::database;
use crate::{StoreError, StoreResult};
use sqlx::{Executor, SqliteConnection};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{watch, Mutex, MutexGuard, Notify};
use tokio::task::JoinHandle;

/// What a batch's operations wait for: `None` until its commit ends, then the outcome.
type Outcome = Option<Result<(), String>>;

/// The writer connection and its committer task.
pub(super) struct Writer {
    shared: Arc<Shared>,
    committer: JoinHandle<()>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the committer: an operation has finished inside an open transaction, or a
    /// call was queued.
    wake: Notify,
    /// Calls waiting for the committer to record them ([`Writer::record_call`]).
    queue: std::sync::Mutex<Vec<QueuedCall>>,
    /// Transactions committed ([`Writer::commits`]); counted by [`State::commit`] before
    /// it answers the batch, so a caller that was answered sees its commit counted.
    commits: Arc<std::sync::atomic::AtomicU64>,
    /// Operations waiting for the writer, so that the tests of the batching wait until
    /// their writes have queued instead of sleeping.
    #[cfg(test)]
    waiting: std::sync::atomic::AtomicUsize,
    /// Batches committed in one round trip ([`State::commit_at_once`]), for the tests.
    #[cfg(test)]
    at_once: std::sync::atomic::AtomicU64,
}

struct State {
    /// `None` once the store is closed.
    conn: Option<SqliteConnection>,
    /// The open transaction's batch, if a transaction is open.
    batch: Option<watch::Sender<Outcome>>,
    /// An operation was dropped inside its savepoint, which is still open.
    dangling: bool,
    /// Transactions abandoned so far ([`State::abort`]): a write made before the count
    /// moved is lost.
    aborts: u64,
    /// [`Shared::commits`].
    commits: Arc<std::sync::atomic::AtomicU64>,
    /// Each workspace's chain head, `seq` and hash, as this connection's last commit left
    /// it, for the batches committed in one round trip ([`State::commit_at_once`]); emptied
    /// whenever the writer is used any other way.
    heads: HashMap<String, (u64, String)>,
}

impl State {
    fn conn(&mut self) -> StoreResult<&mut SqliteConnection> {
        self.conn
            .as_mut()
            .ok_or_else(|| StoreError::Database("the store is closed".into()))
    }

    /// Rolls back what a dropped (or failed) operation left in the open transaction. When
    /// its savepoint is gone, SQLite has ended the whole transaction itself (an I/O error,
    /// a full disk): the batch is lost, and its operations are told so, never that they
    /// were committed.
    async fn settle(&mut self) -> StoreResult<()> {
        if !self.dangling {
            return Ok(());
        }
        let conn = self.conn()?;
        let undone = conn.execute("ROLLBACK TO op; RELEASE op").await.map(drop);
        self.dangling = false;
        if let Err(error) = undone {
            self.abort(format!("the write transaction was lost: {error}"))
                .await;
        }
        Ok(())
    }

    /// Ends the open transaction without committing it and fails its batch.
    async fn abort(&mut self, reason: String) {
        if let Ok(conn) = self.conn() {
            // SQLite may already have rolled back; the transaction must end either way.
            if let Err(error) = conn.execute("ROLLBACK").await {
                tracing::debug!(%error, "rolling back an abandoned write transaction");
            }
        }
        self.dangling = false;
        self.heads.clear();
        self.aborts += 1;
        if let Some(batch) = self.batch.take() {
            batch.send_replace(Some(Err(reason)));
        }
    }

    /// Opens a savepoint for one operation, in the open transaction or a new one, after
    /// settling what a dropped operation left: one round trip to the connection's thread
    /// (`BEGIN IMMEDIATE; SAVEPOINT op` as one string when the transaction is new).
    async fn open_savepoint(&mut self) -> StoreResult<()> {
        // Whatever runs in the savepoint may extend a chain.
        self.heads.clear();
        self.settle().await?;
        let new = self.batch.is_none();
        let sql = if new {
            "BEGIN IMMEDIATE; SAVEPOINT op"
        } else {
            "SAVEPOINT op"
        };
        if let Err(error) = self.conn()?.execute(sql).await {
            if new {
                // Should `BEGIN` have run without its `SAVEPOINT`, no transaction may stay
                // open without a batch to commit it; when `BEGIN` itself failed there is
                // nothing to end and SQLite says so.
                if let Err(error) = self.conn()?.execute("ROLLBACK").await {
                    tracing::debug!(%error, "ending a transaction opened without its savepoint");
                }
            }
            return Err(database(error));
        }
        if new {
            self.batch = Some(watch::channel(None).0);
        }
        self.dangling = true;
        Ok(())
    }

    /// Runs `writes` in a savepoint of the open transaction (opened if need be). When they
    /// fail the savepoint is rolled back and released; when they succeed it is released
    /// too, unless `keep` — then it is left open for [`State::commit`] to release in the
    /// round trip that commits (`RELEASE op; COMMIT`), and the result is `Ok(true)`.
    async fn in_savepoint(&mut self, writes: &[CallWrite<'_>], keep: bool) -> StoreResult<bool> {
        self.open_savepoint().await?;
        let conn = self.conn()?;
        let outcome = record_calls(&mut *conn, writes).await;
        let end = match (&outcome, keep) {
            (Err(_), _) => "ROLLBACK TO op; RELEASE op",
            // Still `dangling` for anyone but the commit that follows under the same lock:
            // should that commit never run, the writes are rolled back, not kept unheard.
            (Ok(()), true) => return Ok(true),
            (Ok(()), false) => "RELEASE op",
        };
        conn.execute(end).await.map_err(database)?;
        self.dangling = false;
        outcome.map(|()| false)
    }

    /// Records `queued` and commits them in one round trip, when no transaction is open
    /// and none of them awaits an approval; `false` when that way does not apply or failed
    /// (nothing of it is then committed, and the heads are forgotten), and the calls are to
    /// be recorded the general way.
    async fn commit_at_once(&mut self, queued: &[QueuedCall]) -> bool {
        if queued.is_empty()
            || self.batch.is_some()
            || self.dangling
            || queued
                .iter()
                .any(|queued| queued.batched.call.approval.is_some())
        {
            return false;
        }
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        let writes: Vec<CallWrite<'_>> = queued.iter().map(QueuedCall::write).collect();
        // The heads kept for the batch's workspaces; `chain_on` reads the others.
        let known = self
            .heads
            .iter()
            .filter(|(workspace, _)| writes.iter().any(|write| write.workspace == *workspace))
            .map(|(workspace, (seq, hash))| (workspace.as_str(), *seq, hash.clone()))
            .collect();
        match commit_calls(&mut *conn, &writes, known).await {
            Ok(heads) => {
                for (workspace, seq, hash) in heads {
                    self.heads.insert(workspace, (seq, hash));
                }
                self.commits
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                true
            }
            Err(error) => {
                tracing::debug!(%error, "a batch of calls in one round trip failed");
                self.heads.clear();
                // The string stopped at its first failure, with its transaction open unless
                // `BEGIN` or `COMMIT` was what failed; SQLite says so when none is open.
                if let Err(error) = conn.execute("ROLLBACK").await {
                    tracing::debug!(%error, "ending a batch that failed in one round trip");
                }
                false
            }
        }
    }

    /// Records the queued calls in the open transaction; one outcome per call, and whether
    /// their savepoint is left for [`State::commit`] to release.
    async fn record_queued(&mut self, queued: &[QueuedCall]) -> (Vec<StoreResult<()>>, bool) {
        let writes: Vec<CallWrite<'_>> = queued.iter().map(QueuedCall::write).collect();
        // Settled first, so that `before` counts only what happens to this batch.
        if let Err(error) = self.settle().await {
            return (fail_each(writes.len(), &error), false);
        }
        let before = self.aborts;
        match self.in_savepoint(&writes, true).await {
            Ok(kept) if self.aborts == before => (writes.iter().map(|_| Ok(())).collect(), kept),
            Ok(_) => (writes.iter().map(|_| Err(lost())).collect(), false),
            Err(error) if writes.len() == 1 => (vec![Err(error)], false),
            Err(_) => {
                // Each call alone; a call recorded in a transaction that was abandoned
                // afterwards is lost, not recorded.
                let mut outcomes = Vec::with_capacity(writes.len());
                for write in writes.chunks(1) {
                    let outcome = self.in_savepoint(write, false).await;
                    outcomes.push(outcome.map(|_| self.aborts));
                }
                let outcomes = outcomes
                    .into_iter()
                    .map(|outcome| match outcome {
                        Ok(epoch) if epoch == self.aborts => Ok(()),
                        Ok(_) => Err(lost()),
                        Err(error) => Err(error),
                    })
                    .collect();
                (outcomes, false)
            }
        }
    }

    /// Commits the open transaction, if any, and tells its operations how it went. With
    /// `release`, the savepoint of the batch's calls is still open ([`State::in_savepoint`])
    /// and is released in the same round trip: a failure of either fails the whole batch.
    async fn commit(&mut self, release: bool) -> Result<(), String> {
        if self.batch.is_none() {
            return Ok(());
        }
        if release {
            self.dangling = false;
        } else if let Err(error) = self.settle().await {
            self.abort(error.to_string()).await;
            return Err(error.to_string());
        }
        let Some(batch) = self.batch.take() else {
            return Err("the write transaction was lost".into());
        };
        let sql = if release {
            "RELEASE op; COMMIT"
        } else {
            "COMMIT"
        };
        let committed = match self.conn() {
            Ok(conn) => conn
                .execute(sql)
                .await
                .map(drop)
                .map_err(|error| format!("committing the write failed: {error}")),
            Err(error) => Err(error.to_string()),
        };
        match committed {
            Ok(()) => {
                self.commits
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                batch.send_replace(Some(Ok(())));
                Ok(())
            }
            Err(reason) => {
                self.batch = Some(batch);
                self.abort(reason.clone()).await;
                Err(reason)
            }
        }
    }
}

fn lost() -> StoreError {
    StoreError::Database("the write transaction was lost before it committed".into())
}

impl Writer {
    pub(super) fn new(conn: SqliteConnection) -> Writer {
        let commits = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                conn: Some(conn),
                batch: None,
                dangling: false,
                aborts: 0,
                commits: Arc::clone(&commits),
                heads: HashMap::new(),
            }),
            wake: Notify::new(),
            queue: std::sync::Mutex::new(Vec::new()),
            commits,
            #[cfg(test)]
            waiting: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(test)]
            at_once: std::sync::atomic::AtomicU64::new(0),
        });
        let committer = tokio::spawn(commit_loop(Arc::clone(&shared)));
        Writer { shared, committer }
    }

    /// Takes the writer and opens a savepoint for one operation, inside the open
    /// transaction or a new one. Run the operation on [`Operation::conn`], then hand its
    /// outcome to [`Operation::finish`].
    pub(super) async fn begin(&self) -> StoreResult<Operation<'_>> {
        let mut state = self.take().await;
        state.open_savepoint().await?;
        Ok(Operation {
            state: Some(state),
            shared: &self.shared,
        })
    }

    /// Takes the writer, in the order of asking (the mutex is fair).
    #[cfg(not(test))]
    async fn take(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().await
    }

    /// Takes the writer, counted as waiting only from the moment it is in the mutex's
    /// queue: a test that waits until an operation is counted then knows its place in
    /// the queue, which counting before asking for the lock did not tell (on another
    /// thread, a later operation could still get in ahead of it).
    #[cfg(test)]
    async fn take(&self) -> MutexGuard<'_, State> {
        use std::future::Future;
        use std::sync::atomic::Ordering::SeqCst;
        use std::task::Poll;
        let mut lock = std::pin::pin!(self.shared.state.lock());
        // The first poll either takes the writer or joins the queue.
        let first = std::future::poll_fn(|cx| Poll::Ready(lock.as_mut().poll(cx))).await;
        if let Poll::Ready(state) = first {
            return state;
        }
        self.shared.waiting.fetch_add(1, SeqCst);
        let state = lock.await;
        self.shared.waiting.fetch_sub(1, SeqCst);
        state
    }

    /// Records a call that needs no approval (the caller checks) with the calls queued
    /// beside it, and returns once it is committed.
    pub(super) async fn record_call(&self, batched: Batched) -> StoreResult<()> {
        QueuedCall::wait(&self.shared.queue, &self.shared.wake, batched).await
    }

    /// Commits what is pending and closes the connection.
    pub(super) async fn close(&self) -> StoreResult<()> {
        let conn = {
            let mut state = self.shared.state.lock().await;
            run_batch(&self.shared, &mut state).await;
            state.conn.take()
        };
        self.committer.abort();
        match conn {
            Some(conn) => sqlx::Connection::close(conn).await.map_err(database),
            None => Ok(()),
        }
    }

    /// Operations waiting for the writer, and calls queued for the committer: what the
    /// batching tests wait for before they let the writer go.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        let calls = self.shared.queue.lock().map_or(0, |queue| queue.len());
        self.shared
            .waiting
            .load(std::sync::atomic::Ordering::SeqCst)
            + calls
    }

    /// Waits until `count` operations or calls are queued behind the writer (the
    /// deadline is a backstop).
    #[cfg(test)]
    pub(super) async fn until_queued(&self, count: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while self.queued() < count {
            assert!(
                std::time::Instant::now() < deadline,
                "{} of {count} writes queued after 30 s",
                self.queued()
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// Transactions committed so far (counted for tests and benchmarks: it costs one
    /// relaxed add per commit).
    pub(super) fn commits(&self) -> u64 {
        self.shared
            .commits
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Batches committed in one round trip so far.
    #[cfg(test)]
    pub(super) fn at_once(&self) -> u64 {
        self.shared
            .at_once
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The connection, outside any operation (no transaction is left open by the
    /// caller's use of it). For checking connection settings.
    #[cfg(test)]
    pub(super) async fn with_conn<T>(
        &self,
        check: impl for<'c> FnOnce(&'c mut SqliteConnection) -> futures::future::BoxFuture<'c, T>,
    ) -> StoreResult<T> {
        let mut state = self.shared.state.lock().await;
        run_batch(&self.shared, &mut state).await;
        Ok(check(state.conn()?).await)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.committer.abort();
    }
}

async fn commit_loop(shared: Arc<Shared>) {
    loop {
        shared.wake.notified().await;
        let mut state = shared.state.lock().await;
        run_batch(&shared, &mut state).await;
    }
}

/// Records the queued calls, commits the open transaction with them and tells every
/// waiting call and operation how it went.
async fn run_batch(shared: &Shared, state: &mut State) {
    let queued = match shared.queue.lock() {
        Ok(mut queue) => std::mem::take(&mut *queue),
        Err(_) => Vec::new(),
    };
    if state.commit_at_once(&queued).await {
        #[cfg(test)]
        shared
            .at_once
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for queued in queued {
            // A caller that stopped waiting no longer needs its answer.
            let _ = queued.reply.send(Ok(()));
        }
        return;
    }
    let (recorded, release) = if queued.is_empty() {
        (Vec::new(), false)
    } else {
        state.record_queued(&queued).await
    };
    let committed = state.commit(release).await;
    for (queued, recorded) in queued.into_iter().zip(recorded) {
        let outcome = match (recorded, &committed) {
            (Err(error), _) => Err(error),
            (Ok(()), Ok(())) => Ok(()),
            (Ok(()), Err(error)) => Err(StoreError::Database(error.clone())),
        };
        // A caller that stopped waiting no longer needs its answer.
        let _ = queued.reply.send(outcome);
    }
}

/// One write operation holding the writer, inside its savepoint.
pub(super) struct Operation<'w> {
    /// `Some` until [`Operation::finish`] lets go of the writer.
    state: Option<MutexGuard<'w, State>>,
    shared: &'w Shared,
}

impl Operation<'_> {
    pub(super) fn conn(&mut self) -> StoreResult<&mut SqliteConnection> {
        match self.state.as_mut() {
            Some(state) => state.conn(),
            None => Err(StoreError::Database("the operation already ended".into())),
        }
    }

    /// Ends the operation: a success joins the batch and returns once the batch is
    /// committed; a refusal is rolled back and returned once the batch it saw is
    /// committed too (it may rest on a batch-mate's write).
    pub(super) async fn finish<T, E>(mut self, outcome: Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let Some(mut state) = self.state.take() else {
            return Err(StoreError::Database("the operation already ended".into()).into());
        };
        let conn = state.conn()?;
        // One round trip either way; when the rollback fails the release does not run.
        let end = if outcome.is_err() {
            "ROLLBACK TO op; RELEASE op"
        } else {
            "RELEASE op"
        };
        let ended = conn.execute(end).await.map(drop);
        // When the savepoint could not be ended it stays `dangling`: whoever takes the
        // writer next settles it, ending the transaction if SQLite already did.
        state.dangling = ended.is_err();
        let committed = state.batch.as_ref().map(watch::Sender::subscribe);
        drop(state);
        // Even a refusal wakes the committer: the transaction it opened must not stay
        // open (holding the database's write lock) until the next write comes.
        self.shared.wake.notify_one();
        // What the batch did: `None` when no transaction was open, else its commit's result.
        let batch = match committed {
            Some(mut committed) => Some(match committed.wait_for(Option::is_some).await {
                Ok(outcome) => outcome
                    .clone()
                    .unwrap_or_else(|| Err("the batch ended without a commit".to_owned())),
                Err(_) => Err("the writer stopped before committing".to_owned()),
            }),
            None => None,
        };
        let value = match outcome {
            Ok(value) => value,
            // A refusal may rest on what a batch-mate wrote before it (an approval the
            // sweeper expired a moment earlier is no longer pending): it is answered once
            // that is committed and readable, and not as a refusal when the batch failed,
            // since then what it saw was undone.
            Err(refusal) => {
                return match batch {
                    Some(Err(error)) => Err(StoreError::Database(error).into()),
                    Some(Ok(())) | None => Err(refusal),
                }
            }
        };
        ended.map_err(database)?;
        match batch {
            Some(Ok(())) => Ok(value),
            Some(Err(error)) => Err(StoreError::Database(error).into()),
            None => Err(StoreError::Database("no transaction is open".into()).into()),
        }
    }
}

impl Drop for Operation<'_> {
    fn drop(&mut self) {
        if self.state.take().is_some() {
            // Dropped while running: the savepoint is still open (`dangling`); the
            // committer settles it and commits the batch-mates.
            self.shared.wake.notify_one();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
