//! Consuming a grant (G1): one conditional update, and a refusal that says why.

use super::audit::append_effects;
use super::codec::{database, millis};
use crate::codec::grant_from_row;
use crate::{Effects, Grant, RedeemError};
use jiff::Timestamp;
use sqlx::SqliteConnection;

/// Consumes the grant of `call_id`, appending `effects` only when it succeeds.
///
/// INVARIANT: `consumed_at` goes from NULL to a time in exactly one statement whose
/// condition is `consumed_at IS NULL`; whoever updates the row holds the one execution,
/// everyone after is told `Spent`.
pub(crate) async fn redeem(
    conn: &mut SqliteConnection,
    workspace: &str,
    call_id: &str,
    at: Timestamp,
    effects: &Effects,
) -> Result<Grant, RedeemError> {
    let consumed = sqlx::query(
        "UPDATE grants SET consumed_at = ?
         WHERE call_id = ? AND workspace = ? AND consumed_at IS NULL",
    )
    .bind(millis(at))
    .bind(call_id)
    .bind(workspace)
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    if consumed.rows_affected() != 1 {
        // Nothing was written; tell the three refusals apart for the caller.
        let call: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM calls WHERE id = ? AND workspace = ?")
                .bind(call_id)
                .bind(workspace)
                .fetch_optional(&mut *conn)
                .await
                .map_err(database)?;
        if call.is_none() {
            return Err(RedeemError::NotFound);
        }
        let grant: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM grants WHERE call_id = ? AND workspace = ?")
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
        "SELECT id, call_id, created_at, consumed_at FROM grants WHERE call_id = ? AND workspace = ?",
    )
    .bind(call_id)
    .bind(workspace)
    .fetch_one(&mut *conn)
    .await
    .map_err(database)?;
    Ok(grant_from_row(&row)?)
}
