//! Storage for notifications (the server's `notify` module): which channel was told
//! about which pending approval, every delivery attempt, the nonces of signed links that
//! were used, and the server's link-signing secret.
//!
//! [`NotifyStore`] is a supertrait of [`crate::Store`], so every backend implements it
//! (once, in `sql/notify.rs`, from the list `notify_operations!` below) and every
//! `dyn Store` offers it.
//!
//! INVARIANT: enqueueing is idempotent (one row per approval and channel), claiming is a
//! conditional update that exactly one node wins, and a used link's nonce is inserted in
//! the same transaction as the web session it opens, after checking in that transaction
//! that its approval is still pending: a link signs in at most once, and never after its
//! approval was decided.

use crate::{Effects, StoreError, StoreResult, WebSession};
use airlock_protocol::Approval;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// Where a notification stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationStatus {
    /// Waiting for its next attempt at `next_at`.
    Pending,
    /// The channel accepted it.
    Delivered,
    /// Never sent: the channel's filter left it out, or the approval was no longer
    /// pending when its turn came (`last_error` says which).
    Skipped,
    /// Every attempt failed; no more are made.
    GaveUp,
}

/// A notification to enqueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNotification {
    pub id: String,
    pub approval_id: String,
    /// The channel's name in the configuration (`webhooks[0]`, `email:alice@acme.test`…).
    pub channel: String,
    /// `Pending`, or `Skipped` for one its channel's filter leaves out (recorded so that
    /// the approval is not considered again).
    pub status: NotificationStatus,
    /// Why it was skipped.
    pub note: Option<String>,
    pub created_at: Timestamp,
}

/// One notification as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub id: String,
    pub workspace: String,
    pub approval_id: String,
    pub channel: String,
    pub status: NotificationStatus,
    pub attempts: u32,
    pub next_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
}

/// One delivery attempt: when, and what came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationAttempt {
    pub at: Timestamp,
    /// The HTTP status a webhook answered with (none for SMTP or a connection error).
    pub status_code: Option<u16>,
    /// What went wrong; `None` for a delivered attempt.
    pub error: Option<String>,
}

/// What becomes of a notification after an attempt (or instead of one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotificationOutcome {
    Delivered,
    /// Failed; try again at this time.
    RetryAt(Timestamp),
    /// Failed for the last time.
    GaveUp,
    /// Not sent, for this reason (the approval stopped pending).
    Skipped(String),
}

/// A signed link being used: who it signs in, for which approval, until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkUse {
    pub nonce: String,
    pub approval_id: String,
    pub user_id: String,
    pub used_at: Timestamp,
    /// The link's own expiry (the nonce is kept until then).
    pub expires_at: Timestamp,
}

/// Why a link did not sign anyone in. Each refusal writes nothing.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("this link was already used")]
    AlreadyUsed,
    /// The link's user is gone from the workspace, or holds no unrevoked token.
    #[error("the link's user cannot sign in")]
    UnknownUser,
    /// The link's approval is no longer pending (its status): the link was for deciding
    /// it, and that is over.
    #[error("the approval is already {0}")]
    NotPending(String),
    /// The link names no approval of its workspace.
    #[error("the link's approval does not exist")]
    NoApproval,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The operations of [`NotifyStore`], listed once: `operations.rs` says how an entry
/// becomes a method of the trait and of each backend's implementation.
macro_rules! notify_operations {
    ($then:ident $($args:tt)*) => { $then! { $($args)*
        /// The server secret named `name`: the stored one, or `candidate` after storing it
        /// when there is none yet (of several nodes starting at once, the first one's wins).
        async fn server_secret(
            &self,
            name: &str,
            candidate: &str,
            at: Timestamp,
        ) -> StoreResult<String>
            = write server_secret(name, candidate, at);

        /// Pending approvals of every workspace created at or after `since` that have no
        /// notification yet on at least one of `channels`, newest first, at most `limit`,
        /// with their workspace.
        async fn approvals_to_notify(
            &self,
            channels: &[String],
            since: Timestamp,
            limit: u32,
        ) -> StoreResult<Vec<(String, Approval)>>
            = read approvals_to_notify(channels, since, limit);

        /// Inserts the notifications an approval of `workspace` lacks; those whose approval
        /// and channel already have one are left as they are. A pending one is due at its
        /// `created_at`. Returns how many were inserted.
        async fn enqueue_notifications(
            &self,
            workspace: &str,
            items: &[NewNotification],
        ) -> StoreResult<u32>
            = write enqueue(workspace, items);

        /// Pending notifications of every workspace due at `now`, oldest due first, at most
        /// `limit`.
        async fn notifications_due(&self, now: Timestamp, limit: u32)
            -> StoreResult<Vec<Notification>>
            = read notifications_due(now, limit);

        /// Claims a notification for one attempt: moves its `next_at` to `until` if it is
        /// pending and due at `now`. Of several nodes claiming it, exactly one gets `true`; a
        /// node that dies mid-attempt leaves it to be retried at `until`.
        async fn claim_notification(
            &self,
            id: &str,
            now: Timestamp,
            until: Timestamp,
        ) -> StoreResult<bool>
            = write claim(id, now, until);

        /// Records an attempt (when one was made) and what follows from it. A notification
        /// that is not pending any more is left as it is.
        async fn record_notification(
            &self,
            id: &str,
            attempt: Option<&NotificationAttempt>,
            outcome: &NotificationOutcome,
        ) -> StoreResult<()>
            = write record(id, attempt, outcome);

        /// The notifications of an approval with their attempts, by channel.
        async fn approval_notifications(
            &self,
            workspace: &str,
            approval_id: &str,
        ) -> StoreResult<Vec<(Notification, Vec<NotificationAttempt>)>>
            = read approval_notifications(workspace, approval_id);

        /// Uses a signed link, in one transaction: checks that its approval is still
        /// pending (`NotPending`, or `NoApproval` when there is none), records its nonce
        /// (refused with `AlreadyUsed` if it was used before), and opens `session` as the link's user,
        /// through the user's newest unrevoked token (`UnknownUser` when there is none);
        /// `session.token_hash` is chosen here. Appends `effects`. Also forgets the nonces of
        /// links that expired before `link.used_at`. Returns the session as stored.
        async fn use_link(
            &self,
            workspace: &str,
            link: &LinkUse,
            session: &WebSession,
            effects: &Effects,
        ) -> Result<WebSession, LinkError>
            = write use_link(workspace, link, session, effects);
    } };
}

notify_operations!(declare [
    /// The notification half of the store. Every method is one transaction.
    pub trait NotifyStore: Send + Sync
] {});

// ---------------------------------------------------------------- shared by the backends

pub(crate) const NOTIFICATION_COLUMNS: &str = "id, workspace, approval_id, channel, status, \
     attempts, next_at, delivered_at, last_error, created_at";

pub(crate) fn notification_from_row<R: crate::codec::RawRow>(row: &R) -> StoreResult<Notification> {
    let columns = crate::codec::Columns::new(row, "notifications");
    Ok(Notification {
        id: columns.text("id")?,
        workspace: columns.text("workspace")?,
        approval_id: columns.text("approval_id")?,
        channel: columns.text("channel")?,
        status: columns.enumeration("status")?,
        attempts: u32::try_from(columns.unsigned("attempts")?).unwrap_or(u32::MAX),
        next_at: columns.time("next_at")?,
        delivered_at: columns.opt_time("delivered_at")?,
        last_error: columns.opt_text("last_error")?,
        created_at: columns.time("created_at")?,
    })
}

pub(crate) fn attempt_from_row<R: crate::codec::RawRow>(
    row: &R,
) -> StoreResult<NotificationAttempt> {
    let columns = crate::codec::Columns::new(row, "notification_attempts");
    Ok(NotificationAttempt {
        at: columns.time("at")?,
        status_code: columns
            .opt_int("status_code")?
            .and_then(|code| u16::try_from(code).ok()),
        error: columns.opt_text("error")?,
    })
}

/// The columns an outcome sets: `(status, delivered_at, next_at, last_error)`; `None`
/// keeps the column as it is (`COALESCE`).
pub(crate) fn outcome_columns(
    attempt: Option<&NotificationAttempt>,
    outcome: &NotificationOutcome,
) -> (
    &'static str,
    Option<Timestamp>,
    Option<Timestamp>,
    Option<String>,
) {
    let error = attempt.and_then(|attempt| attempt.error.clone());
    match outcome {
        NotificationOutcome::Delivered => (
            "delivered",
            Some(attempt.map_or_else(Timestamp::now, |a| a.at)),
            None,
            None,
        ),
        NotificationOutcome::RetryAt(at) => ("pending", None, Some(*at), error),
        NotificationOutcome::GaveUp => ("gave_up", None, None, error),
        NotificationOutcome::Skipped(reason) => ("skipped", None, None, Some(reason.clone())),
    }
}
