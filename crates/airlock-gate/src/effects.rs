//! Builders for the audit records and events that go with each change.
//!
//! Audit kinds: `call.allowed`, `call.denied`, `approval.requested`, `approval.approved`,
//! `approval.rejected`, `approval.expired`, `approval.cancelled`, `grant.consumed`,
//! `policy.updated`, `rule.created`, `rule.revoked`, `user.created`, `agent.created`,
//! `agent.updated`. Event kinds are those of DESIGN.md §6.4.

use airlock_protocol::{Approval, Call};
use airlock_store::{AuditEntry, EventEntry};
use jiff::Timestamp;
use serde::Serialize;
use serde_json::{json, Value};

pub fn audit(at: Timestamp, actor: &str, kind: &str, subject: &str, data: Value) -> AuditEntry {
    AuditEntry {
        at,
        actor: actor.to_owned(),
        kind: kind.to_owned(),
        subject: subject.to_owned(),
        data,
    }
}

pub fn event(at: Timestamp, kind: &str, data: &impl Serialize) -> EventEntry {
    EventEntry {
        at,
        kind: kind.to_owned(),
        data: serde_json::to_value(data).unwrap_or(Value::Null),
    }
}

/// The audit data of a call decision: tool, exact (redacted) arguments, outcome, rule.
/// `task_id` is the task whose run made the call: a replay needs it to apply the task's
/// standing rules as they were.
pub fn call_data(call: &Call, standing_rule: Option<&str>, task_id: Option<&str>) -> Value {
    let mut data = json!({
        "call_id": call.id,
        "agent_id": call.agent_id,
        "session_id": call.session_id,
        "tool": call.tool,
        "arguments": call.arguments,
        "risk": call.risk,
        "outcome": call.status,
        "decided_by": call.decided_by,
        "rule": call.rule,
        "standing_rule": standing_rule,
        "reason": call.reason,
        "grant_id": call.grant_id,
    });
    // Where the call came from, when it came through a hook or with a folder (§11.1–11.2);
    // absent otherwise, so records of plain calls read as before.
    if let Some(object) = data.as_object_mut() {
        for (key, value) in [
            ("native_tool", call.native_tool.as_deref()),
            ("cwd", call.cwd.as_deref()),
            ("project", call.project.as_deref()),
            ("task_id", task_id),
        ] {
            if let Some(value) = value {
                object.insert(key.into(), value.into());
            }
        }
    }
    data
}

/// The audit data of an approval's end (decided, expired, cancelled).
pub fn approval_data(approval: &Approval) -> Value {
    let mut data = json!({
        "approval_id": approval.id,
        "call_id": approval.call_id,
        "tool": approval.tool,
        "status": approval.status,
        "decided_by": approval.decided_by,
        "reason": approval.decision_reason,
        "binding_digest": approval.binding_digest,
        "policy_digest": approval.policy_digest,
    });
    // Absent unless a person edited the call, so other records read as before.
    if let (Some(object), Some(edited)) = (data.as_object_mut(), &approval.edited_binding_digest) {
        object.insert("edited_binding_digest".into(), edited.clone().into());
    }
    data
}
