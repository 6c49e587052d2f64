//! Sending a request again while its answer is lost, so that a lost answer is never a
//! lost call (DESIGN.md §11.8): the same request, under the same `Idempotency-Key`, while
//! the answer does not come (the server restarting, a broken connection). The server
//! answers a retry of a redeem that went through with the same grant (`"replayed": true`)
//! and refuses any other (409), and answers a retried hook key with the same verdict, so
//! retrying never runs a call twice. Only requests the server deduplicates go through
//! here.

use crate::errors::{is_not_sent, is_transient};
use std::time::{Duration, Instant};

/// How long a lost answer is retried: long enough for a server to restart.
pub const RETRY_FOR: Duration = Duration::from_secs(30);

/// The first pause between attempts; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// Sends `attempt` until it answers or fails for good: a [`crate::errors::Transient`]
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
