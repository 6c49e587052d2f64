//! The run journal's kinds (DESIGN.md §6.4): what `GET /v1/runs/{id}/events` returns and
//! its SSE stream sends, each with the data the runtime writes.

use super::event_kinds;
use crate::{CallStatus, DecidedBy, Preview, Risk, StepStatus};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

event_kinds! {
    /// One event of a run's journal, by kind.
    pub enum RunEventData: RunKind {
        /// A person's message (or a task's instructions) started the run.
        "run_started" => RunStarted(RunStarted),
        /// Model text as it streams, redacted.
        "text_delta" => TextDelta(TextDelta),
        /// The model asked for a tool call (arguments redacted).
        "tool_call" => ToolCall(ToolCallMade),
        /// The gate's verdict on it.
        "tool_decided" => ToolDecided(ToolDecided),
        /// The call waits for a person (with the preview they see).
        "approval_required" => ApprovalRequired(ApprovalRequired),
        /// The run waits for these approvals.
        "run_suspended" => RunSuspended(RunSuspended),
        /// A node claimed the run to continue it.
        "run_resumed" => RunResumed(RunResumed),
        /// A person paused the run.
        "run_paused" => RunPaused(RunActor),
        /// A person resumed a paused run.
        "run_unpaused" => RunUnpaused(RunActor),
        /// The grant was consumed and the tool starts.
        "tool_started" => ToolStarted(ToolStarted),
        /// A step's result, as the model is told it.
        "tool_finished" => ToolFinished(ToolFinished),
        /// Every step of a model turn finished.
        "step_finished" => StepFinished(StepFinished),
        "run_completed" => RunCompleted(RunCompleted),
        "run_failed" => RunFailed(RunFailed),
        /// A person (or the run's agent) cancelled the run.
        "run_cancelled" => RunCancelled(RunActor),
    }
}

impl RunEventData {
    /// Whether the run ends with this event (its stream then closes).
    pub fn is_terminal(&self) -> bool {
        RunEventData::is_terminal_kind(self.kind())
    }

    /// Whether a stored kind ends the run, whatever its data: a stream closes on it even
    /// when the data does not read.
    pub fn is_terminal_kind(kind: &str) -> bool {
        matches!(kind, "run_completed" | "run_failed" | "run_cancelled")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    pub run_id: String,
    pub session_id: String,
    pub agent_id: String,
    /// The task whose schedule started the run; absent for a person's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The message, redacted.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextDelta {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallMade {
    pub step: u32,
    pub tool_call_id: String,
    pub tool: String,
    /// Redacted.
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDecided {
    pub step: u32,
    pub call_id: String,
    pub status: CallStatus,
    pub decided_by: DecidedBy,
    pub rule: Option<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequired {
    pub step: u32,
    pub call_id: String,
    pub approval_id: String,
    pub tool: String,
    pub risk: Risk,
    pub preview: Preview,
    pub rule: Option<String>,
    pub reason: Option<String>,
    pub deadline: Timestamp,
    pub binding_digest: String,
    pub standing_target: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSuspended {
    /// Approval ids.
    pub waiting_for: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResumed {
    /// The node that claimed the run.
    pub node: String,
}

/// Who paused, resumed or cancelled a run (`user:<id>` or `agent:<id>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunActor {
    pub by: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolStarted {
    pub step: u32,
    pub call_id: String,
    pub tool: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolFinished {
    pub step: u32,
    /// `None` for a call that never reached the gate.
    pub call_id: Option<String>,
    pub tool: String,
    pub status: StepStatus,
    /// Redacted.
    pub output: Value,
    pub rule: Option<String>,
    pub standing_rule: Option<String>,
    pub approver: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFinished {
    /// How many model turns the run has taken.
    pub turn: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCompleted {
    /// The model's last text, redacted.
    pub text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFailed {
    /// Redacted.
    pub error: String,
}
