//! Pausing and resuming a run for a person (`POST /v1/runs/{id}/pause`, `/resume`;
//! DESIGN.md §11.6). A paused run does not advance: no node claims it, its leg can neither
//! consume a grant nor start a model turn (every such write needs the run `running`), and
//! only the result of a tool already executing is still journalled. Resuming hands it to
//! a leg like a run whose approvals were decided; the leg asks again where the pause
//! cancelled an approval.

use crate::journal::{journal_entry, run_state_effects};
use crate::Runtime;
use airlock_gate::identity::require_role;
use airlock_gate::GateError;
use airlock_protocol::events::RunActor;
use airlock_protocol::{Role, Run, RunEventData, RunState};
use airlock_store::{Principal, RunUpdate, Subject};

impl Runtime {
    /// Pauses a running or suspended run and cancels its pending approvals, so a later
    /// click on one is refused. Users with role ≥ approver, or the run's agent.
    pub async fn pause_run(&self, principal: &Principal, run_id: &str) -> Result<Run, GateError> {
        if let Subject::User { .. } = principal.subject {
            require_role(principal, Role::Approver, "pause runs")?;
        }
        let run = self.get_run(principal, run_id).await?;
        if !matches!(run.state, RunState::Running | RunState::AwaitingApproval) {
            return Err(GateError::Conflict(format!(
                "the run is {}; only a running run or one awaiting approval can be paused",
                run.state
            )));
        }
        let update = self.person_update(principal, &run, RunEventData::RunPaused, RunState::Paused);
        let Some(paused) = self.gate().pause_run(principal, run_id, &update).await? else {
            return Err(GateError::Conflict(
                "the run changed meanwhile: it is no longer running or awaiting approval".into(),
            ));
        };
        self.journal_grew(run_id);
        Ok(paused)
    }

    /// Resumes a paused run: a leg continues it from its journal, asking again where the
    /// pause cancelled an approval. Users with role ≥ approver, or the run's agent.
    pub async fn resume_run(&self, principal: &Principal, run_id: &str) -> Result<Run, GateError> {
        if let Subject::User { .. } = principal.subject {
            require_role(principal, Role::Approver, "resume runs")?;
        }
        let run = self.get_run(principal, run_id).await?;
        if run.state != RunState::Paused {
            return Err(GateError::Conflict(format!(
                "the run is {}, not paused; only a paused run can be resumed",
                run.state
            )));
        }
        let update = self.person_update(
            principal,
            &run,
            RunEventData::RunUnpaused,
            RunState::AwaitingApproval,
        );
        let Some(resumed) = self.gate().resume_run(principal, run_id, &update).await? else {
            return Err(GateError::Conflict(
                "the run changed meanwhile: it is no longer paused".into(),
            ));
        };
        self.journal_grew(run_id);
        // Claims it here (one node wins); had this node died first, any node's sweeper
        // finds it awaiting approval with nothing pending and claims it.
        self.try_resume(&principal.workspace, run_id).await;
        Ok(self.get_run(principal, run_id).await.unwrap_or(resumed))
    }

    /// A person's change of a run's state: its journal event and its `run.state` event.
    fn person_update(
        &self,
        principal: &Principal,
        run: &Run,
        kind: fn(RunActor) -> RunEventData,
        state: RunState,
    ) -> RunUpdate {
        let now = self.gate().now();
        let actor = principal.actor();
        RunUpdate {
            at: Some(now),
            events: vec![journal_entry(now, kind(RunActor { by: actor.clone() }))],
            effects: run_state_effects(now, run, state, &actor),
            ..RunUpdate::default()
        }
    }
}
