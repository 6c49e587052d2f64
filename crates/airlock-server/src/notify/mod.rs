//! Notifications (issue 7): when an approval is created, each configured channel
//! (webhook, Slack-compatible webhook, email) is told once, with a signed, single-use,
//! expiring link that signs the person in and opens the approval page.
//!
//! - [`config`]: the server config file and its resolution into [`config::Settings`].
//! - [`sign`]: HMAC-SHA256, the webhook signature, link tokens.
//! - [`payload`]: the webhook JSON, Slack and email shapes.
//! - [`slack`]: interactive Slack approvals (buttons, the action endpoint, updates).
//! - [`Notifier`] (this file): the sweeper that enqueues and delivers.
//!
//! Durable by construction: nothing is sent from the request that created the approval.
//! The sweeper finds pending approvals that lack a notification on some channel
//! (`NotifyStore::approvals_to_notify`), enqueues one row per approval and channel
//! (idempotent), and delivers the due rows, each attempt claimed by one node
//! (`claim_notification`) and recorded (`record_notification`). It wakes on every
//! workspace event the gate announces (here or, on PostgreSQL, from another node), so a
//! new approval is notified at once, when its earliest retry is due, and once a second
//! otherwise (the backstop for a node that died between committing an approval and
//! notifying it, and for retries scheduled by another node).
//!
//! INVARIANT: delivery happens only after the approval committed (it is read back from
//! the store), at least once per approval and channel while the approval is pending; a
//! receiver deduplicates on the `delivery` id. Secrets (the link key, webhook keys) are
//! never logged.

pub mod config;
pub mod payload;
pub mod sign;
pub mod slack;

use crate::web::approval_page_url;
use airlock_gate::clock::add_seconds;
use airlock_gate::ids::new_id;
use airlock_gate::Gate;
use airlock_protocol::{Approval, ApprovalStatus};
use airlock_store::{
    NewNotification, Notification, NotificationAttempt, NotificationOutcome, NotificationStatus,
    StoreError,
};
use config::{Channel, Settings, Target, WebhookFormat};
use jiff::Timestamp;
use payload::Notice;
use rand::RngCore;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Approvals older than this are not notified any more (a channel added to the config
/// does not flood its receiver with the whole backlog).
pub const BACKSTOP_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// How often the sweeper looks when nothing woke it.
const TICK: Duration = Duration::from_secs(1);

/// How long one attempt may hold its claim; a node that dies mid-attempt leaves the
/// notification to another node after this.
const CLAIM: Duration = Duration::from_secs(120);

/// How long a webhook may take to answer.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// Rows looked at per sweep.
const BATCH: u32 = 64;

/// The sweeper. Cheap to clone.
#[derive(Clone)]
pub struct Notifier {
    gate: Gate,
    settings: Arc<Settings>,
    /// Where links point when `public_url` is not set: the server's own address.
    base_url: String,
    http: reqwest::Client,
    /// The link-signing key, read (or made) on first use.
    key: Arc<tokio::sync::OnceCell<String>>,
}

impl Notifier {
    /// The resolved configuration it sends by.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn new(gate: Gate, settings: Settings, base_url: &str) -> Result<Notifier, String> {
        let http = reqwest::Client::builder()
            .timeout(WEBHOOK_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| format!("cannot build the webhook client: {error}"))?;
        let base_url = settings
            .public_url
            .clone()
            .unwrap_or_else(|| base_url.trim_end_matches('/').to_owned());
        Ok(Notifier {
            gate,
            settings: Arc::new(settings),
            base_url,
            http,
            key: Arc::default(),
        })
    }

    /// Runs until `shutdown`: sweeps at once, then whenever the gate announces events
    /// and at least every second.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut pokes = self.gate.subscribe();
        tracing::info!(
            channels = self.settings.channels.len(),
            "notifications: sending to the configured channels"
        );
        // The earliest retry scheduled by this node that no sweep has reached yet.
        let mut next_retry: Option<Timestamp> = None;
        loop {
            let started = self.gate.now();
            // A retry due by `started` was visible to this sweep's query for due rows.
            next_retry = next_retry.filter(|at| *at > started);
            match self.sweep().await {
                Ok(Some(at)) => next_retry = Some(next_retry.map_or(at, |next| next.min(at))),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, "notifications: a sweep failed; trying again");
                }
            }
            // Sleep until that retry is due, a second at most.
            let pause = next_retry.map_or(TICK, |at| {
                let wait = at.as_millisecond() - self.gate.now().as_millisecond();
                Duration::from_millis(u64::try_from(wait).unwrap_or(0)).min(TICK)
            });
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = pokes.recv() => {}
                _ = tokio::time::sleep(pause) => {}
            }
            // One sweep covers every event announced so far (also a lagged receiver's):
            // drop the pokes queued while this one slept or swept.
            while !matches!(
                pokes.try_recv(),
                Err(tokio::sync::broadcast::error::TryRecvError::Empty
                    | tokio::sync::broadcast::error::TryRecvError::Closed)
            ) {}
        }
    }

    /// One pass: enqueue what lacks a notification, deliver what is due. Returns the
    /// earliest retry it scheduled, so that the loop wakes for it.
    pub async fn sweep(&self) -> Result<Option<Timestamp>, StoreError> {
        self.enqueue().await?;
        self.close_ended_slack_messages().await?;
        let now = self.gate.now();
        let due = self
            .gate
            .notifications()
            .notifications_due(now, BATCH)
            .await?;
        let attempts = due.into_iter().map(|notification| {
            let notifier = self.clone();
            async move {
                match notifier.attempt(notification).await {
                    Ok(retry_at) => retry_at,
                    Err(error) => {
                        tracing::warn!(%error, "notifications: an attempt could not be recorded");
                        None
                    }
                }
            }
        });
        let retries = futures::future::join_all(attempts).await;
        Ok(retries.into_iter().flatten().min())
    }

    async fn enqueue(&self) -> Result<(), StoreError> {
        let store = self.gate.notifications();
        let now = self.gate.now();
        let names: Vec<String> = self
            .settings
            .channels
            .iter()
            .map(|c| c.name.clone())
            .collect();
        let since = add_millis(now, -duration_millis(BACKSTOP_WINDOW));
        for (workspace, approval) in store.approvals_to_notify(&names, since, BATCH).await? {
            let items: Vec<NewNotification> = self
                .settings
                .channels
                .iter()
                .map(|channel| {
                    let filtered = channel.min_risk.filter(|min| approval.risk < *min);
                    NewNotification {
                        id: new_id("ntf"),
                        approval_id: approval.id.clone(),
                        channel: channel.name.clone(),
                        status: match filtered {
                            Some(_) => NotificationStatus::Skipped,
                            None => NotificationStatus::Pending,
                        },
                        note: filtered.map(|min| {
                            format!(
                                "risk {} is below the channel's min_risk {}",
                                approval.risk.as_str(),
                                min.as_str()
                            )
                        }),
                        created_at: now,
                    }
                })
                .collect();
            store.enqueue_notifications(&workspace, &items).await?;
        }
        Ok(())
    }

    /// Claims `notification`, makes one attempt and records it.
    /// Returns when it is to be retried, if it is.
    async fn attempt(&self, notification: Notification) -> Result<Option<Timestamp>, StoreError> {
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
        let (status_code, error) = self.send(&notification.workspace, channel, &notice).await;
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
        match &error {
            None => tracing::info!(
                notification = %notification.id,
                channel = %channel.name,
                approval = %approval.id,
                "notifications: delivered"
            ),
            Some(error) => tracing::warn!(
                notification = %notification.id,
                channel = %channel.name,
                attempt = failures,
                %error,
                "notifications: delivery failed"
            ),
        }
        store
            .record_notification(&notification.id, Some(&attempt), &outcome)
            .await?;
        Ok(match outcome {
            NotificationOutcome::RetryAt(at) => Some(at),
            _ => None,
        })
    }

    /// The link the notification carries: signed for the channel's user when it has one
    /// that exists in the approval's workspace, else the plain approval page (which asks
    /// for a sign-in). The nonce is the notification's id, so retries carry the same link.
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
                match airlock_tools::deliver_email(smtp, &effect).await {
                    Ok(()) => (None, None),
                    Err(error) => (None, Some(error.to_string())),
                }
            }
        }
    }
}

/// The link-signing key: the one in the store, or a new random one stored now (the
/// first node to start wins; every node then uses it).
pub async fn link_key(gate: &Gate) -> Result<String, StoreError> {
    let mut candidate = [0u8; 32];
    rand::rng().fill_bytes(&mut candidate);
    gate.notifications()
        .server_secret(sign::LINK_KEY, &hex::encode(candidate), gate.now())
        .await
}

fn duration_millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn add_millis(at: Timestamp, millis: i64) -> Timestamp {
    Timestamp::from_millisecond(at.as_millisecond().saturating_add(millis)).unwrap_or(at)
}
