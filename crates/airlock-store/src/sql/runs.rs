//! The built-in runtime's rows: runs held under a lease, their journal and steps, the
//! sessions' conversations, and the outbox written with the grant it spends.

use super::audit::append_effects;
use super::calls::{close_by_system, fetch_approval, SystemClose};
use super::dialect::{lock_workspace, Conn, Db, Pool, ORD};
use super::grants;
use super::{all, execute, optional, with_workspace};
use crate::codec::{
    database, enum_text, json_text, message_from_row, millis, opt_json_text, opt_millis,
    outbox_from_row, run_event_from_row, run_from_row, step_from_row, to_i64, MESSAGE_COLUMNS,
    OUTBOX_COLUMNS, RUN_COLUMNS, STEP_COLUMNS,
};
use crate::{
    Effects, Grant, Lease, RedeemError, RedeemRequest, RunUpdate, StoreError, StoreResult,
    StoredStep,
};
use airlock_protocol::{ApprovalStatus, CallStatus, Message, OutboxItem, Run, RunEvent, RunState};
use jiff::Timestamp;
use sqlx::Executor;

pub(crate) async fn fetch_run<'e, E>(
    executor: E,
    workspace: &str,
    id: &str,
) -> StoreResult<Option<Run>>
where
    E: Executor<'e, Database = Db>,
{
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1 AND workspace = $2");
    let query = sqlx::query(&sql).bind(id).bind(workspace);
    optional(query, executor, run_from_row).await
}

/// Writes `update` to a run whose right to be written was checked by the caller.
pub(super) async fn apply(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
    update: &RunUpdate,
) -> StoreResult<Vec<RunEvent>> {
    let run = fetch_run(&mut *conn, workspace, run_id)
        .await?
        .ok_or_else(|| StoreError::Conflict("no such run".into()))?;
    let at = update.at.unwrap_or(run.updated_at);
    let mut seq = run.last_seq;
    let mut appended = Vec::with_capacity(update.events.len());
    for event in &update.events {
        seq += 1;
        // Returned as stored, to the millisecond: whoever gets the event live and whoever
        // replays the journal must see the same event.
        let event_at = Timestamp::from_millisecond(millis(event.at))
            .map_err(|error| StoreError::Database(error.to_string()))?;
        let query = sqlx::query(
            "INSERT INTO run_events (workspace, run_id, seq, at, kind, data)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(workspace)
        .bind(run_id)
        .bind(to_i64(seq)?)
        .bind(millis(event_at))
        .bind(&event.kind)
        .bind(json_text(&event.data)?);
        execute(query, &mut *conn).await?;
        appended.push(RunEvent {
            seq,
            kind: event.kind.clone(),
            at: event_at,
            data: event.data.clone(),
        });
    }
    for message in &update.messages {
        let query = sqlx::query(
            "INSERT INTO messages (id, workspace, session_id, run_id, role, text, tool_calls,
                                   tool_call_id, steps, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&message.id)
        .bind(workspace)
        .bind(&message.session_id)
        .bind(run_id)
        .bind(&message.role)
        .bind(&message.text)
        .bind(json_text(&message.tool_calls)?)
        .bind(&message.tool_call_id)
        .bind(json_text(&message.steps)?)
        .bind(millis(message.created_at));
        execute(query, &mut *conn).await?;
    }
    for stored in &update.steps {
        let step = &stored.step;
        let query = sqlx::query(
            "INSERT INTO run_steps (workspace, run_id, idx, tool_call_id, tool, arguments, exact,
                                    call_id, state, status, output, rule, standing_rule,
                                    approver, finished_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
             ON CONFLICT (run_id, idx) DO UPDATE SET
                call_id = excluded.call_id, state = excluded.state, status = excluded.status,
                output = excluded.output, rule = excluded.rule,
                standing_rule = excluded.standing_rule, approver = excluded.approver,
                finished_at = excluded.finished_at",
        )
        .bind(workspace)
        .bind(run_id)
        .bind(i64::from(step.index))
        .bind(&step.tool_call_id)
        .bind(&step.tool)
        .bind(json_text(&step.arguments)?)
        .bind(i64::from(stored.exact))
        .bind(&step.call_id)
        .bind(step.state.as_str())
        .bind(step.status.map(|status| status.as_str()))
        .bind(opt_json_text(&step.output)?)
        .bind(&step.rule)
        .bind(&step.standing_rule)
        .bind(&step.approver)
        .bind(opt_millis(step.finished_at));
        execute(query, &mut *conn).await?;
    }
    let (state, error) = match &update.state {
        Some((state, error)) => (*state, error.clone()),
        None => (run.state, run.error.clone()),
    };
    // The lease only lives while the run runs, or is paused with a tool still executing
    // (its holder journals the result under it; resuming drops it), or was just cancelled
    // with one (journalling its result drops it).
    let lease = update.lease.as_ref().filter(|_| state == RunState::Running);
    let keep = state == RunState::Paused || (state == RunState::Cancelled && !update.while_paused);
    let query = sqlx::query(
        "UPDATE runs SET last_seq = $1, updated_at = $2, state = $3, error = $4,
            lease_owner = CASE WHEN $5 = 'running' THEN COALESCE($6, lease_owner)
                               WHEN $11 THEN lease_owner END,
            lease_until = CASE WHEN $7 = 'running' THEN COALESCE($8, lease_until)
                               WHEN $12 THEN lease_until END
         WHERE id = $9 AND workspace = $10",
    )
    .bind(to_i64(seq)?)
    .bind(millis(at))
    .bind(enum_text(&state)?)
    .bind(error)
    .bind(state.as_str())
    .bind(lease.map(|lease| lease.owner.clone()))
    .bind(state.as_str())
    .bind(lease.map(|lease| millis(lease.until)))
    .bind(run_id)
    .bind(workspace)
    .bind(keep)
    .bind(keep);
    execute(query, &mut *conn).await?;
    if !state.is_live() {
        // The run ended: its task (if a task started it) may be dispatched again.
        let query = sqlx::query(
            "UPDATE tasks SET active_run_id = NULL WHERE workspace = $1 AND active_run_id = $2",
        )
        .bind(workspace)
        .bind(run_id);
        execute(query, &mut *conn).await?;
    }
    append_effects(conn, workspace, &update.effects).await?;
    Ok(appended)
}

/// `LeaseLost` unless the run is held by `owner` and running (or paused or cancelled, for
/// a write `while_paused`: the result of a tool that was executing when a person paused or
/// cancelled the run).
async fn check_held(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
    owner: &str,
    while_paused: bool,
) -> StoreResult<()> {
    let held: Option<i64> = sqlx::query_scalar(
        "SELECT CAST(1 AS BIGINT) FROM runs WHERE id = $1 AND workspace = $2
            AND (state = 'running' OR (state IN ('paused', 'cancelled') AND $4))
            AND lease_owner = $3",
    )
    .bind(run_id)
    .bind(workspace)
    .bind(owner)
    .bind(while_paused)
    .fetch_optional(&mut *conn)
    .await
    .map_err(database)?;
    held.map(|_| ()).ok_or(StoreError::LeaseLost)
}

pub(crate) async fn start_run(
    conn: &mut Conn,
    workspace: &str,
    run: &Run,
    lease: &Lease,
    update: &RunUpdate,
) -> StoreResult<Vec<RunEvent>> {
    lock_workspace(conn, workspace).await?;
    let live: Option<String> = sqlx::query_scalar(
        "SELECT id FROM runs WHERE workspace = $1 AND session_id = $2
            AND state IN ('running', 'awaiting_approval', 'paused') LIMIT 1",
    )
    .bind(workspace)
    .bind(&run.session_id)
    .fetch_optional(&mut *conn)
    .await
    .map_err(database)?;
    if let Some(live) = live {
        return Err(StoreError::Conflict(format!(
            "the session already has a run in progress ({live}); wait for it or cancel it"
        )));
    }
    let query = sqlx::query(
        "INSERT INTO runs (id, workspace, session_id, agent_id, state, error, last_seq,
                           lease_owner, lease_until, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'running', NULL, 0, $5, $6, $7, $8)",
    )
    .bind(&run.id)
    .bind(workspace)
    .bind(&run.session_id)
    .bind(&run.agent_id)
    .bind(&lease.owner)
    .bind(millis(lease.until))
    .bind(millis(run.created_at))
    .bind(millis(run.updated_at));
    execute(query, &mut *conn).await?;
    apply(conn, workspace, &run.id, update).await
}

pub(crate) async fn update_run(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
    owner: &str,
    update: &RunUpdate,
) -> StoreResult<Vec<RunEvent>> {
    lock_workspace(conn, workspace).await?;
    check_held(conn, workspace, run_id, owner, update.while_paused).await?;
    apply(conn, workspace, run_id, update).await
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn redeem_for_run(
    conn: &mut Conn,
    workspace: &str,
    call_id: &str,
    at: Timestamp,
    effects: &Effects,
    outbox: Option<&OutboxItem>,
    run_id: &str,
    owner: &str,
    update: &RunUpdate,
) -> Result<Grant, RedeemError> {
    lock_workspace(conn, workspace).await?;
    // Never while paused: a paused run executes nothing new.
    check_held(conn, workspace, run_id, owner, false).await?;
    // No key: the runtime never crosses HTTP to redeem, and its grant is consumed in the
    // same transaction as its effect or `tool_started`, so no answer can be lost between
    // them. No outcome deadline either: a leg that dies mid-tool leaves `tool_started`
    // in the run, which the node that takes the run over settles (DESIGN.md §11.8).
    let request = RedeemRequest {
        at,
        key: None,
        outcome_due: None,
    };
    let grant = grants::redeem(conn, workspace, call_id, &request, effects)
        .await?
        .grant;
    if let Some(item) = outbox {
        let query = sqlx::query(
            "INSERT INTO outbox (id, workspace, kind, recipient, payload, run_id, call_id,
                                 created_at, attempts, next_attempt_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9)",
        )
        .bind(&item.id)
        .bind(workspace)
        .bind(&item.kind)
        .bind(&item.recipient)
        .bind(json_text(&item.payload)?)
        .bind(&item.run_id)
        .bind(&item.call_id)
        .bind(millis(item.created_at))
        .bind(millis(item.created_at));
        execute(query, &mut *conn).await?;
    }
    apply(conn, workspace, run_id, update).await?;
    Ok(grant)
}

/// See `Store::renew_lease`. A conditional update of one row: a claim by another node
/// that committed first has changed the owner, so this one matches nothing.
pub(crate) async fn renew_lease(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
    lease: &Lease,
) -> StoreResult<bool> {
    let query = sqlx::query(
        "UPDATE runs SET lease_until = $1
         WHERE id = $2 AND workspace = $3 AND lease_owner = $4
           AND (state = 'running' OR state = 'paused')",
    )
    .bind(millis(lease.until))
    .bind(run_id)
    .bind(workspace)
    .bind(&lease.owner);
    let renewed = execute(query, &mut *conn).await?;
    Ok(renewed.rows_affected() == 1)
}

pub(crate) async fn claim_run(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
    now: Timestamp,
    lease: &Lease,
    update: &RunUpdate,
) -> StoreResult<Option<Run>> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE runs SET state = 'running', lease_owner = $1, lease_until = $2
         WHERE id = $3 AND workspace = $4
           AND (state = 'awaiting_approval' OR (state = 'running' AND lease_until < $5))",
    )
    .bind(&lease.owner)
    .bind(millis(lease.until))
    .bind(run_id)
    .bind(workspace)
    .bind(millis(now));
    let claimed = execute(query, &mut *conn).await?;
    if claimed.rows_affected() != 1 {
        return Ok(None);
    }
    apply(conn, workspace, run_id, update).await?;
    fetch_run(&mut *conn, workspace, run_id).await
}

/// Cancels a live run and, in the same transaction, closes every pending approval of its
/// gated steps (each with the effects `closing` gives): a crash can never leave
/// an approval pending on a cancelled run, where a click could still approve it.
pub(crate) async fn cancel_run(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
    update: &RunUpdate,
    closing: &crate::ClosingApprovals<'_>,
) -> StoreResult<Option<(Run, Vec<airlock_protocol::Approval>)>> {
    // The lease stays, as a pause's does: a tool its holder is executing right now
    // finishes, and its result is journalled under it (`RunUpdate::while_paused`), which
    // drops the lease; a holder that finds the run cancelled otherwise lets go of it
    // (`release_paused`). Nothing else is written to a cancelled run.
    let cancel = "UPDATE runs SET state = 'cancelled'
         WHERE id = $1 AND workspace = $2 AND state IN ('running', 'awaiting_approval', 'paused')";
    stop_run(conn, workspace, run_id, cancel, update, closing).await
}

/// Moves a run with `transition` (an `UPDATE runs` bound to the run's id and workspace,
/// matching only the states it may leave), applies `update`, and closes, as `closing`
/// says, the approvals a stopped run leaves pending (`pending_of_run`): cancel and pause
/// are the same step but for the transition. `None` (nothing written) when the run was in
/// none of those states.
pub(super) async fn stop_run(
    conn: &mut Conn,
    workspace: &str,
    run_id: &str,
    transition: &str,
    update: &RunUpdate,
    closing: &crate::ClosingApprovals<'_>,
) -> StoreResult<Option<(Run, Vec<airlock_protocol::Approval>)>> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(transition).bind(run_id).bind(workspace);
    let moved = execute(query, &mut *conn).await?;
    if moved.rows_affected() != 1 {
        return Ok(None);
    }
    apply(conn, workspace, run_id, update).await?;
    let pending = super::pause::pending_of_run(conn, workspace, run_id).await?;
    let closed = close_approvals(conn, workspace, pending, closing).await?;
    let Some(run) = fetch_run(&mut *conn, workspace, run_id).await? else {
        return Ok(None);
    };
    Ok(Some((run, closed)))
}

/// Cancels each of `pending` still pending, with the effects `closing` gives; returns
/// the approvals closed, as they are afterwards. A stopped run's, and those a new policy
/// makes stale.
pub(super) async fn close_approvals(
    conn: &mut Conn,
    workspace: &str,
    pending: Vec<String>,
    closing: &crate::ClosingApprovals<'_>,
) -> StoreResult<Vec<airlock_protocol::Approval>> {
    let close = cancelling(closing.at, closing.reason);
    let mut closed = Vec::with_capacity(pending.len());
    for approval_id in pending {
        if let Some(approval) = close_by_system(conn, workspace, &approval_id, close).await? {
            append_effects(conn, workspace, &(closing.effects)(&approval)).await?;
            closed.push(approval);
        }
    }
    Ok(closed)
}

/// The system (not a person) cancels a pending approval, and its call, for `reason`.
fn cancelling(at: Timestamp, reason: &str) -> SystemClose<'_> {
    SystemClose {
        status: ApprovalStatus::Cancelled,
        call_status: CallStatus::Cancelled,
        at,
        reason,
    }
}

pub(crate) async fn stalled_runs(
    readers: &Pool,
    now: Timestamp,
    limit: u32,
) -> StoreResult<Vec<(String, String)>> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT workspace, id FROM runs r
         WHERE (r.state = 'awaiting_approval' AND NOT EXISTS (
                  SELECT CAST(1 AS BIGINT) FROM run_steps s JOIN calls c ON c.id = s.call_id
                  WHERE s.run_id = r.id AND s.state = 'gated' AND c.status = 'pending'))
            OR (r.state = 'running' AND r.lease_until < $1)
         ORDER BY r.updated_at LIMIT $2",
    )
    .bind(millis(now))
    .bind(i64::from(limit))
    .fetch_all(readers)
    .await
    .map_err(database)?;
    Ok(rows)
}

pub(crate) async fn session_runs(
    readers: &Pool,
    workspace: &str,
    session_id: &str,
) -> StoreResult<Vec<Run>> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE workspace = $1 AND session_id = $2
         ORDER BY created_at, {ORD}"
    );
    let query = sqlx::query(&sql).bind(workspace).bind(session_id);
    all(query, readers, run_from_row).await
}

pub(crate) async fn run_events_after(
    readers: &Pool,
    workspace: &str,
    run_id: &str,
    after: u64,
    limit: u32,
) -> StoreResult<Vec<RunEvent>> {
    let query = sqlx::query(
        "SELECT seq, kind, at, data FROM run_events
         WHERE workspace = $1 AND run_id = $2 AND seq > $3 ORDER BY seq LIMIT $4",
    )
    .bind(workspace)
    .bind(run_id)
    .bind(to_i64(after)?)
    .bind(i64::from(limit));
    all(query, readers, run_event_from_row).await
}

pub(crate) async fn run_steps(
    readers: &Pool,
    workspace: &str,
    run_id: &str,
) -> StoreResult<Vec<StoredStep>> {
    let sql = format!(
        "SELECT {STEP_COLUMNS} FROM run_steps WHERE workspace = $1 AND run_id = $2 ORDER BY idx"
    );
    let query = sqlx::query(&sql).bind(workspace).bind(run_id);
    all(query, readers, step_from_row).await
}

pub(crate) async fn run_of_call(
    readers: &Pool,
    workspace: &str,
    call_id: &str,
) -> StoreResult<Option<String>> {
    sqlx::query_scalar("SELECT run_id FROM run_steps WHERE workspace = $1 AND call_id = $2")
        .bind(workspace)
        .bind(call_id)
        .fetch_optional(readers)
        .await
        .map_err(database)
}

pub(crate) async fn session_messages(
    readers: &Pool,
    workspace: &str,
    session_id: &str,
) -> StoreResult<Vec<Message>> {
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages WHERE workspace = $1 AND session_id = $2
         ORDER BY created_at, {ORD}"
    );
    let query = sqlx::query(&sql).bind(workspace).bind(session_id);
    all(query, readers, message_from_row).await
}

pub(crate) async fn list_outbox(
    readers: &Pool,
    workspace: &str,
    limit: u32,
) -> StoreResult<Vec<OutboxItem>> {
    let sql = format!(
        "SELECT {OUTBOX_COLUMNS} FROM outbox WHERE workspace = $1
         ORDER BY created_at DESC, {ORD} DESC LIMIT $2"
    );
    let query = sqlx::query(&sql).bind(workspace).bind(i64::from(limit));
    all(query, readers, outbox_from_row).await
}

pub(crate) async fn outbox_due(
    readers: &Pool,
    now: Timestamp,
    limit: u32,
) -> StoreResult<Vec<(String, OutboxItem)>> {
    let sql = format!(
        "SELECT workspace, {OUTBOX_COLUMNS} FROM outbox
         WHERE delivered_at IS NULL AND next_attempt_at <= $1
         ORDER BY next_attempt_at, {ORD} LIMIT $2"
    );
    let query = sqlx::query(&sql).bind(millis(now)).bind(i64::from(limit));
    all(query, readers, |row| {
        with_workspace(row, "outbox", outbox_from_row)
    })
    .await
}

pub(crate) async fn outbox_attempt(
    conn: &mut Conn,
    workspace: &str,
    id: &str,
    at: Timestamp,
    error: Option<&str>,
    retry_at: Option<Timestamp>,
) -> StoreResult<()> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE outbox SET attempts = attempts + 1, last_error = $1,
            delivered_at = CASE WHEN $2 IS NULL THEN $3 END,
            next_attempt_at = COALESCE($4, next_attempt_at)
         WHERE id = $5 AND workspace = $6 AND delivered_at IS NULL",
    )
    .bind(error)
    .bind(error)
    .bind(millis(at))
    .bind(opt_millis(retry_at))
    .bind(id)
    .bind(workspace);
    execute(query, &mut *conn).await?;
    Ok(())
}

pub(crate) async fn cancel_approval(
    conn: &mut Conn,
    workspace: &str,
    approval_id: &str,
    at: Timestamp,
    reason: &str,
    effects: &Effects,
) -> Result<airlock_protocol::Approval, crate::DecideError> {
    lock_workspace(conn, workspace).await?;
    match close_by_system(conn, workspace, approval_id, cancelling(at, reason)).await? {
        Some(approval) => {
            append_effects(conn, workspace, effects).await?;
            Ok(approval)
        }
        None => match fetch_approval(&mut *conn, workspace, approval_id).await? {
            None => Err(crate::DecideError::NotFound),
            Some(approval) => Err(crate::DecideError::AlreadyDecided(approval.status)),
        },
    }
}

pub(crate) async fn claim_outbox(
    conn: &mut Conn,
    workspace: &str,
    id: &str,
    now: Timestamp,
    until: Timestamp,
) -> StoreResult<bool> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE outbox SET next_attempt_at = $1
         WHERE id = $2 AND workspace = $3 AND delivered_at IS NULL AND next_attempt_at <= $4",
    )
    .bind(millis(until))
    .bind(id)
    .bind(workspace)
    .bind(millis(now));
    let claimed = execute(query, &mut *conn).await?;
    Ok(claimed.rows_affected() == 1)
}
