//! Executing an allowed call exactly once (G1), and running a tool by kind: the built-in
//! tools (`airlock-tools`), an agent's MCP tools (`airlock-mcp`'s host), and
//! `task.create`, which the runtime serves itself through the gate.
//!
//! `execute`'s named steps: [`what_runs`] (the arguments, the tool and how it takes
//! effect, or why it cannot run), then either
//! [`execute_outbox`](Runtime::execute_outbox) (the effect is a row, written with the
//! grant's consumption) or [`execute_started`](Runtime::execute_started) (consume the
//! grant with a `tool_started`, then run), then
//! [`report_outcome`](Runtime::report_outcome).

use crate::ctx::{Ctx, LegError, NOT_STORED};
use crate::toolset::{AgentTool, ToolKind};
use crate::Runtime;
use airlock_gate::calls::redeem_effects;
use airlock_gate::ids::new_id;
use airlock_policy::secrets;
use airlock_protocol::events::ToolStarted;
use airlock_protocol::{
    Call, OutboxItem, OutcomeReport, OutcomeStatus, RunEventData, StepState, StepStatus,
};
use airlock_store::{RedeemError, RunEventEntry, RunUpdate, StoredStep};
use airlock_tools::{Builtins, OutboxEffect, Plan};
use serde_json::{json, Value};
use std::time::Duration;

/// The longest an MCP tool may run.
const MCP_TIMEOUT: Duration = Duration::from_secs(120);

/// The most of an MCP tool's answer the model reads and the journal keeps (its text and
/// structured content together), as `fs.read` and `http.fetch` keep at most 1 MiB.
const MCP_MAX_OUTPUT: usize = 1024 * 1024;

/// What an allowed call runs as.
struct Runnable {
    arguments: Value,
    tool: AgentTool,
    plan: Plan,
}

impl Runtime {
    /// Consumes the grant and runs the tool (G1): in one transaction with the outbox row
    /// for `email.send`, after a committed `tool_started` for everything else.
    pub(crate) async fn execute(
        &self,
        ctx: &Ctx<'_>,
        step: &mut StoredStep,
        call: &Call,
        exact: Option<&Value>,
        approver: Option<String>,
    ) -> Result<(), LegError> {
        let runnable = match what_runs(ctx, step, call, exact) {
            Ok(runnable) => runnable,
            Err(output) => {
                return self
                    .finish_step(ctx, step, StepStatus::Error, output, approver, Vec::new())
                    .await;
            }
        };
        let started = self.event(RunEventData::ToolStarted(ToolStarted {
            step: step.step.index,
            call_id: call.id.clone(),
            tool: step.step.tool.clone(),
        }));
        step.step.approver = approver.clone();
        match runnable.plan {
            Plan::Outbox(effect) => {
                self.execute_outbox(ctx, step, call, effect, started, approver)
                    .await
            }
            Plan::Run => {
                let kind = runnable.tool.kind;
                self.execute_started(ctx, step, call, kind, runnable.arguments, started, approver)
                    .await
            }
        }
    }

    /// The effect is a row: it commits with the grant's consumption, or not at all.
    async fn execute_outbox(
        &self,
        ctx: &Ctx<'_>,
        step: &mut StoredStep,
        call: &Call,
        effect: OutboxEffect,
        started: RunEventEntry,
        approver: Option<String>,
    ) -> Result<(), LegError> {
        let now = self.gate().now();
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
        match self
            .consume_grant(ctx, call, now, Some(&item), &update)
            .await
        {
            Ok(()) => {
                airlock_gate::failpoint!("effect.written");
                // Its effect is the outbox row, written with the consumption.
                self.report_outcome(ctx, &call.id, true, &Value::Null).await;
                *step = finished;
                self.journal_grew(&ctx.run.id);
                Ok(())
            }
            Err(error) => self.redeem_refused(ctx, step, error, approver).await,
        }
    }

    /// Anything else: consume the grant and journal the start, then run the tool and
    /// journal its result.
    #[allow(clippy::too_many_arguments)] // each is a distinct part of the one execution
    async fn execute_started(
        &self,
        ctx: &Ctx<'_>,
        step: &mut StoredStep,
        call: &Call,
        kind: ToolKind,
        arguments: Value,
        started: RunEventEntry,
        approver: Option<String>,
    ) -> Result<(), LegError> {
        let now = self.gate().now();
        let mut started_step = step.clone();
        started_step.step.state = StepState::Started;
        let update = RunUpdate {
            at: Some(now),
            events: vec![started],
            steps: vec![started_step.clone()],
            lease: Some(self.lease()),
            ..RunUpdate::default()
        };
        if let Err(error) = self.consume_grant(ctx, call, now, None, &update).await {
            return self.redeem_refused(ctx, step, error, approver).await;
        }
        airlock_gate::failpoint!("effect.written");
        self.journal_grew(&ctx.run.id);
        *step = started_step;
        let tool = step.step.tool.clone();
        let (ok, output) = self.run_tool(ctx, kind, &tool, arguments).await;
        self.report_outcome(ctx, &call.id, ok, &output).await;
        let output = told_of_edit(call, output);
        let status = if ok {
            StepStatus::Ok
        } else {
            StepStatus::Error
        };
        // The tool ran: its result is journalled even if a person paused or cancelled the
        // run while it ran (the next write of this leg then stops it), so the journal says
        // what ran and the model, in a later run, reads the call's answer.
        let (mut update, finished) =
            self.finished_update(ctx, step, status, output, approver, Vec::new());
        update.while_paused = true;
        self.write(ctx, update).await?;
        *step = finished;
        Ok(())
    }

    /// Consumes the call's grant (its `grant.consumed` record) in one transaction with
    /// `update` to the run this leg holds, and with the outbox row when there is one.
    async fn consume_grant(
        &self,
        ctx: &Ctx<'_>,
        call: &Call,
        now: jiff::Timestamp,
        outbox: Option<&OutboxItem>,
        update: &RunUpdate,
    ) -> Result<(), RedeemError> {
        self.runs()
            .redeem_for_run(
                ctx.workspace,
                &call.id,
                now,
                &redeem_effects(&ctx.principal, call, now),
                outbox,
                &ctx.run.id,
                &self.inner.node,
                update,
            )
            .await
            .map(|_| ())
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

    /// Runs the tool; `(ok, output)` where the output is what the model is told.
    pub(crate) async fn run_tool(
        &self,
        ctx: &Ctx<'_>,
        kind: ToolKind,
        tool: &str,
        arguments: Value,
    ) -> (bool, Value) {
        match kind {
            ToolKind::Builtin => {
                let output = Builtins::execute(tool, &arguments, &ctx.toolset.context).await;
                (output.ok, output.output)
            }
            ToolKind::Mcp => match &ctx.toolset.mcp {
                Some(host) => match host.call(tool, arguments, MCP_TIMEOUT).await {
                    Ok(result) => (!result.is_error, mcp_output(result)),
                    Err(error) => (false, json!({"error": error.to_string()})),
                },
                None => (
                    false,
                    json!({"error": "the agent's MCP servers are not running"}),
                ),
            },
            ToolKind::Task => match task_arguments(&arguments) {
                Ok(arguments) => {
                    let created = self
                        .gate()
                        .create_task(
                            &ctx.principal,
                            airlock_gate::tasks::NewTask {
                                title: arguments.title,
                                instructions: arguments.instructions,
                                agent: ctx.agent.id.clone(),
                                cron: arguments.cron,
                                timezone: arguments.timezone,
                                enabled: Some(true),
                                permissions: Vec::new(),
                            },
                        )
                        .await;
                    match created {
                        Ok(created) => (
                            true,
                            json!({"task_id": created.task.id, "next_run_at": created.task.next_run_at}),
                        ),
                        Err(error) => (false, json!({"error": error.to_string()})),
                    }
                }
                Err(error) => (false, json!({ "error": error })),
            },
        }
    }
}

/// An MCP tool's answer as the model reads it: its text, and its structured content when
/// both fit in [`MCP_MAX_OUTPUT`]. Beyond that the text is cut (on a character boundary)
/// and the structured content, which mostly repeats the text, left out, with
/// `truncated: true`, like the built-in tools' output.
fn mcp_output(result: airlock_mcp::HostedResult) -> Value {
    let mut text = result.text;
    let mut truncated = false;
    if text.len() > MCP_MAX_OUTPUT {
        let mut end = MCP_MAX_OUTPUT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        truncated = true;
    }
    let room = MCP_MAX_OUTPUT - text.len();
    let mut output = json!({ "text": text });
    if let Some(structured) = result.structured {
        if structured.to_string().len() <= room {
            output["structured"] = structured;
        } else {
            truncated = true;
        }
    }
    if truncated {
        output["truncated"] = Value::Bool(true);
    }
    output
}

/// A tool's own argument check, before anything reaches the gate.
pub(crate) fn validate(tool: &AgentTool, name: &str, arguments: &Value) -> Option<String> {
    match tool.kind {
        ToolKind::Builtin => Builtins::plan(name, arguments).err().map(|e| e.to_string()),
        ToolKind::Mcp => None,
        ToolKind::Task => task_arguments(arguments).err(),
    }
}

/// `task.create`'s arguments: title, instructions, cron, optional timezone; nothing else
/// (in particular no `permissions`: rules are minted by people only).
fn task_arguments(arguments: &Value) -> Result<TaskArguments, String> {
    serde_json::from_value::<TaskArguments>(arguments.clone())
        .map_err(|error| format!("task.create: {error}"))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArguments {
    title: String,
    instructions: String,
    cron: String,
    #[serde(default)]
    timezone: Option<String>,
}

/// What an allowed call runs: a person's edit when they made one (never redacted: an edit
/// holds no secret), else the exact arguments (from this leg, or stored when they held no
/// secret), provided they are the call's the gate decided; with the agent's tool and how
/// it takes effect. `Err` is the step's output when it cannot run.
fn what_runs(
    ctx: &Ctx<'_>,
    step: &StoredStep,
    call: &Call,
    exact: Option<&Value>,
) -> Result<Runnable, Value> {
    let arguments = match exact {
        _ if call.original_arguments.is_some() => call.arguments.clone(),
        Some(arguments) => arguments.clone(),
        None if step.exact => step.step.arguments.clone(),
        None => return Err(json!({ "error": NOT_STORED })),
    };
    let name = &step.step.tool;
    // G1, G2: what runs is the call the gate decided, the one a person saw. The gate
    // recorded it redacted (or as the person edited it): the tool and the arguments about
    // to run must be exactly that. A mismatch means the step lost track of its call; the
    // call does not run.
    let edited = call.original_arguments.is_some();
    if *name != call.tool || (!edited && secrets::redact(&arguments) != call.arguments) {
        tracing::error!(call_id = %call.id, step = step.step.index, "a step's arguments are not those of the call the gate decided; it does not run");
        return Err(
            json!({"error": "the call about to run is not the call the gate decided; it did not run"}),
        );
    }
    let Some(tool) = ctx.toolset.tools.get(name).cloned() else {
        return Err(json!({"error": format!("the agent no longer has the tool `{name}`")}));
    };
    let plan = match tool.kind {
        ToolKind::Builtin => {
            Builtins::plan(name, &arguments).map_err(|error| json!({"error": error.to_string()}))?
        }
        ToolKind::Mcp | ToolKind::Task => Plan::Run,
    };
    Ok(Runnable {
        arguments,
        tool,
        plan,
    })
}

/// A tool's output as the model reads it: when a person edited the call before approving
/// it, the model is told what ran instead of what it asked for (DESIGN.md §11.6).
fn told_of_edit(call: &Call, output: Value) -> Value {
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
