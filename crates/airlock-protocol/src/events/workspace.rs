//! The workspace stream's kinds (DESIGN.md §6.4): what `GET /v1/events` returns and
//! sends over SSE. Most carry the record as it is after the change; the rest a few ids.

use super::event_kinds;
use crate::{
    Approval, Call, Mode, OutcomeStatus, Resolution, RunState, Session, StandingRule, Task,
};
use serde::{Deserialize, Serialize};

event_kinds! {
    /// One event of a workspace's stream, by kind.
    pub enum WorkspaceEventData: WorkspaceKind {
        "approval.requested" => ApprovalRequested(Approval),
        /// Approved or rejected (the approval's `status` says which).
        "approval.decided" => ApprovalDecided(Approval),
        /// One vote under the two-person rule.
        "approval.voted" => ApprovalVoted(Approval),
        "approval.expired" => ApprovalExpired(Approval),
        "approval.cancelled" => ApprovalCancelled(Approval),
        /// A call decided without a person (allowed or denied).
        "call.decided" => CallDecided(Call),
        "call.outcome" => CallOutcome(CallOutcomeEvent),
        "call.ambiguous" => CallAmbiguous(Call),
        "call.reconciled" => CallReconciled(CallReconciledEvent),
        "rule.created" => RuleCreated(StandingRule),
        "rule.revoked" => RuleRevoked(RuleRevoked),
        "policy.updated" => PolicyUpdated(PolicyUpdatedEvent),
        "agent.updated" => AgentUpdated(AgentUpdated),
        "token.revoked" => TokenRevoked(TokenRevoked),
        "session.updated" => SessionUpdated(Session),
        "task.created" => TaskCreated(Task),
        "task.updated" => TaskUpdated(Task),
        "task.revoked" => TaskRevoked(Task),
        "run.state" => RunState(RunStateChanged),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallOutcomeEvent {
    pub call_id: String,
    pub status: OutcomeStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallReconciledEvent {
    pub call_id: String,
    pub resolution: Resolution,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleRevoked {
    /// The standing rule's id.
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyUpdatedEvent {
    pub version: u64,
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentUpdated {
    pub id: String,
    pub name: String,
    pub mode: Mode,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenRevoked {
    /// The user or agent whose tokens were revoked.
    pub subject_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStateChanged {
    pub run_id: String,
    pub session_id: String,
    pub agent_id: String,
    pub state: RunState,
    /// `user:<id>`, `agent:<id>` or `system`.
    pub by: String,
}
