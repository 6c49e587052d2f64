//! Email: the address check of `email.send`, and SMTP delivery of its outbox effect.
//!
//! `email.send` never sends anything when the model calls it (see [`crate::plan`]): the
//! runtime writes an [`OutboxEffect`] and its outbox worker calls [`deliver_email`] later,
//! once per effect (the server's notifier calls [`deliver_email_within`]). Delivery uses
//! `lettre`'s SMTP connection over tokio, with rustls for TLS, one step at a time so
//! that every step has a time limit: lettre's own timeout covers only the TCP connect,
//! and a server that accepts and then never answers held a delivery (and everything
//! waiting for it) forever.
//!
//! TLS: `starttls = true` upgrades the connection (required: no fallback to plain
//! text); port 465 is implicit TLS (SMTPS, RFC 8314), TLS from the first byte. A
//! username and password never cross the network without one of the two.

use std::str::FromStr;
use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::{Credentials, DEFAULT_MECHANISMS};
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{Address, Message};
use serde_json::Value;
use tokio::time::Instant;

use crate::plan::OutboxEffect;
use crate::ToolError;

/// How long a whole delivery may take in [`deliver_email`] before it is given up (and
/// retried by the outbox worker). Every step (connecting and the greeting, STARTTLS,
/// authentication, the message) must end within it.
pub const SMTP_DEADLINE: Duration = Duration::from_secs(60);

/// The port of implicit TLS (SMTPS): the connection is TLS from its first byte.
pub const IMPLICIT_TLS_PORT: u16 = 465;

/// Where and how the outbox worker delivers email.
#[derive(Debug, Clone, PartialEq)]
pub struct SmtpConfig {
    /// The SMTP server's host name (also the name its TLS certificate must carry).
    pub host: String,
    /// Its port: 25, 587 for submission with STARTTLS, or 465 for implicit TLS.
    pub port: u16,
    /// The sender, `airlock@example.com` or `Airlock <airlock@example.com>`.
    pub from: String,
    /// The login, when the server wants one.
    pub username: Option<String>,
    /// The name of the environment variable holding the password: the password itself is
    /// never in configuration files.
    pub password_env: Option<String>,
    /// Upgrade the connection with STARTTLS (required: no fallback to plain text).
    pub starttls: bool,
}

impl SmtpConfig {
    /// Whether the connection is TLS from its first byte (port 465).
    pub fn implicit_tls(&self) -> bool {
        self.port == IMPLICIT_TLS_PORT
    }
}

/// Checks that `to` is one plain address (`alice@example.com`): no display name, no list.
pub(crate) fn check_address(to: &str) -> Result<(), String> {
    Address::from_str(to)
        .map(|_| ())
        .map_err(|_| format!("must be one email address such as alice@example.com, got {to:?}"))
}

/// Delivers an `email` outbox effect over SMTP within [`SMTP_DEADLINE`]. `Ok` once the
/// server has accepted the message; an `Err` leaves the effect to be retried.
pub async fn deliver_email(config: &SmtpConfig, effect: &OutboxEffect) -> Result<(), ToolError> {
    deliver_email_within(config, effect, SMTP_DEADLINE).await
}

/// [`deliver_email`], given up (an error naming the step that did not end) when it has
/// not ended within `deadline`.
pub async fn deliver_email_within(
    config: &SmtpConfig,
    effect: &OutboxEffect,
    deadline: Duration,
) -> Result<(), ToolError> {
    let invalid = |reason: String| ToolError::InvalidEffect { reason };
    if effect.kind != "email" {
        return Err(invalid(format!("kind `{}` is not an email", effect.kind)));
    }
    let field = |name: &str| {
        effect
            .payload
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("payload field `{name}` is missing or not a string")))
    };
    let (to, subject, body) = (field("to")?, field("subject")?, field("body")?);
    // The recipient is what was approved and what standing rules bound to; a payload that
    // says otherwise is not delivered.
    if to != effect.recipient {
        return Err(invalid(format!(
            "payload `to` {to:?} differs from the recipient {:?}",
            effect.recipient
        )));
    }
    let to =
        Mailbox::from_str(to).map_err(|error| invalid(format!("recipient {to:?}: {error}")))?;
    let config_error = |reason: String| ToolError::SmtpConfig { reason };
    let from = Mailbox::from_str(&config.from)
        .map_err(|error| config_error(format!("from {:?}: {error}", config.from)))?;
    let message = Message::builder()
        .from(from)
        .to(to)
        .subject(subject)
        .message_id(None)
        .header(ContentType::TEXT_PLAIN)
        .body(body.to_string())
        .map_err(|error| invalid(format!("cannot build the message: {error}")))?;
    let credentials = credentials(config)?;
    let tls = || {
        TlsParameters::new(config.host.clone())
            .map_err(|error| config_error(format!("tls for {}: {error}", config.host)))
    };
    let wrapper = if config.implicit_tls() {
        Some(tls()?)
    } else {
        None
    };
    let upgrade = if config.starttls && !config.implicit_tls() {
        Some(tls()?)
    } else {
        None
    };

    let steps = Steps {
        config,
        until: Instant::now() + deadline,
        deadline,
    };
    let hello = ClientId::default();
    let connecting = AsyncSmtpConnection::connect_tokio1(
        (config.host.as_str(), config.port),
        Some(deadline),
        &hello,
        wrapper,
        None,
    );
    let mut connection = steps.run("connecting", connecting).await?;
    if let Some(parameters) = upgrade {
        steps
            .run("STARTTLS", connection.starttls(parameters, &hello))
            .await?;
    }
    if let Some(credentials) = &credentials {
        steps
            .run(
                "authenticating",
                connection.auth(DEFAULT_MECHANISMS, credentials),
            )
            .await?;
    }
    let envelope = message.envelope().clone();
    let formatted = message.formatted();
    steps
        .run(
            "sending the message",
            connection.send(&envelope, &formatted),
        )
        .await?;
    // The message is accepted; a server slow to say goodbye changes nothing.
    let _ = tokio::time::timeout_at(steps.until, connection.quit()).await;
    Ok(())
}

/// The steps of one delivery, each given until the delivery's deadline.
struct Steps<'a> {
    config: &'a SmtpConfig,
    until: Instant,
    deadline: Duration,
}

impl Steps<'_> {
    /// Runs one step; an error or the deadline passing fails the delivery, naming the step.
    async fn run<T>(
        &self,
        what: &str,
        step: impl std::future::Future<Output = Result<T, lettre::transport::smtp::Error>>,
    ) -> Result<T, ToolError> {
        let reason = match tokio::time::timeout_at(self.until, step).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => format!("{what}: {error}"),
            Err(_) => format!("{what}: no answer within {} s", self.deadline.as_secs_f64()),
        };
        Err(ToolError::SmtpDelivery {
            reason: format!("{}:{}: {reason}", self.config.host, self.config.port),
        })
    }
}

/// The login for `config`, when it names one. A password must not cross the network in
/// clear text: without TLS it is refused unless the server is on this machine (the
/// loopback interface: it crosses no network at all).
fn credentials(config: &SmtpConfig) -> Result<Option<Credentials>, ToolError> {
    let config_error = |reason: String| ToolError::SmtpConfig { reason };
    match (&config.username, &config.password_env) {
        (None, None) => Ok(None),
        (Some(username), Some(variable)) => {
            let tls = config.starttls || config.implicit_tls();
            if !tls && !is_loopback(&config.host) {
                return Err(config_error(format!(
                    "a username and password need starttls or port {IMPLICIT_TLS_PORT} \
                     (host {} is not this machine)",
                    config.host
                )));
            }
            let password = std::env::var(variable).map_err(|_| {
                config_error(format!("the password variable {variable} is not set"))
            })?;
            Ok(Some(Credentials::new(username.clone(), password)))
        }
        (Some(_), None) => Err(config_error(
            "username is set but password_env is not".to_string(),
        )),
        (None, Some(_)) => Err(config_error(
            "password_env is set but username is not".to_string(),
        )),
    }
}

/// Whether `host` names this machine's loopback interface.
pub fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn to_must_be_exactly_one_plain_address() {
        assert!(check_address("alice@example.com").is_ok());
        for bad in [
            "",
            "alice",
            "alice@example.com, bob@example.com",
            "Alice <alice@example.com>",
            "alice@example.com\r\nBcc: eve@example.com",
        ] {
            assert!(check_address(bad).is_err(), "{bad:?} was accepted");
        }
    }

    fn config() -> SmtpConfig {
        SmtpConfig {
            host: "127.0.0.1".to_string(),
            // Nothing listens there: every test below must fail before connecting.
            port: 9,
            from: "airlock@example.com".to_string(),
            username: None,
            password_env: None,
            starttls: false,
        }
    }

    fn effect() -> OutboxEffect {
        OutboxEffect {
            kind: "email".to_string(),
            recipient: "bob@example.com".to_string(),
            payload: json!({"to": "bob@example.com", "subject": "s", "body": "b"}),
        }
    }

    #[tokio::test]
    async fn bad_effects_and_configurations_fail_before_connecting() {
        let mut swapped = effect();
        swapped.payload["to"] = json!("eve@example.com");
        let mut webhook = effect();
        webhook.kind = "webhook".to_string();
        let mut no_body = effect();
        no_body.payload = json!({"to": "bob@example.com", "subject": "s"});
        let mut remote = config();
        remote.host = "smtp.example.com".to_string();
        remote.username = Some("airlock".to_string());
        remote.password_env = Some("AIRLOCK_TOOLS_TEST_SURELY_UNSET".to_string());
        let mut unset = config();
        unset.username = Some("airlock".to_string());
        unset.password_env = Some("AIRLOCK_TOOLS_TEST_SURELY_UNSET".to_string());
        let mut half = config();
        half.username = Some("airlock".to_string());

        let cases = [
            (config(), swapped, "outbox effect: payload `to` \"eve@example.com\" differs from the recipient \"bob@example.com\""),
            (config(), webhook, "outbox effect: kind `webhook` is not an email"),
            (config(), no_body, "outbox effect: payload field `body` is missing or not a string"),
            (remote, effect(), "smtp configuration: a username and password need starttls or port 465 (host smtp.example.com is not this machine)"),
            (unset, effect(), "smtp configuration: the password variable AIRLOCK_TOOLS_TEST_SURELY_UNSET is not set"),
            (half, effect(), "smtp configuration: username is set but password_env is not"),
        ];
        for (config, effect, expected) in cases {
            let result = deliver_email(&config, &effect).await;
            assert_eq!(
                result.map_err(|error| error.to_string()),
                Err(expected.to_string())
            );
        }
    }

    #[test]
    fn credentials_go_only_over_tls_or_to_this_machine() {
        // A variable every test process has stands for the password.
        let login = |host: &str, port: u16, starttls: bool| SmtpConfig {
            host: host.to_string(),
            port,
            username: Some("airlock".to_string()),
            password_env: Some("PATH".to_string()),
            starttls,
            ..config()
        };
        let sends = |config: SmtpConfig| credentials(&config).map(|c| c.is_some());
        assert!(matches!(
            sends(login("smtp.example.com", 587, true)),
            Ok(true)
        ));
        // Port 465 is TLS from the first byte.
        assert!(matches!(
            sends(login("smtp.example.com", 465, false)),
            Ok(true)
        ));
        assert!(matches!(sends(login("127.0.0.1", 25, false)), Ok(true)));
        assert!(sends(login("smtp.example.com", 25, false)).is_err());
        assert!(sends(login("smtp.example.com", 587, false)).is_err());
    }
}
