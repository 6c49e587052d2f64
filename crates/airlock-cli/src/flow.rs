//! The client side of one gated call, written once: submit → wait for a person → redeem
//! the grant → report the outcome (DESIGN.md §11.8). `airlock call`, `airlock hook` and
//! the MCP proxy's HTTP gate (`commands/mcp.rs`) all go through these steps; each only
//! says how a verdict or a failure reaches its own caller (exit codes, the agent's hook
//! answer, an MCP result).
//!
//! - [`submit`] `POST /v1/calls` once: the endpoint takes no `Idempotency-Key`, so a
//!   request whose answer was lost is not sent again (that could open a second call); a
//!   failure is the caller's fail-closed deny.
//! - `POST /v1/hooks/{agent}` under the call's key, again while the answer is lost
//!   ([`airlock_client::hook::submit_hook`], in the crate the `airlock` front binary
//!   links): the server waits and redeems there, and answers a retried key with the same
//!   verdict instead of a second call.
//! - [`wait`] long-polls an asked call until it is decided or the caller's deadline
//!   passes, each poll at most [`MAX_POLL_SECONDS`]. A poll whose answer is lost (the
//!   server restarting, a node going away, a 5xx) is sent again, with growing pauses,
//!   until the deadline: a poll changes nothing, and the approval outlives a restart
//!   (G7), so the person's decision still reaches the caller that waits for it.
//! - [`redeem`] consumes the grant under one fresh key per call, retried while the
//!   answer is lost, so that a lost answer is never a lost (or a second) run.
//! - [`report`] records what happened when the tool ran.
//! - [`with_retries`] (from `airlock-client`) sends a deduplicated request again while
//!   its answer is lost.
//! - [`verdict`] is what a call's status means to a gate (anything but allowed or approved
//!   is a deny), shared with the server's in-process hook handler.
//!
//! The server's hook handler (`airlock-server/src/handlers/hooks.rs`) runs the same steps
//! in-process through the gate, not over HTTP; what it shares with this flow is the
//! meaning of a call's status ([`verdict`]).

pub use airlock_client::hook::MAX_POLL_SECONDS;
pub use airlock_client::new_key;
pub use airlock_client::retry::{with_retries, RETRY_FOR};

use crate::client::{encode, parse, Client};
use airlock_client::errors::is_transient;
use airlock_protocol::{Call, CallStatus, OutcomeReport, OutcomeStatus, Redeemed};
pub use airlock_server::handlers::hooks::{answer as verdict, Answer};
use serde_json::Value;
use std::time::{Duration, Instant};

/// A call as the server answered it: the JSON as it came (for `--json`) and its reading.
pub struct Answered {
    pub value: Value,
    pub call: Call,
}

impl Answered {
    fn read(value: Value) -> anyhow::Result<Answered> {
        let call = parse(&value, "a call")?;
        Ok(Answered { value, call })
    }
}

/// `POST /v1/calls` with `body` (sent once; see the module's notes).
pub fn submit(client: &Client, body: &Value) -> anyhow::Result<Answered> {
    Answered::read(client.post("/v1/calls", body)?)
}

/// `GET /v1/calls/{id}`: where the call stands now, without waiting.
pub fn look(client: &Client, call_id: &str) -> anyhow::Result<Call> {
    parse(
        &client.get(&format!("/v1/calls/{}", encode(call_id)))?,
        "a call",
    )
}

/// Polls `answered`'s call while it is pending and `until` has not passed, each poll
/// waiting for what is left (at most [`MAX_POLL_SECONDS`]); a poll that gets no answer is
/// sent again until `until` (then its error is the answer).
pub fn wait(client: &Client, mut answered: Answered, until: Instant) -> anyhow::Result<Answered> {
    loop {
        if answered.call.status != CallStatus::Pending || seconds_until(until) == 0 {
            return Ok(answered);
        }
        answered = poll_until(client, &answered.call.id, until)?;
    }
}

/// Waits for the call `call_id` as [`wait`] does, polling it at least once.
pub fn wait_for(client: &Client, call_id: &str, until: Instant) -> anyhow::Result<Answered> {
    let first = poll_until(client, call_id, until)?;
    wait(client, first, until)
}

/// The first pause before a lost poll is sent again; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(200);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// One answered long poll of `call_id`: polls, and polls again after a pause while the
/// answer is lost and `until` leaves room for it. Other failures end the wait at once.
fn poll_until(client: &Client, call_id: &str, until: Instant) -> anyhow::Result<Answered> {
    let mut pause = FIRST_PAUSE;
    loop {
        match poll_for(client, call_id, seconds_until(until)) {
            Err(error) if is_transient(&error) && Instant::now() + pause < until => {
                tracing::debug!(error = %format!("{error:#}"), "no answer to a poll; polling again");
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
            answered => return answered,
        }
    }
}

/// One long poll of at most `left` seconds (always with `wait_s`, even `0`).
fn poll_for(client: &Client, call_id: &str, left: u64) -> anyhow::Result<Answered> {
    let path = format!(
        "/v1/calls/{}?wait_s={}",
        encode(call_id),
        left.min(MAX_POLL_SECONDS)
    );
    Answered::read(client.get(&path)?)
}

fn seconds_until(until: Instant) -> u64 {
    until.saturating_duration_since(Instant::now()).as_secs()
}

/// Consumes the grant of an allowed or approved call: `POST /v1/calls/{id}/redeem` under
/// one fresh key, sent again under that key while the answer is lost.
pub fn redeem(client: &Client, call_id: &str) -> anyhow::Result<Redeemed> {
    let path = format!("/v1/calls/{}/redeem", encode(call_id));
    let headers = [("Idempotency-Key", new_key())];
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::client::ClientArgs;
    use airlock_client::errors::is_not_sent;

    /// A client of a gateway that is down: any request fails with nothing sent.
    fn down() -> Client {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        Client::new(&ClientArgs {
            url: format!("http://127.0.0.1:{port}"),
            token: Some("al_agent_test".into()),
            data_dir: "no-such-dir".into(),
            json: false,
        })
    }

    fn answered(status: &str) -> Answered {
        let value = serde_json::json!({
            "id": "call_1", "agent_id": "agt_1", "session_id": null, "tool": "shell.exec",
            "arguments": {"command": "ls"}, "risk": "exec", "status": status,
            "decided_by": "rule", "rule": null, "reason": null, "approval_id": null,
            "grant_id": null, "created_at": "2026-12-02T02:38:10.802Z", "decided_at": null
        });
        Answered::read(value).unwrap()
    }

    #[test]
    fn a_decided_call_is_not_waited_on() {
        let waited = wait(
            &down(),
            answered("allowed"),
            Instant::now() + Duration::from_secs(60),
        );
        assert_eq!(waited.unwrap().call.status, CallStatus::Allowed);
    }

    #[test]
    fn a_pending_call_past_the_deadline_stays_pending() {
        let waited = wait(&down(), answered("pending"), Instant::now());
        assert_eq!(waited.unwrap().call.status, CallStatus::Pending);
    }

    #[test]
    fn a_pending_call_is_polled_until_the_deadline_and_an_unreachable_gateway_is_an_error() {
        let started = Instant::now();
        let until = started + Duration::from_millis(1500);
        let error = wait(&down(), answered("pending"), until).err().unwrap();
        assert!(is_not_sent(&error), "{error:#}");
        // It kept polling (a restart takes a moment), and gave up by the deadline.
        assert!(started.elapsed() >= Duration::from_millis(500));
        assert!(started.elapsed() < Duration::from_secs(3));
        // `wait_for` knows nothing of the call yet: it polls even at the deadline.
        let error = wait_for(&down(), "call_1", Instant::now()).err().unwrap();
        assert!(is_not_sent(&error), "{error:#}");
    }

    #[test]
    fn a_redeem_that_could_not_be_sent_is_not_retried() {
        let started = Instant::now();
        let error = redeem(&down(), "call_1").err().unwrap();
        assert!(is_not_sent(&error), "{error:#}");
        assert!(
            started.elapsed() < RETRY_FOR,
            "a gateway that is down is a refusal now"
        );
    }
}
