//! Moving one step of a run on: an allowed call is executed (`execute.rs`), a refused one
//! becomes a tool result telling the model why it will not run, and one waiting for a
//! person says so.

use crate::ctx::{Ctx, LegError, Settled};
use crate::Runtime;
use airlock_protocol::{CallStatus, StepState, StepStatus};
use airlock_store::{StoreError, StoredStep};
use serde_json::{json, Value};

impl Runtime {
    /// Moves a step on as far as it can go now: executes an allowed call, reports a
    /// refused one, or says it waits for a person.
    pub(crate) async fn settle_step(
        &self,
        ctx: &Ctx<'_>,
        stored: &StoredStep,
        exact: Option<&Value>,
    ) -> Result<Settled, LegError> {
        let mut step = stored.clone();
        if step.step.state == StepState::Started {
            // The grant was consumed and the tool started, then the node died: whether
            // the effect happened is unknown, and it is never tried again.
            self.finish_step(
                ctx,
                &mut step,
                StepStatus::Error,
                json!({"error": "unknown outcome: airlock stopped while the tool was running; it was not run again"}),
                None,
                Vec::new(),
            )
            .await?;
            return Ok(Settled::Finished);
        }
        let store = self.runs();
        let Some(call_id) = step.step.call_id.clone() else {
            self.finish_step(
                ctx,
                &mut step,
                StepStatus::Error,
                json!({"error": "the call never reached the gate"}),
                None,
                Vec::new(),
            )
            .await?;
            return Ok(Settled::Finished);
        };
        let Some(call) = store.get_call(ctx.workspace, &call_id).await? else {
            return Err(LegError::Store(StoreError::Corrupt {
                table: "run_steps",
                detail: format!("step names call {call_id}, which does not exist"),
            }));
        };
        let approval = match &call.approval_id {
            Some(id) => store.get_approval(ctx.workspace, id).await?,
            None => None,
        };
        let approver = approval.as_ref().and_then(|a| a.decided_by.clone());
        let reason = call.reason.clone().unwrap_or_default();
        let (status, output) = match call.status {
            CallStatus::Pending => {
                return Ok(Settled::Waiting(call.approval_id.unwrap_or_default()));
            }
            CallStatus::Allowed | CallStatus::Approved => {
                self.execute(ctx, &mut step, &call, exact, approver).await?;
                return Ok(Settled::Finished);
            }
            CallStatus::Denied => (
                StepStatus::Denied,
                Value::String(format!("Denied: {reason}")),
            ),
            CallStatus::Rejected => {
                let why = approval
                    .as_ref()
                    .and_then(|a| a.decision_reason.clone())
                    .filter(|r| !r.is_empty());
                let who = approver.clone().unwrap_or_else(|| "a person".into());
                let text = match why {
                    Some(why) => format!("rejected by {who}: {why}"),
                    None => format!("rejected by {who}"),
                };
                // DESIGN.md §10 behaviour 3: a rejection is an `error` step whose output
                // says `rejected`.
                (StepStatus::Error, json!({ "rejected": text }))
            }
            CallStatus::Expired => (
                StepStatus::Expired,
                json!({"expired": "nobody decided before the approval's deadline; the call did not run"}),
            ),
            CallStatus::Cancelled => (
                StepStatus::Denied,
                Value::String(format!("Denied: the approval was cancelled: {reason}")),
            ),
        };
        self.finish_step(ctx, &mut step, status, output, approver, Vec::new())
            .await?;
        Ok(Settled::Finished)
    }
}
