//! Pausing and resuming a run (DESIGN.md §11.6): each one transaction, so that a crash
//! never leaves an approval pending on a paused run (where a click could still approve
//! it), nor a resumed run that no node will claim.

use super::dialect::{lock_workspace, Conn};
use super::execute;
use super::runs::{apply, fetch_run, stop_run};
use crate::codec::{database, millis};
use crate::{ClosingApprovals, RunUpdate, StoreError, StoreResult};
use airlock_protocol::{Approval, Run};
use jiff::Timestamp;

/// See `Store::pause_run`.
pub(crate) async fn pause_run(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
    update: &RunUpdate,
    closing: &ClosingApprovals<'_>,
) -> StoreResult<Option<(Run, Vec<Approval>)>> {
    // The lease stays: a tool the holder is executing right now finishes, and its result
    // is journalled under it (`RunUpdate::while_paused`); nothing else is written.
    let pause = "UPDATE runs SET state = 'paused'
         WHERE id = $1 AND workspace = $2 AND state IN ('running', 'awaiting_approval')";
    stop_run(conn, workspace, run_id, pause, update, closing).await
}

/// The pending approvals of a run: those of its gated steps, and those of calls its agent
/// put to the gate in its session since the run started that no step names (its leg was
/// between the gate and writing the step; the leg's write now fails, and the call must not
/// stay askable). Pause and cancel close them all.
pub(super) async fn pending_of_run(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
) -> StoreResult<Vec<String>> {
    sqlx::query_scalar(
        "SELECT a.id FROM approvals a JOIN runs r ON r.id = $1 AND r.workspace = $2
         WHERE a.workspace = $2 AND a.status = 'pending'
           AND (a.call_id IN (SELECT s.call_id FROM run_steps s
                              WHERE s.run_id = $1 AND s.workspace = $2
                                AND s.call_id IS NOT NULL)
                OR (a.session_id = r.session_id AND a.agent_id = r.agent_id
                    AND a.created_at >= r.created_at
                    AND NOT EXISTS (SELECT 1 FROM run_steps s
                                    WHERE s.workspace = $2 AND s.call_id = a.call_id)))
         ORDER BY a.id",
    )
    .bind(run_id)
    .bind(workspace)
    .fetch_all(&mut *conn)
    .await
    .map_err(database)
}

/// See `Store::resume_run`.
pub(crate) async fn resume_run(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
    now: Timestamp,
    update: &RunUpdate,
) -> StoreResult<Option<Run>> {
    lock_workspace(conn, workspace).await?;
    // The leg that held the run when it was paused may still be in a step (a tool running,
    // the model answering): until it has stopped and let go (`release_paused`), or its
    // lease ran out because its node died, a new leg would drive the run beside it (both
    // legs' owner is the node).
    let held: Option<i64> = sqlx::query_scalar(
        "SELECT CAST(1 AS BIGINT) FROM runs r
         WHERE r.id = $1 AND r.workspace = $2 AND r.state = 'paused'
           AND r.lease_owner IS NOT NULL AND r.lease_until >= $3",
    )
    .bind(run_id)
    .bind(workspace)
    .bind(millis(now))
    .fetch_optional(&mut *conn)
    .await
    .map_err(database)?;
    if held.is_some() {
        return Err(StoreError::Conflict(
            "the run was paused in the middle of a step, which is still finishing (a tool running, or the model answering); resume it in a moment".into(),
        ));
    }
    // `awaiting_approval` with no lease: the node that resumes it (or any node's sweeper,
    // after a crash) claims it like a run whose approvals were all decided.
    let query = sqlx::query(
        "UPDATE runs SET state = 'awaiting_approval', lease_owner = NULL, lease_until = NULL
         WHERE id = $1 AND workspace = $2 AND state = 'paused'",
    )
    .bind(run_id)
    .bind(workspace);
    let resumed = execute(query, &mut *conn).await?;
    if resumed.rows_affected() != 1 {
        return Ok(None);
    }
    // Steps whose approval was cancelled (by the pause) are asked again: without a call,
    // the leg puts the step's tool call to the gate anew. The old approval stays
    // cancelled, so a click on it is still refused.
    let query = sqlx::query(
        "UPDATE run_steps SET call_id = NULL
         WHERE run_id = $1 AND workspace = $2 AND state = 'gated'
           AND call_id IN (SELECT c.id FROM calls c
                           WHERE c.workspace = $2 AND c.status = 'cancelled')",
    )
    .bind(run_id)
    .bind(workspace);
    execute(query, &mut *conn).await?;
    apply(conn, workspace, run_id, update).await?;
    fetch_run(&mut *conn, workspace, run_id).await
}

/// See `Store::release_paused` (a cancelled run's holder lets go the same way).
pub(crate) async fn release_paused(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
    owner: &str,
) -> StoreResult<bool> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE runs SET lease_owner = NULL, lease_until = NULL
         WHERE id = $1 AND workspace = $2 AND state IN ('paused', 'cancelled')
           AND lease_owner = $3",
    )
    .bind(run_id)
    .bind(workspace)
    .bind(owner);
    let released = execute(query, &mut *conn).await?;
    Ok(released.rows_affected() == 1)
}
