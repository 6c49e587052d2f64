//! A person's decision on a pending approval (G2, G3, G4), in the order the trait
//! documents.
//!
//! INVARIANT: every refusal returns before the first write, and the caller rolls the
//! transaction back on any error, so a refused decision changes no row of any table.
//! The status change itself is conditional on `status = 'pending'`: even if two deciders
//! got past the checks (they cannot on the single writer connection, but a backend with
//! several writers could), exactly one of them updates the row.

use super::audit::append_effects;
use super::calls::{fetch_approval, fetch_call, insert_grant};
use super::codec::{database, millis};
use super::policy::digest_in_force;
use super::rules::mint_or_reuse;
use crate::{DecideError, Decided, Decision, Effects, StoreError};
use airlock_protocol::{ApprovalStatus, CallStatus};
use sqlx::SqliteConnection;

pub(crate) async fn decide(
    conn: &mut SqliteConnection,
    workspace: &str,
    decision: &Decision,
    effects: &Effects,
) -> Result<Decided, DecideError> {
    let approval = fetch_approval(&mut *conn, workspace, &decision.approval_id)
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
    if decision.binding_digest != approval.binding_digest {
        return Err(DecideError::BindingMismatch);
    }
    if approval.policy_digest != in_force {
        return Err(DecideError::StalePolicy);
    }

    let (status, call_status) = if decision.approve {
        (ApprovalStatus::Approved, CallStatus::Approved)
    } else {
        (ApprovalStatus::Rejected, CallStatus::Rejected)
    };
    let updated = sqlx::query(
        "UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, decision_reason = ?
         WHERE id = ? AND workspace = ? AND status = 'pending'",
    )
    .bind(status.as_str())
    .bind(millis(decision.at))
    .bind(&decision.decided_by)
    .bind(&decision.reason)
    .bind(&approval.id)
    .bind(workspace)
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    if updated.rows_affected() != 1 {
        let now = fetch_approval(&mut *conn, workspace, &approval.id).await?;
        return Err(DecideError::AlreadyDecided(
            now.map_or(ApprovalStatus::Cancelled, |approval| approval.status),
        ));
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
    sqlx::query(
        "UPDATE calls SET status = ?, decided_by = 'human', decided_at = ?,
                          grant_id = COALESCE(?, grant_id), reason = COALESCE(?, reason)
         WHERE id = ? AND workspace = ?",
    )
    .bind(call_status.as_str())
    .bind(millis(decision.at))
    .bind(grant.as_ref().map(|grant| grant.id.as_str()))
    .bind(call_reason)
    .bind(&approval.call_id)
    .bind(workspace)
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    let standing_rule = match decision.standing_rule.as_ref().filter(|_| decision.approve) {
        Some(rule) => Some(mint_or_reuse(conn, workspace, rule).await?),
        None => None,
    };
    append_effects(conn, workspace, effects).await?;

    let missing = |table: &'static str| StoreError::Corrupt {
        table,
        detail: format!(
            "row of approval {} vanished inside its transaction",
            approval.id
        ),
    };
    let approval = fetch_approval(&mut *conn, workspace, &approval.id)
        .await?
        .ok_or_else(|| missing("approvals"))?;
    let call = fetch_call(&mut *conn, workspace, &approval.call_id)
        .await?
        .ok_or_else(|| missing("calls"))?;
    Ok(Decided {
        approval,
        call,
        grant,
        standing_rule,
    })
}
