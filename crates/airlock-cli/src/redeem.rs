//! Redeeming a grant from the command line so that a lost answer is never a lost call
//! (DESIGN.md §11.8): one `Idempotency-Key` per call, and the same request again, under
//! the same key, while the answer does not come (the server restarting, a broken
//! connection). The server answers a retry of a redeem that went through with the same
//! grant (`"replayed": true`), and refuses any other (409), so retrying never runs a
//! call twice. Shared by `airlock call -- COMMAND`, `airlock hook` and `airlock mcp proxy`.

use crate::client::{encode, is_not_sent, is_transient, parse, Client};
use airlock_protocol::{OutcomeReport, OutcomeStatus, Redeemed};
use std::time::{Duration, Instant};

/// How long a lost answer is retried: long enough for a server to restart.
pub const RETRY_FOR: Duration = Duration::from_secs(30);

/// The first pause between attempts; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// A fresh key for one call's redeem.
pub fn new_key() -> String {
    airlock_gate::ids::new_id("idem")
}

/// Sends `attempt` until it answers or fails for good: a [`crate::client::Transient`]
/// failure is tried again, with growing pauses, until `retry_for` has passed. A first
/// attempt that could not even connect is final at once: nothing was sent, so nothing
/// can have been consumed, and a gateway that is down is a refusal now, not in 30 s.
/// Once a request may have reached the server, every failure is retried, connection
/// refusals too (the server restarting).
pub fn with_retries<T>(
    retry_for: Duration,
    mut attempt: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let until = Instant::now() + retry_for;
    let mut pause = FIRST_PAUSE;
    let mut reached = false;
    loop {
        let outcome = attempt();
        if let Err(error) = &outcome {
            if !reached && is_not_sent(error) {
                return outcome;
            }
            reached = true;
        }
        match outcome {
            Err(error) if is_transient(&error) && Instant::now() + pause < until => {
                tracing::debug!(error = %format!("{error:#}"), "no answer; retrying");
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
            other => return other,
        }
    }
}

/// `POST /v1/calls/{id}/redeem` under `key`, retried while the answer is lost.
pub fn redeem(client: &Client, call_id: &str, key: &str) -> anyhow::Result<Redeemed> {
    let path = format!("/v1/calls/{}/redeem", encode(call_id));
    let headers = [("Idempotency-Key", key.to_owned())];
    let value = with_retries(RETRY_FOR, || {
        client.post_with(&path, &serde_json::json!({}), &headers)
    })?;
    parse(&value, "a redeemed grant")
}

/// `POST /v1/calls/{id}/outcome`, retried while the answer is lost (the server stores an
/// outcome once and answers the same report again without storing it twice).
pub fn report(
    client: &Client,
    call_id: &str,
    succeeded: bool,
    detail: Option<String>,
) -> anyhow::Result<()> {
    let path = format!("/v1/calls/{}/outcome", encode(call_id));
    let body = OutcomeReport {
        status: if succeeded {
            OutcomeStatus::Succeeded
        } else {
            OutcomeStatus::Failed
        },
        detail,
    };
    with_retries(RETRY_FOR, || client.post(&path, &body)).map(|_| ())
}
