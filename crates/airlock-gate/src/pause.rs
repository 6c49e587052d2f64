//! Pausing and resuming a run for a person (DESIGN.md §11.6, §10 item 11): the store
//! changes the run and closes its pending approvals in one transaction; the gate says who
//! did it (audit records) and wakes whoever waits on a closed approval.

use crate::effects::audit;
use crate::runs::RunClose;
use crate::{Gate, GateError};
use airlock_protocol::events::RunAudit;
use airlock_protocol::AuditEvent;
use airlock_protocol::Run;
use airlock_store::{Principal, RunUpdate};

impl Gate {
    /// Pauses a running or suspended run for `principal` and closes the pending approvals
    /// its steps (or its leg, between the gate and the step) asked for, in the same
    /// transaction, then wakes their waiters. `None` when the run is unknown or neither
    /// running nor awaiting approval.
    pub async fn pause_run(
        &self,
        principal: &Principal,
        run_id: &str,
        update: &RunUpdate,
    ) -> Result<Option<Run>, GateError> {
        let at = update.at.unwrap_or_else(|| self.now());
        let mut update = update.clone();
        update.effects = update.effects.audit(audit(
            at,
            &principal.actor(),
            run_id,
            AuditEvent::RunPaused(RunAudit {
                run_id: run_id.to_owned(),
            }),
        ));
        self.close_run(principal, run_id, &update, RunClose::Pause)
            .await
    }

    /// Resumes a paused run for `principal`: it becomes `awaiting_approval`, ready for a
    /// node to claim, and each step whose approval the pause cancelled will be asked
    /// again. `None` when the run is unknown or not paused; `Conflict` while the leg that
    /// held it when it was paused is still finishing its step.
    pub async fn resume_run(
        &self,
        principal: &Principal,
        run_id: &str,
        update: &RunUpdate,
    ) -> Result<Option<Run>, GateError> {
        let workspace = principal.workspace.as_str();
        let actor = principal.actor();
        let at = update.at.unwrap_or_else(|| self.now());
        let mut update = update.clone();
        update.effects = update.effects.audit(audit(
            at,
            &actor,
            run_id,
            AuditEvent::RunResumed(RunAudit {
                run_id: run_id.to_owned(),
            }),
        ));
        let resumed = self
            .store()
            .resume_run(workspace, run_id, at, &update)
            .await?;
        if resumed.is_some() {
            crate::failpoint!("run.unpaused");
            self.poke(workspace);
        }
        Ok(resumed)
    }
}
