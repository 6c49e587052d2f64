//! [`NotifyStore`] on either database: notifications, their attempts, used links, server
//! secrets.
//!
//! On PostgreSQL several nodes run the notifier at once. Enqueueing is `ON CONFLICT DO
//! NOTHING` on (approval, channel); claiming is a conditional update of `next_at`, which
//! row locks make exactly one node win (SQLite's one writer already serialises them).
//! These writes do not take the workspace lock (`lock_workspace`): no other transaction
//! locks notification rows, so there is no lock order to keep, and notifications stay off
//! the workspace's write queue. Using a link
//! opens a web session and appends audit records, so it does lock the workspace first.

use super::calls::APPROVAL_COLUMNS;
use super::dialect::{lock_workspace, Conn, Pool};
use super::{all, execute, qualified, with_workspace};
use super::{web, Backend};
use crate::codec::{approval_from_row, database, millis, opt_millis, Columns};
use crate::notify::{
    attempt_from_row, notification_from_row, outcome_columns, NOTIFICATION_COLUMNS,
};
use crate::{
    Effects, LinkError, LinkUse, NewNotification, Notification, NotificationAttempt,
    NotificationOutcome, NotifyStore, StoreResult, WebSession,
};
use airlock_protocol::Approval;
use jiff::Timestamp;

notify_operations!(implement [impl NotifyStore for Backend] {});

async fn approvals_to_notify(
    readers: &Pool,
    channels: &[String],
    since: Timestamp,
    limit: u32,
) -> StoreResult<Vec<(String, Approval)>> {
    if channels.is_empty() {
        return Ok(Vec::new());
    }
    let placeholders: Vec<String> = (0..channels.len())
        .map(|index| format!("${}", index + 4))
        .collect();
    let sql = format!(
        "SELECT a.workspace, {} FROM approvals a
         WHERE a.status = 'pending' AND a.created_at >= $1
           AND (SELECT COUNT(*) FROM notifications n
                WHERE n.approval_id = a.id AND n.channel IN ({})) < $2
         ORDER BY a.created_at DESC LIMIT $3",
        qualified("a", APPROVAL_COLUMNS),
        placeholders.join(", ")
    );
    let mut query = sqlx::query(&sql)
        .bind(millis(since))
        .bind(i64::try_from(channels.len()).unwrap_or(i64::MAX))
        .bind(i64::from(limit));
    for channel in channels {
        query = query.bind(channel);
    }
    all(query, readers, |row| {
        with_workspace(row, "approvals", approval_from_row)
    })
    .await
}

async fn notifications_due(
    readers: &Pool,
    now: Timestamp,
    limit: u32,
) -> StoreResult<Vec<Notification>> {
    let sql = format!(
        "SELECT {NOTIFICATION_COLUMNS} FROM notifications
         WHERE status = 'pending' AND next_at <= $1 ORDER BY next_at, id LIMIT $2"
    );
    let query = sqlx::query(&sql).bind(millis(now)).bind(i64::from(limit));
    all(query, readers, notification_from_row).await
}

async fn approval_notifications(
    readers: &Pool,
    workspace: &str,
    approval_id: &str,
) -> StoreResult<Vec<(Notification, Vec<NotificationAttempt>)>> {
    let sql = format!(
        "SELECT {NOTIFICATION_COLUMNS} FROM notifications
         WHERE workspace = $1 AND approval_id = $2 ORDER BY channel"
    );
    let query = sqlx::query(&sql).bind(workspace).bind(approval_id);
    let notifications = all(query, readers, notification_from_row).await?;
    let mut found = Vec::with_capacity(notifications.len());
    for notification in notifications {
        let query = sqlx::query(
            "SELECT at, status_code, error FROM notification_attempts
             WHERE notification_id = $1 ORDER BY attempt",
        )
        .bind(&notification.id);
        let attempts = all(query, readers, attempt_from_row).await?;
        found.push((notification, attempts));
    }
    Ok(found)
}

async fn server_secret(
    conn: &mut Conn,
    name: &str,
    candidate: &str,
    at: Timestamp,
) -> StoreResult<String> {
    let query = sqlx::query(
        "INSERT INTO server_secrets (name, value, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO NOTHING",
    )
    .bind(name)
    .bind(candidate)
    .bind(millis(at));
    execute(query, &mut *conn).await?;
    let row = sqlx::query("SELECT value FROM server_secrets WHERE name = $1")
        .bind(name)
        .fetch_one(&mut *conn)
        .await
        .map_err(database)?;
    Columns::new(&row, "server_secrets").text("value")
}

async fn enqueue(conn: &mut Conn, workspace: &str, items: &[NewNotification]) -> StoreResult<u32> {
    let mut inserted = 0u32;
    for item in items {
        let query = sqlx::query(
            "INSERT INTO notifications
                (id, workspace, approval_id, channel, status, attempts, next_at, last_error,
                 created_at)
             SELECT $1, $2, $3, $4, $5, 0, $6, $7, $6
             WHERE EXISTS (SELECT 1 FROM approvals WHERE id = $3 AND workspace = $2)
             ON CONFLICT (approval_id, channel) DO NOTHING",
        )
        .bind(&item.id)
        .bind(workspace)
        .bind(&item.approval_id)
        .bind(&item.channel)
        .bind(crate::codec::enum_text(&item.status)?)
        .bind(millis(item.created_at))
        .bind(&item.note);
        let done = execute(query, &mut *conn).await?;
        inserted += u32::try_from(done.rows_affected()).unwrap_or(0);
    }
    Ok(inserted)
}

async fn claim(conn: &mut Conn, id: &str, now: Timestamp, until: Timestamp) -> StoreResult<bool> {
    let query = sqlx::query(
        "UPDATE notifications SET next_at = $1
         WHERE id = $2 AND status = 'pending' AND next_at <= $3",
    )
    .bind(millis(until))
    .bind(id)
    .bind(millis(now));
    let claimed = execute(query, &mut *conn).await?;
    Ok(claimed.rows_affected() == 1)
}

async fn record(
    conn: &mut Conn,
    id: &str,
    attempt: Option<&NotificationAttempt>,
    outcome: &NotificationOutcome,
) -> StoreResult<()> {
    let (status, delivered_at, next_at, last_error) = outcome_columns(attempt, outcome);
    let tried = i64::from(attempt.is_some());
    let query = sqlx::query(
        "UPDATE notifications SET status = $1, delivered_at = $2,
            next_at = COALESCE($3, next_at), last_error = $4, attempts = attempts + $5
         WHERE id = $6 AND status = 'pending'",
    )
    .bind(status)
    .bind(opt_millis(delivered_at))
    .bind(opt_millis(next_at))
    .bind(last_error)
    .bind(tried)
    .bind(id);
    let updated = execute(query, &mut *conn).await?;
    if updated.rows_affected() == 0 {
        return Ok(());
    }
    if let Some(attempt) = attempt {
        let query = sqlx::query(
            "INSERT INTO notification_attempts (notification_id, attempt, at, status_code, error)
             SELECT $1, attempts, $2, $3, $4 FROM notifications WHERE id = $1",
        )
        .bind(id)
        .bind(millis(attempt.at))
        .bind(attempt.status_code.map(i64::from))
        .bind(&attempt.error);
        execute(query, &mut *conn).await?;
    }
    Ok(())
}

async fn use_link(
    conn: &mut Conn,
    workspace: &str,
    link: &LinkUse,
    session: &WebSession,
    effects: &Effects,
) -> Result<WebSession, LinkError> {
    lock_workspace(conn, workspace).await?;
    // A link exists to decide one approval: once that approval is no longer pending (or
    // was never there: a forged link), it signs nobody in.
    let status = sqlx::query("SELECT status FROM approvals WHERE workspace = $1 AND id = $2")
        .bind(workspace)
        .bind(&link.approval_id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(database)?;
    match status {
        None => return Err(LinkError::NoApproval),
        Some(row) => {
            let status = Columns::new(&row, "approvals").text("status")?;
            if status != "pending" {
                return Err(LinkError::NotPending(status));
            }
        }
    }
    let query =
        sqlx::query("DELETE FROM link_uses WHERE expires_at < $1").bind(millis(link.used_at));
    execute(query, &mut *conn).await?;
    let query = sqlx::query(
        "INSERT INTO link_uses (nonce, workspace, approval_id, user_id, used_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (nonce) DO NOTHING",
    )
    .bind(&link.nonce)
    .bind(workspace)
    .bind(&link.approval_id)
    .bind(&link.user_id)
    .bind(millis(link.used_at))
    .bind(millis(link.expires_at));
    let inserted = execute(query, &mut *conn).await?;
    if inserted.rows_affected() == 0 {
        return Err(LinkError::AlreadyUsed);
    }
    let token = sqlx::query(
        "SELECT t.hash FROM tokens t JOIN users u ON u.id = t.subject_id AND u.workspace = t.workspace
         WHERE t.workspace = $1 AND t.subject_kind = 'user' AND t.subject_id = $2
           AND t.revoked_at IS NULL
         ORDER BY t.created_at DESC, t.hash LIMIT 1",
    )
    .bind(workspace)
    .bind(&link.user_id)
    .fetch_optional(&mut *conn)
    .await
    .map_err(database)?;
    let Some(token) = token else {
        return Err(LinkError::UnknownUser);
    };
    let session = WebSession {
        token_hash: Columns::new(&token, "tokens").text("hash")?,
        ..session.clone()
    };
    web::create_web_session(conn, workspace, &session, effects).await?;
    Ok(session)
}
