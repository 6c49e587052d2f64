//! Interactive Slack approvals (issue 20, DESIGN.md §11.7): the `slack` channel posts
//! each approval with Approve / Reject buttons through a Slack app's bot, Slack calls
//! back `POST /v1/integrations/slack/actions` ([`actions`]), and every message is updated
//! to say how its approval ended, whoever ended it.
//!
//! - [`verify`]: Slack's v0 request signature and its 5-minute window.
//! - [`blocks`]: the Block Kit message, its ended form, the reason modal.
//! - [`actions`]: the action endpoint.
//! - this file: the Web API client, posting (a notifier delivery), closing messages.
//!
//! Durable like the rest of the notifier: a posted message is recorded in the store with
//! the binding digest its buttons carry, and the notifier's sweep updates every recorded
//! message whose approval is no longer pending (decided here, in Slack, in the inbox,
//! on another node, expired or cancelled), one node per message (a claim), until Slack
//! accepted the update. A restart between posting and clicking loses nothing.

pub mod actions;
pub mod blocks;
pub mod verify;

use super::config::{Channel, SlackTarget};
use super::payload::Notice;
use super::Notifier;
use airlock_gate::clock::add_seconds;
use airlock_protocol::{Approval, ApprovalStatus};
use airlock_store::{SlackMessage, StoreError};
use serde_json::Value;
use std::time::Duration;

/// How long a node may hold a message while updating it; after that another retries.
const UPDATE_CLAIM: Duration = Duration::from_secs(30);

/// A Slack Web API call that did not succeed: the HTTP status if one came back, and why.
#[derive(Debug, Clone)]
pub struct ApiFailure {
    pub status: Option<u16>,
    pub error: String,
}

/// Calls the Web API `method` with a JSON body as the bot. Slack answers 200 with
/// `{"ok": false, "error": …}` for most failures, so `ok` is what counts.
pub async fn call(
    http: &reqwest::Client,
    target: &SlackTarget,
    method: &str,
    body: &Value,
) -> Result<Value, ApiFailure> {
    let response = http
        .post(format!("{}/{method}", target.api_url))
        .bearer_auth(&target.bot_token)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/json; charset=utf-8",
        )
        .body(body.to_string())
        .send()
        .await
        .map_err(|error| ApiFailure {
            status: None,
            error: error.without_url().to_string(),
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(ApiFailure {
            status: Some(status.as_u16()),
            error: format!("{method}: HTTP {status}"),
        });
    }
    let answer: Value = response.json().await.map_err(|error| ApiFailure {
        status: Some(status.as_u16()),
        error: format!("{method}: the answer is not JSON: {}", error.without_url()),
    })?;
    if answer.get("ok") == Some(&Value::Bool(true)) {
        Ok(answer)
    } else {
        let reason = answer
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("no error given");
        Err(ApiFailure {
            status: Some(status.as_u16()),
            error: format!("{method}: {reason}"),
        })
    }
}

impl Notifier {
    /// Delivers a notice to Slack: posts the message with buttons and records where it
    /// went. `(status, error)` as for any delivery.
    pub(super) async fn post_slack(
        &self,
        workspace: &str,
        channel: &Channel,
        target: &SlackTarget,
        notice: &Notice<'_>,
    ) -> (Option<u16>, Option<String>) {
        let body = blocks::pending(&target.channel, notice);
        let answer = match call(&self.http, target, "chat.postMessage", &body).await {
            Ok(answer) => answer,
            Err(failure) => return (failure.status, Some(failure.error)),
        };
        let text = |key: &str| answer.get(key).and_then(Value::as_str).map(str::to_owned);
        let (Some(slack_channel), Some(ts)) = (text("channel"), text("ts")) else {
            return (
                Some(200),
                Some("chat.postMessage: the answer names no channel and ts".into()),
            );
        };
        let message = SlackMessage {
            approval_id: notice.approval.id.clone(),
            channel: channel.name.clone(),
            workspace: workspace.to_owned(),
            slack_channel,
            ts,
            binding_digest: notice.approval.binding_digest.clone(),
            posted_at: self.gate.now(),
            closed_at: None,
        };
        match self
            .gate
            .notifications()
            .record_slack_message(&message)
            .await
        {
            Ok(()) => (Some(200), None),
            // Posted but not recorded: a retry posts again (at least once), and only the
            // recorded message's buttons work.
            Err(error) => (Some(200), Some(format!("recording the message: {error}"))),
        }
    }

    /// Updates every recorded message whose approval ended and that no node holds.
    pub(super) async fn close_ended_slack_messages(&self) -> Result<(), StoreError> {
        let Some((channel, _)) = self.settings.slack() else {
            return Ok(());
        };
        let ended = self
            .gate
            .notifications()
            .slack_messages_to_close(&channel.name, self.gate.now(), super::BATCH)
            .await?;
        for (message, approval) in ended {
            self.close_slack_message(&message, &approval).await?;
        }
        Ok(())
    }

    /// Updates one message to say how its approval ended (buttons gone), once: claims it,
    /// calls `chat.update`, marks it closed. Returns whether this call updated it. A
    /// failed update is retried by a later sweep once the claim lapses.
    pub async fn close_slack_message(
        &self,
        message: &SlackMessage,
        approval: &Approval,
    ) -> Result<bool, StoreError> {
        if approval.status == ApprovalStatus::Pending {
            return Ok(false);
        }
        let Some((_, target)) = self.settings.slack() else {
            return Ok(false);
        };
        let store = self.gate.notifications();
        let now = self.gate.now();
        let until = add_seconds(now, UPDATE_CLAIM.as_secs());
        if !store
            .claim_slack_message(&message.approval_id, &message.channel, now, until)
            .await?
        {
            return Ok(false);
        }
        let agent = store
            .agent(&message.workspace, &approval.agent_id)
            .await?
            .map_or_else(|| approval.agent_id.clone(), |agent| agent.name);
        let who = match approval
            .decided_by
            .as_deref()
            .and_then(|by| by.strip_prefix("user:"))
        {
            Some(user_id) => store
                .users(&message.workspace)
                .await?
                .into_iter()
                .find(|user| user.id == user_id)
                .map(|user| user.name),
            None => None,
        };
        let body = blocks::ended(
            &message.slack_channel,
            &message.ts,
            &agent,
            approval,
            who.as_deref(),
        );
        match call(&self.http, target, "chat.update", &body).await {
            Ok(_) => {
                store
                    .close_slack_message(&message.approval_id, &message.channel, self.gate.now())
                    .await?;
                Ok(true)
            }
            Err(failure) => {
                tracing::warn!(
                    approval = %message.approval_id,
                    error = %failure.error,
                    "slack: the message could not be updated; retrying later"
                );
                Ok(false)
            }
        }
    }
}
