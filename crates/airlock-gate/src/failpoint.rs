//! Failure injection for the crash tests: named points on the approval path where a test
//! build of airlock kills itself, as `kill -9` would, to prove that every durable step
//! survives a crash at the worst moment.
//!
//! It lives in the gate, the lowest crate that has a point (the gate's and the runtime's
//! steps); the store has none.
//!
//! Compiled only with the cargo feature `failpoints` (off by default). Without it,
//! [`failpoint!`](crate::failpoint!) expands to nothing: no code, no environment read.
//! With it, `AIRLOCK_FAILPOINT=<name>[:<nth>]` names one point; the process aborts
//! (`std::process::abort`, no destructors, no flush, no graceful shutdown) the `nth` time
//! (default: the first) that point is passed. Every other point is a no-op.
//!
//! The points (each sits right after the named step's transaction committed, except
//! `call.submitted`, which sits right before it):
//!
//! | name                | where                                                                 |
//! |---------------------|-----------------------------------------------------------------------|
//! | `call.submitted`    | gate: a call was evaluated; its transaction is about to commit        |
//! | `approval.created`  | gate: an asked call and its approval committed, nobody woken yet      |
//! | `decision.committed`| gate: a decision committed, waiters not woken, run not resumed        |
//! | `grant.redeemed`    | gate: `POST /v1/calls/{id}/redeem` consumed the grant, no reply sent  |
//! | `effect.written`    | runtime: grant consumed with the outbox row or `tool_started`         |
//! | `run.suspended`     | runtime: a run committed `awaiting_approval`                          |
//! | `run.resumed`       | runtime: a node claimed a run (`run_resumed`), its leg not started    |
//! | `run.cancelled`     | a run cancelled with its pending approvals closed                     |
//! | `run.paused`        | a run paused with its pending approvals closed, no answer sent yet    |
//! | `run.unpaused`      | a paused run resumed (`awaiting_approval`), not yet claimed by a node |

/// Every point a test may name; a name outside this list is a typo, and the process
/// refuses to start rather than run a crash test that can never crash.
pub const POINTS: &[&str] = &[
    "call.submitted",
    "approval.created",
    "decision.committed",
    "grant.redeemed",
    "effect.written",
    "run.suspended",
    "run.resumed",
    "run.cancelled",
    "run.paused",
    "run.unpaused",
];

/// Marks a failure-injection point. Expands to nothing unless `airlock-gate` is built
/// with the `failpoints` feature.
#[cfg(feature = "failpoints")]
#[macro_export]
macro_rules! failpoint {
    ($name:literal) => {
        $crate::failpoint::hit($name)
    };
}

/// Marks a failure-injection point. Expands to nothing unless `airlock-gate` is built
/// with the `failpoints` feature.
#[cfg(not(feature = "failpoints"))]
#[macro_export]
macro_rules! failpoint {
    ($name:literal) => {};
}

#[cfg(feature = "failpoints")]
mod armed {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    /// The point this process dies at, and after how many passes.
    struct Armed {
        name: String,
        nth: u64,
        passes: AtomicU64,
    }

    fn armed() -> Option<&'static Armed> {
        static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
        ARMED
            .get_or_init(|| {
                let value = std::env::var("AIRLOCK_FAILPOINT").ok()?;
                let (name, nth) = parse(&value).ok()?;
                Some(Armed {
                    name,
                    nth,
                    passes: AtomicU64::new(0),
                })
            })
            .as_ref()
    }

    /// `name[:nth]` with `name` one of [`super::POINTS`] and `nth ≥ 1`.
    pub fn parse(value: &str) -> Result<(String, u64), String> {
        let (name, nth) = match value.split_once(':') {
            Some((name, nth)) => (
                name,
                nth.parse::<u64>()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| format!("AIRLOCK_FAILPOINT: `{nth}` is not a count ≥ 1"))?,
            ),
            None => (value, 1),
        };
        if !super::POINTS.contains(&name) {
            return Err(format!(
                "AIRLOCK_FAILPOINT: unknown point `{name}`; the points are {}",
                super::POINTS.join(", ")
            ));
        }
        Ok((name.to_owned(), nth))
    }

    /// Checks `AIRLOCK_FAILPOINT` at start-up, so a typo fails the test at once.
    pub fn check_env() -> Result<(), String> {
        match std::env::var("AIRLOCK_FAILPOINT") {
            Ok(value) => parse(&value).map(|_| ()),
            Err(_) => Ok(()),
        }
    }

    /// Aborts the process if `name` is the armed point and this is its `nth` pass.
    pub fn hit(name: &'static str) {
        let Some(armed) = armed() else { return };
        if armed.name != name {
            return;
        }
        let pass = armed.passes.fetch_add(1, Ordering::SeqCst) + 1;
        if pass == armed.nth {
            tracing::error!(point = name, pass, "failpoint reached: aborting");
            std::process::abort();
        }
    }
}

#[cfg(feature = "failpoints")]
pub use armed::{check_env, hit, parse};

/// Without the feature there is nothing to check.
#[cfg(not(feature = "failpoints"))]
pub fn check_env() -> Result<(), String> {
    Ok(())
}

#[cfg(all(test, feature = "failpoints"))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::parse;

    #[test]
    fn parses_names_and_counts() {
        assert_eq!(
            parse("grant.redeemed").unwrap(),
            ("grant.redeemed".into(), 1)
        );
        assert_eq!(parse("run.resumed:3").unwrap(), ("run.resumed".into(), 3));
        assert!(parse("run.resumed:0").unwrap_err().contains("count"));
        assert!(parse("grant.redeem").unwrap_err().contains("unknown point"));
        assert!(parse("effect.written:x").unwrap_err().contains("`x`"));
    }
}
