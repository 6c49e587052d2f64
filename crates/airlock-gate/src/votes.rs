//! The two-person rule (DESIGN.md §11.6): who may vote on an approval, and what a vote
//! that does not yet settle it writes.
//!
//! An approval whose rule sets `approvals = N` needs N distinct people; one whose rule
//! names `approvers` may be decided only by them. The person who opened the session that
//! asked never counts. The store counts the votes under the decision's lock (so one
//! person's concurrent clicks count once and exactly one vote completes the count); the
//! gate checks who is voting and prepares the records, as for any decision.

use crate::effects::{audit, event};
use crate::{Gate, GateError};
use airlock_policy::approvers::Approver;
use airlock_protocol::events::{ApprovalAudit, VoteAudit};
use airlock_protocol::{Approval, Vote};
use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_store::{Effects, Principal, Subject};
use jiff::Timestamp;

/// Whether the two-person rule applies to `approval` at all.
pub(crate) fn two_person(approval: &Approval) -> bool {
    approval.approvals_required.is_some() || !approval.approvers.is_empty()
}

impl Gate {
    /// Refuses a person the approval's rule does not let decide: one its `approvers` do
    /// not name, or the one who opened the session that asked (`Forbidden`, precisely).
    /// Approvals without the two-person rule are not checked here.
    pub(crate) async fn check_voter(
        &self,
        principal: &Principal,
        approval: &Approval,
    ) -> Result<(), GateError> {
        if !two_person(approval) {
            return Ok(());
        }
        let Subject::User { name, role, .. } = &principal.subject else {
            return Err(GateError::Forbidden(
                "agent tokens cannot decide approvals; use a user token".into(),
            ));
        };
        if !approval.approvers.is_empty() {
            // Entries were checked when the policy loaded; one that no longer reads
            // admits nobody.
            let admitted = approval.approvers.iter().any(|entry| {
                Approver::parse(entry).is_ok_and(|approver| approver.admits(*role, name))
            });
            if !admitted {
                return Err(GateError::Forbidden(format!(
                    "this approval may be decided only by {}; {name} is not one of them",
                    approval.approvers.join(", ")
                )));
            }
        }
        if let Some(session_id) = &approval.session_id {
            let session = self
                .store()
                .get_session(&principal.workspace, session_id)
                .await?;
            if session.and_then(|s| s.created_by) == Some(principal.actor()) {
                return Err(GateError::Forbidden(
                    "the call was asked in a session you opened: under the two-person rule \
                     another person must decide it"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

/// The approval as it reads after `actor`'s vote (the votes known before it, plus it).
pub(crate) fn with_vote(
    approval: &Approval,
    actor: &str,
    approve: bool,
    at: Timestamp,
) -> Approval {
    let mut voted = approval.clone();
    voted.votes.push(Vote {
        user: actor.to_owned(),
        decision: if approve { "approve" } else { "reject" }.to_owned(),
        at,
    });
    voted
}

/// The audit record and event of one vote: every vote has its own record, the one that
/// settles the approval as well as those that do not.
pub(crate) fn vote_effects(voted: &Approval, actor: &str, approve: bool, at: Timestamp) -> Effects {
    let data = VoteAudit {
        approval: ApprovalAudit::of(voted),
        vote: if approve { "approve" } else { "reject" }.into(),
        approvals_required: voted.approvals_required.unwrap_or(1),
    };
    Effects::none()
        .audit(audit(at, actor, &voted.id, AuditEvent::ApprovalVoted(data)))
        .event(event(at, WorkspaceEventData::ApprovalVoted(voted.clone())))
}
