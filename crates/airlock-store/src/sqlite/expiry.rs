//! Moving overdue pending approvals to `expired` (G4: a timeout is recorded as expired,
//! never as a human rejection), and the next deadline for the sweeper.

use super::audit::append_effects;
use super::calls::{close_by_system, SystemClose};
use super::codec::{database, millis, Columns};
use crate::{Effects, StoreResult};
use airlock_protocol::{Approval, ApprovalStatus, CallStatus};
use jiff::Timestamp;
use sqlx::{SqliteConnection, SqlitePool};

/// The `decision_reason` of an expired approval.
const EXPIRED_REASON: &str = "expired";

pub(crate) async fn expire_due(
    conn: &mut SqliteConnection,
    now: Timestamp,
    limit: u32,
    on_expire: &(dyn for<'a> Fn(&'a Approval) -> Effects + Sync),
) -> StoreResult<Vec<(String, Approval)>> {
    let due = sqlx::query(
        "SELECT workspace, id FROM approvals WHERE status = 'pending' AND deadline <= ?
         ORDER BY deadline, rowid LIMIT ?",
    )
    .bind(millis(now))
    .bind(i64::from(limit))
    .fetch_all(&mut *conn)
    .await
    .map_err(database)?;
    let close = SystemClose {
        status: ApprovalStatus::Expired,
        call_status: CallStatus::Expired,
        at: now,
        reason: EXPIRED_REASON,
    };
    let mut expired = Vec::with_capacity(due.len());
    for row in &due {
        let columns = Columns::new(row, "approvals");
        let workspace = columns.text("workspace")?;
        let id = columns.text("id")?;
        if let Some(approval) = close_by_system(conn, &workspace, &id, close).await? {
            append_effects(conn, &workspace, &on_expire(&approval)).await?;
            expired.push((workspace, approval));
        }
    }
    Ok(expired)
}

pub(crate) async fn next_deadline(readers: &SqlitePool) -> StoreResult<Option<Timestamp>> {
    let row =
        sqlx::query("SELECT MIN(deadline) AS deadline FROM approvals WHERE status = 'pending'")
            .fetch_one(readers)
            .await
            .map_err(database)?;
    Columns::new(&row, "approvals").opt_time("deadline")
}
