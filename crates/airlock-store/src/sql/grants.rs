//! Consuming a grant (G1): one conditional update, and a refusal that says why.

use super::audit::append_effects;
use super::dialect::{lock_workspace, Conn};
use crate::codec::{database, grant_from_row, millis};
use crate::{Effects, Grant, RedeemError};
use jiff::Timestamp;

/// Consumes the grant of `call_id`, appending `effects` only when it succeeds.
///
/// INVARIANT: `consumed_at` goes from NULL to a time in exactly one statement whose
/// condition is `consumed_at IS NULL`; whoever updates the row holds the one execution,
/// everyone after is told `Spent`.
pub(crate) async fn redeem(
    conn: &mut Conn,
    workspace: &str,
    call_id: &str,
    at: Timestamp,
    effects: &Effects,
) -> Result<Grant, RedeemError> {
    lock_workspace(conn, workspace).await?;
    let consumed = sqlx::query(
        "UPDATE grants SET consumed_at = $1
         WHERE call_id = $2 AND workspace = $3 AND consumed_at IS NULL",
    )
    .bind(millis(at))
    .bind(call_id)
    .bind(workspace)
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    if consumed.rows_affected() != 1 {
        // Nothing was written; tell the three refusals apart for the caller.
        let call: Option<i64> = sqlx::query_scalar(
            "SELECT CAST(1 AS BIGINT) FROM calls WHERE id = $1 AND workspace = $2",
        )
        .bind(call_id)
        .bind(workspace)
        .fetch_optional(&mut *conn)
        .await
        .map_err(database)?;
        if call.is_none() {
            return Err(RedeemError::NotFound);
        }
        let grant: Option<i64> = sqlx::query_scalar(
            "SELECT CAST(1 AS BIGINT) FROM grants WHERE call_id = $1 AND workspace = $2",
        )
        .bind(call_id)
        .bind(workspace)
        .fetch_optional(&mut *conn)
        .await
        .map_err(database)?;
        return Err(match grant {
            None => RedeemError::NoGrant,
            Some(_) => RedeemError::Spent,
        });
    }
    append_effects(conn, workspace, effects).await?;
    let row = sqlx::query(
        "SELECT id, call_id, created_at, consumed_at FROM grants WHERE call_id = $1 AND workspace = $2",
    )
    .bind(call_id)
    .bind(workspace)
    .fetch_one(&mut *conn)
    .await
    .map_err(database)?;
    Ok(grant_from_row(&row)?)
}
