//! The audit log's kinds: what each record of `GET /v1/audit` says happened, with the
//! data the gate writes for it. Records are hashed over their stored text (DESIGN.md
//! §6.3), so verifying a chain never goes through these types; a record of a kind this
//! build does not know still verifies.

use super::event_kinds;
use crate::{
    Approval, ApprovalStatus, Call, CallStatus, DecidedBy, Mode, OutcomeStatus, Resolution, Risk,
    Role, RuleScope,
};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

event_kinds! {
    /// What one audit record says happened, by kind.
    pub enum AuditEvent: AuditKind {
        "call.allowed" => CallAllowed(CallAudit),
        "call.denied" => CallDenied(CallAudit),
        /// A retry of a hook call took over the call its earlier hook left.
        "call.adopted" => CallAdopted(CallAdoptedAudit),
        "call.outcome" => CallOutcome(CallOutcomeAudit),
        "call.ambiguous" => CallAmbiguous(CallAmbiguousAudit),
        "call.reconciled" => CallReconciled(CallReconciledAudit),
        "approval.requested" => ApprovalRequested(ApprovalRequestedAudit),
        "approval.approved" => ApprovalApproved(ApprovalDecidedAudit),
        "approval.rejected" => ApprovalRejected(ApprovalDecidedAudit),
        "approval.voted" => ApprovalVoted(VoteAudit),
        "approval.expired" => ApprovalExpired(ApprovalAudit),
        "approval.cancelled" => ApprovalCancelled(ApprovalAudit),
        "grant.consumed" => GrantConsumed(GrantConsumedAudit),
        "policy.updated" => PolicyUpdated(PolicyUpdatedAudit),
        "rule.created" => RuleCreated(RuleCreatedAudit),
        "rule.revoked" => RuleRevoked(RuleRevokedAudit),
        "user.created" => UserCreated(UserCreatedAudit),
        "agent.created" => AgentCreated(AgentAudit),
        "agent.updated" => AgentUpdated(AgentAudit),
        "token.revoked" => TokenRevoked(SubjectAudit),
        "session.updated" => SessionUpdated(SessionUpdatedAudit),
        "web_session.created" => WebSessionCreated(WebSessionCreatedAudit),
        "web_session.ended" => WebSessionEnded(WebSessionEndedAudit),
        "task.created" => TaskCreated(TaskCreatedAudit),
        "task.updated" => TaskUpdated(TaskUpdatedAudit),
        "task.revoked" => TaskRevoked(TaskUpdatedAudit),
        "run.paused" => RunPaused(RunAudit),
        "run.resumed" => RunResumed(RunAudit),
    }
}

/// A call decision: tool, exact (redacted) arguments, outcome, rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallAudit {
    pub call_id: String,
    pub agent_id: String,
    pub session_id: Option<String>,
    pub tool: String,
    pub arguments: Value,
    pub risk: Risk,
    pub outcome: CallStatus,
    pub decided_by: DecidedBy,
    pub rule: Option<String>,
    pub standing_rule: Option<String>,
    pub reason: Option<String>,
    pub grant_id: Option<String>,
    // Where the call came from, when it came through a hook or with a folder (§11.1–11.2);
    // absent otherwise, so records of plain calls read as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The task whose run made the call: a replay needs it to apply the task's standing
    /// rules as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

impl CallAudit {
    pub fn of(call: &Call, standing_rule: Option<&str>, task_id: Option<&str>) -> CallAudit {
        CallAudit {
            call_id: call.id.clone(),
            agent_id: call.agent_id.clone(),
            session_id: call.session_id.clone(),
            tool: call.tool.clone(),
            arguments: call.arguments.clone(),
            risk: call.risk,
            outcome: call.status,
            decided_by: call.decided_by,
            rule: call.rule.clone(),
            standing_rule: standing_rule.map(str::to_owned),
            reason: call.reason.clone(),
            grant_id: call.grant_id.clone(),
            native_tool: call.native_tool.clone(),
            cwd: call.cwd.clone(),
            project: call.project.clone(),
            task_id: task_id.map(str::to_owned),
        }
    }
}

/// A call parked for a person: the call's record plus its approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequestedAudit {
    #[serde(flatten)]
    pub call: CallAudit,
    pub approval_id: String,
    /// RFC 3339 text.
    pub deadline: String,
    pub binding_digest: String,
}

/// An approval's end (decided, expired, cancelled).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalAudit {
    pub approval_id: String,
    pub call_id: String,
    pub tool: String,
    pub status: ApprovalStatus,
    pub decided_by: Option<String>,
    pub reason: Option<String>,
    pub binding_digest: String,
    pub policy_digest: String,
    /// Absent unless a person edited the call, so other records read as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_binding_digest: Option<String>,
}

impl ApprovalAudit {
    pub fn of(approval: &Approval) -> ApprovalAudit {
        ApprovalAudit {
            approval_id: approval.id.clone(),
            call_id: approval.call_id.clone(),
            tool: approval.tool.clone(),
            status: approval.status,
            decided_by: approval.decided_by.clone(),
            reason: approval.decision_reason.clone(),
            binding_digest: approval.binding_digest.clone(),
            policy_digest: approval.policy_digest.clone(),
            edited_binding_digest: approval.edited_binding_digest.clone(),
        }
    }
}

/// An approval approved or rejected, with the grant it issued and the person's edit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalDecidedAudit {
    #[serde(flatten)]
    pub approval: ApprovalAudit,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_id: Option<String>,
    /// The account of an edit: both argument objects, both digests, the changed keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<Value>,
}

/// One vote under the two-person rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteAudit {
    #[serde(flatten)]
    pub approval: ApprovalAudit,
    /// `approve` or `reject`.
    pub vote: String,
    pub approvals_required: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrantConsumedAudit {
    pub call_id: String,
    pub tool: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallAdoptedAudit {
    pub call_id: String,
    pub approval_id: Option<String>,
    pub session_id: Option<String>,
    pub tool: String,
    pub outcome: CallStatus,
    /// Adopted by the `PermissionRequest` that escalates it (Codex), not by a retry.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub escalation: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallOutcomeAudit {
    pub call_id: String,
    pub status: OutcomeStatus,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallAmbiguousAudit {
    pub call_id: String,
    pub agent_id: String,
    pub tool: String,
    pub redeemed_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallReconciledAudit {
    pub call_id: String,
    pub resolution: Resolution,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyUpdatedAudit {
    pub version: u64,
    pub digest: String,
    pub previous_digest: Option<String>,
}

/// A standing rule minted by a person: from an approval (with `from_approval`), directly
/// (with `expires_at`), or with a task (neither).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleCreatedAudit {
    pub tool: String,
    pub target: String,
    pub scope: RuleScope,
    pub scope_id: String,
    /// Absent for a task's rule; `Some(None)` is written `null` (a rule that never ends).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub expires_at: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_approval: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleRevokedAudit {
    pub rule_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserCreatedAudit {
    pub name: String,
    pub role: Role,
    /// Only the owner made at first start says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bootstrap: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentAudit {
    pub name: String,
    pub mode: Mode,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubjectAudit {
    pub subject_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionUpdatedAudit {
    pub agent_id: Option<String>,
    pub mode: Option<Mode>,
}

/// An inbox session opened, by token or (with the other three) by a signed link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebSessionCreatedAudit {
    pub user_id: String,
    /// RFC 3339 text.
    pub expires_at: String,
    /// `link`, for a session opened by a signed link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// The link's nonce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebSessionEndedAudit {
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskCreatedAudit {
    pub title: String,
    pub agent_id: String,
    pub cron: String,
    pub timezone: String,
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskUpdatedAudit {
    pub title: String,
    pub cron: String,
    pub timezone: String,
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunAudit {
    pub run_id: String,
}

/// A field that may be absent, `null` or a value: present (even as `null`) reads as
/// `Some`, so what was written is written again the same.
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}
