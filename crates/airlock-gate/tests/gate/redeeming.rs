//! A hook's allowed call costs one commit (issue 19): the call's record and its grant's
//! consumption share a transaction, on both backends. The test counts the store's
//! commits around the steps a hook takes for a call in a session that already exists
//! (session, replay check, submission), so a second commit creeping back into the path
//! fails it. The guarantees the single commit must keep are checked beside it: the grant
//! is consumed once (a retry under the hook's key replays it, any other redeem is
//! refused), the audit chain verifies and holds `call.allowed` then `grant.consumed`,
//! and a call that is not allowed is recorded as before with nothing consumed.

use super::harness::POLICY;
use airlock_gate::calls::{CallContext, RedeemOnAllow, Redeeming, Submission};
use airlock_gate::clock::ManualClock;
use airlock_gate::identity::AgentSpec;
use airlock_gate::lookup::LookedUp;
use airlock_gate::outcomes::SameCall;
use airlock_gate::{Gate, GateError};
use airlock_protocol::CallStatus;
use airlock_store::postgres::{PgOptions, PostgresStore};
use airlock_store::sqlite::SqliteStore;
use airlock_store::{Principal, Store};
use serde_json::{json, Value};
use std::sync::Arc;

fn submission(session_id: &str, to: &str) -> Submission {
    Submission {
        tool: "email.send".into(),
        arguments: json!({"to": to, "subject": "hi", "body": "hello"}),
        session_id: Some(session_id.into()),
        declared: None,
        context: CallContext::default(),
    }
}

/// The hook's lookup for `sent` in the agent's Claude Code session, under `key`.
async fn look_up(gate: &Gate, agent: &Principal, key: Option<&str>, sent: &Submission) -> LookedUp {
    gate.look_up_hook_call(
        agent,
        Some(("claude-session-1", "Claude Code".into())),
        key,
        sent,
    )
    .await
    .unwrap()
}

async fn one_commit_per_allowed_hook_call(store: Arc<dyn Store>) {
    let clock = Arc::new(ManualClock::new(
        jiff::Timestamp::from_second(1_800_000_000).unwrap(),
    ));
    let gate = Gate::new(Arc::clone(&store), clock.clone()).await.unwrap();
    let boot = gate.bootstrap("default", "owner").await.unwrap().unwrap();
    let owner = gate.authenticate(&boot.owner_token).await.unwrap();
    gate.put_policy(&owner, POLICY).await.unwrap();
    let (_, token) = gate
        .create_agent(
            &owner,
            AgentSpec {
                name: "scout".into(),
                ..AgentSpec::default()
            },
        )
        .await
        .unwrap();
    let agent = gate.authenticate(&token).await.unwrap();
    // The agent's session, opened by its first hook call.
    gate.session_for_external(&agent, "claude-session-1", Some("Claude Code".into()))
        .await
        .unwrap();
    let audited = gate.audit_after(&owner, 0, 1000).await.unwrap().len();

    // What the hook does for an allowed call, counted: one read of what it needs
    // (session, replay, held call, ambiguous twin), then the submission.
    let key = "claude-code:toolu_1";
    let commits = store.commits();
    let sent = submission("unused", "bob@acme.test");
    let looked_up = look_up(&gate, &agent, Some(key), &sent).await;
    let session = looked_up.session.clone().expect("the agent's session");
    assert_eq!(looked_up.redeemed_under, None);
    let sent = Submission {
        session_id: Some(session.id.clone()),
        ..sent
    };
    let same = SameCall {
        tool: &sent.tool,
        arguments: &sent.arguments,
        session_id: Some(&session.id),
    };
    let redeeming = Redeeming {
        session: Some(session.clone()),
        redeem: Some(RedeemOnAllow {
            key: Some(key.into()),
            hold: None,
        }),
        looked_up: Some(looked_up),
    };
    let taken = gate
        .submit_or_adopt_redeeming(&agent, sent.clone(), &redeeming)
        .await
        .unwrap();
    assert_eq!(
        store.commits() - commits,
        1,
        "commits for one allowed hook call"
    );
    assert_eq!(taken.call.status, CallStatus::Allowed);
    let taken_id = taken.call.id.clone();
    let redemption = taken.redemption.expect("redeemed as it was recorded");
    assert!(!redemption.replayed);
    assert_eq!(Some(&redemption.grant.id), taken.call.grant_id.as_ref());

    // The grant is spent: the hook's retry under its key replays it (found by the
    // retry's lookup, and by the separate read), nothing else runs it.
    let again = look_up(&gate, &agent, Some(key), &sent).await;
    assert_eq!(
        again.redeemed_under.as_deref(),
        Some(taken.call.id.as_str())
    );
    let (replayed_call, replayed) = gate
        .replay_for_key(&agent, key, &same)
        .await
        .unwrap()
        .expect("a replay under the hook's key");
    assert_eq!(replayed_call, taken.call.id);
    assert!(replayed.replayed);
    assert_eq!(replayed.grant, redemption.grant);
    for other in [Some("claude-code:toolu_2"), None] {
        let spent = gate.redeem_keyed(&agent, &taken.call.id, other).await;
        assert!(matches!(spent, Err(GateError::GrantSpent)), "{spent:?}");
    }
    let stored = gate.get_call(&agent, &taken.call.id).await.unwrap();
    assert!(stored.redeemed_at.is_some(), "{stored:?}");

    // The chain verifies and holds the allow, then the consumption of its grant.
    let records = gate.audit_after(&owner, 0, 1000).await.unwrap();
    let kinds: Vec<(&str, &str)> = records[audited..]
        .iter()
        .map(|record| (record.kind.as_str(), record.subject.as_str()))
        .collect();
    let grant = redemption.grant.id.as_str();
    assert_eq!(
        kinds,
        [
            ("call.allowed", taken.call.id.as_str()),
            ("grant.consumed", grant)
        ]
    );
    let consumed: &Value = &records[audited + 1].data;
    assert_eq!(consumed["call_id"], taken.call.id.as_str());
    let report = gate.verify_audit(&owner).await.unwrap();
    assert!(report.ok, "{report:?}");

    // An asked call is recorded as before: pending, nothing consumed.
    let taken = gate
        .submit_or_adopt_redeeming(&agent, submission(&session.id, "eve@else.test"), &redeeming)
        .await
        .unwrap();
    assert_eq!(taken.call.status, CallStatus::Pending);
    assert!(taken.redemption.is_none());

    // The allowed call never reported what happened and turned ambiguous: the same call
    // again (a new tool use) is denied by what the hook's lookup found, nothing consumed.
    clock.advance(std::time::Duration::from_secs(11 * 60));
    assert_eq!(gate.sweep_ambiguous_once().await.unwrap(), 1);
    let twin = look_up(&gate, &agent, Some("claude-code:toolu_3"), &sent).await;
    let redeeming = Redeeming {
        redeem: Some(RedeemOnAllow {
            key: Some("claude-code:toolu_3".into()),
            hold: None,
        }),
        session: twin.session.clone(),
        looked_up: Some(twin),
    };
    let commits = store.commits();
    let blocked = gate
        .submit_or_adopt_redeeming(&agent, sent.clone(), &redeeming)
        .await
        .unwrap();
    assert_eq!(blocked.call.status, CallStatus::Denied, "{blocked:?}");
    assert!(blocked.redemption.is_none());
    let reason = blocked.call.reason.unwrap_or_default();
    assert!(reason.contains(&taken_id), "{reason}");
    assert_eq!(store.commits() - commits, 1, "the denial is recorded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_hook_call_is_one_commit_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("airlock.db"))
        .await
        .unwrap();
    one_commit_per_allowed_hook_call(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_hook_call_is_one_commit_on_postgres() {
    let url = airlock_pgtest::fresh_database().await;
    let store = PostgresStore::connect(&url, PgOptions::default())
        .await
        .unwrap();
    one_commit_per_allowed_hook_call(Arc::new(store)).await;
}
