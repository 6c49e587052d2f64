//! Request and response bodies of the HTTP API that are not records: what a client sends
//! to submit a call, decide, mint a rule, create users, agents, sessions and tasks, and
//! what it gets back when that is not a record (tokens shown once, the audit
//! verification report). The gate takes and returns these types; the server documents
//! them (feature `openapi`) from these very types, so the schema cannot drift from what
//! is parsed.
//!
//! Doc comments of these types are the descriptions of the published OpenAPI document.

use crate::{
    Agent, Approval, LlmConfig, McpServerConfig, Mode, Role, RuleScope, Run, Session, User,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `approve` or `reject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DecisionVerdict {
    Approve,
    Reject,
}

/// The longest duration airlock accepts, in seconds: 100 years of 365.25 days. It bounds
/// every duration a client or a policy gives (`expires_in` here, a policy's `deadline` and
/// `outcome_timeout`), so that every time computed from one is far inside what the store
/// keeps (years up to 9999); a longer one is refused (422, or a policy load error).
pub const MAX_DURATION_SECONDS: u64 = 36_525 * 24 * 60 * 60;

/// A duration as seconds (`3600`) or text (`"1h"`, `"7d"`), more than zero and at most
/// [`MAX_DURATION_SECONDS`] (`36525d`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum ExpiresIn {
    Seconds(u64),
    Text(String),
}

/// "Approve and remember": mint a standing rule for this tool and target.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Remember {
    pub scope: RuleScope,
    #[serde(default)]
    pub expires_in: Option<ExpiresIn>,
}

/// The body of `POST /v1/approvals/{id}/decision`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"decision": "approve", "binding_digest": "…", "reason": "looks right"})))]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    pub decision: DecisionVerdict,
    /// The approval's `binding_digest`, echoed (G2).
    pub binding_digest: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub remember: Option<Remember>,
    /// Approve with edits (DESIGN.md §11.6): the whole arguments object to run instead of
    /// the one asked for. Only with `approve`; the edited call is evaluated under the
    /// policy in force (a denied edit is `409 edit_denied`), and the grant binds to it.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub arguments: Option<Value>,
}

/// The body of `POST /v1/rules`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"tool": "email.send", "target": "bob@acme.test", "scope": "agent", "scope_id": "agt_…", "expires_in": "7d"})))]
#[serde(deny_unknown_fields)]
pub struct NewRule {
    pub tool: String,
    pub target: String,
    pub scope: RuleScope,
    pub scope_id: String,
    #[serde(default)]
    pub expires_in: Option<ExpiresIn>,
}

/// The body of `PATCH /v1/sessions/{id}`: the mode of this session's calls, overriding
/// its agent's; `null` (or absent) goes back to the agent's mode.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"mode": "read_only"})))]
#[serde(deny_unknown_fields)]
pub struct SessionPatch {
    #[serde(default)]
    pub mode: Option<Mode>,
}

/// The body of `POST /v1/agents`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "scout", "mode": "ask"})))]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub name: String,
    #[serde(default)]
    pub mode: Option<Mode>,
    #[serde(default)]
    pub system_prompt: Option<String>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub workspace_dir: Option<String>,
    #[serde(default)]
    pub llm: Option<LlmConfig>,
    #[serde(default)]
    pub mcp_servers: Option<Vec<McpServerConfig>>,
}

/// The body of `PATCH /v1/agents/{id}`: absent fields stay as they are.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"mode": "read_only"})))]
#[serde(deny_unknown_fields)]
pub struct AgentPatch {
    #[serde(default)]
    pub mode: Option<Mode>,
    #[serde(default)]
    pub system_prompt: Option<String>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub workspace_dir: Option<String>,
    #[serde(default)]
    pub llm: Option<LlmConfig>,
    #[serde(default)]
    pub mcp_servers: Option<Vec<McpServerConfig>>,
}

/// The body of `POST /v1/tasks`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"title": "Nightly report", "instructions": "Email the report to ops@acme.test", "agent": "reporter", "cron": "0 3 * * *", "timezone": "Europe/Paris", "permissions": [{"tool": "email.send", "target": "ops@acme.test", "access": "external"}]})))]
#[serde(deny_unknown_fields)]
pub struct NewTask {
    pub title: String,
    pub instructions: String,
    /// The agent's id or name.
    pub agent: String,
    /// Five fields: minute hour day-of-month month day-of-week.
    pub cron: String,
    /// IANA time zone (default `UTC`).
    #[serde(default)]
    pub timezone: Option<String>,
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Grants minted as task-scoped standing rules; invalid ones are reported as dropped.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<Permission>>))]
    pub permissions: Vec<Permission>,
}

// One grant asked for at creation: "this task may `access` `tool` on `target`". (A plain
// comment: the published schema has no description.) `PermissionDoc` is the name the
// schema was first published under; generated clients keep their type name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = PermissionDoc))]
#[serde(deny_unknown_fields)]
pub struct Permission {
    pub tool: String,
    pub target: String,
    /// `write` or `external`.
    pub access: String,
}

/// The body of `PATCH /v1/tasks/{id}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TaskPatch {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub cron: Option<String>,
    #[serde(default)]
    pub timezone: Option<String>,
    #[serde(default)]
    pub enabled: Option<bool>,
    /// `true` ends the task for good and revokes its rules.
    #[serde(default)]
    pub revoke: Option<bool>,
}

/// The newest record of a chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditHead {
    pub seq: u64,
    pub hash: String,
}

/// The result of verifying the audit chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VerifyReport {
    pub ok: bool,
    // Records read.
    pub records: u64,
    pub head: Option<AuditHead>,
    /// The first seq at which the chain breaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_bad_seq: Option<u64>,
    /// Export files only: the last line is cut off.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<bool>, required = false))]
    pub torn_tail: bool,
    // What is wrong, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

// ------------------------------------------------------------- calls, users, sessions

/// The body of `POST /v1/calls`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SubmitCall {
    pub tool: String,
    /// A JSON object.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub arguments: Value,
    #[serde(default)]
    pub session_id: Option<String>,
    /// Seconds to wait for the verdict of a pending call (at most 60).
    #[serde(default)]
    pub wait_s: Option<u64>,
    /// What the tool's server says about it (MCP tool annotations). Used only for a tool
    /// the policy does not list: `read_only_hint: true` gives it risk `read`; anything
    /// else leaves it `exec` (fail closed).
    #[serde(default)]
    pub annotations: Option<Annotations>,
    /// The caller's absolute working folder: relative paths in the arguments resolve
    /// against it, and the policy's `{project}` anchor is the git work tree holding it.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// MCP tool annotations, as a proxy forwards them.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Annotations {
    #[serde(default)]
    pub read_only_hint: Option<bool>,
    #[serde(default)]
    pub destructive_hint: Option<bool>,
}

/// The grant, consumed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Redeemed {
    pub grant_id: String,
    pub call_id: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub consumed_at: Option<jiff::Timestamp>,
    /// True when this answers a retry under the `Idempotency-Key` of the redeem that
    /// consumed the grant: the same grant, not a second execution (DESIGN.md §11.8).
    #[serde(default)]
    pub replayed: bool,
    /// The arguments to execute when a person edited the call while approving it
    /// (DESIGN.md §11.6): run these, not the ones submitted. Absent when not edited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub arguments: Option<Value>,
}

/// The body of `POST /v1/users`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    pub name: String,
    pub role: Role,
}

/// A new user and its token (shown once).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserCreated {
    pub user: User,
    pub token: String,
}

/// A new agent and its token (shown once).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentCreated {
    pub agent: Agent,
    pub token: String,
}

/// The body of `POST /v1/sessions`.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewSession {
    /// The agent the session belongs to; an agent token may only name itself.
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    /// What another system calls this session (an agent token only): the agent's
    /// session with this external id is returned (200) when it exists, else opened (201).
    #[serde(default)]
    pub external_id: Option<String>,
}

/// A session with its runs and the approvals still waiting in it.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionSnapshot {
    #[serde(flatten)]
    pub session: Session,
    /// Runs of the built-in runtime in this session, oldest first.
    pub runs: Vec<Run>,
    pub pending_approvals: Vec<Approval>,
}

/// The body of `POST /v1/sessions/{id}/messages`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    pub text: String,
}

/// The run a message started.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Started {
    pub run_id: String,
}

// ------------------------------------------------------------- the policy

/// The answer to a policy upload.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PolicyUpdated {
    pub version: u64,
    pub digest: String,
}

/// The body of `POST /v1/policy/evaluate`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EvaluateRequest {
    pub tool: String,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub arguments: Value,
    /// An agent name, for rules with an `agents` filter and for the agent's mode.
    #[serde(default)]
    pub agent: Option<String>,
}
