//! The ambiguity sweep (DESIGN.md §11.8) run by two nodes at once. Two gates, each with
//! its own pool, on one PostgreSQL database (and, for SQLite, two handles on one file) both
//! sweep the same overdue calls at the same moment: between them every call is marked
//! ambiguous exactly once — one `call.ambiguous` audit record each — and a call whose
//! agent reported its outcome never is.

use super::harness::POLICY;
use airlock_gate::calls::Submission;
use airlock_gate::clock::ManualClock;
use airlock_gate::identity::AgentSpec;
use airlock_gate::Gate;
use airlock_protocol::{CallStatus, OutcomeReport, OutcomeStatus};
use airlock_store::postgres::{PgOptions, PostgresStore};
use airlock_store::sqlite::SqliteStore;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Calls redeemed and left without an outcome (one more is reported on).
const CALLS: usize = 40;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        jiff::Timestamp::from_second(1_800_000_000).unwrap(),
    ))
}

async fn two_nodes_mark_each_overdue_call_once(a: Gate, b: Gate, clock: Arc<ManualClock>) {
    let boot = a.bootstrap("default", "owner").await.unwrap().unwrap();
    let owner = a.authenticate(&boot.owner_token).await.unwrap();
    a.put_policy(&owner, POLICY).await.unwrap();
    let (_, token) = a
        .create_agent(
            &owner,
            AgentSpec {
                name: "scout".into(),
                ..AgentSpec::default()
            },
        )
        .await
        .unwrap();
    let agent = a.authenticate(&token).await.unwrap();
    let mut ids = Vec::new();
    for n in 0..=CALLS {
        let submission = Submission {
            tool: "email.send".into(),
            arguments: json!({"to": format!("n{n}@acme.test")}),
            session_id: None,
            declared: None,
            context: Default::default(),
        };
        let call = a.submit_call(&agent, submission).await.unwrap();
        assert_eq!(call.status, CallStatus::Allowed, "{call:?}");
        a.redeem_keyed(&agent, &call.id, Some(&format!("key-{n}")))
            .await
            .unwrap();
        ids.push(call.id);
    }
    let reported = ids.remove(0);
    let ran = OutcomeReport {
        status: OutcomeStatus::Succeeded,
        detail: None,
    };
    a.report_outcome(&agent, &reported, &ran).await.unwrap();

    // Past the default `outcome_timeout` (10 minutes), both nodes sweep at once.
    clock.advance(Duration::from_secs(11 * 60));
    let sweeps = [a.clone(), b.clone()]
        .map(|gate| tokio::spawn(async move { gate.sweep_ambiguous_once().await.unwrap() }));
    let mut total = 0;
    for sweep in sweeps {
        total += sweep.await.unwrap();
    }
    assert_eq!(total, CALLS, "each overdue call marked by one node");

    let mut marked: BTreeMap<String, usize> = BTreeMap::new();
    for record in a.audit_after(&owner, 0, 10_000).await.unwrap() {
        if record.kind == "call.ambiguous" {
            let id = record.data["call_id"].as_str().unwrap().to_owned();
            *marked.entry(id).or_default() += 1;
        }
    }
    let once: BTreeMap<String, usize> = ids.iter().map(|id| (id.clone(), 1)).collect();
    assert_eq!(marked, once);
    // Nothing is left for either node, and both list the same calls.
    assert_eq!(a.sweep_ambiguous_once().await.unwrap(), 0);
    assert_eq!(b.sweep_ambiguous_once().await.unwrap(), 0);
    let owner_b = b.authenticate(&boot.owner_token).await.unwrap();
    let mut listed: Vec<String> = b
        .ambiguous_calls(&owner_b)
        .await
        .unwrap()
        .into_iter()
        .map(|call| call.id)
        .collect();
    listed.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(listed, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_postgres_nodes_mark_each_overdue_call_ambiguous_once() {
    let url = airlock_pgtest::fresh_database().await;
    let clock = clock();
    let mut gates = Vec::new();
    for _node in 0..2 {
        let store = PostgresStore::connect(&url, PgOptions::default())
            .await
            .unwrap();
        gates.push(Gate::new(Arc::new(store), clock.clone()).await.unwrap());
    }
    let b = gates.pop().unwrap();
    let a = gates.pop().unwrap();
    two_nodes_mark_each_overdue_call_once(a, b, clock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sqlite_handles_mark_each_overdue_call_ambiguous_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("airlock.db");
    let clock = clock();
    let a = Gate::new(
        Arc::new(SqliteStore::open(&path).await.unwrap()),
        clock.clone(),
    )
    .await
    .unwrap();
    let b = Gate::new(
        Arc::new(SqliteStore::open(&path).await.unwrap()),
        clock.clone(),
    )
    .await
    .unwrap();
    two_nodes_mark_each_overdue_call_once(a, b, clock).await;
}
