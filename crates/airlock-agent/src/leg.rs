//! One leg of a run: model turns and tool calls, until the run completes, fails, or
//! suspends because a tool call waits for a person.
//!
//! A leg is stateless across restarts: each pass of its loop reads the run, its steps and
//! the session's conversation from the store, so a leg started after a crash (or on
//! another node) picks up exactly where the last committed write left off. The only thing
//! held in memory is the exact arguments of the tool calls the model made in this leg,
//! because arguments holding secrets are stored redacted (G9).
//!
//! One pass, in named steps: [`held_run`](Runtime::held_run) (is it still ours to drive),
//! [`gate_unasked_calls`](Runtime::gate_unasked_calls) and
//! [`ask_again`](Runtime::ask_again) (`gating.rs`), [`settle_open_steps`](Runtime::settle_open_steps)
//! (`steps.rs`), then [`model_turn`](Runtime::model_turn).

use crate::ctx::{Ctx, ExactArguments, LegError, Settled};
use crate::journal::run_state_effects;
use crate::transcript::transcript;
use crate::turn::{tool_call_ids, StreamedText};
use crate::Runtime;
use airlock_gate::ids::new_id;
use airlock_llm::{ChatRequest, Completion, ToolCall};
use airlock_policy::secrets;
use airlock_protocol::events::{RunCompleted, RunSuspended, StepFinished, TextDelta};
use airlock_protocol::{Message, RunEventData, RunState, StepState};
use airlock_store::{Principal, RunUpdate, StoredStep, Subject};
use serde_json::{json, Value};

/// The most model turns one run may take; a model that keeps calling tools is stopped.
const MAX_TURNS: usize = 50;

/// What the open steps of a pass came to.
enum OpenSteps {
    /// There were none.
    None,
    /// Every one finished.
    Finished,
    /// These approvals wait for a person.
    Waiting(Vec<String>),
}

/// What the model's turn came to.
enum Turn {
    /// It asked for tool calls: the next pass puts them to the gate.
    Continue,
    /// It answered, or failed: the run ended.
    Ended,
}

impl Runtime {
    /// Drives a run this node holds, in the background.
    pub(crate) fn spawn_leg(&self, workspace: String, run_id: String, _first_text: Option<String>) {
        let runtime = self.clone();
        let stopping = self.inner.stopping.clone();
        if stopping.is_cancelled() {
            return;
        }
        let on_run = self.inner.driving.enter(&run_id);
        tokio::spawn(async move {
            let _on_run = on_run;
            let outcome = tokio::select! {
                outcome = runtime.leg(&workspace, &run_id) => outcome,
                never = runtime.keep_lease(&workspace, &run_id) => match never {},
                _ = stopping.cancelled() => return,
            };
            match outcome {
                Ok(()) => {}
                Err(LegError::LeaseLost) => {
                    tracing::info!(%run_id, "the run was paused, cancelled or taken over; this leg stops");
                    // Paused: this leg has stopped for good, so the run may be resumed;
                    // cancelled: the lease it kept for a running tool's result is let go
                    // (a no-op for a taken-over run).
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

    /// Renews the run's lease every `lease_renewal` while the leg lives: a model or a
    /// tool may take longer than the lease, and a node that is alive keeps its run. Stops
    /// renewing once the run is no longer this node's to keep (suspended, ended, let go
    /// after a pause, or taken over); the leg learns that at its next write, if it has not
    /// stopped already. Never returns.
    async fn keep_lease(&self, workspace: &str, run_id: &str) -> std::convert::Infallible {
        let every = self.inner.settings.lease_renewal;
        loop {
            tokio::time::sleep(every).await;
            match self
                .runs()
                .renew_lease(workspace, run_id, &self.lease())
                .await
            {
                Ok(true) => {}
                Ok(false) => return std::future::pending().await,
                Err(error) => {
                    tracing::warn!(%run_id, %error, "renewing a run's lease failed; trying again");
                }
            }
        }
    }

    async fn leg(&self, workspace: &str, run_id: &str) -> Result<(), LegError> {
        let store = self.runs();
        let mut exact = ExactArguments::new();
        for _turn in 0..MAX_TURNS {
            let Some(ctx) = self.held_run(workspace, run_id).await? else {
                return Ok(());
            };
            let messages = store
                .session_messages(workspace, &ctx.run.session_id)
                .await?;
            let mut steps = store.run_steps(workspace, run_id).await?;
            let last_turn = messages
                .iter()
                .rev()
                .find(|m| m.run_id == run_id && m.role == "assistant");
            if let Some(last_turn) = last_turn {
                self.gate_unasked_calls(&ctx, last_turn, &mut steps, &exact)
                    .await?;
            }
            self.ask_again(&ctx, last_turn, &mut steps, &exact).await?;
            let turn = messages
                .iter()
                .filter(|m| m.run_id == run_id && m.role == "assistant")
                .count();
            let turn = u64::try_from(turn).unwrap_or(u64::MAX);
            match self.settle_open_steps(&ctx, &steps, &exact).await? {
                OpenSteps::Waiting(waiting) => return self.suspend(&ctx, waiting).await,
                OpenSteps::Finished => self.step_finished(&ctx, turn).await?,
                // The turn's calls were all settled by a leg that died before it said so
                // (its last step's effect and result commit together, `effect.written`):
                // the journal still gets the turn's `step_finished`, once (§10.2).
                OpenSteps::None
                    if last_turn.is_some_and(|last| !last.tool_calls.is_empty())
                        && !self.step_finished_written(&ctx, turn).await? =>
                {
                    self.step_finished(&ctx, turn).await?;
                }
                OpenSteps::None => {}
            }
            if let Turn::Ended = self.model_turn(&ctx, &mut exact).await? {
                return Ok(());
            }
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

    /// The run as stored, with its agent and tools, while it is still this leg's to drive:
    /// `None` once it ended (or failed here because its agent or tools are gone), an
    /// error once a person paused it (the caller then lets go of the lease).
    async fn held_run<'a>(
        &self,
        workspace: &'a str,
        run_id: &str,
    ) -> Result<Option<Ctx<'a>>, LegError> {
        let store = self.runs();
        let Some(run) = store.get_run(workspace, run_id).await? else {
            return Ok(None);
        };
        if run.state == RunState::Paused {
            return Err(LegError::LeaseLost);
        }
        if run.state != RunState::Running {
            return Ok(None);
        }
        let Some(agent) = store.get_agent(workspace, &run.agent_id).await? else {
            self.fail(workspace, &run, "the run's agent no longer exists")
                .await?;
            return Ok(None);
        };
        let toolset = match self.inner.toolsets.get(&agent, &self.inner.settings).await {
            Ok(toolset) => toolset,
            Err(error) => {
                self.fail(workspace, &run, &error).await?;
                return Ok(None);
            }
        };
        Ok(Some(Ctx {
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
        }))
    }

    /// Moves every open step on as far as it can go now.
    async fn settle_open_steps(
        &self,
        ctx: &Ctx<'_>,
        steps: &[StoredStep],
        exact: &ExactArguments,
    ) -> Result<OpenSteps, LegError> {
        let mut open = OpenSteps::None;
        let mut waiting = Vec::new();
        for stored in steps.iter().filter(|s| s.step.state != StepState::Finished) {
            open = OpenSteps::Finished;
            let arguments = exact.get(&stored.step.tool_call_id);
            if let Settled::Waiting(approval) = self.settle_step(ctx, stored, arguments).await? {
                waiting.push(approval);
            }
        }
        if !waiting.is_empty() {
            open = OpenSteps::Waiting(waiting);
        }
        Ok(open)
    }

    /// Journals that every call of the model's turn number `turn` was settled.
    async fn step_finished(&self, ctx: &Ctx<'_>, turn: u64) -> Result<(), LegError> {
        let finished = RunEventData::StepFinished(StepFinished { turn });
        self.write(
            ctx,
            RunUpdate {
                events: vec![self.event(finished)],
                ..RunUpdate::default()
            },
        )
        .await
    }

    /// Whether the journal says turn number `turn` was settled (read only when a leg
    /// resumes a run whose last turn has no open step).
    async fn step_finished_written(&self, ctx: &Ctx<'_>, turn: u64) -> Result<bool, LegError> {
        const PAGE: u32 = 1000;
        let mut after = 0;
        loop {
            let page = self
                .runs()
                .run_events_after(ctx.workspace, &ctx.run.id, after, PAGE)
                .await?;
            let found = page
                .iter()
                .filter(|event| event.kind == "step_finished")
                .filter_map(|event| RunEventData::from_parts(&event.kind, event.data.clone()).ok())
                .any(|data| matches!(data, RunEventData::StepFinished(StepFinished { turn: written }) if written == turn));
            match page.last() {
                _ if found => return Ok(true),
                Some(last) if page.len() == PAGE as usize => after = last.seq,
                _ => return Ok(false),
            }
        }
    }

    /// The model's turn, over the conversation as stored: its answer ends the run, its
    /// tool calls are stored for the next pass.
    async fn model_turn(
        &self,
        ctx: &Ctx<'_>,
        exact: &mut ExactArguments,
    ) -> Result<Turn, LegError> {
        let messages = self
            .runs()
            .session_messages(ctx.workspace, &ctx.run.session_id)
            .await?;
        let request = ChatRequest {
            messages: transcript(ctx.agent.system_prompt.as_deref(), &messages),
            tools: ctx.toolset.defs(),
        };
        let completion = match self.complete(ctx, &request).await? {
            Ok(completion) => completion,
            Err(error) => {
                self.fail(
                    ctx.workspace,
                    &ctx.run,
                    &format!("the model failed: {error}"),
                )
                .await?;
                return Ok(Turn::Ended);
            }
        };
        if completion.tool_calls.is_empty() {
            self.finish_run(ctx, completion.text).await?;
            return Ok(Turn::Ended);
        }
        self.record_tool_calls(ctx, completion, &messages, exact)
            .await?;
        Ok(Turn::Continue)
    }

    /// Asks the model for its next turn, journaling its text as it streams: a line at a
    /// time, redacted (`StreamedText`), so that no secret split across fragments reaches
    /// the journal in clear (G9).
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
        let mut streamed = StreamedText::default();
        let result = loop {
            tokio::select! {
                result = &mut completion => break result,
                Some(first) = deltas.recv() => {
                    let mut ready = String::new();
                    ready.extend(streamed.push(&first));
                    while let Ok(more) = deltas.try_recv() {
                        ready.extend(streamed.push(&more));
                    }
                    if !ready.is_empty() {
                        self.write_text(ctx, ready).await?;
                    }
                }
            }
        };
        let mut ready = String::new();
        while let Ok(more) = deltas.try_recv() {
            ready.extend(streamed.push(&more));
        }
        ready.extend(streamed.finish());
        if !ready.is_empty() {
            self.write_text(ctx, ready).await?;
        }
        Ok(result)
    }

    /// Journals streamed model text, already redacted.
    async fn write_text(&self, ctx: &Ctx<'_>, text: String) -> Result<(), LegError> {
        let delta = RunEventData::TextDelta(TextDelta { text });
        self.write(
            ctx,
            RunUpdate {
                events: vec![self.event(delta)],
                ..RunUpdate::default()
            },
        )
        .await
    }

    /// Stores the model's turn: its text and its tool calls (arguments redacted), each
    /// under an id no other call of the session has (`turn::tool_call_ids`); the next pass
    /// of the loop puts each call to the gate. `conversation` is the session's so far.
    async fn record_tool_calls(
        &self,
        ctx: &Ctx<'_>,
        completion: Completion,
        conversation: &[Message],
        exact: &mut ExactArguments,
    ) -> Result<(), LegError> {
        let ids = tool_call_ids(&completion.tool_calls, conversation);
        let mut tool_calls = Vec::with_capacity(completion.tool_calls.len());
        for (
            ToolCall {
                name, arguments, ..
            },
            (id, model_id),
        ) in completion.tool_calls.into_iter().zip(ids)
        {
            if let Some(model_id) = &model_id {
                tracing::info!(run_id = %ctx.run.id, %id, model_id = %model_id, tool = %name,
                    "the model's tool call id was missing or not unique; the call goes by its own id");
            }
            let parsed = if arguments.trim().is_empty() {
                Ok(json!({}))
            } else {
                serde_json::from_str::<Value>(&arguments)
            };
            let mut entry = match parsed {
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
            if let Some(model_id) = model_id {
                // What the model called it, for the record (null: it gave no id).
                entry["model_id"] = Some(model_id).filter(|id| !id.is_empty()).into();
            }
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

    /// Parks the run until its approvals are decided. Nothing in memory is needed later.
    async fn suspend(&self, ctx: &Ctx<'_>, waiting: Vec<String>) -> Result<(), LegError> {
        let now = self.gate().now();
        let suspended = RunEventData::RunSuspended(RunSuspended {
            waiting_for: waiting,
        });
        self.write(
            ctx,
            RunUpdate {
                events: vec![self.event(suspended)],
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

    /// Ends the run with the model's answer, which carries the trace of its steps.
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
                events: vec![self.event(RunEventData::RunCompleted(RunCompleted { text }))],
                state: Some((RunState::Completed, None)),
                messages: vec![message],
                effects: run_state_effects(now, &ctx.run, RunState::Completed, "system"),
                ..RunUpdate::default()
            },
        )
        .await
    }
}
