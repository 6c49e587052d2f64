//! Web sessions: browsers signed in to the inbox.
//!
//! A session is found by the SHA-256 hex of its cookie and nothing else, and resolves to
//! a principal only through the user token it was opened with: while that token is
//! unrevoked and still a user's, and before the session's expiry. So revoking a token
//! signs out its browsers, and a changed role applies at the next request.
//!
//! The writes lock the workspace first, as every write does (a no-op on SQLite).

use super::audit::append_effects;
use super::dialect::{lock_workspace, Conn, Pool};
use super::{all, execute, optional};
use crate::codec::{millis, Columns};
use crate::{Effects, Principal, StoreResult, Subject, WebSession};
use jiff::Timestamp;

pub(crate) async fn create_web_session(
    conn: &mut Conn,
    workspace: &str,
    session: &WebSession,
    effects: &Effects,
) -> StoreResult<()> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query("DELETE FROM web_sessions WHERE workspace = $1 AND expires_at <= $2")
        .bind(workspace)
        .bind(millis(session.created_at));
    execute(query, &mut *conn).await?;
    let query = sqlx::query(
        "INSERT INTO web_sessions (id, cookie_hash, workspace, token_hash, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&session.id)
    .bind(&session.cookie_hash)
    .bind(workspace)
    .bind(&session.token_hash)
    .bind(millis(session.created_at))
    .bind(millis(session.expires_at));
    execute(query, &mut *conn).await?;
    append_effects(conn, workspace, effects).await
}

pub(crate) async fn web_session(
    readers: &Pool,
    cookie_hash: &str,
    now: Timestamp,
) -> StoreResult<Option<(WebSession, Principal)>> {
    // The joins also check the user's workspace, as a bearer token's lookup does.
    let query = sqlx::query(
        "SELECT w.id, w.cookie_hash, w.workspace, w.token_hash, w.created_at, w.expires_at,
                u.id AS user_id, u.name AS user_name, u.role AS user_role
         FROM web_sessions w
         JOIN tokens t
           ON t.hash = w.token_hash AND t.workspace = w.workspace
              AND t.subject_kind = 'user' AND t.revoked_at IS NULL
         JOIN users u ON u.id = t.subject_id AND u.workspace = t.workspace
         WHERE w.cookie_hash = $1 AND w.expires_at > $2",
    )
    .bind(cookie_hash)
    .bind(millis(now));
    optional(query, readers, session_and_user).await
}

/// A web session and its user, from a row of [`web_session`]'s query.
fn session_and_user(row: &super::Row) -> StoreResult<(WebSession, Principal)> {
    let columns = Columns::new(row, "web_sessions");
    let session = WebSession {
        id: columns.text("id")?,
        cookie_hash: columns.text("cookie_hash")?,
        token_hash: columns.text("token_hash")?,
        created_at: columns.time("created_at")?,
        expires_at: columns.time("expires_at")?,
    };
    let principal = Principal {
        workspace: columns.text("workspace")?,
        subject: Subject::User {
            id: columns.text("user_id")?,
            name: columns.text("user_name")?,
            role: columns.enumeration("user_role")?,
        },
    };
    Ok((session, principal))
}

pub(crate) async fn delete_web_session(
    conn: &mut Conn,
    workspace: &str,
    cookie_hash: &str,
    effects: &Effects,
) -> StoreResult<bool> {
    lock_workspace(conn, workspace).await?;
    let query = sqlx::query("DELETE FROM web_sessions WHERE workspace = $1 AND cookie_hash = $2")
        .bind(workspace)
        .bind(cookie_hash);
    let deleted = execute(query, &mut *conn).await?;
    if deleted.rows_affected() == 0 {
        return Ok(false);
    }
    append_effects(conn, workspace, effects).await?;
    Ok(true)
}

/// The workspace's policy versions, newest first (the policy page's history).
pub(crate) async fn policy_versions(
    pool: &Pool,
    workspace: &str,
    limit: u32,
) -> StoreResult<Vec<airlock_protocol::PolicyInfo>> {
    let query = sqlx::query(
        "SELECT version, digest, source, created_at FROM policies WHERE workspace = $1
         ORDER BY version DESC LIMIT $2",
    )
    .bind(workspace)
    .bind(i64::from(limit));
    all(query, pool, crate::codec::policy_from_row).await
}
