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
    /// The user the message's "Open in airlock" link signs in, as for other channels.
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
    /// The user of the approval's workspace the link signs in.
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
    #[serde(default)]
    pub user: Option<String>,
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
    pub user: Option<String>,
}

/// The resolved `[notifications]`.
#[derive(Debug, Clone)]
pub struct Settings {
    pub public_url: Option<String>,
    pub link_ttl: Duration,
    pub retry: Retry,
    pub channels: Vec<Channel>,
}

/// The default longest life of a link.
pub const LINK_TTL: Duration = Duration::from_secs(24 * 3600);

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
            channels.push(Channel {
                name,
                target: Target::Webhook {
                    url: webhook.url.clone(),
                    format: webhook.format,
                    secret,
                },
                min_risk: webhook.min_risk,
                user: webhook.user.clone(),
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
                None => smtp_env.ok_or_else(|| {
                    error(
                        "email needs an SMTP server: [notifications.email.smtp] or AIRLOCK_SMTP"
                            .into(),
                    )
                })?,
            };
            if email.to.is_empty() {
                return Err(error("email.to names no recipient".into()));
            }
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
                channels.push(Channel {
                    name: format!("email:{to}"),
                    target: Target::Email {
                        to: to.clone(),
                        smtp: smtp.clone(),
                    },
                    min_risk: email.min_risk,
                    user: email.user.clone(),
                });
            }
        }
        if let Some(slack) = &config.slack {
            channels.push(slack_channel(slack, env).map_err(|m| error(format!("slack: {m}")))?);
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
            channels,
        }))
    }
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
        user: slack.user.clone(),
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
mod tests {
    use super::*;

    fn settings(text: &str) -> Result<Option<Settings>, ConfigError> {
        let env = |name: &str| (name == "HOOK_KEY").then(|| "k3y".to_owned());
        ServerConfig::parse(text, "airlock.toml")?.notification_settings(&env, None)
    }

    #[test]
    fn unknown_keys_are_refused_with_their_name() {
        for (text, key) in [
            ("[notification]\n", "notification"),
            ("[notifications]\npublic_ur = \"http://x\"\n", "public_ur"),
            (
                "[[notifications.webhooks]]\nurl = \"http://x\"\nsecret = \"k\"\n",
                "secret",
            ),
            ("[notifications.email]\nto = []\nfrom = \"x\"\n", "from"),
        ] {
            let error = settings(text).unwrap_err().to_string();
            assert!(
                error.contains(key) && error.contains("airlock.toml"),
                "{error}"
            );
        }
    }

    #[test]
    fn channels_are_resolved_and_checked() {
        let text = r#"
            [notifications]
            public_url = "https://airlock.example/"
            link_ttl = "2h"
            retry = { initial = "200ms", max = "1s", attempts = 3 }
            [[notifications.webhooks]]
            url = "https://hooks.example/a"
            secret_env = "HOOK_KEY"
            min_risk = "external"
            user = "alice"
            [[notifications.webhooks]]
            name = "slack"
            url = "https://hooks.slack.example/T/B"
            format = "slack"
            [notifications.email]
            to = ["alice@acme.test", "bob@acme.test"]
            smtp = { host = "127.0.0.1", port = 2525 }
        "#;
        let settings = settings(text).unwrap().unwrap();
        assert_eq!(
            settings.public_url.as_deref(),
            Some("https://airlock.example")
        );
        assert_eq!(settings.link_ttl, Duration::from_secs(7200));
        let names: Vec<_> = settings.channels.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "webhooks[0]",
                "slack",
                "email:alice@acme.test",
                "email:bob@acme.test"
            ]
        );
        assert!(matches!(
            &settings.channels[0].target,
            Target::Webhook { secret: Some(key), .. } if key == b"k3y"
        ));
        assert_eq!(settings.channels[0].min_risk, Some(Risk::External));
        let retry = settings.retry;
        let delays: Vec<_> = (1..=5).map(|n| retry.delay(n).as_millis()).collect();
        assert_eq!(delays, [200, 400, 800, 1000, 1000]);
    }

    #[test]
    fn what_cannot_work_is_refused_before_starting() {
        for (text, expected) in [
            (
                "[[notifications.webhooks]]\nurl = \"https://h/x\"\n",
                "secret_env is required",
            ),
            (
                "[[notifications.webhooks]]\nurl = \"https://h/x\"\nsecret_env = \"NOPE\"\n",
                "NOPE is not set",
            ),
            (
                "[[notifications.webhooks]]\nurl = \"ftp://h\"\nsecret_env = \"HOOK_KEY\"\n",
                "http",
            ),
            ("[notifications.email]\nto = [\"a@b\"]\n", "SMTP"),
            (
                "[notifications.email]\nto = [\"a b@c\"]\nsmtp = { host = \"h\", port = 25 }\n",
                "one address",
            ),
            (
                "[notifications]\nlink_ttl = \"soon\"\n[notifications.email]\nto = [\"a@b\"]\n",
                "duration",
            ),
            (
                "[[notifications.webhooks]]\nname = \"x\"\nurl = \"https://h\"\nformat = \"slack\"\n\
                 [[notifications.webhooks]]\nname = \"x\"\nurl = \"https://h\"\nformat = \"slack\"\n",
                "two channels",
            ),
            (
                "[[notifications.webhooks]]\nurl = \"https://h\"\nformat = \"xml\"\n",
                "xml",
            ),
        ] {
            let error = settings(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
        for (text, expected) in [
            (
                "[notifications.slack]\nchannel = \"C1\"\nbot_token_env = \"NOPE\"\n\
                 signing_secret_env = \"HOOK_KEY\"\n",
                "NOPE is not set",
            ),
            (
                "[notifications.slack]\nchannel = \"#general\"\nbot_token_env = \"HOOK_KEY\"\n\
                 signing_secret_env = \"HOOK_KEY\"\n",
                "conversation id",
            ),
            (
                "[notifications.slack]\nchannel = \"C1\"\nbot_token_env = \"HOOK_KEY\"\n\
                 signing_secret_env = \"HOOK_KEY\"\nusers = { \"a b\" = \"alice\" }\n",
                "Slack user id",
            ),
            (
                "[notifications.slack]\nchannel = \"C1\"\nbot_token_env = \"HOOK_KEY\"\n\
                 signing_secret_env = \"HOOK_KEY\"\nbuttons = true\n",
                "buttons",
            ),
        ] {
            let error = settings(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
        let slack = settings(
            "[notifications.slack]\nchannel = \"C1\"\nbot_token_env = \"HOOK_KEY\"\n\
             signing_secret_env = \"HOOK_KEY\"\napi_url = \"http://127.0.0.1:9/api/\"\n\
             users = { U1 = \"alice\" }\n",
        )
        .unwrap()
        .unwrap();
        let (channel, target) = slack.slack().unwrap();
        assert_eq!(channel.name, "slack");
        assert_eq!(target.api_url, "http://127.0.0.1:9/api");
        assert_eq!(target.users.get("U1").map(String::as_str), Some("alice"));
        assert!(settings("").unwrap().is_none());
        assert!(settings("[notifications]\n").unwrap().is_none());
    }
}
