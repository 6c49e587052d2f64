//! Changes made by other nodes on the same database (PostgreSQL LISTEN/NOTIFY).
//!
//! A decision, expiry or cancellation committed on node B reaches node A here: A wakes the
//! call's long-pollers, pokes its event streams, and reloads a policy replaced elsewhere.
//! On a backend without other writers (SQLite) there is nothing to listen to and this task
//! ends at once. On a reconnect the store sends `resync`: every waiter re-reads and every
//! policy is reloaded, since notifications may have been missed while disconnected. From
//! the moment the store reports the connection `lost` until that resync, the read cache
//! (`cache.rs`) is unknown and every read goes to the database.

use crate::Gate;
use airlock_protocol::WorkspaceKind;
use airlock_store::Change;
use tokio_util::sync::CancellationToken;

impl Gate {
    /// Runs until `stop` is cancelled or the store has nothing to listen to.
    pub async fn run_listener(&self, stop: CancellationToken) {
        let mut changes = match self.store().listen().await {
            Ok(Some(changes)) => changes,
            Ok(None) => return,
            Err(error) => {
                tracing::error!(%error, "cannot listen for other nodes' changes; waiters fall back to their timeouts");
                return;
            }
        };
        // Listening from now on: what was cached before may be stale, what is read from
        // now on is kept in step.
        self.set_cache_live(true);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                change = changes.recv() => match change {
                    Some(change) => self.apply_change(change).await,
                    None => break,
                },
            }
        }
        // Nobody hears other nodes' changes any more: read through from now on.
        self.set_cache_live(false);
    }

    async fn apply_change(&self, change: Change) {
        match change.kind.as_str() {
            // Changes go unheard until the next resync: stop trusting the cache now.
            Change::LOST => self.set_cache_live(false),
            Change::RESYNC => {
                // Listening again (or caught up after falling behind): start afresh.
                self.set_cache_live(true);
                self.inner.waiters.wake_all();
                let _ = self.inner.settled.send((String::new(), String::new()));
                if let Err(error) = self.inner.policies.reload_all(self.store()).await {
                    tracing::warn!(%error, "policy reload after reconnect failed");
                }
                for workspace in self.inner.policies.workspaces() {
                    self.poke(&workspace);
                }
            }
            kind => {
                // A kind this build does not know (a newer node wrote it) is still a
                // change: the cache drops the workspace, waiters re-read and streams are
                // poked; only the kind-specific reactions below need to know it.
                let kind = WorkspaceKind::parse(kind);
                self.forget_changed(&change.workspace, kind);
                if kind == Some(WorkspaceKind::PolicyUpdated) {
                    if let Err(error) = self
                        .inner
                        .policies
                        .reload(self.store(), &change.workspace)
                        .await
                    {
                        tracing::warn!(%error, workspace = %change.workspace, "policy reload failed");
                    }
                }
                let asked = kind == Some(WorkspaceKind::ApprovalRequested);
                if let Some(call_id) = &change.call_id {
                    if asked || kind == Some(WorkspaceKind::CallDecided) {
                        self.inner.waiters.wake(call_id);
                    } else {
                        self.settle(&change.workspace, call_id);
                    }
                }
                if asked {
                    self.inner.sweeper_wake.notify_one();
                }
                self.poke(&change.workspace);
            }
        }
    }
}
