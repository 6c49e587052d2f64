//! Consuming a grant (G1): one conditional update, a replay for a retry under the same
//! `Idempotency-Key`, and a refusal that says why.

use super::audit::append_effects;
use super::dialect::{lock_workspace, Conn};
use super::execute;
use crate::codec::{database, grant_from_row, millis, opt_millis};
use crate::{Effects, Grant, RedeemError, RedeemRequest, Redemption, StoreError};
use serde_json::Value;

/// Consumes the grant of `call_id`, appending `effects` only when it succeeds.
///
/// INVARIANT: `consumed_at` goes from NULL to a time in exactly one statement whose
/// condition is `consumed_at IS NULL`; whoever updates the row holds the one execution,
/// everyone after is told `Spent`, except a retry under the key that update stored,
/// which is told the same grant again (`replayed`). Key and answer (the grant row) are
/// written by that one statement, so a crash after the commit loses neither.
pub(crate) async fn redeem(
    conn: &mut Conn,
    workspace: &str,
    call_id: &str,
    request: &RedeemRequest<'_>,
    effects: &Effects,
) -> Result<Redemption, RedeemError> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query(
        "UPDATE grants SET consumed_at = $1, idempotency_key = $2
         WHERE call_id = $3 AND workspace = $4 AND consumed_at IS NULL",
    )
    .bind(millis(request.at))
    .bind(request.key)
    .bind(call_id)
    .bind(workspace);
    let consumed = execute(query, &mut *conn).await?;
    if consumed.rows_affected() != 1 {
        return Err(refusal_or_replay(conn, workspace, call_id, request.key).await);
    }
    // The edited arguments come back from the same statement: a person's edit was
    // written with the grant, so they are final once the grant exists.
    let edited: Option<Option<String>> = sqlx::query_scalar(
        "UPDATE calls SET redeemed_at = $1, outcome_due_at = $2 WHERE id = $3 AND workspace = $4
         RETURNING CASE WHEN original_arguments IS NULL THEN NULL ELSE arguments END",
    )
    .bind(millis(request.at))
    .bind(opt_millis(request.outcome_due))
    .bind(call_id)
    .bind(workspace)
    .fetch_optional(&mut *conn)
    .await
    .map_err(database)?;
    append_effects(conn, workspace, effects).await?;
    let grant = read_grant(conn, workspace, call_id).await?;
    Ok(Redemption {
        grant,
        replayed: false,
        arguments: parse_edited(edited.flatten())?,
    })
}

/// The edited arguments of a call, if a person edited it.
async fn edited_arguments(
    conn: &mut Conn,
    workspace: &str,
    call_id: &str,
) -> Result<Option<Value>, RedeemError> {
    let edited: Option<Option<String>> = sqlx::query_scalar(
        "SELECT CASE WHEN original_arguments IS NULL THEN NULL ELSE arguments END
         FROM calls WHERE id = $1 AND workspace = $2",
    )
    .bind(call_id)
    .bind(workspace)
    .fetch_optional(&mut *conn)
    .await
    .map_err(database)?;
    Ok(parse_edited(edited.flatten())?)
}

fn parse_edited(text: Option<String>) -> Result<Option<Value>, StoreError> {
    text.map(|text| {
        serde_json::from_str(&text).map_err(|error| StoreError::Corrupt {
            table: "calls",
            detail: format!("edited arguments: {error}"),
        })
    })
    .transpose()
}

async fn read_grant(conn: &mut Conn, workspace: &str, call_id: &str) -> Result<Grant, RedeemError> {
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

/// Why nothing was consumed. A replay is carried as [`RedeemError::Replay`] so that the
/// caller's transaction writes nothing either way.
async fn refusal_or_replay(
    conn: &mut Conn,
    workspace: &str,
    call_id: &str,
    key: Option<&str>,
) -> RedeemError {
    match why_not(conn, workspace, call_id, key).await {
        Ok(error) | Err(error) => error,
    }
}

async fn why_not(
    conn: &mut Conn,
    workspace: &str,
    call_id: &str,
    key: Option<&str>,
) -> Result<RedeemError, RedeemError> {
    let call: Option<i64> =
        sqlx::query_scalar("SELECT CAST(1 AS BIGINT) FROM calls WHERE id = $1 AND workspace = $2")
            .bind(call_id)
            .bind(workspace)
            .fetch_optional(&mut *conn)
            .await
            .map_err(database)?;
    if call.is_none() {
        return Ok(RedeemError::NotFound);
    }
    let stored: Option<Option<String>> = sqlx::query_scalar(
        "SELECT idempotency_key FROM grants WHERE call_id = $1 AND workspace = $2",
    )
    .bind(call_id)
    .bind(workspace)
    .fetch_optional(&mut *conn)
    .await
    .map_err(database)?;
    Ok(match stored {
        None => RedeemError::NoGrant,
        // The key is compared in full here, inside the transaction: the same key is the
        // same client retrying, anything else is a second execution and refused.
        Some(Some(stored)) if key == Some(stored.as_str()) => RedeemError::Replay(
            read_grant(conn, workspace, call_id).await?,
            edited_arguments(conn, workspace, call_id).await?,
        ),
        Some(_) => RedeemError::Spent,
    })
}
