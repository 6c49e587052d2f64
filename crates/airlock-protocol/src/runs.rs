//! The built-in runtime's objects on the wire (DESIGN.md §6.1 runs and messages, §6.4 run
//! journal, and the outbox).

use crate::records::string_enum;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

string_enum! {
    /// Where a run stands.
    RunState {
        Running => "running",
        /// Suspended: at least one of its tool calls waits for a person.
        AwaitingApproval => "awaiting_approval",
        /// Paused by a person (DESIGN.md §11.6): it does not advance, and nothing of it is
        /// pending, until someone resumes it.
        Paused => "paused",
        Completed => "completed",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

impl RunState {
    /// Whether the run can still change (a paused run can: it may be resumed).
    pub fn is_live(self) -> bool {
        matches!(
            self,
            RunState::Running | RunState::AwaitingApproval | RunState::Paused
        )
    }
}

string_enum! {
    /// How one tool call of a run ended, as the step trace reports it.
    StepStatus {
        Ok => "ok",
        /// It ran and failed, or could not run (rejected by a person, grant already spent,
        /// unknown outcome after a crash, bad arguments).
        Error => "error",
        /// The policy (or the mode, or the secrets rule) denied it, or its approval was
        /// closed without a decision.
        Denied => "denied",
        Rejected => "rejected",
        /// Nobody decided before the deadline.
        Expired => "expired",
    }
}

string_enum! {
    /// Where one tool call of a run is on its way.
    StepState {
        /// Submitted to the gate; waiting for a decision or for execution.
        Gated => "gated",
        /// Its grant is consumed and it is executing (or the process died while it was).
        Started => "started",
        Finished => "finished",
    }
}

/// One run of an agent's turn loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Run {
    pub id: String,
    pub session_id: String,
    pub agent_id: String,
    pub state: RunState,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The `seq` of its newest journal event.
    pub last_seq: u64,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

/// One event of a run's journal; `seq` is continuous from 1 across suspensions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunEvent {
    pub seq: u64,
    /// `run_started`, `text_delta`, `tool_call`, `tool_decided`, `approval_required`,
    /// `run_suspended`, `run_resumed`, `tool_started`, `tool_finished`, `step_finished`,
    /// `run_completed`, `run_failed`, `run_cancelled`.
    pub kind: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub data: Value,
}

/// One tool call of a run: what was asked, what the gate said, what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Step {
    /// Position in the run, from 0.
    pub index: u32,
    /// The model's id for the tool call.
    pub tool_call_id: String,
    pub tool: String,
    /// Redacted.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub arguments: Value,
    /// The gate's call, when the call reached the gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub state: StepState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StepStatus>,
    /// What the model was given as the tool's result (redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub output: Option<Value>,
    /// The policy rule the gate cited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The standing rule that allowed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing_rule: Option<String>,
    /// `user:<id>` of the person who decided it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub finished_at: Option<Timestamp>,
}

/// One message of a session's conversation as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Message {
    pub id: String,
    pub session_id: String,
    pub run_id: String,
    /// `user`, `assistant` or `tool`.
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// An assistant message's tool calls: `[{id, tool, arguments}]`, arguments redacted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub tool_calls: Vec<Value>,
    /// A tool message's call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A run's final reply carries the trace of every tool call of the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
}

/// An effect of a built-in tool that leaves (or will leave) the system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OutboxItem {
    pub id: String,
    /// `email`.
    pub kind: String,
    pub recipient: String,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub payload: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub call_id: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub delivered_at: Option<Timestamp>,
    /// Delivery attempts made so far.
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// A scheduled instruction: on its cron schedule, a run of its agent starts with the
/// instructions as the user's message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Task {
    pub id: String,
    pub title: String,
    pub instructions: String,
    pub agent_id: String,
    /// Five fields: minute hour day-of-month month day-of-week.
    pub cron: String,
    /// IANA time zone the cron is read in (`Europe/Paris`); `UTC` by default.
    pub timezone: String,
    pub enabled: bool,
    /// `user:<id>`, or `agent:<id>` for a task an agent created (`task.create`).
    pub created_by: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub revoked_at: Option<Timestamp>,
    /// When the scheduler next starts it (none while disabled or revoked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub next_run_at: Option<Timestamp>,
    /// The run in progress; while it is set, no tick starts another (the overlap guard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_id: Option<String>,
}
