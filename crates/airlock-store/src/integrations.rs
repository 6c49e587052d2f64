//! Storage for the server's integrations (issue 20): the Slack messages that carry
//! Approve / Reject buttons, the signatures of Slack requests already acted on, and the
//! trace context of asked calls.
//!
//! [`IntegrationStore`] is a supertrait of [`crate::Store`], so every backend implements
//! it (once, in `sql/integrations.rs`, from the list `integration_operations!` below) and
//! every `dyn Store` offers it.
//!
//! INVARIANT: everything a Slack action needs is here, never in a node's memory: a
//! message's address and the binding digest its buttons showed are recorded before it
//! can be clicked, a request's signature is recorded before its decision is made (a
//! replay finds it and is refused), and a message is claimed by one node before it is
//! updated.

use crate::StoreResult;
use airlock_protocol::Approval;
use jiff::Timestamp;

/// A message the notifier posted to Slack for an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackMessage {
    pub approval_id: String,
    /// The channel's name in the server's configuration.
    pub channel: String,
    pub workspace: String,
    /// Slack's id of the conversation the message is in (`C0123…`).
    pub slack_channel: String,
    /// Slack's timestamp of the message: its id within the conversation.
    pub ts: String,
    /// The approval's binding digest as the message showed it; a decision echoes it.
    pub binding_digest: String,
    pub posted_at: Timestamp,
    /// When it was updated to say how the approval ended.
    pub closed_at: Option<Timestamp>,
}

/// The operations of [`IntegrationStore`], listed once: `operations.rs` says how an entry
/// becomes a method of the trait and of each backend's implementation.
macro_rules! integration_operations {
    ($then:ident $($args:tt)*) => { $then! { $($args)*
        /// Records a posted message; a second record of one approval and channel keeps the
        /// first.
        async fn record_slack_message(&self, message: &SlackMessage) -> StoreResult<()>
            = write record_message(message);

        /// The message of `approval_id` on `channel`, if one was posted.
        async fn slack_message(
            &self,
            approval_id: &str,
            channel: &str,
        ) -> StoreResult<Option<SlackMessage>>
            = read slack_message(approval_id, channel);

        /// Open messages on `channel` whose approval is no longer pending and that no node
        /// holds at `now`, with the approval as it ended, oldest first, at most `limit`.
        async fn slack_messages_to_close(
            &self,
            channel: &str,
            now: Timestamp,
            limit: u32,
        ) -> StoreResult<Vec<(SlackMessage, Approval)>>
            = read slack_messages_to_close(channel, now, limit);

        /// Claims an open message for one update until `until`: of several nodes, one gets
        /// `true`; a node that dies mid-update leaves it to another after `until`.
        async fn claim_slack_message(
            &self,
            approval_id: &str,
            channel: &str,
            now: Timestamp,
            until: Timestamp,
        ) -> StoreResult<bool>
            = write claim_message(approval_id, channel, now, until);

        /// Marks a message updated for good.
        async fn close_slack_message(
            &self,
            approval_id: &str,
            channel: &str,
            at: Timestamp,
        ) -> StoreResult<()>
            = write close_message(approval_id, channel, at);

        /// Records the signature of a verified Slack request at `at`: `true` the first time,
        /// `false` for a replay. Forgets signatures seen before `forget_before`.
        async fn first_slack_request(
            &self,
            signature: &str,
            at: Timestamp,
            forget_before: Timestamp,
        ) -> StoreResult<bool>
            = write first_request(signature, at, forget_before);

        /// Keeps the `traceparent` of an asked call's span (the first one recorded stays).
        async fn record_approval_trace(
            &self,
            approval_id: &str,
            traceparent: &str,
        ) -> StoreResult<()>
            = write record_trace(approval_id, traceparent);

        /// The `traceparent` kept for an approval's call, if any.
        async fn approval_trace(&self, approval_id: &str) -> StoreResult<Option<String>>
            = read approval_trace(approval_id);
    } };
}

integration_operations!(declare [
    /// The integration half of the store. Every method is one transaction.
    pub trait IntegrationStore: Send + Sync
] {});

pub(crate) const SLACK_MESSAGE_COLUMNS: &str = "m.approval_id, m.channel, m.workspace, \
     m.slack_channel, m.ts, m.binding_digest AS shown_digest, m.posted_at, m.closed_at";
// `shown_digest`: the approvals table has a `binding_digest` too, and both are read from
// one row when a message is listed with its approval.

pub(crate) fn slack_message_from_row<R: crate::codec::RawRow>(
    row: &R,
) -> StoreResult<SlackMessage> {
    let columns = crate::codec::Columns::new(row, "slack_messages");
    Ok(SlackMessage {
        approval_id: columns.text("approval_id")?,
        channel: columns.text("channel")?,
        workspace: columns.text("workspace")?,
        slack_channel: columns.text("slack_channel")?,
        ts: columns.text("ts")?,
        binding_digest: columns.text("shown_digest")?,
        posted_at: columns.time("posted_at")?,
        closed_at: columns.opt_time("closed_at")?,
    })
}
