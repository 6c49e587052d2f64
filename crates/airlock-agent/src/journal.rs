//! Writing to a run this node holds: journal events (typed, `airlock_protocol::events`),
//! every write renewing and checking the lease; finishing a step with its trace entry and
//! tool message; failing a run.
//!
//! Its own module so that the leg, its steps and the tools they run all write the same
//! way without depending on each other: `leg` → `steps` → `execute`, and each of them →
//! `journal`, never back.

use crate::ctx::{Ctx, LegError};
use crate::Runtime;
use airlock_gate::effects::event;
use airlock_gate::ids::new_id;
use airlock_policy::secrets;
use airlock_protocol::events::{RunFailed, RunStateChanged, ToolFinished};
use airlock_protocol::{
    Message, Run, RunEventData, RunState, StepState, StepStatus, WorkspaceEventData,
};
use airlock_store::{Effects, RunEventEntry, RunUpdate, StoredStep};
use jiff::Timestamp;
use serde_json::Value;

impl Runtime {
    /// A journal event of the run, stamped now.
    pub(crate) fn event(&self, data: RunEventData) -> RunEventEntry {
        journal_entry(self.gate().now(), data)
    }

    /// Writes to the run this leg holds, renewing the lease.
    pub(crate) async fn write(&self, ctx: &Ctx<'_>, mut update: RunUpdate) -> Result<(), LegError> {
        update.at = Some(self.gate().now());
        if update.lease.is_none() {
            update.lease = Some(self.lease());
        }
        self.runs()
            .update_run(ctx.workspace, &ctx.run.id, &self.inner.node, &update)
            .await?;
        self.journal_grew(&ctx.run.id);
        Ok(())
    }

    /// Finishes a step: its outcome, `tool_finished` after `events`, and the tool message
    /// the model reads, in one write.
    pub(crate) async fn finish_step(
        &self,
        ctx: &Ctx<'_>,
        step: &mut StoredStep,
        status: StepStatus,
        output: Value,
        approver: Option<String>,
        events: Vec<RunEventEntry>,
    ) -> Result<(), LegError> {
        let (update, finished) = self.finished_update(ctx, step, status, output, approver, events);
        self.write(ctx, update).await?;
        *step = finished;
        Ok(())
    }

    /// The write that finishes a step (output redacted), and the step as it is after it.
    pub(crate) fn finished_update(
        &self,
        ctx: &Ctx<'_>,
        step: &StoredStep,
        status: StepStatus,
        output: Value,
        approver: Option<String>,
        mut events: Vec<RunEventEntry>,
    ) -> (RunUpdate, StoredStep) {
        let now = self.gate().now();
        let output = secrets::redact(&output);
        let mut finished = step.clone();
        finished.step.state = StepState::Finished;
        finished.step.status = Some(status);
        finished.step.output = Some(output.clone());
        finished.step.approver = approver.clone();
        finished.step.finished_at = Some(now);
        events.push(self.event(RunEventData::ToolFinished(ToolFinished {
            step: step.step.index,
            call_id: step.step.call_id.clone(),
            tool: step.step.tool.clone(),
            status,
            output: output.clone(),
            rule: step.step.rule.clone(),
            standing_rule: step.step.standing_rule.clone(),
            approver,
        })));
        let message = Message {
            id: new_id("msg"),
            session_id: ctx.run.session_id.clone(),
            run_id: ctx.run.id.clone(),
            role: "tool".into(),
            text: Some(match &output {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            }),
            tool_calls: Vec::new(),
            tool_call_id: Some(step.step.tool_call_id.clone()),
            steps: Vec::new(),
            created_at: now,
        };
        (
            RunUpdate {
                at: Some(now),
                events,
                messages: vec![message],
                steps: vec![finished.clone()],
                lease: Some(self.lease()),
                ..RunUpdate::default()
            },
            finished,
        )
    }

    /// Ends the run as failed, with `error` (redacted) as its reason.
    pub(crate) async fn fail(
        &self,
        workspace: &str,
        run: &Run,
        error: &str,
    ) -> Result<(), LegError> {
        let now = self.gate().now();
        let error = secrets::redact_text(error);
        let update = RunUpdate {
            at: Some(now),
            events: vec![journal_entry(
                now,
                RunEventData::RunFailed(RunFailed {
                    error: error.clone(),
                }),
            )],
            state: Some((RunState::Failed, Some(error))),
            effects: run_state_effects(now, run, RunState::Failed, "system"),
            ..RunUpdate::default()
        };
        self.runs()
            .update_run(workspace, &run.id, &self.inner.node, &update)
            .await?;
        self.journal_grew(&run.id);
        Ok(())
    }
}

/// A journal event as the store takes it: the kind's text and its data.
pub(crate) fn journal_entry(at: Timestamp, data: RunEventData) -> RunEventEntry {
    RunEventEntry {
        at,
        kind: data.kind().to_owned(),
        data: data.data(),
    }
}

/// The `run.state` workspace event (and nothing in the audit: a run's state is not a
/// decision; its tool calls are audited by the gate).
pub(crate) fn run_state_effects(at: Timestamp, run: &Run, state: RunState, actor: &str) -> Effects {
    Effects::none().event(event(
        at,
        WorkspaceEventData::RunState(RunStateChanged {
            run_id: run.id.clone(),
            session_id: run.session_id.clone(),
            agent_id: run.agent_id.clone(),
            state,
            by: actor.to_owned(),
        }),
    ))
}
