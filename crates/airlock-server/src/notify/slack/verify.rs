//! Slack's request signing (v0), checked before anything in a request is believed.
//!
//! Slack sends `X-Slack-Request-Timestamp` (unix seconds) and `X-Slack-Signature:
//! v0=<hex>`, where `<hex>` is HMAC-SHA256 under the app's signing secret of
//! `v0:<timestamp>:<raw body>`. A request more than five minutes away from our clock is
//! refused whatever its signature (a replay of an old request); a replay inside the window
//! is caught by the caller, which records every accepted signature.

use crate::notify::sign::hmac_sha256;
use crate::web::session::same_secret;

/// How far a request's timestamp may be from our clock, in seconds.
pub const WINDOW_SECONDS: i64 = 5 * 60;

/// Why a request is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A header is missing or malformed.
    Malformed,
    /// The timestamp is outside the window.
    Stale,
    /// The signature does not verify.
    BadSignature,
}

impl Refusal {
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Malformed => "the Slack signature headers are missing or malformed",
            Refusal::Stale => "the request's timestamp is more than 5 minutes from now",
            Refusal::BadSignature => "the Slack signature does not verify",
        }
    }
}

/// The `X-Slack-Signature` value Slack sends for `body` at `timestamp`.
pub fn signature(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    let mut message = format!("v0:{timestamp}:").into_bytes();
    message.extend_from_slice(body);
    format!("v0={}", hex::encode(hmac_sha256(secret, &message)))
}

/// Checks a request's headers and raw body at `now` (unix seconds).
pub fn verify(
    secret: &[u8],
    timestamp: Option<&str>,
    given: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), Refusal> {
    let (Some(timestamp), Some(given)) = (timestamp, given) else {
        return Err(Refusal::Malformed);
    };
    let seconds: i64 = timestamp.parse().map_err(|_| Refusal::Malformed)?;
    if (now - seconds).abs() > WINDOW_SECONDS {
        return Err(Refusal::Stale);
    }
    if !same_secret(given, &signature(secret, timestamp, body)) {
        return Err(Refusal::BadSignature);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of Slack's "Verifying requests from Slack" page (its secret,
    /// timestamp, body and resulting signature).
    #[test]
    fn slacks_documented_example_verifies() {
        let secret = b"8f742231b10e8888abcd99yyyzzz85a5";
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let expected = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(signature(secret, "1531420618", body), expected);
        assert_eq!(
            verify(
                secret,
                Some("1531420618"),
                Some(expected),
                body,
                1531420618 + 299
            ),
            Ok(())
        );
    }

    #[test]
    fn stale_altered_and_missing_are_refused() {
        let secret = b"s3cret";
        let body = b"payload=%7B%7D";
        let good = signature(secret, "1000", body);
        let check = |ts: Option<&str>, sig: Option<&str>, body: &[u8], now: i64| {
            verify(secret, ts, sig, body, now)
        };
        assert_eq!(check(Some("1000"), Some(&good), body, 1000), Ok(()));
        assert_eq!(
            check(Some("1000"), Some(&good), body, 1000 + WINDOW_SECONDS + 1),
            Err(Refusal::Stale)
        );
        assert_eq!(
            check(Some("1000"), Some(&good), body, 1000 - WINDOW_SECONDS - 1),
            Err(Refusal::Stale)
        );
        assert_eq!(
            check(Some("1000"), Some(&good), b"payload=%7B%20%7D", 1000),
            Err(Refusal::BadSignature)
        );
        assert_eq!(
            check(Some("1001"), Some(&good), body, 1000),
            Err(Refusal::BadSignature)
        );
        assert_eq!(
            check(None, Some(&good), body, 1000),
            Err(Refusal::Malformed)
        );
        assert_eq!(
            check(Some("x"), Some(&good), body, 1000),
            Err(Refusal::Malformed)
        );
        assert_eq!(
            check(Some("1000"), None, body, 1000),
            Err(Refusal::Malformed)
        );
    }
}
