//! What moves runs nobody is driving: resuming a run when its approvals are decided
//! (without anyone polling it), taking over runs whose node died, and delivering the
//! outbox.
//!
//! Resumption is claimed in the store (`claim_run`, a conditional update), so of several
//! nodes told about the same decision exactly one drives the run on. A sweeper repeats
//! the search every few seconds as the backstop for missed signals and crashes.

use crate::journal::run_state_effects;
use crate::{Runtime, LEASE};
use airlock_protocol::events::RunResumed;
use airlock_protocol::{CallStatus, RunEventData, RunState, StepState};
use airlock_store::{Effects, RunUpdate};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// How often the scheduler ticks and the sweeper looks for stalled runs and due outbox
/// items.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a node holds an outbox item it is delivering.
const CLAIM: Duration = Duration::from_secs(300);

/// The first retry of a failed delivery; doubled per attempt up to an hour.
const RETRY_FIRST: Duration = Duration::from_secs(30);

impl Runtime {
    /// Resumes runs and delivers the outbox until `stop` is cancelled. Call once per
    /// process. On a single node (SQLite) every run found `running` at start belonged to
    /// a process that is gone, so it is taken over at once instead of after its lease.
    pub async fn run_background(&self, stop: CancellationToken) {
        let mut settled = self.gate().subscribe_settled();
        if self.inner.settings.single_node {
            self.sweep(true).await;
        }
        self.sweep(false).await;
        let mut tick = tokio::time::interval(SWEEP_EVERY);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => {
                    self.tick().await;
                    self.sweep(false).await;
                    self.deliver_outbox().await;
                }
                received = settled.recv() => match received {
                    Ok((workspace, call_id)) if !workspace.is_empty() => {
                        self.resume_for_call(&workspace, &call_id).await;
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => self.sweep(false).await,
                    Err(RecvError::Closed) => return,
                },
            }
        }
    }

    /// Looks for runs that should move and are not. `orphans`: also take over every run
    /// found `running`, whatever its lease says.
    pub async fn sweep(&self, orphans: bool) {
        let now = self.gate().now();
        let horizon = if orphans {
            airlock_gate::clock::add_seconds(now, LEASE.as_secs() * 2)
        } else {
            now
        };
        match self.runs().stalled_runs(horizon, 100).await {
            Ok(runs) => {
                for (workspace, run_id) in runs {
                    self.claim(&workspace, &run_id, horizon).await;
                }
            }
            Err(error) => tracing::warn!(%error, "looking for stalled runs failed"),
        }
    }

    async fn resume_for_call(&self, workspace: &str, call_id: &str) {
        match self.runs().run_of_call(workspace, call_id).await {
            Ok(Some(run_id)) => self.try_resume(workspace, &run_id).await,
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%error, %call_id, "finding the run of a decided call failed")
            }
        }
    }

    /// Resumes a suspended run when none of its calls waits for a person any more.
    pub(crate) async fn try_resume(&self, workspace: &str, run_id: &str) {
        let store = self.runs();
        let ready = async {
            for stored in store.run_steps(workspace, run_id).await? {
                if stored.step.state != StepState::Gated {
                    continue;
                }
                if let Some(call_id) = &stored.step.call_id {
                    let pending = store
                        .get_call(workspace, call_id)
                        .await?
                        .is_some_and(|call| call.status == CallStatus::Pending);
                    if pending {
                        return Ok(false);
                    }
                }
            }
            Ok::<bool, airlock_store::StoreError>(true)
        };
        match ready.await {
            Ok(true) => self.claim(workspace, run_id, self.gate().now()).await,
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, %run_id, "checking a suspended run failed"),
        }
    }

    /// Claims a run (conditional in the store: one node wins) and drives it on.
    ///
    /// While one of this node's legs is on the run (see `driving.rs`), only a suspended
    /// run is claimed: that leg has written its last step and is ending, as when its own
    /// suspension looks again for decisions that landed meanwhile. A run still `running`
    /// under an expired lease is that leg's, alive, and is left to it.
    async fn claim(&self, workspace: &str, run_id: &str, now: jiff::Timestamp) {
        let run = match self.runs().get_run(workspace, run_id).await {
            Ok(Some(run)) => run,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, %run_id, "reading a run before claiming it failed");
                return;
            }
        };
        if self.inner.driving.is_driving(run_id) && run.state != RunState::AwaitingApproval {
            return;
        }
        let at = self.gate().now();
        // A suspended run that goes on is `running` again on the workspace stream; a run
        // taken over from a dead node was `running` all along.
        let effects = if run.state == RunState::AwaitingApproval {
            run_state_effects(at, &run, RunState::Running, "system")
        } else {
            Effects::none()
        };
        let update = RunUpdate {
            at: Some(at),
            events: vec![self.event(RunEventData::RunResumed(RunResumed {
                node: self.inner.node.clone(),
            }))],
            effects,
            ..RunUpdate::default()
        };
        match self
            .runs()
            .claim_run(workspace, run_id, now, &self.lease(), &update)
            .await
        {
            Ok(Some(_)) => {
                airlock_gate::failpoint!("run.resumed");
                self.journal_grew(run_id);
                self.spawn_leg(workspace.to_owned(), run_id.to_owned(), None);
            }
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, %run_id, "claiming a run failed"),
        }
    }

    /// Delivers due outbox items when a mail server is configured; without one, items
    /// stay in the outbox (listed by `GET /v1/outbox`) and nothing is attempted.
    pub async fn deliver_outbox(&self) {
        let Some(smtp) = &self.inner.settings.smtp else {
            return;
        };
        let store = self.runs();
        let due = match store.outbox_due(self.gate().now(), 20).await {
            Ok(due) => due,
            Err(error) => {
                tracing::warn!(%error, "reading the outbox failed");
                return;
            }
        };
        for (workspace, item) in due {
            if item.kind != "email" {
                continue;
            }
            // One node per attempt; a node dying mid-attempt leaves it for a retry.
            let now = self.gate().now();
            let until = airlock_gate::clock::add_seconds(now, CLAIM.as_secs());
            match store.claim_outbox(&workspace, &item.id, now, until).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(error) => {
                    tracing::warn!(%error, id = %item.id, "claiming an outbox item failed");
                    continue;
                }
            }
            let effect = airlock_tools::OutboxEffect {
                kind: item.kind.clone(),
                recipient: item.recipient.clone(),
                payload: item.payload.clone(),
            };
            let outcome = airlock_tools::deliver_email(smtp, &effect).await;
            let now = self.gate().now();
            let (error, retry_at) = match &outcome {
                Ok(()) => (None, None),
                Err(error) => {
                    let backoff = RETRY_FIRST
                        .saturating_mul(2u32.saturating_pow(item.attempts.min(7)))
                        .min(Duration::from_secs(3600));
                    (
                        Some(error.to_string()),
                        Some(airlock_gate::clock::add_seconds(now, backoff.as_secs())),
                    )
                }
            };
            if let Err(error) = store
                .outbox_attempt(&workspace, &item.id, now, error.as_deref(), retry_at)
                .await
            {
                tracing::warn!(%error, id = %item.id, "recording a delivery attempt failed");
            }
        }
    }
}
