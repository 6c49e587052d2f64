//! [`IntegrationStore`] on either database: Slack messages, Slack request signatures,
//! approval trace context.
//!
//! Like the notification rows (`notify.rs`), these writes take no workspace lock: no
//! other transaction locks these rows, and they carry no audit record. Claiming a message
//! is a conditional update that exactly one node wins; a replayed request is an insert
//! that finds its signature already there.

use super::calls::APPROVAL_COLUMNS;
use super::dialect::{Conn, Pool};
use super::{all, execute, optional, qualified, Backend};
use crate::codec::millis;
use crate::integrations::{slack_message_from_row, SLACK_MESSAGE_COLUMNS};
use crate::{IntegrationStore, SlackMessage, StoreResult};
use airlock_protocol::Approval;
use jiff::Timestamp;

integration_operations!(implement [impl IntegrationStore for Backend] {});

async fn slack_message(
    readers: &Pool,
    approval_id: &str,
    channel: &str,
) -> StoreResult<Option<SlackMessage>> {
    let sql = format!(
        "SELECT {SLACK_MESSAGE_COLUMNS} FROM slack_messages m
         WHERE m.approval_id = $1 AND m.channel = $2"
    );
    let query = sqlx::query(&sql).bind(approval_id).bind(channel);
    optional(query, readers, slack_message_from_row).await
}

async fn slack_messages_to_close(
    readers: &Pool,
    channel: &str,
    now: Timestamp,
    limit: u32,
) -> StoreResult<Vec<(SlackMessage, Approval)>> {
    let approval_columns = qualified("a", APPROVAL_COLUMNS);
    let sql = format!(
        "SELECT {SLACK_MESSAGE_COLUMNS}, {approval_columns}
         FROM slack_messages m JOIN approvals a ON a.id = m.approval_id
         WHERE m.closed_at IS NULL AND m.channel = $3 AND a.status <> 'pending'
           AND (m.claimed_until IS NULL OR m.claimed_until <= $1)
         ORDER BY m.posted_at LIMIT $2"
    );
    let query = sqlx::query(&sql)
        .bind(millis(now))
        .bind(i64::from(limit))
        .bind(channel);
    all(query, readers, |row| {
        Ok((
            slack_message_from_row(row)?,
            crate::codec::approval_from_row(row)?,
        ))
    })
    .await
}

async fn approval_trace(readers: &Pool, approval_id: &str) -> StoreResult<Option<String>> {
    let query = sqlx::query("SELECT traceparent FROM approval_traces WHERE approval_id = $1")
        .bind(approval_id);
    optional(query, readers, |row| {
        crate::codec::Columns::new(row, "approval_traces").text("traceparent")
    })
    .await
}

async fn record_message(conn: &mut Conn, message: &SlackMessage) -> StoreResult<()> {
    let query = sqlx::query(
        "INSERT INTO slack_messages
            (approval_id, channel, workspace, slack_channel, ts, binding_digest, posted_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (approval_id, channel) DO NOTHING",
    )
    .bind(&message.approval_id)
    .bind(&message.channel)
    .bind(&message.workspace)
    .bind(&message.slack_channel)
    .bind(&message.ts)
    .bind(&message.binding_digest)
    .bind(millis(message.posted_at));
    execute(query, &mut *conn).await?;
    Ok(())
}

async fn claim_message(
    conn: &mut Conn,
    approval_id: &str,
    channel: &str,
    now: Timestamp,
    until: Timestamp,
) -> StoreResult<bool> {
    let query = sqlx::query(
        "UPDATE slack_messages SET claimed_until = $1
         WHERE approval_id = $2 AND channel = $3 AND closed_at IS NULL
           AND (claimed_until IS NULL OR claimed_until <= $4)",
    )
    .bind(millis(until))
    .bind(approval_id)
    .bind(channel)
    .bind(millis(now));
    let claimed = execute(query, &mut *conn).await?;
    Ok(claimed.rows_affected() == 1)
}

async fn close_message(
    conn: &mut Conn,
    approval_id: &str,
    channel: &str,
    at: Timestamp,
) -> StoreResult<()> {
    let query = sqlx::query(
        "UPDATE slack_messages SET closed_at = $1
         WHERE approval_id = $2 AND channel = $3 AND closed_at IS NULL",
    )
    .bind(millis(at))
    .bind(approval_id)
    .bind(channel);
    execute(query, &mut *conn).await?;
    Ok(())
}

async fn first_request(
    conn: &mut Conn,
    signature: &str,
    at: Timestamp,
    forget_before: Timestamp,
) -> StoreResult<bool> {
    let query =
        sqlx::query("DELETE FROM slack_requests WHERE seen_at < $1").bind(millis(forget_before));
    execute(query, &mut *conn).await?;
    let query = sqlx::query(
        "INSERT INTO slack_requests (signature, seen_at) VALUES ($1, $2)
         ON CONFLICT (signature) DO NOTHING",
    )
    .bind(signature)
    .bind(millis(at));
    let inserted = execute(query, &mut *conn).await?;
    Ok(inserted.rows_affected() == 1)
}

async fn record_trace(conn: &mut Conn, approval_id: &str, traceparent: &str) -> StoreResult<()> {
    let query = sqlx::query(
        "INSERT INTO approval_traces (approval_id, traceparent) VALUES ($1, $2)
         ON CONFLICT (approval_id) DO NOTHING",
    )
    .bind(approval_id)
    .bind(traceparent);
    execute(query, &mut *conn).await?;
    Ok(())
}
