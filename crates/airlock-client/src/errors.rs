//! How a failed request becomes a message and an exit code, for every client of the API.
//!
//! Errors come back as `application/problem+json` (DESIGN.md §6). A refusal the person
//! can act on (403 forbidden, 409 already decided / binding mismatch / stale, 422 invalid)
//! is a [`Refused`] and exits 1; anything else (unreachable server, 401, 404, 5xx) is a
//! plain error and exits 2. Whether a request may be sent again depends on whether its
//! answer was lost ([`Transient`]) or it was never sent ([`NotSent`]).

use anyhow::anyhow;

/// A request the server refused on its merits (403, 409, 422): the command exits 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// A request whose answer never came: the server was unreachable, the connection broke,
/// or the server failed (5xx). The same request may be sent again; a redeem only under
/// the same `Idempotency-Key` (DESIGN.md §11.8).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Transient(pub String);

/// A [`Transient`] failure before anything was sent: no connection could be opened, so
/// the server cannot have acted on the request.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotSent(pub String);

/// Whether `error` is a [`Transient`] or [`NotSent`] failure.
pub fn is_transient(error: &anyhow::Error) -> bool {
    error.downcast_ref::<Transient>().is_some() || is_not_sent(error)
}

/// Whether `error` is a [`NotSent`] failure.
pub fn is_not_sent(error: &anyhow::Error) -> bool {
    error.downcast_ref::<NotSent>().is_some()
}

/// The error a non-2xx answer stands for: `status`, the answer's `body` (a problem
/// document, or anything), and whether a token was sent (for the hint on a 401).
pub fn from_status(status: u16, body: &str, token_sent: bool) -> anyhow::Error {
    if status == 401 {
        let hint = if token_sent {
            ""
        } else {
            " (no token was given and no owner.token was found)"
        };
        return anyhow!("unauthorized: check --token/AIRLOCK_TOKEN{hint}");
    }
    let message = match serde_json::from_str::<airlock_protocol::Problem>(body) {
        Ok(problem) if problem.detail.is_empty() => problem.title,
        Ok(problem) => format!("{}: {}", problem.title, problem.detail),
        Err(_) if body.trim().is_empty() => format!("the server answered {status}"),
        Err(_) => format!("the server answered {status}: {}", body.trim()),
    };
    if matches!(status, 403 | 409 | 422) {
        Refused(message).into()
    } else if status >= 500 {
        Transient(message).into()
    } else {
        anyhow!(message)
    }
}
