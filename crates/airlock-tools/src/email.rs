//! Email: the address check of `email.send`, and SMTP delivery of its outbox effect.
//!
//! `email.send` never sends anything when the model calls it (see [`crate::plan`]): the
//! runtime writes an [`OutboxEffect`] and its outbox worker calls [`deliver_email`] later,
//! once per effect. Delivery uses `lettre` over tokio, with rustls for STARTTLS.

use std::str::FromStr;
use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::Value;

use crate::plan::OutboxEffect;
use crate::ToolError;

/// How long one SMTP command may take before delivery is given up (and retried by the
/// outbox worker).
const SMTP_TIMEOUT: Duration = Duration::from_secs(30);

/// Where and how the outbox worker delivers email.
#[derive(Debug, Clone, PartialEq)]
pub struct SmtpConfig {
    /// The SMTP server's host name (also the name its TLS certificate must carry).
    pub host: String,
    /// Its port: 25, or 587 for submission with STARTTLS.
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

/// Checks that `to` is one plain address (`alice@example.com`): no display name, no list.
pub(crate) fn check_address(to: &str) -> Result<(), String> {
    Address::from_str(to)
        .map(|_| ())
        .map_err(|_| format!("must be one email address such as alice@example.com, got {to:?}"))
}

/// Delivers an `email` outbox effect over SMTP. `Ok` once the server has accepted the
/// message; an `Err` leaves the effect to be retried.
pub async fn deliver_email(config: &SmtpConfig, effect: &OutboxEffect) -> Result<(), ToolError> {
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

    let mut transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&config.host)
        .port(config.port)
        .timeout(Some(SMTP_TIMEOUT));
    if config.starttls {
        let parameters = TlsParameters::new(config.host.clone())
            .map_err(|error| config_error(format!("tls for {}: {error}", config.host)))?;
        transport = transport.tls(Tls::Required(parameters));
    } else {
        transport = transport.tls(Tls::None);
    }
    match (&config.username, &config.password_env) {
        (None, None) => {}
        (Some(username), Some(variable)) => {
            // A password must not cross the network in clear text; on the loopback
            // interface it does not cross the network at all.
            if !config.starttls && !is_loopback(&config.host) {
                return Err(config_error(format!(
                    "a username and password need starttls (host {} is not this machine)",
                    config.host
                )));
            }
            let password = std::env::var(variable).map_err(|_| {
                config_error(format!("the password variable {variable} is not set"))
            })?;
            transport = transport.credentials(Credentials::new(username.clone(), password));
        }
        (Some(_), None) => {
            return Err(config_error(
                "username is set but password_env is not".to_string(),
            ))
        }
        (None, Some(_)) => {
            return Err(config_error(
                "password_env is set but username is not".to_string(),
            ))
        }
    }
    transport
        .build()
        .send(message)
        .await
        .map(|_| ())
        .map_err(|error| ToolError::SmtpDelivery {
            reason: format!("{}:{}: {error}", config.host, config.port),
        })
}

fn is_loopback(host: &str) -> bool {
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
            (remote, effect(), "smtp configuration: a username and password need starttls (host smtp.example.com is not this machine)"),
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
}
