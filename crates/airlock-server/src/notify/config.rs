//! The server config file (`airlock serve --config FILE`, or `DIR/airlock.toml`): its
//! syntax, read with serde (`deny_unknown_fields` on every table, so a typo is an error
//! naming the key and its line), and its resolution into [`Settings`]: secrets read
//! from the environment, durations parsed, SMTP settled, channels named.
//!
//! Everything that can be wrong is found here, before the server starts (exit 2).

use airlock_protocol::Risk;
use airlock_tools::SmtpConfig;
use serde::Deserialize;
use std::time::Duration;

/// The whole file. Today it holds `[notifications]` only.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    #[serde(default)]
    pub notifications: Option<NotificationsConfig>,
}

/// `[notifications]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationsConfig {
    /// The base URL people reach this server at (links are built on it). Default: the
    /// address the server listens on.
    #[serde(default)]
    pub public_url: Option<String>,
    /// How long a link stays valid at most (never past the approval's deadline).
    #[serde(default)]
    pub link_ttl: Option<String>,
    #[serde(default)]
    pub retry: Option<RetryConfig>,
    /// The longest one delivery attempt may take, whatever the channel (an SMTP server
    /// that never answers, a slow Slack); default 30s, at most 100s.
    #[serde(default)]
    pub timeout: Option<String>,
    #[serde(default)]
    pub webhooks: Vec<WebhookConfig>,
    #[serde(default)]
    pub email: Option<EmailConfig>,
    /// Interactive Slack approvals (a bot posting with Approve / Reject buttons).
    #[serde(default)]
    pub slack: Option<SlackConfig>,
}

/// `[notifications.slack]`: a Slack app's bot posts each approval to `channel` with
/// Approve / Reject buttons; Slack calls back `POST /v1/integrations/slack/actions`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// The channel's name here; default `slack`.
    #[serde(default)]
    pub name: Option<String>,
    /// Slack's id of the conversation to post to (`C0123ABCD`).
    pub channel: String,
    /// The variable holding the bot token (`xoxb-…`).
    pub bot_token_env: String,
    /// The variable holding the app's signing secret.
    pub signing_secret_env: String,
    #[serde(default)]
    pub min_risk: Option<Risk>,
    /// Accepted for older files, and ignored with a warning: a message in a shared
    /// channel is read by everyone in it, so its link never signs anyone in.
    #[serde(default)]
    pub user: Option<String>,
    /// Slack's Web API base; tests point it at a fake. Default `https://slack.com/api`.
    #[serde(default)]
    pub api_url: Option<String>,
    /// Slack user id → airlock user name (in the approval's workspace). Only these Slack
    /// users can decide from Slack.
    #[serde(default)]
    pub users: std::collections::BTreeMap<String, String>,
}

/// `[notifications.retry]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    #[serde(default)]
    pub initial: Option<String>,
    #[serde(default)]
    pub max: Option<String>,
    #[serde(default)]
    pub attempts: Option<u32>,
}

/// The payload shape of a webhook.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebhookFormat {
    #[default]
    Json,
    Slack,
}

/// `[[notifications.webhooks]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    #[serde(default)]
    pub name: Option<String>,
    pub url: String,
    /// The environment variable that holds the HMAC key (required for `json`).
    #[serde(default)]
    pub secret_env: Option<String>,
    #[serde(default)]
    pub format: WebhookFormat,
    /// Only approvals of at least this risk.
    #[serde(default)]
    pub min_risk: Option<Risk>,
    /// Accepted for older files, and ignored with a warning: whoever reads what the
    /// webhook receives is unknown, so its link never signs anyone in.
    #[serde(default)]
    pub user: Option<String>,
}

/// `[notifications.email]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailConfig {
    pub to: Vec<String>,
    #[serde(default)]
    pub min_risk: Option<Risk>,
    /// With exactly one address in `to`: the user that address belongs to, whom its link
    /// signs in. With several, ignored with a warning (`users` binds each address).
    #[serde(default)]
    pub user: Option<String>,
    /// Address → the user it belongs to: that recipient's link signs that user in, and
    /// nobody else's link does. An address not here gets a link that asks for a sign-in.
    #[serde(default)]
    pub users: std::collections::BTreeMap<String, String>,
    /// Overrides the `AIRLOCK_SMTP*` environment when present.
    #[serde(default)]
    pub smtp: Option<SmtpFileConfig>,
}

/// `[notifications.email.smtp]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpFileConfig {
    pub host: String,
    pub port: u16,
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password_env: Option<String>,
    #[serde(default)]
    pub starttls: bool,
    /// Send the username and password over a connection without TLS, to a server on
    /// this machine (loopback) only. Off by default: credentials go only over TLS.
    #[serde(default)]
    pub plaintext_auth: bool,
}

/// A config file that cannot be used, with what to fix.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// How failed deliveries are retried: `initial`, doubling, at most `max` apart, at most
/// `attempts` attempts in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub initial: Duration,
    pub max: Duration,
    pub attempts: u32,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            initial: Duration::from_secs(5),
            max: Duration::from_secs(15 * 60),
            attempts: 12,
        }
    }
}

impl Retry {
    /// The wait after the `failures`-th failed attempt (1 for the first).
    pub fn delay(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(30);
        self.initial.saturating_mul(1u32 << doublings).min(self.max)
    }
}

/// Where one channel delivers.
#[derive(Clone)]
pub enum Target {
    Webhook {
        url: String,
        format: WebhookFormat,
        /// The HMAC key, from `secret_env` (never logged).
        secret: Option<Vec<u8>>,
    },
    Email {
        to: String,
        smtp: SmtpConfig,
    },
    /// A Slack app's bot (`chat.postMessage` with buttons).
    Slack(std::sync::Arc<SlackTarget>),
}

/// The resolved `[notifications.slack]`.
#[derive(Clone)]
pub struct SlackTarget {
    /// Without a trailing slash: `{api_url}/chat.postMessage`.
    pub api_url: String,
    pub channel: String,
    /// Never logged.
    pub bot_token: String,
    /// Never logged.
    pub signing_secret: Vec<u8>,
    /// Slack user id → airlock user name.
    pub users: std::collections::BTreeMap<String, String>,
}

/// The Web API Slack serves.
pub const SLACK_API: &str = "https://slack.com/api";

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Webhook { url, format, .. } => write!(f, "webhook {url} ({format:?})"),
            Target::Email { to, .. } => write!(f, "email to {to}"),
            Target::Slack(slack) => write!(f, "slack {} via {}", slack.channel, slack.api_url),
        }
    }
}

/// One channel, ready to use.
#[derive(Debug, Clone)]
pub struct Channel {
    /// Its stable name: `name`, else `webhooks[N]`; `email:<address>` per recipient.
    pub name: String,
    pub target: Target,
    pub min_risk: Option<Risk>,
    /// The user whom this channel's link signs in: only ever set for a channel that
    /// reaches one person, an email recipient bound to their own user. A shared channel
    /// (a webhook, Slack) sends the plain approval page, which asks whoever opens it to
    /// sign in as themselves, so a link never lets its clicker do more than they may (G6).
    pub user: Option<String>,
}

/// The resolved `[notifications]`.
#[derive(Debug, Clone)]
pub struct Settings {
    pub public_url: Option<String>,
    pub link_ttl: Duration,
    pub retry: Retry,
    /// The longest one delivery attempt may take.
    pub timeout: Duration,
    pub channels: Vec<Channel>,
    /// What the file asks for that is ignored, and why; logged when the notifier starts.
    pub warnings: Vec<String>,
}

/// The default longest life of a link.
pub const LINK_TTL: Duration = Duration::from_secs(24 * 3600);

/// The default longest delivery attempt.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest `timeout` may be: well inside the two minutes a node holds its claim on
/// a notification, so that no other node retries one whose attempt is still running.
pub const MAX_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(100);

impl Settings {
    /// The Slack channel and its target, when one is configured.
    pub fn slack(&self) -> Option<(&Channel, &SlackTarget)> {
        self.channels
            .iter()
            .find_map(|channel| match &channel.target {
                Target::Slack(slack) => Some((channel, slack.as_ref())),
                _ => None,
            })
    }
}

impl ServerConfig {
    /// Parses the file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<ServerConfig, ConfigError> {
        toml::from_str(text).map_err(|error| ConfigError(format!("{file}: {error}")))
    }

    /// Resolves `[notifications]`. `env` reads an environment variable; `smtp_env` is the
    /// SMTP server from `AIRLOCK_SMTP*`, used unless the file names one. `None` when the
    /// file configures no channel.
    pub fn notification_settings(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        smtp_env: Option<SmtpConfig>,
    ) -> Result<Option<Settings>, ConfigError> {
        let Some(config) = &self.notifications else {
            return Ok(None);
        };
        let error = |message: String| ConfigError(format!("[notifications] {message}"));
        if let Some(url) = &config.public_url {
            check_http_url(url).map_err(|m| error(format!("public_url: {m}")))?;
        }
        let duration = |what: &str, value: &Option<String>, default: Duration| match value {
            None => Ok(default),
            Some(text) => humantime::parse_duration(text)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| error(format!("{what} `{text}` must be a duration such as 30s"))),
        };
        let link_ttl = duration("link_ttl", &config.link_ttl, LINK_TTL)?;
        let timeout = duration("timeout", &config.timeout, ATTEMPT_TIMEOUT)?;
        if timeout > MAX_ATTEMPT_TIMEOUT {
            return Err(error(format!(
                "timeout must be at most {}s",
                MAX_ATTEMPT_TIMEOUT.as_secs()
            )));
        }
        let mut warnings = Vec::new();
        let defaults = Retry::default();
        let retry = match &config.retry {
            None => defaults,
            Some(retry) => Retry {
                initial: duration("retry.initial", &retry.initial, defaults.initial)?,
                max: duration("retry.max", &retry.max, defaults.max)?,
                attempts: match retry.attempts {
                    Some(0) => return Err(error("retry.attempts must be at least 1".into())),
                    Some(n) => n,
                    None => defaults.attempts,
                },
            },
        };
        let mut channels = Vec::new();
        for (index, webhook) in config.webhooks.iter().enumerate() {
            let name = webhook
                .name
                .clone()
                .unwrap_or_else(|| format!("webhooks[{index}]"));
            let error = |m: String| error(format!("webhook `{name}`: {m}"));
            check_http_url(&webhook.url).map_err(|m| error(format!("url: {m}")))?;
            let secret = match &webhook.secret_env {
                Some(variable) => Some(
                    env(variable)
                        .filter(|value| !value.is_empty())
                        .ok_or_else(|| error(format!("the secret variable {variable} is not set")))?
                        .into_bytes(),
                ),
                None if webhook.format == WebhookFormat::Json => {
                    return Err(error(
                        "secret_env is required: JSON webhooks are always signed".into(),
                    ))
                }
                None => None,
            };
            if webhook.user.is_some() {
                warnings.push(format!(
                    "webhook `{name}`: `user` is ignored: whoever reads what a webhook \
                     receives could use a link that signs someone in, so its link opens \
                     the approval page, which asks for a sign-in"
                ));
            }
            channels.push(Channel {
                name,
                target: Target::Webhook {
                    url: webhook.url.clone(),
                    format: webhook.format,
                    secret,
                },
                min_risk: webhook.min_risk,
                user: None,
            });
        }
        if let Some(email) = &config.email {
            let smtp = match &email.smtp {
                Some(file) => SmtpConfig {
                    host: file.host.clone(),
                    port: file.port,
                    from: file
                        .from
                        .clone()
                        .unwrap_or_else(|| "airlock@localhost".into()),
                    username: file.username.clone(),
                    password_env: file.password_env.clone(),
                    starttls: file.starttls,
                },
                None => smtp_env.clone().ok_or_else(|| {
                    error(
                        "email needs an SMTP server: [notifications.email.smtp] or AIRLOCK_SMTP"
                            .into(),
                    )
                })?,
            };
            let plaintext_auth = match &email.smtp {
                Some(file) => file.plaintext_auth,
                None => {
                    env(PLAINTEXT_AUTH_ENV).is_some_and(|value| value == "1" || value == "true")
                }
            };
            check_smtp_security(&smtp, plaintext_auth).map_err(|m| error(format!("email: {m}")))?;
            if email.to.is_empty() {
                return Err(error("email.to names no recipient".into()));
            }
            if let Some(address) = email
                .users
                .keys()
                .find(|address| !email.to.contains(address))
            {
                return Err(error(format!(
                    "email.users: {address:?} is not one of the addresses in email.to"
                )));
            }
            // `user` names whom the one recipient is; for several recipients it cannot.
            let only = match (&email.user, &email.to[..]) {
                (Some(user), [address]) => Some((address, user)),
                (Some(user), _) => {
                    warnings.push(format!(
                        "email: `user = {user:?}` is ignored: it would give every recipient \
                         a link that signs {user} in; bind each address to its own user \
                         with [notifications.email.users]"
                    ));
                    None
                }
                (None, _) => None,
            };
            for to in &email.to {
                let plain = to.split_once('@').is_some_and(|(local, domain)| {
                    !local.is_empty() && !domain.is_empty() && !domain.contains('@')
                }) && !to
                    .contains(|c: char| c.is_whitespace() || matches!(c, ',' | '<' | '>'));
                if !plain {
                    return Err(error(format!(
                        "email.to: {to:?} is not one address such as alice@example.com"
                    )));
                }
                let user = email.users.get(to).or(only
                    .filter(|(address, _)| *address == to)
                    .map(|(_, user)| user));
                channels.push(Channel {
                    name: format!("email:{to}"),
                    target: Target::Email {
                        to: to.clone(),
                        smtp: smtp.clone(),
                    },
                    min_risk: email.min_risk,
                    user: user.cloned(),
                });
            }
        }
        if let Some(slack) = &config.slack {
            channels.push(slack_channel(slack, env).map_err(|m| error(format!("slack: {m}")))?);
            if slack.user.is_some() {
                warnings.push(
                    "slack: `user` is ignored: everyone in the channel sees the message, so \
                     its link opens the approval page, which asks for a sign-in (the \
                     buttons decide as the clicker's own user, [notifications.slack.users])"
                        .into(),
                );
            }
        }
        let mut names: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        if let Some(pair) = names.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(error(format!("two channels are named `{}`", pair[0])));
        }
        if channels.is_empty() {
            return Ok(None);
        }
        Ok(Some(Settings {
            public_url: config
                .public_url
                .as_ref()
                .map(|url| url.trim_end_matches('/').to_owned()),
            link_ttl,
            retry,
            timeout,
            channels,
            warnings,
        }))
    }
}

/// The variable that lets notification email send SMTP credentials without TLS to a
/// server on this machine, when the SMTP server comes from `AIRLOCK_SMTP*` (the file's
/// `plaintext_auth` otherwise).
pub const PLAINTEXT_AUTH_ENV: &str = "AIRLOCK_SMTP_PLAINTEXT_AUTH";

/// A username and password go only over TLS: STARTTLS (`starttls = true`) or implicit
/// TLS (port 465). Without TLS they are refused before the server starts, except to a
/// server on this machine (where they do not cross a network) when `plaintext_auth`
/// says so explicitly.
fn check_smtp_security(smtp: &SmtpConfig, plaintext_auth: bool) -> Result<(), String> {
    let credentials = smtp.username.is_some() || smtp.password_env.is_some();
    if !credentials || smtp.starttls || smtp.port == airlock_tools::IMPLICIT_TLS_PORT {
        return Ok(());
    }
    if !airlock_tools::is_loopback(&smtp.host) {
        return Err(format!(
            "the SMTP username and password would cross the network to {} in clear text: \
             set starttls = true, or use port {} (implicit TLS)",
            smtp.host,
            airlock_tools::IMPLICIT_TLS_PORT
        ));
    }
    if !plaintext_auth {
        return Err(format!(
            "the SMTP username and password would be sent without TLS: set starttls = true, \
             use port {} (implicit TLS), or, for a server on this machine only, allow it \
             with plaintext_auth = true ({PLAINTEXT_AUTH_ENV}=1 for AIRLOCK_SMTP)",
            airlock_tools::IMPLICIT_TLS_PORT
        ));
    }
    Ok(())
}

fn slack_channel(
    slack: &SlackConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Channel, String> {
    let secret = |variable: &str| {
        env(variable)
            .filter(|value| !value.is_empty())
            .ok_or_else(|| format!("the variable {variable} is not set"))
    };
    let api_url = slack.api_url.as_deref().unwrap_or(SLACK_API);
    check_http_url(api_url).map_err(|m| format!("api_url: {m}"))?;
    let plain = |id: &str| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric());
    if !plain(&slack.channel) {
        return Err(format!(
            "channel `{}` must be a Slack conversation id such as C0123ABCD",
            slack.channel
        ));
    }
    if let Some(id) = slack.users.keys().find(|id| !plain(id)) {
        return Err(format!(
            "users: `{id}` must be a Slack user id such as U0123ABCD"
        ));
    }
    Ok(Channel {
        name: slack.name.clone().unwrap_or_else(|| "slack".into()),
        target: Target::Slack(std::sync::Arc::new(SlackTarget {
            api_url: api_url.trim_end_matches('/').to_owned(),
            channel: slack.channel.clone(),
            bot_token: secret(&slack.bot_token_env)?,
            signing_secret: secret(&slack.signing_secret_env)?.into_bytes(),
            users: slack.users.clone(),
        })),
        min_risk: slack.min_risk,
        user: None,
    })
}

fn check_http_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("`{url}` must start with http:// or https://"))?;
    if rest.is_empty() || rest.starts_with('/') || url.contains(char::is_whitespace) {
        return Err(format!("`{url}` names no host"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
