//! Notifications (issue 7): when an approval is created, each configured channel
//! (webhook, Slack-compatible webhook, email, the Slack app) is told once, with a link to
//! the approval; an email recipient bound to their own user gets a signed, single-use,
//! expiring link that signs that user in on the way.
//!
//! - [`config`]: the server config file and its resolution into [`config::Settings`].
//! - [`sign`]: HMAC-SHA256, the webhook signature, link tokens.
//! - [`payload`]: the webhook JSON, Slack and email shapes.
//! - [`slack`]: interactive Slack approvals (buttons, the action endpoint, updates).
//! - [`attempt`]: one delivery attempt (claim, link, send, record) and the counters
//!   `/metrics` shows.
//! - [`Notifier`] (this file): the sweeper that enqueues and starts attempts.
//!
//! Durable by construction: nothing is sent from the request that created the approval.
//! The sweeper finds pending approvals that lack a notification on some channel
//! (`NotifyStore::approvals_to_notify`), enqueues one row per approval and channel
//! (idempotent), and starts an attempt for each due row, each attempt claimed by one node
//! (`claim_notification`) and recorded (`record_notification`). It wakes on every
//! workspace event the gate announces (here or, on PostgreSQL, from another node), so a
//! new approval is notified at once, when its earliest retry is due, and once a second
//! otherwise (the backstop for a node that died between committing an approval and
//! notifying it, and for retries scheduled by another node).
//!
//! Channels are independent: each attempt runs as a task of its own, cut off after the
//! configured `timeout`, and the sweeper never waits for one. A receiver that is slow or
//! never answers (an SMTP server that accepts and says nothing) delays nobody else's
//! notifications, and shutdown drops the attempts in flight (their claims lapse and
//! another node, or the next start, retries them: delivery is at least once anyway).
//!
//! INVARIANT: delivery happens only after the approval committed (it is read back from
//! the store), at least once per approval and channel while the approval is pending; a
//! receiver deduplicates on the `delivery` id. Secrets (the link key, webhook keys) are
//! never logged. An attempt ends within `timeout`, well inside its claim, so that no
//! other node starts the same attempt while it runs.

pub mod attempt;
pub mod config;
pub mod payload;
pub mod sign;
pub mod slack;

use airlock_gate::Gate;
use airlock_store::{NewNotification, NotificationStatus, StoreError};
use attempt::Counters;
use config::Settings;
use jiff::Timestamp;
use rand::RngCore;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Approvals older than this are not notified any more (a channel added to the config
/// does not flood its receiver with the whole backlog).
pub const BACKSTOP_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// How often the sweeper looks when nothing woke it.
const TICK: Duration = Duration::from_secs(1);

/// How long one attempt may hold its claim; a node that dies mid-attempt leaves the
/// notification to another node after this. Longer than any attempt may take
/// (`config::MAX_ATTEMPT_TIMEOUT`).
const CLAIM: Duration = Duration::from_secs(120);

/// How long a webhook may take to answer (at most the configured `timeout`).
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// Rows looked at per sweep.
const BATCH: u32 = 64;

/// Attempts one channel may have running at once: a channel whose receiver hangs holds
/// at most these, never the others' share.
const PER_CHANNEL: usize = 16;

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
    /// Attempts by channel and outcome, for `/metrics`.
    counters: Arc<Counters>,
}

/// What a task of the sweeper was doing.
enum Job {
    /// An attempt at the notification with this id, on this channel.
    Attempt { id: String, channel: String },
    /// Updating the Slack messages whose approval ended.
    Closing,
}

/// The sweeper's tasks in flight.
#[derive(Default)]
struct Work {
    tasks: JoinSet<Option<Timestamp>>,
    jobs: HashMap<tokio::task::Id, Job>,
    /// Notifications with an attempt running: not started twice.
    notifications: HashSet<String>,
    per_channel: HashMap<String, usize>,
    closing: bool,
}

impl Work {
    /// Forgets a finished task; the retry it scheduled, if any.
    fn finished(
        &mut self,
        done: Result<(tokio::task::Id, Option<Timestamp>), tokio::task::JoinError>,
    ) -> Option<Timestamp> {
        let (id, retry_at) = match done {
            Ok(done) => done,
            Err(error) => {
                tracing::warn!(%error, "notifications: an attempt ended abnormally");
                (error.id(), None)
            }
        };
        match self.jobs.remove(&id) {
            Some(Job::Attempt { id, channel }) => {
                self.notifications.remove(&id);
                if let Some(count) = self.per_channel.get_mut(&channel) {
                    *count = count.saturating_sub(1);
                }
            }
            Some(Job::Closing) => self.closing = false,
            None => {}
        }
        retry_at
    }
}

impl Notifier {
    /// The resolved configuration it sends by.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Attempts by channel and outcome so far (`/metrics`).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn new(gate: Gate, settings: Settings, base_url: &str) -> Result<Notifier, String> {
        let http = reqwest::Client::builder()
            .timeout(WEBHOOK_TIMEOUT.min(settings.timeout))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| format!("cannot build the webhook client: {error}"))?;
        let base_url = match &settings.public_url {
            Some(url) => url.clone(),
            None => {
                let own = base_url.trim_end_matches('/').to_owned();
                if names_no_host(&own) {
                    tracing::warn!(
                        address = %own,
                        "notifications: public_url is not set and the server listens on all \
                         interfaces, so links would point to {own}, which nobody can open; \
                         set [notifications] public_url to the address people reach this \
                         server at"
                    );
                }
                own
            }
        };
        Ok(Notifier {
            gate,
            settings: Arc::new(settings),
            base_url,
            http,
            key: Arc::default(),
            counters: Arc::default(),
        })
    }

    /// Runs until `shutdown`: sweeps at once, then whenever the gate announces events,
    /// when a retry is due, and at least every second. Returns at once on `shutdown`,
    /// dropping the attempts in flight.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut pokes = self.gate.subscribe();
        tracing::info!(
            channels = self.settings.channels.len(),
            "notifications: sending to the configured channels"
        );
        for warning in &self.settings.warnings {
            tracing::warn!("notifications: {warning}");
        }
        let mut work = Work::default();
        // The earliest retry scheduled by this node that no sweep has reached yet.
        let mut next_retry: Option<Timestamp> = None;
        loop {
            let started = self.gate.now();
            // A retry due by `started` was visible to this sweep's query for due rows.
            next_retry = next_retry.filter(|at| *at > started);
            if let Err(error) = self.sweep(&mut work).await {
                tracing::warn!(%error, "notifications: a sweep failed; trying again");
            }
            // Sleep until that retry is due, a second at most, or an event. An attempt
            // that ends wakes nothing (a sweep would find nothing new), unless it
            // scheduled a retry sooner than the wake-up.
            let mut wake = tokio::time::Instant::now() + self.until(next_retry);
            loop {
                tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => {
                        // Nothing waits for an attempt in flight (an SMTP server may
                        // never answer); its claim lapses and it is tried again.
                        work.tasks.abort_all();
                        return;
                    }
                    Some(done) = work.tasks.join_next_with_id() => {
                        if let Some(at) = work.finished(done) {
                            next_retry = Some(next_retry.map_or(at, |next| next.min(at)));
                            wake = wake.min(tokio::time::Instant::now() + self.until(Some(at)));
                        }
                    }
                    _ = pokes.recv() => break,
                    _ = tokio::time::sleep_until(wake) => break,
                }
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

    /// How long until `retry` is due, a second ([`TICK`]) at most.
    fn until(&self, retry: Option<Timestamp>) -> Duration {
        retry.map_or(TICK, |at| {
            let wait = at.as_millisecond() - self.gate.now().as_millisecond();
            Duration::from_millis(u64::try_from(wait).unwrap_or(0)).min(TICK)
        })
    }

    /// One pass: enqueue what lacks a notification, then start an attempt for each due
    /// one that is not running yet (and the Slack updates, when none is running), never
    /// waiting for them.
    async fn sweep(&self, work: &mut Work) -> Result<(), StoreError> {
        self.enqueue().await?;
        if !work.closing && self.settings.slack().is_some() {
            let notifier = self.clone();
            let handle = work.tasks.spawn(async move {
                if let Err(error) = notifier.close_ended_slack_messages().await {
                    tracing::warn!(%error, "slack: ended messages could not be updated");
                }
                None
            });
            work.jobs.insert(handle.id(), Job::Closing);
            work.closing = true;
        }
        let now = self.gate.now();
        let due = self
            .gate
            .notifications()
            .notifications_due(now, BATCH)
            .await?;
        for notification in due {
            let running = work
                .per_channel
                .entry(notification.channel.clone())
                .or_default();
            if *running >= PER_CHANNEL || work.notifications.contains(&notification.id) {
                continue;
            }
            *running += 1;
            work.notifications.insert(notification.id.clone());
            let job = Job::Attempt {
                id: notification.id.clone(),
                channel: notification.channel.clone(),
            };
            let notifier = self.clone();
            let handle = work.tasks.spawn(async move {
                match notifier.attempt(notification).await {
                    Ok(retry_at) => retry_at,
                    Err(error) => {
                        tracing::warn!(%error, "notifications: an attempt could not be recorded");
                        None
                    }
                }
            });
            work.jobs.insert(handle.id(), job);
        }
        Ok(())
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
                        id: airlock_gate::ids::new_id("ntf"),
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
}

/// Whether a base URL's host is an unspecified address (`0.0.0.0`, `[::]`): what a
/// server listening on every interface is, and what no browser can open.
fn names_no_host(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    };
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .is_ok_and(|address| address.is_unspecified())
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

#[cfg(test)]
mod tests {
    use super::names_no_host;

    #[test]
    fn unspecified_addresses_name_no_host() {
        for url in ["http://0.0.0.0:7070", "http://[::]:7070", "http://0.0.0.0"] {
            assert!(names_no_host(url), "{url}");
        }
        for url in [
            "http://127.0.0.1:7070",
            "http://[::1]:7070",
            "https://airlock.acme.example",
            "http://10.0.0.5:7070",
        ] {
            assert!(!names_no_host(url), "{url}");
        }
    }
}
