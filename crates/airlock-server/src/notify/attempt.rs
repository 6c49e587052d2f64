//! One delivery attempt: claim the notification, read its approval back, build its link
//! and message, send it within the configured `timeout`, record what happened; and the
//! counters of attempts by channel and outcome that `/metrics` shows
//! (`airlock_notifications_total`), so that a channel that gave up is seen.

use super::config::{Channel, Target, WebhookFormat};
use super::payload::{self, Notice};
use super::{add_millis, duration_millis, link_key, sign, Notifier, CLAIM};
use crate::web::approval_page_url;
use airlock_gate::clock::add_seconds;
use airlock_protocol::{Approval, ApprovalStatus};
use airlock_store::{Notification, NotificationAttempt, NotificationOutcome, StoreError};
use jiff::Timestamp;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Mutex, PoisonError};

/// Attempts by channel and outcome (`delivered`, `failed`: to be retried, `gave_up`: the
/// last one failed too, nobody was told on that channel).
#[derive(Debug, Default)]
pub struct Counters(Mutex<BTreeMap<(String, &'static str), u64>>);

impl Counters {
    fn count(&self, channel: &str, outcome: &'static str) {
        let mut counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *counts.entry((channel.to_owned(), outcome)).or_default() += 1;
    }

    /// How many attempts on `channel` ended with `outcome`.
    pub fn get(&self, channel: &str, outcome: &'static str) -> u64 {
        let counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        counts
            .get(&(channel.to_owned(), outcome))
            .copied()
            .unwrap_or(0)
    }

    /// The Prometheus text of the counters.
    pub fn render(&self, out: &mut String) {
        let counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(
            out,
            "# HELP airlock_notifications_total Notification delivery attempts, by channel and \
             outcome (gave_up: the last attempt failed and no more are made)."
        );
        let _ = writeln!(out, "# TYPE airlock_notifications_total counter");
        for ((channel, outcome), count) in counts.iter() {
            let _ = writeln!(
                out,
                "airlock_notifications_total{{channel=\"{}\",outcome=\"{outcome}\"}} {count}",
                label(channel)
            );
        }
    }
}

/// A label value as Prometheus's text format writes it.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Notifier {
    /// Claims `notification`, makes one attempt and records it.
    /// Returns when it is to be retried, if it is.
    pub(super) async fn attempt(
        &self,
        notification: Notification,
    ) -> Result<Option<Timestamp>, StoreError> {
        let store = self.gate.notifications();
        let now = self.gate.now();
        let until = add_seconds(now, CLAIM.as_secs());
        if !store
            .claim_notification(&notification.id, now, until)
            .await?
        {
            return Ok(None);
        }
        let skip = |reason: String| NotificationOutcome::Skipped(reason);
        let Some(channel) = self
            .settings
            .channels
            .iter()
            .find(|c| c.name == notification.channel)
        else {
            let outcome = skip("the channel is no longer configured".into());
            store
                .record_notification(&notification.id, None, &outcome)
                .await?;
            return Ok(None);
        };
        let approval = store
            .approval(&notification.workspace, &notification.approval_id)
            .await?;
        let approval = match approval {
            Some(approval) if approval.status == ApprovalStatus::Pending => approval,
            Some(approval) => {
                let outcome = skip(format!(
                    "the approval is already {}",
                    approval.status.as_str()
                ));
                store
                    .record_notification(&notification.id, None, &outcome)
                    .await?;
                return Ok(None);
            }
            None => {
                let outcome = skip("the approval is gone".into());
                store
                    .record_notification(&notification.id, None, &outcome)
                    .await?;
                return Ok(None);
            }
        };
        let (link, signs_in) = self.link(&notification, channel, &approval).await?;
        let agent = store
            .agent(&notification.workspace, &approval.agent_id)
            .await?
            .map_or_else(|| approval.agent_id.clone(), |agent| agent.name);
        let notice = Notice {
            delivery: &notification.id,
            approval: &approval,
            agent: &agent,
            link: &link,
            signs_in,
        };
        // Whatever the channel, an attempt ends within `timeout` (an SMTP server that
        // accepts and never answers, a Slack that hangs): a failed attempt, retried.
        let timeout = self.settings.timeout;
        let sent = tokio::time::timeout(
            timeout,
            self.send(&notification.workspace, channel, &notice),
        )
        .await;
        let (status_code, error) = sent.unwrap_or_else(|_| {
            (
                None,
                Some(format!("no answer within {} s", timeout.as_secs_f64())),
            )
        });
        let attempt = NotificationAttempt {
            at: self.gate.now(),
            status_code,
            error: error.clone(),
        };
        let failures = notification.attempts.saturating_add(1);
        let outcome = match &error {
            None => NotificationOutcome::Delivered,
            Some(_) if failures >= self.settings.retry.attempts => NotificationOutcome::GaveUp,
            Some(_) => {
                let delay = self.settings.retry.delay(failures);
                NotificationOutcome::RetryAt(add_millis(attempt.at, duration_millis(delay)))
            }
        };
        match (&error, &outcome) {
            (None, _) => tracing::info!(
                notification = %notification.id,
                channel = %channel.name,
                approval = %approval.id,
                "notifications: delivered"
            ),
            (Some(error), NotificationOutcome::GaveUp) => tracing::error!(
                notification = %notification.id,
                channel = %channel.name,
                approval = %approval.id,
                attempts = failures,
                %error,
                "notifications: gave up: every attempt failed, nobody was told on this channel"
            ),
            (Some(error), _) => tracing::warn!(
                notification = %notification.id,
                channel = %channel.name,
                attempt = failures,
                %error,
                "notifications: delivery failed; retrying later"
            ),
        }
        self.counters.count(
            &channel.name,
            match outcome {
                NotificationOutcome::Delivered => "delivered",
                NotificationOutcome::GaveUp => "gave_up",
                _ => "failed",
            },
        );
        store
            .record_notification(&notification.id, Some(&attempt), &outcome)
            .await?;
        Ok(match outcome {
            NotificationOutcome::RetryAt(at) => Some(at),
            _ => None,
        })
    }

    /// The link the notification carries: signed for the channel's user when it has one
    /// that exists in the approval's workspace (only an email recipient bound to their
    /// own user has one: `config::Channel::user`), else the plain approval page, which
    /// asks whoever opens it to sign in as themselves. The nonce is the notification's
    /// id, so retries carry the same link.
    async fn link(
        &self,
        notification: &Notification,
        channel: &Channel,
        approval: &Approval,
    ) -> Result<(String, bool), StoreError> {
        let plain = approval_page_url(&self.base_url, &approval.id);
        let Some(user_name) = &channel.user else {
            return Ok((plain, false));
        };
        let users = self
            .gate
            .notifications()
            .users(&notification.workspace)
            .await?;
        let matching: Vec<_> = users.iter().filter(|u| &u.name == user_name).collect();
        let [user] = matching[..] else {
            tracing::warn!(
                channel = %channel.name,
                user = %user_name,
                "notifications: the channel's user is not one user of the workspace; \
                 sending the plain approval link"
            );
            return Ok((plain, false));
        };
        let ttl = add_seconds(notification.created_at, self.settings.link_ttl.as_secs());
        let claims = sign::LinkClaims {
            workspace: notification.workspace.clone(),
            approval_id: approval.id.clone(),
            user_id: user.id.clone(),
            expires_at: ttl.min(approval.deadline),
            nonce: notification.id.clone(),
        };
        let key = self.key.get_or_try_init(|| link_key(&self.gate)).await?;
        Ok(match sign::link_token(key.as_bytes(), &claims) {
            Some(token) => (format!("{}/l/{token}", self.base_url), true),
            None => (plain, false),
        })
    }

    /// Sends one notice; `(status code, error)`, no error when the channel accepted it.
    async fn send(
        &self,
        workspace: &str,
        channel: &Channel,
        notice: &Notice<'_>,
    ) -> (Option<u16>, Option<String>) {
        match &channel.target {
            Target::Slack(slack) => self.post_slack(workspace, channel, slack, notice).await,
            Target::Webhook {
                url,
                format,
                secret,
            } => {
                let body = match format {
                    WebhookFormat::Json => payload::webhook_json(notice),
                    WebhookFormat::Slack => payload::slack(notice),
                };
                let body = body.to_string().into_bytes();
                let timestamp = self.gate.now().as_second();
                let mut request = self
                    .http
                    .post(url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .header("x-airlock-event", payload::EVENT)
                    .header("x-airlock-delivery", notice.delivery)
                    .header("x-airlock-timestamp", timestamp.to_string());
                if let Some(key) = secret {
                    request = request.header(
                        "x-airlock-signature",
                        sign::webhook_signature(key, timestamp, &body),
                    );
                }
                match request.body(body).send().await {
                    Ok(response) if response.status().is_success() => {
                        (Some(response.status().as_u16()), None)
                    }
                    Ok(response) => {
                        let status = response.status();
                        (Some(status.as_u16()), Some(format!("HTTP {status}")))
                    }
                    // Without the URL: it may carry a token (Slack's do).
                    Err(error) => (None, Some(error.without_url().to_string())),
                }
            }
            Target::Email { to, smtp } => {
                let (subject, body) = payload::email(notice);
                let effect = airlock_tools::OutboxEffect {
                    kind: "email".into(),
                    recipient: to.clone(),
                    payload: serde_json::json!({"to": to, "subject": subject, "body": body}),
                };
                match airlock_tools::deliver_email_within(smtp, &effect, self.settings.timeout)
                    .await
                {
                    Ok(()) => (None, None),
                    Err(error) => (None, Some(error.to_string())),
                }
            }
        }
    }
}
