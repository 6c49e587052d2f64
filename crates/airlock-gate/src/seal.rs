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
        self.seal_while_quiet(workspaces, seen, stop).await?;
        Ok(())
    }

    /// Seals the oldest records of `workspaces`, a seal at a time, for as long as the
    /// store has committed nothing since it counted `seen` commits but these seals, and
    /// `stop` is not cancelled; how many records moved (counted as none when another
    /// node's seal came first and this one was refused).
    async fn seal_while_quiet(
        &self,
        workspaces: Vec<String>,
        seen: u64,
        stop: &CancellationToken,
    ) -> Result<u64, GateError> {
        // Each seal's own commit is not traffic.
        let quiet =
            |seals| !stop.is_cancelled() && self.store().commits() == seen.saturating_add(seals);
        match self.seal_each(workspaces, quiet).await {
            Ok(moved) => Ok(moved),
            // Another node sealed these records first: its turn.
            Err(StoreError::Conflict(_)) => Ok(0),
            Err(error) => Err(error.into()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::identity::AgentSpec;
    use airlock_store::sqlite::SqliteStore;
    use airlock_store::{AuditEntry, Effects};
    use std::sync::Arc;

    /// A gate over a new SQLite store whose one workspace has about `records` audit
    /// records, and a way to commit one more (traffic).
    struct Chain {
        _dir: tempfile::TempDir,
        gate: Gate,
        workspace: String,
        agent: airlock_protocol::Agent,
        owner: airlock_protocol::Principal,
    }

    impl Chain {
        async fn new(records: u64) -> Chain {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open(&dir.path().join("airlock.db"))
                .await
                .unwrap();
            let clock = ManualClock::new(jiff::Timestamp::from_second(1_800_000_000).unwrap());
            let gate = Gate::new(Arc::new(store), Arc::new(clock)).await.unwrap();
            let owner_token = gate
                .bootstrap("default", "owner")
                .await
                .unwrap()
                .unwrap()
                .owner_token;
            let owner = gate.authenticate(&owner_token).await.unwrap();
            let spec = AgentSpec {
                name: "scout".into(),
                ..AgentSpec::default()
            };
            let (agent, _) = gate.create_agent(&owner, spec).await.unwrap();
            let workspace = owner.workspace.clone();
            let chain = Chain {
                _dir: dir,
                workspace: workspace.clone(),
                owner,
                agent: gate
                    .store()
                    .get_agent(&workspace, &agent.id)
                    .await
                    .unwrap()
                    .unwrap(),
                gate,
            };
            chain.append(records).await;
            chain
        }

        /// Commits `records` more records, in one write.
        async fn append(&self, records: u64) {
            let mut effects = Effects::none();
            for n in 0..records {
                effects = effects.audit(AuditEntry {
                    at: self.gate.now(),
                    actor: "agent:scout".into(),
                    kind: "call.allowed".into(),
                    subject: format!("call_{n}"),
                    data: serde_json::json!({"n": n, "tool": "fs.read"}).into(),
                });
            }
            let store = self.gate.store();
            store
                .update_agent(&self.workspace, &self.agent, &effects)
                .await
                .unwrap();
        }

        /// [`Gate::seal_while_quiet`] over what there is to seal.
        async fn seal_while_quiet(&self, seen: u64, stop: &CancellationToken) -> u64 {
            let workspaces = self.to_seal().await;
            self.gate
                .seal_while_quiet(workspaces, seen, stop)
                .await
                .unwrap()
        }

        /// The chain, sealed or not, verifies whole.
        async fn assert_verifies(&self) {
            let verdict = self.gate.verify_audit(&self.owner).await.unwrap();
            assert!(verdict.ok && verdict.records > 2_500, "{verdict:?}");
        }

        async fn to_seal(&self) -> Vec<String> {
            self.gate.store().workspaces_to_seal().await.unwrap()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_seal_waits_while_anything_else_commits_and_goes_on_through_its_own_commits() {
        let chain = Chain::new(3_500).await;
        let stop = CancellationToken::new();
        assert_eq!(
            chain.to_seal().await,
            std::slice::from_ref(&chain.workspace)
        );

        // Traffic since the sealer counted commits: nothing is sealed.
        let seen = chain.gate.store().commits();
        chain.append(1).await;
        assert_eq!(chain.seal_while_quiet(seen, &stop).await, 0);

        // Stopped: nothing is sealed either.
        let stopped = CancellationToken::new();
        stopped.cancel();
        let seen = chain.gate.store().commits();
        assert_eq!(chain.seal_while_quiet(seen, &stopped).await, 0);

        // Quiet: one seal after another (each seal's own commit is not traffic), until
        // nothing is left to seal.
        let seen = chain.gate.store().commits();
        assert_eq!(chain.seal_while_quiet(seen, &stop).await, 3_000);
        assert!(chain.to_seal().await.is_empty());
        chain.assert_verifies().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_running_sealer_seals_at_a_lull_and_stops_when_asked() {
        let chain = Chain::new(2_500).await;
        let stop = CancellationToken::new();
        let sealer = tokio::spawn({
            let gate = chain.gate.clone();
            let stop = stop.clone();
            async move { gate.run_sealer(stop).await }
        });
        // Nothing else commits, so the sealer seals what there is at its next tick.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while !chain.to_seal().await.is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "never sealed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop.cancel();
        sealer.await.unwrap();
        chain.assert_verifies().await;
    }
}
