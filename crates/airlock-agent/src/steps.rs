//! Moving one step of a run on: executing an allowed call (its grant consumed first, in
//! the same transaction as its outbox row or its `tool_started`), or telling the model
//! why a call will not run; and finishing a step with its trace entry and tool message.

use crate::ctx::{Ctx, LegError, Settled, NOT_STORED};
use crate::toolset::ToolKind;
use crate::Runtime;
use airlock_gate::calls::redeem_effects;
use airlock_gate::ids::new_id;
use airlock_policy::secrets;
use airlock_protocol::{
    CallStatus, Message, OutboxItem, OutcomeReport, OutcomeStatus, StepState, StepStatus,
};
use airlock_store::{RedeemError, RunEventEntry, RunUpdate, StoreError, StoredStep};
use airlock_tools::{Builtins, Plan};
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

    /// Consumes the grant and runs the tool (G1): in one transaction with the outbox row
    /// for `email.send`, after a committed `tool_started` for everything else.
    async fn execute(
        &self,
        ctx: &Ctx<'_>,
        step: &mut StoredStep,
        call: &airlock_protocol::Call,
        exact: Option<&Value>,
        approver: Option<String>,
    ) -> Result<(), LegError> {
        // A person who edited the call while approving it decided what runs: the call's
        // arguments are then the edited ones (never redacted: an edit holds no secret).
        let edited = call.original_arguments.is_some();
        let arguments = match exact {
            _ if edited => call.arguments.clone(),
            Some(arguments) => arguments.clone(),
            None if step.exact => step.step.arguments.clone(),
            None => {
                return self
                    .finish_step(
                        ctx,
                        step,
                        StepStatus::Error,
                        json!({ "error": NOT_STORED }),
                        approver,
                        Vec::new(),
                    )
                    .await;
            }
        };
        let tool = step.step.tool.clone();
        let Some(agent_tool) = ctx.toolset.tools.get(&tool).cloned() else {
            return self
                .finish_step(
                    ctx,
                    step,
                    StepStatus::Error,
                    json!({"error": format!("the agent no longer has the tool `{tool}`")}),
                    approver,
                    Vec::new(),
                )
                .await;
        };
        let now = self.gate().now();
        let index = step.step.index;
        let started = self.event(
            "tool_started",
            json!({"step": index, "call_id": call.id, "tool": tool}),
        );
        let effects = redeem_effects(&ctx.principal, call, now);
        step.step.approver = approver.clone();

        let plan = match agent_tool.kind {
            ToolKind::Builtin => match Builtins::plan(&tool, &arguments) {
                Ok(plan) => plan,
                Err(error) => {
                    return self
                        .finish_step(
                            ctx,
                            step,
                            StepStatus::Error,
                            json!({"error": error.to_string()}),
                            approver,
                            Vec::new(),
                        )
                        .await;
                }
            },
            ToolKind::Mcp | ToolKind::Task => Plan::Run,
        };

        if let Plan::Outbox(effect) = plan {
            // The effect is a row: it commits with the grant's consumption, or not at all.
            let item = OutboxItem {
                id: new_id("out"),
                kind: effect.kind,
                recipient: effect.recipient,
                payload: secrets::redact(&effect.payload),
                run_id: Some(ctx.run.id.clone()),
                call_id: call.id.clone(),
                created_at: now,
                delivered_at: None,
                attempts: 0,
                last_error: None,
            };
            let output = told_of_edit(
                call,
                json!({"queued": item.id, "kind": item.kind, "recipient": item.recipient}),
            );
            let (update, finished) = self.finished_update(
                ctx,
                step,
                StepStatus::Ok,
                output,
                approver.clone(),
                vec![started],
            );
            let redeemed = self
                .runs()
                .redeem_for_run(
                    ctx.workspace,
                    &call.id,
                    now,
                    &effects,
                    Some(&item),
                    &ctx.run.id,
                    &self.inner.node,
                    &update,
                )
                .await;
            return match redeemed {
                Ok(_) => {
                    airlock_gate::failpoint!("effect.written");
                    // Its effect is the outbox row, written with the consumption.
                    self.report_outcome(ctx, &call.id, true, &Value::Null).await;
                    *step = finished;
                    self.journal_grew(&ctx.run.id);
                    Ok(())
                }
                Err(error) => self.redeem_refused(ctx, step, error, approver).await,
            };
        }

        // Anything else: consume the grant and journal the start, then run.
        let mut started_step = step.clone();
        started_step.step.state = StepState::Started;
        let update = RunUpdate {
            at: Some(now),
            events: vec![started],
            steps: vec![started_step.clone()],
            lease: Some(self.lease()),
            ..RunUpdate::default()
        };
        let redeemed = self
            .runs()
            .redeem_for_run(
                ctx.workspace,
                &call.id,
                now,
                &effects,
                None,
                &ctx.run.id,
                &self.inner.node,
                &update,
            )
            .await;
        if let Err(error) = redeemed {
            return self.redeem_refused(ctx, step, error, approver).await;
        }
        airlock_gate::failpoint!("effect.written");
        self.journal_grew(&ctx.run.id);
        *step = started_step;
        let (ok, output) = self.run_tool(ctx, agent_tool.kind, &tool, arguments).await;
        self.report_outcome(ctx, &call.id, ok, &output).await;
        let output = told_of_edit(call, output);
        let status = if ok {
            StepStatus::Ok
        } else {
            StepStatus::Error
        };
        // The tool ran: its result is journalled even if a person paused the run while it
        // ran (the next write of this leg then stops it).
        let (mut update, finished) =
            self.finished_update(ctx, step, status, output, approver, Vec::new());
        update.while_paused = true;
        self.write(ctx, update).await?;
        *step = finished;
        Ok(())
    }

    /// Records the outcome of a tool the runtime ran (DESIGN.md §11.8), in its own
    /// transaction after the tool returned. A failure to record is logged, not fatal: the
    /// run's journal holds the result either way.
    async fn report_outcome(&self, ctx: &Ctx<'_>, call_id: &str, ok: bool, output: &Value) {
        let report = OutcomeReport {
            status: if ok {
                OutcomeStatus::Succeeded
            } else {
                OutcomeStatus::Failed
            },
            detail: (!ok).then(|| {
                let text = match output.get("error") {
                    Some(Value::String(error)) => error.clone(),
                    _ => output.to_string(),
                };
                text.chars().take(500).collect()
            }),
        };
        if let Err(error) = self
            .gate()
            .report_outcome(&ctx.principal, call_id, &report)
            .await
        {
            tracing::warn!(%error, call_id, "cannot record the outcome of a tool the runtime ran");
        }
    }

    /// A grant that could not be consumed: the call does not run (again).
    async fn redeem_refused(
        &self,
        ctx: &Ctx<'_>,
        step: &mut StoredStep,
        error: RedeemError,
        approver: Option<String>,
    ) -> Result<(), LegError> {
        let output = match error {
            RedeemError::Spent | RedeemError::Replay(..) => {
                json!({"error": "the call's grant was already consumed; it did not run again"})
            }
            RedeemError::NoGrant | RedeemError::NotFound => {
                json!({"error": "the call has no grant; it did not run"})
            }
            RedeemError::Store(error) => return Err(error.into()),
        };
        self.finish_step(ctx, step, StepStatus::Error, output, approver, Vec::new())
            .await
    }

    fn finished_update(
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
        events.push(self.event(
            "tool_finished",
            json!({
                "step": step.step.index, "call_id": step.step.call_id, "tool": step.step.tool,
                "status": status, "output": output, "rule": step.step.rule,
                "standing_rule": step.step.standing_rule, "approver": approver,
            }),
        ));
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
}

/// A tool's output as the model reads it: when a person edited the call before approving
/// it, the model is told what ran instead of what it asked for (DESIGN.md §11.6).
fn told_of_edit(call: &airlock_protocol::Call, output: Value) -> Value {
    match &call.original_arguments {
        Some(original) => json!({
            "edited_by_person": {
                "note": "a person changed the arguments before approving; these ran instead of yours",
                "asked": original,
                "ran": call.arguments,
            },
            "result": output,
        }),
        None => output,
    }
}
