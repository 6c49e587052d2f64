//! The reads of a coding agent's hook call, made as one statement.
//!
//! Before a hook call is judged the gate needs its session, any call already redeemed
//! under its key (a retry whose answer was lost), any call held for its retry, and any
//! unreconciled ambiguous twin. Read one by one, each was a round trip to a reader: on
//! SQLite a hand-off to the connection's thread and back, on PostgreSQL a query on the
//! network. Here they are scalar subqueries of one `SELECT` (each the query its own
//! reader runs, with the same index), so one round trip answers them all.

use super::dialect::Db;
use super::identity::session_from_row;
use super::{outcomes, Backend};
use crate::codec::{database, json_text, Columns};
use crate::{HookFound, HookReads, StoreResult, TwinFound};
use sqlx::{Executor, Row as _};

/// The statement: one row always (the session's columns are `NULL` when it does not
/// exist), binds `$1` workspace, `$2` agent, `$3` session id, `$4` redeem key, `$5` retry
/// key, `$6` tool, `$7` redacted arguments as JSON text.
///
/// The held call's subquery finds the held rows through `calls_retry_key` first and
/// sorts only them, as `retries::held_sql` does (sorting in the same breath made SQLite
/// walk `calls_by_workspace`, every call of the workspace).
pub(crate) fn hook_reads_sql() -> &'static str {
    "SELECT s.id, s.agent_id, s.title, s.task_id, s.external_id, s.created_at,
            s.created_by, s.mode,
            (SELECT c.id FROM grants g JOIN calls c ON c.id = g.call_id
              WHERE g.workspace = $1 AND g.idempotency_key = $4 AND c.agent_id = $2
                AND g.consumed_at IS NOT NULL
              ORDER BY g.consumed_at DESC LIMIT 1) AS redeemed_under,
            (SELECT h.id FROM calls h
              WHERE h.id IN (SELECT id FROM calls WHERE workspace = $1 AND retry_key = $5)
              ORDER BY h.created_at DESC, h.id DESC LIMIT 1) AS held,
            (SELECT t.id FROM calls t
              WHERE t.workspace = $1 AND t.agent_id = $2 AND t.tool = $6 AND t.arguments = $7
                AND t.ambiguous_at IS NOT NULL AND t.reconciled IS NULL
                AND t.outcome_status IS NULL
              ORDER BY t.ambiguous_at LIMIT 1) AS ambiguous_twin
     FROM (SELECT 1 AS one) AS here
     LEFT JOIN sessions s ON s.workspace = $1 AND s.id = $3"
}

/// [`hook_reads`] on a reader connection the backend lends for the hot path (on SQLite
/// without the pool's round trips, see `sqlite/hot_reads.rs`).
pub(crate) async fn hook_reads_lent(
    store: &Backend,
    workspace: &str,
    reads: &HookReads<'_>,
) -> StoreResult<HookFound> {
    let mut lent = store.lend_reader().await?;
    let found = hook_reads(lent.conn(), workspace, reads).await;
    lent.give_back(found.is_ok());
    found
}

/// [`outcomes::ambiguous_twin`], the read every allowed call makes, on a lent reader as
/// [`hook_reads_lent`].
pub(crate) async fn ambiguous_twin_lent(
    store: &Backend,
    workspace: &str,
    agent_id: &str,
    tool: &str,
    arguments: &str,
) -> StoreResult<TwinFound> {
    let mut lent = store.lend_reader().await?;
    let twin = outcomes::ambiguous_twin(lent.conn(), workspace, agent_id, tool, arguments).await;
    lent.give_back(twin.is_ok());
    twin
}

pub(crate) async fn hook_reads<'e, E>(
    executor: E,
    workspace: &str,
    reads: &HookReads<'_>,
) -> StoreResult<HookFound>
where
    E: Executor<'e, Database = Db>,
{
    let arguments = json_text(reads.arguments)?;
    let row = sqlx::query(hook_reads_sql())
        .bind(workspace)
        .bind(reads.agent_id)
        .bind(reads.session_id)
        .bind(reads.redeem_key)
        .bind(reads.retry_key)
        .bind(reads.tool)
        .bind(&arguments)
        .fetch_one(executor)
        .await
        .map_err(database)?;
    let columns = Columns::new(&row, "calls");
    // The join matched a row only when the session's id column is set.
    let session = match row.try_get::<Option<String>, _>("id").map_err(database)? {
        Some(_) => Some(session_from_row(&row)?),
        None => None,
    };
    Ok(HookFound {
        session,
        redeemed_under: columns.opt_text("redeemed_under")?,
        held: columns.opt_text("held")?,
        ambiguous_twin: columns.opt_text("ambiguous_twin")?,
    })
}
