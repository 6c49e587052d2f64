//! One leg of a run: model turns and tool calls, until the run completes, fails, or
//! suspends because a tool call waits for a person.
//!
//! A leg is stateless across restarts: each pass of its loop reads the run, its steps and
//! the session's conversation from the store, so a leg started after a crash (or on
//! another node) picks up exactly where the last committed write left off. The only thing
//! held in memory is the exact arguments of the tool calls the model made in this leg,
//! because arguments holding secrets are stored redacted (G9).

use crate::ctx::{Ctx, LegError, Settled, NOT_STORED};
use crate::execute::validate;
use crate::{run_state_effects, Runtime};
use airlock_gate::calls::{CallContext, Submission};
use airlock_gate::ids::new_id;
use airlock_llm::{ChatMessage, ChatRequest, Completion, ToolCall};
use airlock_policy::secrets;
use airlock_protocol::{Message, Run, RunState, Step, StepState, StepStatus};
use airlock_store::{ApprovalFilter, Principal, RunEventEntry, RunUpdate, StoredStep, Subject};
use serde_json::{json, Value};
use std::collections::HashMap;

/// The most model turns one run may take; a model that keeps calling tools is stopped.
const MAX_TURNS: usize = 50;

impl Runtime {
    /// Drives a run this node holds, in the background.
    pub(crate) fn spawn_leg(&self, workspace: String, run_id: String, _first_text: Option<String>) {
        let runtime = self.clone();
        let stopping = self.inner.stopping.clone();
        if stopping.is_cancelled() {
            return;
        }
        tokio::spawn(async move {
            let outcome = tokio::select! {
                outcome = runtime.leg(&workspace, &run_id) => outcome,
                _ = stopping.cancelled() => return,
            };
            match outcome {
                Ok(()) => {}
                Err(LegError::LeaseLost) => {
                    tracing::info!(%run_id, "the run was paused, cancelled or taken over; this leg stops");
                    // Paused: this leg has stopped for good, so the run may be resumed
                    // (a no-op for a cancelled or taken-over run).
                    let released = runtime
                        .runs()
                        .release_paused(&workspace, &run_id, &runtime.inner.node)
                        .await;
                    if let Err(error) = released {
                        tracing::warn!(%run_id, %error, "cannot release a paused run; it can be resumed once its lease ran out");
                    }
                }
                Err(LegError::Store(error)) => {
                    tracing::warn!(%run_id, %error, "a run's leg stopped on a storage error; the sweeper will take it over");
                }
            }
        });
    }

    async fn leg(&self, workspace: &str, run_id: &str) -> Result<(), LegError> {
        let store = self.runs();
        // Exact arguments of the tool calls made in this leg, by tool call id.
        let mut exact: HashMap<String, Value> = HashMap::new();
        for _turn in 0..MAX_TURNS {
            let Some(run) = store.get_run(workspace, run_id).await? else {
                return Ok(());
            };
            if run.state == RunState::Paused {
                // Stopped by a person: the caller lets go of the lease.
                return Err(LegError::LeaseLost);
            }
            if run.state != RunState::Running {
                return Ok(());
            }
            let Some(agent) = store.get_agent(workspace, &run.agent_id).await? else {
                return self
                    .fail(workspace, &run, "the run's agent no longer exists")
                    .await;
            };
            let toolset = match self.inner.toolsets.get(&agent, &self.inner.settings).await {
                Ok(toolset) => toolset,
                Err(error) => return self.fail(workspace, &run, &error).await,
            };
            let ctx = Ctx {
                workspace,
                principal: Principal {
                    workspace: workspace.to_owned(),
                    subject: Subject::Agent {
                        id: agent.id.clone(),
                        name: agent.name.clone(),
                    },
                },
                run,
                agent,
                toolset,
            };

            let messages = store
                .session_messages(workspace, &ctx.run.session_id)
                .await?;
            let mut steps = store.run_steps(workspace, run_id).await?;
            // Tool calls of the model's last turn that were never put to the gate (the
            // node died in between): put them now.
            if let Some(last) = messages
                .iter()
                .rev()
                .find(|m| m.run_id == run_id && m.role == "assistant")
            {
                for tool_call in &last.tool_calls {
                    let id = tool_call
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !steps.iter().any(|s| s.step.tool_call_id == id) {
                        let index = u32::try_from(steps.len()).unwrap_or(u32::MAX);
                        // Not made in this leg: the gate may have recorded the call
                        // before the node died, and then it must not be asked again.
                        let orphan = if exact.contains_key(id) {
                            None
                        } else {
                            self.orphan_call(&ctx, last, tool_call, &steps).await?
                        };
                        let stored = self
                            .gate_tool_call(&ctx, index, tool_call, &exact, orphan)
                            .await?;
                        steps.push(stored);
                    }
                }
            }

            // Steps whose approval a pause cancelled lost their call when the run was
            // resumed: ask again (a new call and approval, never the old one).
            for position in 0..steps.len() {
                let stored = &steps[position];
                if stored.step.state != StepState::Gated || stored.step.call_id.is_some() {
                    continue;
                }
                let tool_call = json!({
                    "id": stored.step.tool_call_id, "tool": stored.step.tool,
                    "arguments": stored.step.arguments, "exact": stored.exact,
                });
                let orphan = match messages
                    .iter()
                    .rev()
                    .find(|m| m.run_id == run_id && m.role == "assistant")
                {
                    Some(last) if !exact.contains_key(&stored.step.tool_call_id) => {
                        self.orphan_call(&ctx, last, &tool_call, &steps).await?
                    }
                    _ => None,
                };
                let index = stored.step.index;
                steps[position] = self
                    .gate_tool_call(&ctx, index, &tool_call, &exact, orphan)
                    .await?;
            }

            let open: Vec<&StoredStep> = steps
                .iter()
                .filter(|s| s.step.state != StepState::Finished)
                .collect();
            let had_open = !open.is_empty();
            let mut waiting = Vec::new();
            for stored in open {
                let arguments = exact.get(&stored.step.tool_call_id);
                if let Settled::Waiting(approval) =
                    self.settle_step(&ctx, stored, arguments).await?
                {
                    waiting.push(approval);
                }
            }
            if !waiting.is_empty() {
                return self.suspend(&ctx, waiting).await;
            }
            if had_open {
                let turn = messages
                    .iter()
                    .filter(|m| m.run_id == run_id && m.role == "assistant")
                    .count();
                self.write(
                    &ctx,
                    RunUpdate {
                        events: vec![self.event("step_finished", json!({"turn": turn}))],
                        ..RunUpdate::default()
                    },
                )
                .await?;
            }

            // The model's turn, over the conversation as stored.
            let messages = store
                .session_messages(workspace, &ctx.run.session_id)
                .await?;
            let request = ChatRequest {
                messages: transcript(ctx.agent.system_prompt.as_deref(), &messages),
                tools: ctx.toolset.defs(),
            };
            let completion = match self.complete(&ctx, &request).await? {
                Ok(completion) => completion,
                Err(error) => {
                    return self
                        .fail(workspace, &ctx.run, &format!("the model failed: {error}"))
                        .await
                }
            };
            if completion.tool_calls.is_empty() {
                return self.finish_run(&ctx, completion.text).await;
            }
            self.record_tool_calls(&ctx, completion, &mut exact).await?;
        }
        let run = store
            .get_run(workspace, run_id)
            .await?
            .ok_or(LegError::LeaseLost)?;
        self.fail(
            workspace,
            &run,
            &format!("the model took more than {MAX_TURNS} turns; the run was stopped"),
        )
        .await
    }

    pub(crate) fn event(&self, kind: &str, data: Value) -> RunEventEntry {
        RunEventEntry {
            at: self.gate().now(),
            kind: kind.to_owned(),
            data,
        }
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

    /// Asks the model for its next turn, journaling its text as it streams.
    async fn complete(
        &self,
        ctx: &Ctx<'_>,
        request: &ChatRequest,
    ) -> Result<Result<Completion, airlock_llm::LlmError>, LegError> {
        let (sender, mut deltas) = tokio::sync::mpsc::unbounded_channel::<String>();
        let on_delta = move |text: &str| {
            let _ = sender.send(text.to_owned());
        };
        let provider = ctx.toolset.provider.clone();
        let completion = provider.complete(request, &on_delta);
        tokio::pin!(completion);
        let result = loop {
            tokio::select! {
                result = &mut completion => break result,
                Some(first) = deltas.recv() => {
                    let mut text = first;
                    while let Ok(more) = deltas.try_recv() {
                        text.push_str(&more);
                    }
                    self.write(ctx, RunUpdate {
                        events: vec![self.event("text_delta", json!({"text": secrets::redact_text(&text)}))],
                        ..RunUpdate::default()
                    }).await?;
                }
            }
        };
        let mut rest = String::new();
        while let Ok(more) = deltas.try_recv() {
            rest.push_str(&more);
        }
        if !rest.is_empty() {
            self.write(
                ctx,
                RunUpdate {
                    events: vec![
                        self.event("text_delta", json!({"text": secrets::redact_text(&rest)}))
                    ],
                    ..RunUpdate::default()
                },
            )
            .await?;
        }
        Ok(result)
    }

    /// Stores the model's turn: its text and its tool calls (arguments redacted); the next
    /// pass of the loop puts each call to the gate.
    async fn record_tool_calls(
        &self,
        ctx: &Ctx<'_>,
        completion: Completion,
        exact: &mut HashMap<String, Value>,
    ) -> Result<(), LegError> {
        let mut tool_calls = Vec::with_capacity(completion.tool_calls.len());
        for ToolCall {
            id,
            name,
            arguments,
        } in completion.tool_calls
        {
            let parsed = if arguments.trim().is_empty() {
                Ok(json!({}))
            } else {
                serde_json::from_str::<Value>(&arguments)
            };
            let entry = match parsed {
                Ok(value) => {
                    let redacted = secrets::redact(&value);
                    let is_exact = redacted == value;
                    exact.insert(id.clone(), value);
                    json!({"id": id, "tool": name, "arguments": redacted, "exact": is_exact})
                }
                Err(error) => json!({
                    "id": id, "tool": name,
                    "arguments": secrets::redact_text(&arguments),
                    "invalid": format!("the arguments are not valid JSON: {error}"),
                }),
            };
            tool_calls.push(entry);
        }
        let now = self.gate().now();
        let message = Message {
            id: new_id("msg"),
            session_id: ctx.run.session_id.clone(),
            run_id: ctx.run.id.clone(),
            role: "assistant".into(),
            text: completion
                .text
                .filter(|text| !text.trim().is_empty())
                .map(|text| secrets::redact_text(&text)),
            tool_calls,
            tool_call_id: None,
            steps: Vec::new(),
            created_at: now,
        };
        self.write(
            ctx,
            RunUpdate {
                messages: vec![message],
                ..RunUpdate::default()
            },
        )
        .await
    }

    /// The call the gate recorded for `tool_call` when the node died after that commit
    /// and before the step's: an approval in this session, for this agent, tool and
    /// (redacted) arguments, asked after the model's turn, that no step names. Adopting
    /// it asks the person once, and a decision already made on it counts.
    async fn orphan_call(
        &self,
        ctx: &Ctx<'_>,
        turn: &Message,
        tool_call: &Value,
        steps: &[StoredStep],
    ) -> Result<Option<airlock_protocol::Call>, LegError> {
        let tool = tool_call.get("tool").and_then(Value::as_str);
        let arguments = tool_call.get("arguments");
        let store = self.runs();
        let filter = ApprovalFilter {
            status: None,
            session_id: Some(ctx.run.session_id.clone()),
            run_id: None,
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
                    && Some(approval.tool.as_str()) == tool
                    && Some(&approval.preview.arguments) == arguments
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
    async fn gate_tool_call(
        &self,
        ctx: &Ctx<'_>,
        index: u32,
        tool_call: &Value,
        exact: &HashMap<String, Value>,
        orphan: Option<airlock_protocol::Call>,
    ) -> Result<StoredStep, LegError> {
        let id = tool_call
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let tool = tool_call
            .get("tool")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let stored_arguments = tool_call.get("arguments").cloned().unwrap_or(json!({}));
        let stored_exact = tool_call.get("exact").and_then(Value::as_bool) == Some(true);
        let mut step = StoredStep {
            step: Step {
                index,
                tool_call_id: id.to_owned(),
                tool: tool.to_owned(),
                arguments: stored_arguments.clone(),
                call_id: None,
                state: StepState::Gated,
                status: None,
                output: None,
                rule: None,
                standing_rule: None,
                approver: None,
                finished_at: None,
            },
            exact: stored_exact,
        };
        let mut events = vec![self.event(
            "tool_call",
            json!({"step": index, "tool_call_id": id, "tool": tool, "arguments": stored_arguments}),
        )];

        // What never reaches the gate: unparsable calls, unknown tools, bad arguments.
        let arguments = match exact.get(id) {
            Some(arguments) => Some(arguments.clone()),
            None if stored_exact => Some(stored_arguments.clone()),
            None => None,
        };
        let refusal = if let Some(invalid) = tool_call.get("invalid").and_then(Value::as_str) {
            Some(invalid.to_owned())
        } else if arguments.is_none() {
            Some(NOT_STORED.to_owned())
        } else if !arguments.as_ref().is_some_and(Value::is_object) {
            Some("the arguments must be a JSON object".to_owned())
        } else if let Some(agent_tool) = ctx.toolset.tools.get(tool) {
            validate(agent_tool, tool, arguments.as_ref().unwrap_or(&Value::Null))
        } else {
            Some(format!(
                "unknown tool `{tool}`; the tools are: {}",
                ctx.toolset
                    .defs()
                    .iter()
                    .map(|def| def.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        };
        if let Some(error) = refusal {
            self.finish_step(
                ctx,
                &mut step,
                StepStatus::Error,
                json!({ "error": error }),
                None,
                events,
            )
            .await?;
            return Ok(step);
        }
        let arguments = arguments.unwrap_or_default();
        let declared = ctx.toolset.tools.get(tool).and_then(|t| t.declared.clone());
        let fresh = orphan.is_none();
        let submitted = match orphan {
            Some(call) => Ok(call),
            None => {
                self.gate()
                    .submit_call(
                        &ctx.principal,
                        Submission {
                            tool: tool.to_owned(),
                            arguments,
                            session_id: Some(ctx.run.session_id.clone()),
                            declared,
                            context: workspace_context(&ctx.toolset.context.workspace_dir),
                        },
                    )
                    .await
            }
        };
        let call = match submitted {
            Ok(call) => call,
            Err(error) => {
                // Fail closed: a call the gate could not decide does not run.
                self.finish_step(
                    ctx,
                    &mut step,
                    StepStatus::Denied,
                    Value::String(format!(
                        "Denied: the gate could not decide the call: {error}"
                    )),
                    None,
                    events,
                )
                .await?;
                return Ok(step);
            }
        };
        step.step.call_id = Some(call.id.clone());
        if call.decided_by == airlock_protocol::DecidedBy::StandingRule {
            // Allowed by a person's standing rule: the trace cites that rule.
            step.step.standing_rule = call.rule.clone();
        } else {
            step.step.rule = call.rule.clone();
        }
        events.push(self.event(
            "tool_decided",
            json!({
                "step": index, "call_id": call.id, "status": call.status,
                "decided_by": call.decided_by, "rule": call.rule, "reason": call.reason,
            }),
        ));
        if let Some(approval_id) = &call.approval_id {
            if let Some(approval) = self.runs().get_approval(ctx.workspace, approval_id).await? {
                events.push(self.event(
                    "approval_required",
                    json!({
                        "step": index, "call_id": call.id, "approval_id": approval.id,
                        "tool": approval.tool, "risk": approval.risk,
                        "preview": approval.preview, "rule": approval.rule,
                        "reason": approval.reason, "deadline": approval.deadline,
                        "binding_digest": approval.binding_digest,
                        "standing_target": approval.standing_target,
                    }),
                ));
            }
        }
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
        if let (Err(LegError::LeaseLost), true) = (&written, fresh) {
            // Paused (or cancelled) between the gate and this write: the approval just
            // asked for belongs to no step, and must not stay askable while the run does
            // not advance. A crash right here leaves it to the pause's own sweep of the
            // session (which already ran) or to the resumed leg, which adopts it.
            if call.status == airlock_protocol::CallStatus::Pending {
                if let Err(error) = self
                    .gate()
                    .cancel_call(&ctx.principal, &call.id, "the run was paused")
                    .await
                {
                    tracing::info!(%error, call_id = %call.id, "closing the approval of a paused run's call");
                }
            }
        }
        written?;
        Ok(step)
    }

    /// Parks the run until its approvals are decided. Nothing in memory is needed later.
    async fn suspend(&self, ctx: &Ctx<'_>, waiting: Vec<String>) -> Result<(), LegError> {
        let now = self.gate().now();
        self.write(
            ctx,
            RunUpdate {
                events: vec![self.event("run_suspended", json!({"waiting_for": waiting}))],
                state: Some((RunState::AwaitingApproval, None)),
                effects: run_state_effects(now, &ctx.run, RunState::AwaitingApproval, "system"),
                ..RunUpdate::default()
            },
        )
        .await?;
        airlock_gate::failpoint!("run.suspended");
        // A decision that landed between the check and the suspension found the run
        // still running and could not resume it: look again.
        self.try_resume(ctx.workspace, &ctx.run.id).await;
        Ok(())
    }

    async fn finish_run(&self, ctx: &Ctx<'_>, text: Option<String>) -> Result<(), LegError> {
        let now = self.gate().now();
        let steps = self
            .runs()
            .run_steps(ctx.workspace, &ctx.run.id)
            .await?
            .into_iter()
            .map(|stored| stored.step)
            .collect();
        let text = text.map(|text| secrets::redact_text(&text));
        let message = Message {
            id: new_id("msg"),
            session_id: ctx.run.session_id.clone(),
            run_id: ctx.run.id.clone(),
            role: "assistant".into(),
            text: text.clone(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            steps,
            created_at: now,
        };
        self.write(
            ctx,
            RunUpdate {
                events: vec![self.event("run_completed", json!({"text": text}))],
                state: Some((RunState::Completed, None)),
                messages: vec![message],
                effects: run_state_effects(now, &ctx.run, RunState::Completed, "system"),
                ..RunUpdate::default()
            },
        )
        .await
    }

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
            events: vec![self.event("run_failed", json!({"error": error}))],
            state: Some((RunState::Failed, Some(error.clone()))),
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

/// The conversation in the model's terms.
fn transcript(system_prompt: Option<&str>, messages: &[Message]) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(prompt) = system_prompt.filter(|p| !p.trim().is_empty()) {
        out.push(ChatMessage::System {
            content: prompt.to_owned(),
        });
    }
    for message in messages {
        match message.role.as_str() {
            "user" => out.push(ChatMessage::User {
                content: message.text.clone().unwrap_or_default(),
            }),
            "assistant" => out.push(ChatMessage::Assistant {
                content: message.text.clone(),
                tool_calls: message
                    .tool_calls
                    .iter()
                    .map(|call| ToolCall {
                        id: call["id"].as_str().unwrap_or_default().to_owned(),
                        name: call["tool"].as_str().unwrap_or_default().to_owned(),
                        arguments: match &call["arguments"] {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        },
                    })
                    .collect(),
            }),
            "tool" => out.push(ChatMessage::Tool {
                tool_call_id: message.tool_call_id.clone().unwrap_or_default(),
                content: message.text.clone().unwrap_or_default(),
            }),
            _ => {}
        }
    }
    out
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
