//! A person's decision on a pending approval (G2, G3, G4), in the order the trait
//! documents.
//!
//! Concurrent deciders queue: on SQLite's one writer connection, on PostgreSQL on the
//! workspace lock and then on the approval row (`SELECT … FOR UPDATE`). Each one checks
//! the row as the previous one committed it, so the first wins and the others see it
//! decided.
//!
//! INVARIANT: every refusal returns before the first write, and the caller rolls the
//! transaction back on any error, so a refused decision changes no row of any table
//! (the row locks taken are released by the rollback and write nothing).
//! The status change itself is conditional on `status = 'pending'`, so even a decider
//! that somehow got past the checks could not decide twice.

use super::audit::append_effects;
use super::calls::{fetch_approval, fetch_call, insert_grant, APPROVAL_COLUMNS};
use super::dialect::{lock_workspace, Conn, FOR_UPDATE};
use super::policy::digest_in_force;
use super::rules::mint_or_reuse;
use super::{execute, optional};
use crate::codec::{approval_from_row, json_text, millis};
use crate::{DecideError, Decided, Decision, Edit, Effects, StoreError};
use airlock_protocol::{Approval, ApprovalStatus, Call, CallStatus, Vote};

pub(crate) async fn decide(
    conn: &mut Conn,
    workspace: &str,
    decision: &Decision,
    effects: &Effects,
) -> Result<Decided, DecideError> {
    if !lock_workspace(conn, workspace).await? {
        return Err(DecideError::NotFound);
    }
    let sql = format!(
        "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE workspace = $1 AND id = $2{FOR_UPDATE}"
    );
    let query = sqlx::query(&sql)
        .bind(workspace)
        .bind(&decision.approval_id);
    let approval = optional(query, &mut *conn, approval_from_row)
        .await?
        .ok_or(DecideError::NotFound)?;
    let in_force = digest_in_force(&mut *conn, workspace).await?;
    if approval.status != ApprovalStatus::Pending {
        // Only `put_policy` cancels an approval made under another policy, so a cancelled
        // approval whose policy is no longer in force was cancelled for being stale.
        if approval.status == ApprovalStatus::Cancelled && approval.policy_digest != in_force {
            return Err(DecideError::StalePolicy);
        }
        return Err(DecideError::AlreadyDecided(approval.status));
    }
    // Compared at the stored (millisecond) precision, as the sweeper compares.
    if millis(decision.at) >= millis(approval.deadline) {
        return Err(DecideError::Expired);
    }
    // Once a person's edit is on the approval, only the edited call can be decided: a
    // decider still holding the asked call's digest saw something else (DESIGN.md §11.6).
    let current = approval
        .edited_binding_digest
        .as_deref()
        .unwrap_or(&approval.binding_digest);
    if decision.binding_digest != current {
        return Err(DecideError::BindingMismatch);
    }
    if approval.policy_digest != in_force {
        return Err(DecideError::StalePolicy);
    }

    // The two-person rule: the decision is one person's vote.
    let votes = match approval.approvals_required {
        Some(required) => {
            let votes = with_vote(&approval, decision)?;
            let approving = votes.iter().filter(|v| v.decision == "approve").count();
            if decision.approve && approving < required as usize {
                return record_vote(conn, workspace, &approval, &votes, decision).await;
            }
            Some(votes)
        }
        None => None,
    };

    let (status, call_status) = if decision.approve {
        (ApprovalStatus::Approved, CallStatus::Approved)
    } else {
        (ApprovalStatus::Rejected, CallStatus::Rejected)
    };
    let query = sqlx::query(
        "UPDATE approvals SET status = $1, decided_at = $2, decided_by = $3, decision_reason = $4,
                              votes = COALESCE($7, votes)
         WHERE id = $5 AND workspace = $6 AND status = 'pending'",
    )
    .bind(status.as_str())
    .bind(millis(decision.at))
    .bind(&decision.decided_by)
    .bind(&decision.reason)
    .bind(&approval.id)
    .bind(workspace)
    .bind(votes.as_ref().map(json_text).transpose()?);
    let updated = execute(query, &mut *conn).await?;
    if updated.rows_affected() != 1 {
        let now = fetch_approval(&mut *conn, workspace, &approval.id).await?;
        return Err(DecideError::AlreadyDecided(
            now.map_or(ApprovalStatus::Cancelled, |approval| approval.status),
        ));
    }

    // An edit only ever comes with an approval, and is written before the grant that
    // binds to it: a redeem can never see the grant without the edited arguments.
    if let Some(edit) = decision.edit.as_ref().filter(|_| decision.approve) {
        apply_edit(conn, workspace, &approval, edit).await?;
    }
    // A grant and a standing rule only ever come from an approval.
    let grant = decision.grant.clone().filter(|_| decision.approve);
    if let Some(grant) = &grant {
        insert_grant(conn, workspace, grant).await?;
    }
    // A rejection's reason becomes the call's reason: it is what the caller (and the
    // model) reads to learn why the call will not run (G10).
    let call_reason = if decision.approve {
        None
    } else {
        decision.reason.as_deref()
    };
    let query = sqlx::query(
        "UPDATE calls SET status = $1, decided_by = 'human', decided_at = $2,
                          grant_id = COALESCE($3, grant_id), reason = COALESCE($4, reason)
         WHERE id = $5 AND workspace = $6",
    )
    .bind(call_status.as_str())
    .bind(millis(decision.at))
    .bind(grant.as_ref().map(|grant| grant.id.as_str()))
    .bind(call_reason)
    .bind(&approval.call_id)
    .bind(workspace);
    execute(query, &mut *conn).await?;
    let standing_rule = match decision.standing_rule.as_ref().filter(|_| decision.approve) {
        Some(rule) => Some(mint_or_reuse(conn, workspace, rule).await?),
        None => None,
    };
    append_effects(conn, workspace, effects).await?;

    let (approval, call) = reread(conn, workspace, &approval.id).await?;
    Ok(Decided {
        approval,
        call,
        grant,
        standing_rule,
    })
}

/// The approval and its call as the decision left them, read back in its transaction.
async fn reread(
    conn: &mut Conn,
    workspace: &str,
    approval_id: &str,
) -> Result<(Approval, Call), DecideError> {
    let missing = |table: &'static str| StoreError::Corrupt {
        table,
        detail: format!("row of approval {approval_id} vanished inside its transaction"),
    };
    let approval = fetch_approval(&mut *conn, workspace, approval_id)
        .await?
        .ok_or_else(|| missing("approvals"))?;
    let call = fetch_call(&mut *conn, workspace, &approval.call_id)
        .await?
        .ok_or_else(|| missing("calls"))?;
    Ok((approval, call))
}

/// The approval's votes with `decision`'s added, or `AlreadyVoted` when this person's
/// vote is already among them (one person counts once, however many times they click).
fn with_vote(approval: &Approval, decision: &Decision) -> Result<Vec<Vote>, DecideError> {
    if approval
        .votes
        .iter()
        .any(|vote| vote.user == decision.decided_by)
    {
        return Err(DecideError::AlreadyVoted);
    }
    let mut votes = approval.votes.clone();
    votes.push(Vote {
        user: decision.decided_by.clone(),
        decision: if decision.approve {
            "approve"
        } else {
            "reject"
        }
        .to_owned(),
        at: decision.at,
    });
    Ok(votes)
}

/// Keeps an approving vote that leaves the approval short of its people: the approval
/// stays pending, nothing else changes, and the vote's effects are appended.
async fn record_vote(
    conn: &mut Conn,
    workspace: &str,
    approval: &Approval,
    votes: &[Vote],
    decision: &Decision,
) -> Result<Decided, DecideError> {
    let query = sqlx::query(
        "UPDATE approvals SET votes = $1 WHERE id = $2 AND workspace = $3 AND status = 'pending'",
    )
    .bind(json_text(votes)?)
    .bind(&approval.id)
    .bind(workspace);
    let updated = execute(query, &mut *conn).await?;
    if updated.rows_affected() != 1 {
        return Err(DecideError::AlreadyDecided(ApprovalStatus::Cancelled));
    }
    if let Some(effects) = &decision.vote {
        append_effects(conn, workspace, effects).await?;
    }
    let (approval, call) = reread(conn, workspace, &approval.id).await?;
    Ok(Decided {
        approval,
        call,
        grant: None,
        standing_rule: None,
    })
}

/// Stores a person's edit: the approval keeps the edited binding digest, the call keeps
/// what was asked in `original_arguments` (the first asked, should it be edited twice)
/// and what runs in `arguments`.
async fn apply_edit(
    conn: &mut Conn,
    workspace: &str,
    approval: &Approval,
    edit: &Edit,
) -> Result<(), DecideError> {
    let query = sqlx::query(
        "UPDATE approvals SET edited_binding_digest = $1 WHERE id = $2 AND workspace = $3",
    )
    .bind(&edit.binding_digest)
    .bind(&approval.id)
    .bind(workspace);
    execute(query, &mut *conn).await?;
    let query = sqlx::query(
        "UPDATE calls SET original_arguments = COALESCE(original_arguments, arguments),
                          arguments = $1
         WHERE id = $2 AND workspace = $3",
    )
    .bind(json_text(&edit.arguments)?)
    .bind(&approval.call_id)
    .bind(workspace);
    execute(query, &mut *conn).await?;
    Ok(())
}
