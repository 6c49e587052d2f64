//! The objects of the HTTP API (DESIGN.md §6.2), as they travel on the wire.
//!
//! Field names are part of the public contract: users script against them. Timestamps are
//! RFC 3339 in UTC (`jiff::Timestamp`). Arguments are always the redacted form.

use crate::{CallOutcome, DecidedBy, Reconciliation, Risk};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// Defines a snake_case string enum with `as_str`, `Display` and `FromStr`.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                match text {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!(
                        "unknown {} `{other}`, expected one of: {}",
                        stringify!($name),
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
    };
}

pub(crate) use string_enum;

string_enum! {
    /// A person's role in a workspace.
    ///
    /// INVARIANT: declared from least to most authority, so `role >= Role::Approver` reads
    /// as "may decide".
    #[derive(PartialOrd, Ord)]
    Role {
        Viewer => "viewer",
        Approver => "approver",
        Admin => "admin",
        Owner => "owner",
    }
}

string_enum! {
    /// Where a call stands.
    CallStatus {
        /// The policy (or a standing rule) allowed it; a grant was issued.
        Allowed => "allowed",
        /// The policy denied it.
        Denied => "denied",
        /// Waiting for a person.
        Pending => "pending",
        /// A person approved it; a grant was issued.
        Approved => "approved",
        /// A person rejected it.
        Rejected => "rejected",
        /// Nobody decided before the deadline.
        Expired => "expired",
        /// The approval was closed without a decision (policy changed, run cancelled).
        Cancelled => "cancelled",
    }
}

string_enum! {
    /// Where an approval stands: `pending` → one of the others, once.
    ApprovalStatus {
        Pending => "pending",
        Approved => "approved",
        Rejected => "rejected",
        Expired => "expired",
        Cancelled => "cancelled",
    }
}

string_enum! {
    /// What a standing rule is bound to.
    RuleScope {
        Session => "session",
        Agent => "agent",
        Task => "task",
    }
}

/// How an asked call is shown to a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Preview {
    /// One line, at most 200 characters.
    pub summary: String,
    /// Longer text, at most 4,000 characters, when the tool has a body template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The call's arguments, redacted.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub arguments: Value,
}

/// One tool call submitted to the gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Call {
    pub id: String,
    pub agent_id: String,
    pub session_id: Option<String>,
    pub tool: String,
    /// The arguments, redacted.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub arguments: Value,
    pub risk: Risk,
    pub status: CallStatus,
    pub decided_by: DecidedBy,
    pub rule: Option<String>,
    pub reason: Option<String>,
    pub approval_id: Option<String>,
    pub grant_id: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub decided_at: Option<Timestamp>,
    /// The agent's own name for the tool when the call came through a coding agent's hook
    /// (`Bash`, `apply_patch`…); `tool` is the canonical name (DESIGN.md §11.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_tool: Option<String>,
    /// The absolute working folder of the call (DESIGN.md §11.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The root of the git work tree holding `cwd`, else `cwd`: what `{project}` stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// When the grant was consumed (DESIGN.md §11.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub redeemed_at: Option<Timestamp>,
    /// What the agent reported after running it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<CallOutcome>,
    /// When the call was marked ambiguous: redeemed, and no outcome within
    /// `outcome_timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub ambiguous_at: Option<Timestamp>,
    /// A person's settling of the ambiguous call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciliation: Option<Reconciliation>,
    /// What the agent asked for (redacted), when a person edited the call while approving
    /// it; `arguments` is then what runs (DESIGN.md §11.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub original_arguments: Option<Value>,
}

/// An asked call waiting for (or decided by) a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Approval {
    pub id: String,
    pub call_id: String,
    pub agent_id: String,
    pub session_id: Option<String>,
    pub status: ApprovalStatus,
    pub tool: String,
    pub risk: Risk,
    pub preview: Preview,
    pub rule: Option<String>,
    pub reason: Option<String>,
    /// Must be echoed by a decision (G2).
    pub binding_digest: String,
    /// The policy the call was evaluated under; a decision under another is stale.
    pub policy_digest: String,
    /// The binding digest over the arguments a person edited while approving (DESIGN.md
    /// §11.6): the grant is bound to it. Absent when not edited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_binding_digest: Option<String>,
    /// The target a standing rule made from this approval would bind to, when eligible.
    pub standing_target: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub deadline: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub decided_at: Option<Timestamp>,
    /// `user:<id>` for a person, `system` for an expiry or cancellation.
    pub decided_by: Option<String>,
    pub decision_reason: Option<String>,
    /// The two-person rule (DESIGN.md §11.6): how many distinct people must approve.
    /// Absent when one is enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals_required: Option<u32>,
    /// Who may decide: roles (that role and above) or `user:<name>`. Empty: every
    /// approver.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
    /// The votes cast so far, oldest first; the approval stays `pending` until
    /// `approvals_required` people approved, and one rejection rejects it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<Vote>,
}

/// One person's vote on an approval under the two-person rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Vote {
    /// `user:<id>`.
    pub user: String,
    /// `approve` or `reject`.
    pub decision: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
}

/// One record of the workspace's hash-chained audit log (DESIGN.md §6.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AuditRecord {
    pub seq: u64,
    /// RFC 3339 text, kept as text so that the hash is recomputed from exactly what was
    /// hashed.
    pub at: String,
    /// `user:<id>`, `agent:<id>`, `policy` or `system`.
    pub actor: String,
    /// What happened, such as `call.allowed` or `approval.approved`.
    pub kind: String,
    /// The id of the object it happened to.
    pub subject: String,
    /// Details, redacted.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub data: Value,
    pub prev_hash: String,
    pub hash: String,
}

/// A person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct User {
    pub id: String,
    pub name: String,
    pub role: Role,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
}

/// The LLM an agent of the built-in runtime talks to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    pub base_url: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

/// An MCP server the built-in runtime starts for an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
}

/// An automated actor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Agent {
    pub id: String,
    pub name: String,
    pub mode: crate::Mode,
    pub system_prompt: Option<String>,
    pub tools: Option<Vec<String>>,
    pub workspace_dir: Option<String>,
    pub llm: Option<LlmConfig>,
    pub mcp_servers: Option<Vec<McpServerConfig>>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
}

/// A conversation of one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Session {
    pub id: String,
    pub agent_id: Option<String>,
    pub title: Option<String>,
    /// The scheduled task whose run opened the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// What another system calls this session (a coding agent's session id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Who opened it: `user:<id>` or `agent:<id>` (absent for sessions opened before
    /// this was kept, and for a task's). That person never counts towards the approvals
    /// of a call asked in it (the two-person rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// The mode of this session's calls, instead of its agent's (DESIGN.md §4.4); absent:
    /// the agent's mode applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<crate::Mode>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
}

/// A person's "allow every time" for one tool and one target, in one scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StandingRule {
    pub id: String,
    pub tool: String,
    pub target: String,
    pub scope: RuleScope,
    pub scope_id: String,
    /// `user:<id>`.
    pub created_by: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub expires_at: Option<Timestamp>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub revoked_at: Option<Timestamp>,
}

/// The policy in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PolicyInfo {
    pub version: u64,
    pub digest: String,
    pub source: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

/// One event of the workspace stream (DESIGN.md §6.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceEvent {
    /// Increasing id; the SSE `id:` and what `Last-Event-ID` names.
    pub id: u64,
    /// `approval.requested`, `approval.decided`, `approval.expired`, `approval.cancelled`,
    /// `call.decided`, `rule.created`, `rule.revoked`, `policy.updated`, `run.state`.
    pub kind: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub data: Value,
}

/// The error body of every failed request: RFC 9457 problem details with a stable `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Problem {
    /// Stable slug: `binding_mismatch`, `already_decided`, `already_voted`, `expired`,
    /// `stale_policy`, `edit_denied`,
    /// `forbidden`, `not_found`, `invalid`, `grant_spent`, `payload_too_large`,
    /// `unauthorized`, and `unavailable` / `internal` for server trouble.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
}
