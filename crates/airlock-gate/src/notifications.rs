//! [`Notifications`]: what the server's notifier may read and write, and nothing else.
//!
//! The notifier is a background task of the server, not a request: it acts for no
//! principal, across every workspace. Like the runtime it gets a capability from the
//! gate instead of the store: the notification queue and its attempts, the link-signing
//! secret, and the few reads a notice is written from (the approval, its agent's name,
//! the users a channel may sign in as). It cannot decide, redeem or change anything else.
//! The integrations (issue 20) use it too: the Slack messages it posted and the requests
//! Slack made, and the trace context of asked calls. A Slack decision itself goes through
//! `Gate::decide` as the mapped user, like any other.

use crate::Gate;
use airlock_protocol::{Agent, Approval, User};
use airlock_store::{
    NewNotification, Notification, NotificationAttempt, NotificationOutcome, SlackMessage, Store,
    StoreResult,
};
use jiff::Timestamp;
use std::sync::Arc;

/// The notifier's handle. Cheap to clone.
#[derive(Clone)]
pub struct Notifications {
    store: Arc<dyn Store>,
}

impl Gate {
    /// The handle for the server's notifier (see [`Notifications`]).
    pub fn notifications(&self) -> Notifications {
        Notifications {
            store: Arc::clone(&self.inner.store),
        }
    }
}

impl Notifications {
    /// The server secret named `name`, or `candidate` stored now when there is none.
    pub async fn server_secret(
        &self,
        name: &str,
        candidate: &str,
        at: Timestamp,
    ) -> StoreResult<String> {
        self.store.server_secret(name, candidate, at).await
    }

    pub async fn approvals_to_notify(
        &self,
        channels: &[String],
        since: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(String, Approval)>> {
        self.store.approvals_to_notify(channels, since, limit).await
    }

    pub async fn enqueue_notifications(
        &self,
        workspace: &str,
        items: &[NewNotification],
    ) -> StoreResult<u32> {
        self.store.enqueue_notifications(workspace, items).await
    }

    pub async fn notifications_due(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<Notification>> {
        self.store.notifications_due(now, limit).await
    }

    pub async fn claim_notification(
        &self,
        id: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        self.store.claim_notification(id, now, until).await
    }

    pub async fn record_notification(
        &self,
        id: &str,
        attempt: Option<&NotificationAttempt>,
        outcome: &NotificationOutcome,
    ) -> StoreResult<()> {
        self.store.record_notification(id, attempt, outcome).await
    }

    /// The approval a notification is about.
    pub async fn approval(&self, workspace: &str, id: &str) -> StoreResult<Option<Approval>> {
        self.store.get_approval(workspace, id).await
    }

    /// The agent an approval's call came from (the notice names it).
    pub async fn agent(&self, workspace: &str, id: &str) -> StoreResult<Option<Agent>> {
        self.store.get_agent(workspace, id).await
    }

    /// The users of a workspace (a channel's `user` must be one of them to get a signed
    /// link).
    pub async fn users(&self, workspace: &str) -> StoreResult<Vec<User>> {
        self.store.list_users(workspace).await
    }

    /// Records a message posted to Slack (the first record of an approval and channel
    /// stays).
    pub async fn record_slack_message(&self, message: &SlackMessage) -> StoreResult<()> {
        self.store.record_slack_message(message).await
    }

    pub async fn slack_message(
        &self,
        approval_id: &str,
        channel: &str,
    ) -> StoreResult<Option<SlackMessage>> {
        self.store.slack_message(approval_id, channel).await
    }

    pub async fn slack_messages_to_close(
        &self,
        channel: &str,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(SlackMessage, Approval)>> {
        self.store
            .slack_messages_to_close(channel, now, limit)
            .await
    }

    pub async fn claim_slack_message(
        &self,
        approval_id: &str,
        channel: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        self.store
            .claim_slack_message(approval_id, channel, now, until)
            .await
    }

    pub async fn close_slack_message(
        &self,
        approval_id: &str,
        channel: &str,
        at: Timestamp,
    ) -> StoreResult<()> {
        self.store
            .close_slack_message(approval_id, channel, at)
            .await
    }

    /// `true` the first time a verified Slack request's signature is seen.
    pub async fn first_slack_request(
        &self,
        signature: &str,
        at: Timestamp,
        forget_before: Timestamp,
    ) -> StoreResult<bool> {
        self.store
            .first_slack_request(signature, at, forget_before)
            .await
    }

    pub async fn record_approval_trace(
        &self,
        approval_id: &str,
        traceparent: &str,
    ) -> StoreResult<()> {
        self.store
            .record_approval_trace(approval_id, traceparent)
            .await
    }

    pub async fn approval_trace(&self, approval_id: &str) -> StoreResult<Option<String>> {
        self.store.approval_trace(approval_id).await
    }
}
