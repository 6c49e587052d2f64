//! Calls held for their agent's retry (issue 23, DESIGN.md §11.1): a coding agent's hook
//! waits a bounded time for a person and then answers "still pending, try again"; the
//! agent's identical retry must find that call, not open a second approval.
//!
//! A held call carries a `retry_key` (the gate's digest of workspace, agent, session,
//! tool, exact arguments and folder). Holding sets it; a retry that takes a final answer
//! (a rejection, an expiry…) or the grant clears it, with one conditional update, so two
//! concurrent retries never both take the same answer.

use super::audit::append_effects;
use super::dialect::{lock_workspace, Conn, Pool};
use super::{calls::CALL_COLUMNS, execute, optional};
use crate::codec::call_from_row;
use crate::{Effects, StoreResult};
use airlock_protocol::Call;

/// Holds `call_id` for a retry under `key` (replacing any key it had).
pub(crate) async fn hold(
    conn: &mut Conn,
    workspace: &str,
    call_id: &str,
    key: &str,
) -> StoreResult<()> {
    let query = sqlx::query("UPDATE calls SET retry_key = $1 WHERE workspace = $2 AND id = $3")
        .bind(key)
        .bind(workspace)
        .bind(call_id);
    execute(query, &mut *conn).await?;
    Ok(())
}

/// The newest call held under `key`, if any.
pub(crate) async fn held(pool: &Pool, workspace: &str, key: &str) -> StoreResult<Option<Call>> {
    let sql = held_sql();
    optional(
        sqlx::query(&sql).bind(workspace).bind(key),
        pool,
        call_from_row,
    )
    .await
}

/// [`held`]'s query. The held calls are found through `calls_retry_key` in a subquery
/// and only they are sorted: written as one `WHERE workspace = $1 AND retry_key = $2
/// ORDER BY created_at`, SQLite walked `calls_by_workspace` for the order instead, every
/// call of the workspace for each hook call (a cost that grew with the history: in
/// release, a hook call's median was 2.4 ms over its first 1,000 calls, 3.9 ms over the
/// third thousand).
pub(crate) fn held_sql() -> String {
    format!(
        "SELECT {CALL_COLUMNS} FROM calls
         WHERE id IN (SELECT id FROM calls WHERE workspace = $1 AND retry_key = $2)
         ORDER BY created_at DESC, id DESC LIMIT 1"
    )
}

/// Ends the hold of `call_id` under `key`, appending `effects` only when this caller is
/// the one that ended it (`true`); `false` when another retry took it first or it was
/// never held.
pub(crate) async fn release(
    conn: &mut Conn,
    workspace: &str,
    call_id: &str,
    key: &str,
    effects: &Effects,
) -> StoreResult<bool> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE calls SET retry_key = NULL WHERE workspace = $1 AND id = $2 AND retry_key = $3",
    )
    .bind(workspace)
    .bind(call_id)
    .bind(key);
    let released = execute(query, &mut *conn).await?;
    if released.rows_affected() != 1 {
        return Ok(false);
    }
    append_effects(conn, workspace, effects).await?;
    Ok(true)
}
