//! After the grant: the outcome an agent reports, the sweep that marks a call nobody
//! reported on as ambiguous, and a person's reconciliation (DESIGN.md §11.8).
//!
//! Each is one conditional update whose condition is the state it leaves, so it takes
//! effect once however many nodes or retries race: an outcome only over no outcome, a
//! mark only over no mark, a reconciliation only over none.

use super::audit::append_effects;
use super::calls::{fetch_call, CALL_COLUMNS};
use super::dialect::{lock_workspace, Conn, Db, Pool};
use super::expiry::lock_due;
use super::{all, execute};
use crate::codec::{call_from_row, database, millis, Columns};
use crate::{Effects, OutcomeRecorded, SettleError, StoreResult, TwinFound};
use airlock_protocol::{Call, CallOutcome, Reconciliation};
use jiff::Timestamp;
use sqlx::Executor;

/// The condition of an ambiguous call nobody has settled: not reconciled, and no late
/// outcome. A macro, so that the statements using it stay whole `&'static str`s.
macro_rules! unsettled_ambiguous {
    () => {
        "ambiguous_at IS NOT NULL AND reconciled IS NULL AND outcome_status IS NULL"
    };
}

/// The condition of a call still waiting for its outcome.
const AWAITING: &str =
    "outcome_due_at IS NOT NULL AND outcome_status IS NULL AND ambiguous_at IS NULL";

pub(crate) async fn record_outcome(
    conn: &mut Conn,
    workspace: &str,
    call_id: &str,
    agent_id: &str,
    outcome: &CallOutcome,
    effects: &Effects,
) -> Result<OutcomeRecorded, SettleError> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE calls SET outcome_status = $1, outcome_detail = $2, outcome_at = $3
         WHERE id = $4 AND workspace = $5 AND agent_id = $6
           AND redeemed_at IS NOT NULL AND outcome_status IS NULL",
    )
    .bind(outcome.status.as_str())
    .bind(&outcome.detail)
    .bind(millis(outcome.reported_at))
    .bind(call_id)
    .bind(workspace)
    .bind(agent_id);
    let updated = execute(query, &mut *conn).await?;
    let stored = updated.rows_affected() == 1;
    if stored {
        append_effects(conn, workspace, effects).await?;
    }
    let call = fetch_call(&mut *conn, workspace, call_id)
        .await?
        .filter(|call| call.agent_id == agent_id)
        .ok_or(SettleError::NotFound)?;
    if stored {
        return Ok(OutcomeRecorded { call, stored });
    }
    match &call.outcome {
        None => Err(SettleError::NotRedeemed),
        // The same report again (a client retrying a lost answer) is answered, not
        // stored twice; a different one is refused and the first stands.
        Some(first) if first.status == outcome.status && first.detail == outcome.detail => {
            Ok(OutcomeRecorded { call, stored })
        }
        Some(_) => Err(SettleError::AlreadyReported),
    }
}

/// Marks up to `limit` calls whose outcome is overdue at `now` as ambiguous, each with
/// the effects `on_mark` describes. Returns them with their workspace.
pub(crate) async fn mark_ambiguous(
    conn: &mut Conn,
    now: Timestamp,
    limit: u32,
    on_mark: &(dyn for<'a> Fn(&'a str, &'a Call) -> Effects + Sync),
) -> StoreResult<Vec<(String, Call)>> {
    let sql = format!(
        "SELECT workspace, id FROM calls WHERE {AWAITING} AND outcome_due_at <= $1
         ORDER BY outcome_due_at, id LIMIT $2"
    );
    let due = lock_due(conn, &sql, now, limit, "calls").await?;
    let mark = format!(
        "UPDATE calls SET ambiguous_at = $1
         WHERE id = $2 AND workspace = $3 AND {AWAITING} AND outcome_due_at <= $1"
    );
    let mut marked = Vec::with_capacity(due.len());
    for (workspace, id) in due {
        // Another node may have marked it (or the agent reported) since the first look;
        // the condition makes that a no-op, so each call is marked once.
        let query = sqlx::query(&mark)
            .bind(millis(now))
            .bind(&id)
            .bind(&workspace);
        let updated = execute(query, &mut *conn).await?;
        if updated.rows_affected() != 1 {
            continue;
        }
        if let Some(call) = fetch_call(&mut *conn, &workspace, &id).await? {
            append_effects(conn, &workspace, &on_mark(&workspace, &call)).await?;
            marked.push((workspace, call));
        }
    }
    Ok(marked)
}

/// The earliest time an outcome is due (for the sweeper's next wake-up).
pub(crate) async fn next_outcome_due(pool: &Pool) -> StoreResult<Option<Timestamp>> {
    let sql = format!("SELECT MIN(outcome_due_at) AS due FROM calls WHERE {AWAITING}");
    let row = sqlx::query(&sql).fetch_one(pool).await.map_err(database)?;
    Columns::new(&row, "calls").opt_time("due")
}

pub(crate) async fn reconcile(
    conn: &mut Conn,
    workspace: &str,
    call_id: &str,
    reconciliation: &Reconciliation,
    effects: &Effects,
) -> Result<Call, SettleError> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(concat!(
        "UPDATE calls SET reconciled = $1, reconciled_by = $2, reconciled_reason = $3,
                          reconciled_at = $4
         WHERE id = $5 AND workspace = $6 AND ",
        unsettled_ambiguous!()
    ))
    .bind(reconciliation.resolution.as_str())
    .bind(&reconciliation.by)
    .bind(&reconciliation.reason)
    .bind(millis(reconciliation.at))
    .bind(call_id)
    .bind(workspace);
    let updated = execute(query, &mut *conn).await?;
    let call = fetch_call(&mut *conn, workspace, call_id)
        .await?
        .ok_or(SettleError::NotFound)?;
    if updated.rows_affected() != 1 {
        return Err(if call.reconciliation.is_some() {
            SettleError::AlreadyReconciled
        } else {
            SettleError::NotAmbiguous
        });
    }
    append_effects(conn, workspace, effects).await?;
    Ok(call)
}

/// Ambiguous calls nobody reconciled (and no late outcome settled), oldest first.
pub(crate) async fn list_ambiguous(
    pool: &Pool,
    workspace: &str,
    limit: u32,
) -> StoreResult<Vec<Call>> {
    let sql = format!(
        concat!(
            "SELECT {} FROM calls WHERE workspace = $1 AND ",
            unsettled_ambiguous!(),
            " ORDER BY ambiguous_at, id LIMIT $2"
        ),
        CALL_COLUMNS
    );
    let query = sqlx::query(&sql).bind(workspace).bind(i64::from(limit));
    all(query, pool, call_from_row).await
}

/// An unreconciled ambiguous call of `agent_id` with exactly this tool and these
/// (redacted) arguments (while one exists, the same call is not asked again blindly), and
/// whether the workspace holds any unreconciled ambiguous call at all, in one statement.
pub(crate) async fn ambiguous_twin<'e, E>(
    executor: E,
    workspace: &str,
    agent_id: &str,
    tool: &str,
    arguments: &str,
) -> StoreResult<TwinFound>
where
    E: Executor<'e, Database = Db>,
{
    // Both through `calls_ambiguous`: only unreconciled ambiguous calls are in it.
    let (twin, any): (Option<String>, bool) = sqlx::query_as(concat!(
        "SELECT (SELECT id FROM calls
                  WHERE workspace = $1 AND agent_id = $2 AND tool = $3 AND arguments = $4
                    AND ",
        unsettled_ambiguous!(),
        " ORDER BY ambiguous_at LIMIT 1),
                EXISTS (SELECT 1 FROM calls WHERE workspace = $1 AND ",
        unsettled_ambiguous!(),
        ")"
    ))
    .bind(workspace)
    .bind(agent_id)
    .bind(tool)
    .bind(arguments)
    .fetch_one(executor)
    .await
    .map_err(database)?;
    Ok(TwinFound {
        twin,
        any_in_workspace: any,
    })
}

/// The call of `agent_id` whose grant was consumed under `key`, if any.
pub(crate) async fn call_redeemed_under(
    pool: &Pool,
    workspace: &str,
    agent_id: &str,
    key: &str,
) -> StoreResult<Option<String>> {
    sqlx::query_scalar(
        "SELECT c.id FROM grants g JOIN calls c ON c.id = g.call_id
         WHERE g.workspace = $1 AND g.idempotency_key = $2 AND c.agent_id = $3
           AND g.consumed_at IS NOT NULL
         ORDER BY g.consumed_at DESC LIMIT 1",
    )
    .bind(workspace)
    .bind(key)
    .bind(agent_id)
    .fetch_optional(pool)
    .await
    .map_err(database)
}

/// The newest redeemed call of `agent_id` with this tool and these (redacted) arguments
/// that has no outcome yet.
pub(crate) async fn awaiting_outcome(
    pool: &Pool,
    workspace: &str,
    agent_id: &str,
    tool: &str,
    arguments: &str,
) -> StoreResult<Option<String>> {
    let which = "redeemed_at IS NOT NULL AND outcome_status IS NULL ORDER BY redeemed_at DESC";
    same_call(pool, workspace, (agent_id, tool, arguments), which).await
}

/// The first call, in the order `which` ends with, of this agent with exactly this tool
/// and these (redacted) arguments that also meets `which`'s condition.
async fn same_call<'e, E>(
    executor: E,
    workspace: &str,
    (agent_id, tool, arguments): (&str, &str, &str),
    which: &str,
) -> StoreResult<Option<String>>
where
    E: Executor<'e, Database = Db>,
{
    let sql = format!(
        "SELECT id FROM calls
         WHERE workspace = $1 AND agent_id = $2 AND tool = $3 AND arguments = $4
           AND {which} LIMIT 1"
    );
    sqlx::query_scalar(&sql)
        .bind(workspace)
        .bind(agent_id)
        .bind(tool)
        .bind(arguments)
        .fetch_optional(executor)
        .await
        .map_err(database)
}
