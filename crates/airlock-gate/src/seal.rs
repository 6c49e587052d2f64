//! The sealer: moves the oldest records of each workspace's audit chain, a thousand at a
//! time, into sealed segments (`airlock-store`, `sql/pages.rs`), so that verifying a chain
//! reads a thousand records in one read instead of one at a time. Nothing a reader sees
//! changes: the records, their order and their hashes are the same.
//!
//! A seal is a write transaction of about a megabyte, so it yields to traffic: it runs
//! only once the store has committed nothing else for [`QUIET`], and stops for a
//! [`TICK`] as soon as anything else commits. Under steady load the records stay in rows
//! (verification is then slower, never wrong) and are sealed at the next lull.

use crate::{Gate, GateError};
use airlock_store::StoreError;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the sealer looks for records to seal.
const TICK: Duration = Duration::from_secs(1);

/// How long the store must have committed nothing before a seal.
const QUIET: Duration = Duration::from_millis(100);

/// How long the sealer waits after a seal failed before it tries again.
const AFTER_FAILURE: Duration = Duration::from_secs(60);

impl Gate {
    /// Seals every segment there is to seal now, without waiting for a lull; how many
    /// records were moved. What the sealer does at each lull, and what a benchmark or a
    /// test calls to bring a chain to its sealed state.
    pub async fn seal_audit_once(&self) -> Result<u64, GateError> {
        let workspaces = self.store().workspaces_to_seal().await?;
        Ok(self.seal_each(workspaces, |_| true).await?)
    }

    /// Seals the oldest records of each of `workspaces`, a seal at a time, for as long as
    /// `go_on` (given the seals made so far) allows before each; how many records moved.
    async fn seal_each(
        &self,
        workspaces: Vec<String>,
        mut go_on: impl FnMut(u64) -> bool,
    ) -> Result<u64, StoreError> {
        let (mut moved, mut seals) = (0, 0);
        for workspace in workspaces {
            while go_on(seals) {
                let sealed = self.store().seal_audit(&workspace).await?;
                if sealed == 0 {
                    break;
                }
                moved += sealed;
                seals += 1;
            }
        }
        Ok(moved)
    }

    /// Runs the sealer until `stop` is cancelled (see the module documentation).
    pub async fn run_sealer(&self, stop: CancellationToken) {
        loop {
            let wait = match self.seal_in_lull(&stop).await {
                Ok(()) => TICK,
                Err(error) => {
                    tracing::warn!(%error, "sealing the audit log failed; trying again later");
                    AFTER_FAILURE
                }
            };
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Seals segments one after another for as long as nothing else commits.
    async fn seal_in_lull(&self, stop: &CancellationToken) -> Result<(), GateError> {
        let workspaces = self.store().workspaces_to_seal().await?;
        if workspaces.is_empty() {
            return Ok(());
        }
        let seen = self.store().commits();
        tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            _ = tokio::time::sleep(QUIET) => {}
        }
        // Each seal's own commit is not traffic.
        let quiet = |seals| !stop.is_cancelled() && self.store().commits() == seen + seals;
        match self.seal_each(workspaces, quiet).await {
            // Another node sealed these records first: its turn.
            Ok(_) | Err(StoreError::Conflict(_)) => {}
            Err(error) => return Err(error.into()),
        }
        Ok(())
    }
}
