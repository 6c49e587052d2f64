//! Moving overdue pending approvals to `expired` (G4: a timeout is recorded as expired,
//! never as a human rejection), and the next deadline for the sweeper.
//!
//! Every node runs a sweeper over the same table. A sweep locks the heads of the
//! workspaces it will touch in workspace order (the one order every multi-workspace lock
//! follows, so sweeps never deadlock with each other or with single-workspace writes),
//! then takes the due approvals `FOR UPDATE SKIP LOCKED` and closes each with the
//! conditional update from `pending`. A second node sweeping at the same moment queues
//! on the heads and then finds those approvals no longer pending: no approval is ever
//! expired twice.

use super::audit::append_effects;
use super::calls::{close_by_system, SystemClose};
use super::dialect::{self, lock_workspace, Conn, Pool, ORD};
use crate::codec::{database, millis, Columns};
use crate::{Effects, StoreResult};
use airlock_protocol::{Approval, ApprovalStatus, CallStatus};
use jiff::Timestamp;
use std::collections::BTreeSet;

/// (workspace, id) of approvals found due.
pub(crate) type Due = Vec<(String, String)>;

/// The `decision_reason` of an expired approval.
const EXPIRED_REASON: &str = "expired";

pub(crate) async fn expire_due(
    conn: &mut Conn,
    now: Timestamp,
    limit: u32,
    on_expire: &(dyn for<'a> Fn(&'a Approval) -> Effects + Sync),
) -> StoreResult<Vec<(String, Approval)>> {
    let sql = format!(
        "SELECT workspace, id FROM approvals WHERE status = 'pending' AND deadline <= $1
         ORDER BY deadline, {ORD} LIMIT $2"
    );
    let due = lock_due(conn, &sql, now, limit, "approvals").await?;
    let due = dialect::still_due(conn, due, now).await?;
    let close = SystemClose {
        status: ApprovalStatus::Expired,
        call_status: CallStatus::Expired,
        at: now,
        reason: EXPIRED_REASON,
    };
    let mut expired = Vec::with_capacity(due.len());
    for (workspace, id) in due {
        if let Some(approval) = close_by_system(conn, &workspace, &id, close).await? {
            append_effects(conn, &workspace, &on_expire(&approval)).await?;
            expired.push((workspace, approval));
        }
    }
    Ok(expired)
}

/// The rows `sql` (selecting `workspace, id`, bound to `now` and `limit`) finds due, at
/// a first look without locks, with the heads of their workspaces then locked.
///
/// INVARIANT: heads in ascending workspace order (BTreeSet), before any row of them: the
/// one order every multi-workspace lock follows, so two sweepers never deadlock. The
/// caller re-checks each row under the locks (it may have moved since the first look).
pub(crate) async fn lock_due(
    conn: &mut Conn,
    sql: &str,
    now: Timestamp,
    limit: u32,
    table: &'static str,
) -> StoreResult<Due> {
    let candidates = sqlx::query(sql)
        .bind(millis(now))
        .bind(i64::from(limit))
        .fetch_all(&mut *conn)
        .await
        .map_err(database)?;
    let mut due = Vec::with_capacity(candidates.len());
    let mut workspaces = BTreeSet::new();
    for row in &candidates {
        let columns = Columns::new(row, table);
        let workspace = columns.text("workspace")?;
        workspaces.insert(workspace.clone());
        due.push((workspace, columns.text("id")?));
    }
    for workspace in &workspaces {
        lock_workspace(conn, workspace).await?;
    }
    Ok(due)
}

pub(crate) async fn next_deadline(pool: &Pool) -> StoreResult<Option<Timestamp>> {
    let row =
        sqlx::query("SELECT MIN(deadline) AS deadline FROM approvals WHERE status = 'pending'")
            .fetch_one(pool)
            .await
            .map_err(database)?;
    Columns::new(&row, "approvals").opt_time("deadline")
}
