//! [`Runs`]: the run operations the built-in runtime needs, and nothing else.
//!
//! The runtime is trusted code in the same process: it checks the principal once where a
//! request enters it (`post_message`, `cancel_run`, reading a run) and afterwards works
//! for the system (legs, resumes, the scheduler, outbox delivery), with no principal in
//! hand. It therefore gets a capability rather than a principal-checked API: a handle,
//! taken from the gate once at start, that exposes the run, step, outbox and task-dispatch
//! operations of the store and no way to reach identity, policy, approvals' decisions or
//! the audit log except through the records these operations append themselves. The
//! gate's own store stays private to the gate.

use crate::effects::{audit, event};
use crate::{Gate, GateError};
use airlock_protocol::events::ApprovalAudit;
use airlock_protocol::{Agent, Approval, Call, Message, OutboxItem, Run, RunEvent, Session, Task};
use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_store::{
    ApprovalFilter, ClosingApprovals, Effects, Grant, Lease, Principal, RedeemError, RunUpdate,
    Store, StoreResult, StoredStep,
};
use jiff::Timestamp;
use std::sync::Arc;

/// The runtime's handle on run storage. Cheap to clone.
///
/// Its writes poke the workspace's event streams after they committed, as the gate's own
/// do, whenever they appended workspace events (`run.state`): a stream shows a run's state
/// when it changes, not when some other event comes along.
#[derive(Clone)]
pub struct Runs {
    store: Arc<dyn Store>,
    pokes: tokio::sync::broadcast::Sender<String>,
}

impl Gate {
    /// The handle on run storage for the built-in runtime (see [`Runs`]).
    pub fn runs(&self) -> Runs {
        Runs {
            store: Arc::clone(&self.inner.store),
            pokes: self.inner.pokes.clone(),
        }
    }
}

/// How a person ends a run's wait for approvals: both close its pending approvals in the
/// transaction that changes the run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunClose {
    Cancel,
    Pause,
}

impl Gate {
    /// Cancels a live run for `principal` and closes the pending approvals of its gated
    /// steps in the same transaction (so a later click on one is refused, even after a
    /// crash), then wakes their waiters. `None` when the run is unknown or already ended.
    pub async fn cancel_run(
        &self,
        principal: &Principal,
        run_id: &str,
        update: &RunUpdate,
    ) -> Result<Option<Run>, GateError> {
        self.close_run(principal, run_id, update, RunClose::Cancel)
            .await
    }

    /// Cancels or pauses the run in the store, the approvals it closes saying who did it
    /// and why, then wakes their waiters and the event stream.
    pub(crate) async fn close_run(
        &self,
        principal: &Principal,
        run_id: &str,
        update: &RunUpdate,
        how: RunClose,
    ) -> Result<Option<Run>, GateError> {
        let workspace = principal.workspace.as_str();
        let actor = principal.actor();
        let at = update.at.unwrap_or_else(|| self.now());
        let why = match how {
            RunClose::Cancel => "cancelled",
            RunClose::Pause => "paused",
        };
        let reason = format!("cancelled by {actor}: the run was {why}");
        let effects = |closed: &Approval| closing_effects(at, &actor, closed);
        let closing = ClosingApprovals {
            at,
            reason: &reason,
            effects: &effects,
        };
        let store = self.store();
        let closed = match how {
            RunClose::Cancel => {
                store
                    .cancel_run(workspace, run_id, update, &closing)
                    .await?
            }
            RunClose::Pause => store.pause_run(workspace, run_id, update, &closing).await?,
        };
        let Some((run, closed)) = closed else {
            return Ok(None);
        };
        match how {
            RunClose::Cancel => {
                crate::failpoint!("run.cancelled");
            }
            RunClose::Pause => {
                crate::failpoint!("run.paused");
            }
        }
        for approval in &closed {
            self.settle(workspace, &approval.call_id);
        }
        self.poke(workspace);
        Ok(Some(run))
    }
}

/// The audit record and event of an approval a run's cancel or pause closed.
pub(crate) fn closing_effects(at: Timestamp, actor: &str, closed: &Approval) -> Effects {
    Effects::none()
        .audit(audit(
            at,
            actor,
            &closed.id,
            AuditEvent::ApprovalCancelled(ApprovalAudit::of(closed)),
        ))
        .event(event(
            at,
            WorkspaceEventData::ApprovalCancelled(closed.clone()),
        ))
}

impl Runs {
    // ----- reads the runtime makes for a run it holds

    pub async fn get_run(&self, workspace: &str, id: &str) -> StoreResult<Option<Run>> {
        self.store.get_run(workspace, id).await
    }

    pub async fn session_runs(&self, workspace: &str, session_id: &str) -> StoreResult<Vec<Run>> {
        self.store.session_runs(workspace, session_id).await
    }

    pub async fn run_events_after(
        &self,
        workspace: &str,
        run_id: &str,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<RunEvent>> {
        self.store
            .run_events_after(workspace, run_id, after, limit)
            .await
    }

    pub async fn run_steps(&self, workspace: &str, run_id: &str) -> StoreResult<Vec<StoredStep>> {
        self.store.run_steps(workspace, run_id).await
    }

    pub async fn run_of_call(&self, workspace: &str, call_id: &str) -> StoreResult<Option<String>> {
        self.store.run_of_call(workspace, call_id).await
    }

    pub async fn session_messages(
        &self,
        workspace: &str,
        session_id: &str,
    ) -> StoreResult<Vec<Message>> {
        self.store.session_messages(workspace, session_id).await
    }

    /// The agent a run acts as (its settings: tools, model, prompt).
    pub async fn get_agent(&self, workspace: &str, id: &str) -> StoreResult<Option<Agent>> {
        self.store.get_agent(workspace, id).await
    }

    /// A call a step of a run put to the gate.
    pub async fn get_call(&self, workspace: &str, id: &str) -> StoreResult<Option<Call>> {
        self.store.get_call(workspace, id).await
    }

    /// The approval a step of a run waits on.
    pub async fn get_approval(&self, workspace: &str, id: &str) -> StoreResult<Option<Approval>> {
        self.store.get_approval(workspace, id).await
    }

    /// Approvals of the run's session (to adopt a call the gate recorded for a step
    /// whose leg died before writing the step).
    pub async fn list_approvals(
        &self,
        workspace: &str,
        filter: &ApprovalFilter,
    ) -> StoreResult<Vec<Approval>> {
        self.store.list_approvals(workspace, filter).await
    }

    // ----- the run's life: start, write under the lease, take over, cancel

    pub async fn start_run(
        &self,
        workspace: &str,
        run: &Run,
        lease: &Lease,
        update: &RunUpdate,
    ) -> StoreResult<Vec<RunEvent>> {
        let appended = self.store.start_run(workspace, run, lease, update).await?;
        self.poke_for(workspace, &update.effects);
        Ok(appended)
    }

    pub async fn update_run(
        &self,
        workspace: &str,
        run_id: &str,
        owner: &str,
        update: &RunUpdate,
    ) -> StoreResult<Vec<RunEvent>> {
        let appended = self
            .store
            .update_run(workspace, run_id, owner, update)
            .await?;
        self.poke_for(workspace, &update.effects);
        Ok(appended)
    }

    /// After a commit: pokes the workspace's event streams when `effects` appended events.
    fn poke_for(&self, workspace: &str, effects: &Effects) {
        if !effects.events.is_empty() {
            // No subscriber is not an error: nobody is streaming.
            let _ = self.pokes.send(workspace.to_owned());
        }
    }

    /// Consumes an allowed call's grant together with the step's effect (see
    /// `Store::redeem_for_run`): the only way the runtime spends a grant.
    #[allow(clippy::too_many_arguments)]
    pub async fn redeem_for_run(
        &self,
        workspace: &str,
        call_id: &str,
        at: Timestamp,
        effects: &Effects,
        outbox: Option<&OutboxItem>,
        run_id: &str,
        owner: &str,
        update: &RunUpdate,
    ) -> Result<Grant, RedeemError> {
        let grant = self
            .store
            .redeem_for_run(
                workspace, call_id, at, effects, outbox, run_id, owner, update,
            )
            .await?;
        self.poke_for(workspace, effects);
        self.poke_for(workspace, &update.effects);
        Ok(grant)
    }

    pub async fn claim_run(
        &self,
        workspace: &str,
        run_id: &str,
        now: Timestamp,
        lease: &Lease,
        update: &RunUpdate,
    ) -> StoreResult<Option<Run>> {
        let claimed = self
            .store
            .claim_run(workspace, run_id, now, lease, update)
            .await?;
        if claimed.is_some() {
            self.poke_for(workspace, &update.effects);
        }
        Ok(claimed)
    }

    /// A live leg keeps its run: see [`airlock_store::Store::renew_lease`].
    pub async fn renew_lease(
        &self,
        workspace: &str,
        run_id: &str,
        lease: &Lease,
    ) -> StoreResult<bool> {
        self.store.renew_lease(workspace, run_id, lease).await
    }

    /// A leg of a paused run stopped: lets go of its lease so that the run may be resumed.
    pub async fn release_paused(
        &self,
        workspace: &str,
        run_id: &str,
        owner: &str,
    ) -> StoreResult<bool> {
        self.store.release_paused(workspace, run_id, owner).await
    }

    pub async fn stalled_runs(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(String, String)>> {
        self.store.stalled_runs(now, limit).await
    }

    // ----- the outbox (effects that are database writes, delivered later)

    pub async fn list_outbox(&self, workspace: &str, limit: u32) -> StoreResult<Vec<OutboxItem>> {
        self.store.list_outbox(workspace, limit).await
    }

    pub async fn outbox_due(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(String, OutboxItem)>> {
        self.store.outbox_due(now, limit).await
    }

    pub async fn claim_outbox(
        &self,
        workspace: &str,
        id: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        self.store.claim_outbox(workspace, id, now, until).await
    }

    pub async fn outbox_attempt(
        &self,
        workspace: &str,
        id: &str,
        at: Timestamp,
        error: Option<&str>,
        retry_at: Option<Timestamp>,
    ) -> StoreResult<()> {
        self.store
            .outbox_attempt(workspace, id, at, error, retry_at)
            .await
    }

    // ----- scheduled tasks: dispatching a due one as a run

    pub async fn due_tasks(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<(String, Task)>> {
        self.store.due_tasks(now, limit).await
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn dispatch_task(
        &self,
        workspace: &str,
        task_id: &str,
        now: Timestamp,
        manual: bool,
        next_run_at: Option<Timestamp>,
        session: &Session,
        run: &Run,
        lease: &Lease,
        update: &RunUpdate,
    ) -> StoreResult<bool> {
        let dispatched = self
            .store
            .dispatch_task(
                workspace,
                task_id,
                now,
                manual,
                next_run_at,
                session,
                run,
                lease,
                update,
            )
            .await?;
        if dispatched {
            self.poke_for(workspace, &update.effects);
        }
        Ok(dispatched)
    }

    pub async fn skip_task_tick(
        &self,
        workspace: &str,
        task_id: &str,
        now: Timestamp,
        next_run_at: Option<Timestamp>,
    ) -> StoreResult<bool> {
        self.store
            .skip_task_tick(workspace, task_id, now, next_run_at)
            .await
    }
}
