//! Running a tool once its grant is consumed: the built-in tools (`airlock-tools`), an
//! agent's MCP tools (`airlock-mcp`'s host), and `task.create`, which the runtime serves
//! itself through the gate.

use crate::ctx::Ctx;
use crate::toolset::{AgentTool, ToolKind};
use crate::Runtime;
use airlock_tools::Builtins;
use serde_json::{json, Value};
use std::time::Duration;

/// The longest an MCP tool may run.
const MCP_TIMEOUT: Duration = Duration::from_secs(120);

impl Runtime {
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
                    Ok(result) => {
                        let mut output = json!({"text": result.text});
                        if let Some(structured) = result.structured {
                            output["structured"] = structured;
                        }
                        (!result.is_error, output)
                    }
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
