//! `airlock-bench gate`, PostgreSQL part: how long a standing rule revoked on node B
//! still allows calls on node A, whose read cache (`airlock-gate/src/cache.rs`) holds it
//! until A's listener hears B's `rule.revoked`.
//!
//! Node A is a whole server (store, gate, listener); node B a second gate with its own
//! pool and listener on the same database. Each round mints a rule on B, waits until a
//! call on A is allowed by it (so A holds it in its cache), revokes it on B, and from the
//! moment B's revoke answered submits the same call on A back to back until one is not
//! allowed. The window is that time; its resolution is one call on A.

use crate::report::Report;
use crate::server::{Airlock, Backend};
use airlock_gate::calls::Submission;
use airlock_gate::clock::SystemClock;
use airlock_gate::rules::NewRule;
use airlock_gate::Gate;
use airlock_protocol::{CallStatus, RuleScope};
use airlock_store::postgres::{PgOptions, PostgresStore};
use airlock_store::{Principal, Subject};
use anyhow::{bail, Context};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const BENCH: &str = "gate";

/// A tool standing rules may name: external, with a target.
const POLICY: &str = r#"
version = 1
default = "ask"

[tools."bench.send"]
risk = "external"
target = "to"
summary = "Send to {to}"
"#;

/// The longest any one wait may take before the run fails.
const DEADLINE: Duration = Duration::from_secs(10);

/// Measures `rounds` revocations on `url` (a fresh database).
pub async fn measure(report: &mut Report, url: &str, rounds: usize) -> anyhow::Result<()> {
    let a = Airlock::start(&Backend::Postgres {
        url: url.to_owned(),
    })
    .await?;
    a.put_policy(POLICY).await?;
    let (_, agent_token) = a.create_agent(&json!({"name": "bench"})).await?;
    let agent = a.gate.authenticate(&agent_token).await?;
    let Subject::Agent { id: agent_id, .. } = &agent.subject else {
        bail!("the agent token is not an agent's");
    };
    let b = Gate::new(
        Arc::new(PostgresStore::connect(url, PgOptions::default()).await?),
        Arc::new(SystemClock),
    )
    .await?;
    let stop = CancellationToken::new();
    let listener = tokio::spawn({
        let b = b.clone();
        let stop = stop.clone();
        async move { b.run_listener(stop).await }
    });
    let owner_b = b.authenticate(&a.owner_token).await?;
    let mut windows = Vec::with_capacity(rounds);
    let mut probes = 0_usize;
    for round in 0..rounds {
        let to = format!("t{round}@bench.test");
        let (rule, _) = b
            .create_rule(
                &owner_b,
                NewRule {
                    tool: "bench.send".into(),
                    target: to.clone(),
                    scope: RuleScope::Agent,
                    scope_id: agent_id.clone(),
                    expires_in: None,
                },
            )
            .await?;
        until(&a.gate, &agent, &to, |status| status == CallStatus::Allowed)
            .await
            .context("A never allowed under B's new rule")?;
        b.revoke_rule(&owner_b, &rule.id).await?;
        let answered = Instant::now();
        probes += until(&a.gate, &agent, &to, |status| status != CallStatus::Allowed)
            .await
            .context("A kept allowing under B's revoked rule")?;
        windows.push(answered.elapsed().as_secs_f64() * 1_000.0);
    }
    stop.cancel();
    let _ = listener.await;
    a.stop().await?;
    windows.sort_by(f64::total_cmp);
    let at = |q: f64| windows[((windows.len() - 1) as f64 * q).round() as usize];
    let case = "revoke on node B, still allowed on node A";
    report.add(BENCH, case, "window_p50", at(0.5), "ms");
    report.add(BENCH, case, "window_p99", at(0.99), "ms");
    report.add(BENCH, case, "window_max", at(1.0), "ms");
    report.add(
        BENCH,
        case,
        "calls_on_a_per_round",
        probes as f64 / rounds as f64,
        "calls",
    );
    Ok(())
}

/// Submits the call on `gate` until its status satisfies `done`; how many calls it took.
async fn until(
    gate: &Gate,
    agent: &Principal,
    to: &str,
    done: impl Fn(CallStatus) -> bool,
) -> anyhow::Result<usize> {
    let deadline = Instant::now() + DEADLINE;
    let mut calls = 0;
    loop {
        let call = gate
            .submit_call(
                agent,
                Submission {
                    tool: "bench.send".into(),
                    arguments: json!({"to": to}),
                    session_id: None,
                    declared: None,
                    context: Default::default(),
                },
            )
            .await?;
        calls += 1;
        if done(call.status) {
            return Ok(calls);
        }
        if Instant::now() > deadline {
            bail!("still {:?} after {DEADLINE:?}", call.status);
        }
    }
}
