//! Putting the model's tool calls to the gate: each becomes a step, refused before the
//! gate when it cannot run at all, else submitted (or adopted, when the gate already
//! recorded it before a crash) and recorded with the gate's verdict.
//!
//! `gate_tool_call`'s named steps: [`TurnCall::new_step`], [`checked_arguments`],
//! [`put_to_gate`](Runtime::put_to_gate), [`cite_decision`],
//! [`decision_events`](Runtime::decision_events) and
//! [`record_gated_step`](Runtime::record_gated_step).

use crate::ctx::{Ctx, ExactArguments, LegError, NOT_STORED};
use crate::execute::validate;
use crate::Runtime;
use airlock_gate::calls::{CallContext, Submission};
use airlock_gate::GateError;
use airlock_protocol::events::{ApprovalRequired, ToolCallMade, ToolDecided};
use airlock_protocol::{
    Call, CallStatus, DecidedBy, Message, RunEventData, Step, StepState, StepStatus,
};
use airlock_store::{ApprovalFilter, RunEventEntry, RunUpdate, StoredStep};
use serde_json::{json, Value};

/// A tool call of the model's turn as the conversation stores it.
pub(crate) struct TurnCall {
    pub(crate) id: String,
    pub(crate) tool: String,
    /// Redacted.
    pub(crate) arguments: Value,
    /// Whether `arguments` are the exact ones (they held no secret).
    pub(crate) exact: bool,
    /// Why the model's arguments could not be read at all.
    pub(crate) invalid: Option<String>,
}

impl TurnCall {
    /// Reads one entry of an assistant message's `tool_calls`.
    pub(crate) fn read(value: &Value) -> TurnCall {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        TurnCall {
            id: text("id").unwrap_or_default(),
            tool: text("tool").unwrap_or_default(),
            arguments: value.get("arguments").cloned().unwrap_or(json!({})),
            exact: value.get("exact").and_then(Value::as_bool) == Some(true),
            invalid: text("invalid"),
        }
    }

    /// The call of a step whose approval a pause cancelled, to ask again.
    pub(crate) fn of_step(stored: &StoredStep) -> TurnCall {
        TurnCall {
            id: stored.step.tool_call_id.clone(),
            tool: stored.step.tool.clone(),
            arguments: stored.step.arguments.clone(),
            exact: stored.exact,
            invalid: None,
        }
    }

    /// The step as first recorded: gated, nothing decided yet.
    pub(crate) fn new_step(&self, index: u32) -> StoredStep {
        StoredStep {
            step: Step {
                index,
                tool_call_id: self.id.clone(),
                tool: self.tool.clone(),
                arguments: self.arguments.clone(),
                call_id: None,
                state: StepState::Gated,
                status: None,
                output: None,
                rule: None,
                standing_rule: None,
                approver: None,
                finished_at: None,
            },
            exact: self.exact,
        }
    }
}

impl Runtime {
    /// Tool calls of the model's last turn that were never put to the gate (the node died
    /// in between): put them now.
    pub(crate) async fn gate_unasked_calls(
        &self,
        ctx: &Ctx<'_>,
        last_turn: &Message,
        steps: &mut Vec<StoredStep>,
        exact: &ExactArguments,
    ) -> Result<(), LegError> {
        for value in &last_turn.tool_calls {
            let tool_call = TurnCall::read(value);
            if steps.iter().any(|s| s.step.tool_call_id == tool_call.id) {
                continue;
            }
            let index = u32::try_from(steps.len()).unwrap_or(u32::MAX);
            // Not made in this leg: the gate may have recorded the call before the node
            // died, and then it must not be asked again.
            let orphan = if exact.contains_key(&tool_call.id) {
                None
            } else {
                self.orphan_call(ctx, last_turn, &tool_call, steps).await?
            };
            let stored = self
                .gate_tool_call(ctx, index, &tool_call, exact, orphan)
                .await?;
            steps.push(stored);
        }
        Ok(())
    }

    /// Steps whose approval a pause cancelled lost their call when the run was resumed:
    /// ask again (a new call and approval, never the old one).
    pub(crate) async fn ask_again(
        &self,
        ctx: &Ctx<'_>,
        last_turn: Option<&Message>,
        steps: &mut [StoredStep],
        exact: &ExactArguments,
    ) -> Result<(), LegError> {
        for position in 0..steps.len() {
            let stored = &steps[position];
            if stored.step.state != StepState::Gated || stored.step.call_id.is_some() {
                continue;
            }
            let tool_call = TurnCall::of_step(stored);
            let orphan = match last_turn {
                Some(last) if !exact.contains_key(&tool_call.id) => {
                    self.orphan_call(ctx, last, &tool_call, steps).await?
                }
                _ => None,
            };
            let index = stored.step.index;
            steps[position] = self
                .gate_tool_call(ctx, index, &tool_call, exact, orphan)
                .await?;
        }
        Ok(())
    }

    /// The call the gate recorded for `tool_call` when the node died after that commit
    /// and before the step's: an approval in this session, for this agent, tool and
    /// (redacted) arguments, asked after the model's turn, that no step names. Adopting
    /// it asks the person once, and a decision already made on it counts.
    async fn orphan_call(
        &self,
        ctx: &Ctx<'_>,
        turn: &Message,
        tool_call: &TurnCall,
        steps: &[StoredStep],
    ) -> Result<Option<Call>, LegError> {
        let store = self.runs();
        let filter = ApprovalFilter {
            status: None,
            session_id: Some(ctx.run.session_id.clone()),
            run_id: None,
            before: None,
            limit: 100,
        };
        let orphan = store
            .list_approvals(ctx.workspace, &filter)
            .await?
            .into_iter()
            .find(|approval| {
                // A cancelled one was closed by a pause (or a policy change): asking
                // again is the point, so it is never adopted.
                approval.agent_id == ctx.agent.id
                    && approval.status != airlock_protocol::ApprovalStatus::Cancelled
                    && approval.tool == tool_call.tool
                    && approval.preview.arguments == tool_call.arguments
                    && approval.created_at >= turn.created_at
                    && !steps
                        .iter()
                        .any(|s| s.step.call_id.as_deref() == Some(approval.call_id.as_str()))
            });
        match orphan {
            Some(approval) => Ok(store.get_call(ctx.workspace, &approval.call_id).await?),
            None => Ok(None),
        }
    }

    /// Puts one tool call of the model to the gate (or adopts `orphan`, the call the gate
    /// already recorded for it) and records the step.
    pub(crate) async fn gate_tool_call(
        &self,
        ctx: &Ctx<'_>,
        index: u32,
        tool_call: &TurnCall,
        exact: &ExactArguments,
        orphan: Option<Call>,
    ) -> Result<StoredStep, LegError> {
        let mut step = tool_call.new_step(index);
        let mut events = vec![self.event(RunEventData::ToolCall(ToolCallMade {
            step: index,
            tool_call_id: tool_call.id.clone(),
            tool: tool_call.tool.clone(),
            arguments: tool_call.arguments.clone(),
        }))];
        let exact = exact.get(&tool_call.id).cloned();
        let arguments = match checked_arguments(ctx, tool_call, exact) {
            Ok(arguments) => arguments,
            Err(error) => {
                let output = json!({ "error": error });
                self.finish_step(ctx, &mut step, StepStatus::Error, output, None, events)
                    .await?;
                return Ok(step);
            }
        };
        let fresh = orphan.is_none();
        let call = match self.put_to_gate(ctx, tool_call, arguments, orphan).await {
            Ok(call) => call,
            Err(error) => {
                // Fail closed: a call the gate could not decide does not run.
                let output = Value::String(format!(
                    "Denied: the gate could not decide the call: {error}"
                ));
                self.finish_step(ctx, &mut step, StepStatus::Denied, output, None, events)
                    .await?;
                return Ok(step);
            }
        };
        cite_decision(&mut step, &call);
        events.extend(self.decision_events(ctx, index, &call).await?);
        self.record_gated_step(ctx, &step, events, &call, fresh)
            .await?;
        Ok(step)
    }

    /// Submits the call to the gate as the run's agent, in its workspace folder; or
    /// adopts the call the gate already recorded for it.
    async fn put_to_gate(
        &self,
        ctx: &Ctx<'_>,
        tool_call: &TurnCall,
        arguments: Value,
        orphan: Option<Call>,
    ) -> Result<Call, GateError> {
        if let Some(call) = orphan {
            return Ok(call);
        }
        let tool = &tool_call.tool;
        let declared = ctx.toolset.tools.get(tool).and_then(|t| t.declared.clone());
        self.gate()
            .submit_call(
                &ctx.principal,
                Submission {
                    tool: tool.clone(),
                    arguments,
                    session_id: Some(ctx.run.session_id.clone()),
                    declared,
                    context: workspace_context(&ctx.toolset.context.workspace_dir),
                },
            )
            .await
    }

    /// The journal events of the gate's verdict: `tool_decided`, and `approval_required`
    /// (with what the person sees) when it waits for one.
    async fn decision_events(
        &self,
        ctx: &Ctx<'_>,
        index: u32,
        call: &Call,
    ) -> Result<Vec<RunEventEntry>, LegError> {
        let mut events = vec![self.event(RunEventData::ToolDecided(ToolDecided {
            step: index,
            call_id: call.id.clone(),
            status: call.status,
            decided_by: call.decided_by,
            rule: call.rule.clone(),
            reason: call.reason.clone(),
        }))];
        if let Some(approval_id) = &call.approval_id {
            if let Some(approval) = self.runs().get_approval(ctx.workspace, approval_id).await? {
                events.push(self.event(RunEventData::ApprovalRequired(ApprovalRequired {
                    step: index,
                    call_id: call.id.clone(),
                    approval_id: approval.id,
                    tool: approval.tool,
                    risk: approval.risk,
                    preview: approval.preview,
                    rule: approval.rule,
                    reason: approval.reason,
                    deadline: approval.deadline,
                    binding_digest: approval.binding_digest,
                    standing_target: approval.standing_target,
                })));
            }
        }
        Ok(events)
    }

    /// Writes the gated step with its events. When the run was paused (or cancelled)
    /// between the gate and this write, the approval just asked for belongs to no step,
    /// and must not stay askable while the run does not advance: it is closed.
    async fn record_gated_step(
        &self,
        ctx: &Ctx<'_>,
        step: &StoredStep,
        events: Vec<RunEventEntry>,
        call: &Call,
        fresh: bool,
    ) -> Result<(), LegError> {
        let written = self
            .write(
                ctx,
                RunUpdate {
                    events,
                    steps: vec![step.clone()],
                    ..RunUpdate::default()
                },
            )
            .await;
        // A crash right here leaves it to the pause's own sweep of the session (which
        // already ran) or to the resumed leg, which adopts it.
        if let (Err(LegError::LeaseLost), true, CallStatus::Pending) =
            (&written, fresh, call.status)
        {
            if let Err(error) = self
                .gate()
                .cancel_call(&ctx.principal, &call.id, "the run was paused")
                .await
            {
                tracing::info!(%error, call_id = %call.id, "closing the approval of a paused run's call");
            }
        }
        written
    }
}

/// The arguments the call would run with, or why it never reaches the gate: unparsable
/// calls, secret arguments lost to a restart, non-objects, unknown tools, arguments the
/// tool itself refuses. `exact` is what this leg kept in memory for it.
pub(crate) fn checked_arguments(
    ctx: &Ctx<'_>,
    tool_call: &TurnCall,
    exact: Option<Value>,
) -> Result<Value, String> {
    if let Some(invalid) = &tool_call.invalid {
        return Err(invalid.clone());
    }
    let arguments = match exact {
        Some(arguments) => arguments,
        None if tool_call.exact => tool_call.arguments.clone(),
        None => return Err(NOT_STORED.to_owned()),
    };
    if !arguments.is_object() {
        return Err("the arguments must be a JSON object".to_owned());
    }
    let tool = tool_call.tool.as_str();
    match ctx.toolset.tools.get(tool) {
        Some(agent_tool) => match validate(agent_tool, tool, &arguments) {
            Some(error) => Err(error),
            None => Ok(arguments),
        },
        None => Err(format!(
            "unknown tool `{tool}`; the tools are: {}",
            ctx.toolset
                .defs()
                .iter()
                .map(|def| def.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The step cites what decided its call: a person's standing rule that allowed it, else
/// the policy's rule.
fn cite_decision(step: &mut StoredStep, call: &Call) {
    step.step.call_id = Some(call.id.clone());
    if call.decided_by == DecidedBy::StandingRule {
        step.step.standing_rule = call.rule.clone();
    } else {
        step.step.rule = call.rule.clone();
    }
}

/// A runtime agent's calls happen in its workspace folder: that is their `cwd` and their
/// project (its tools cannot reach outside it).
fn workspace_context(workspace_dir: &std::path::Path) -> CallContext {
    let folder = std::path::absolute(workspace_dir)
        .ok()
        .and_then(|folder| folder.to_str().map(str::to_owned));
    CallContext {
        native_tool: None,
        cwd: folder.clone(),
        project: folder,
        home: None,
    }
}
