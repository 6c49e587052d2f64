//! The integrations' state (issue 20): Slack messages recorded once, listed for updating
//! once their approval ended, claimed by one node, closed for good; a Slack request's
//! signature accepted once; an asked call's trace context kept once.

use super::fixtures::{effects, t, world};
use super::harness::Ctx;
use airlock_protocol::ApprovalStatus;
use airlock_store::Effects;
use airlock_store::{SlackMessage, Store};

fn message(approval_id: &str, workspace: &str, ts: &str) -> SlackMessage {
    SlackMessage {
        approval_id: approval_id.into(),
        channel: "slack".into(),
        workspace: workspace.into(),
        slack_channel: "C0APPROVALS".into(),
        ts: ts.into(),
        binding_digest: "digest-shown".into(),
        posted_at: t(10),
        closed_at: None,
    }
}

async fn to_close(store: &dyn Store, now: i64) -> Vec<(String, ApprovalStatus)> {
    store
        .slack_messages_to_close("slack", t(now), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|(message, approval)| (message.approval_id, approval.status))
        .collect()
}

pub async fn slack_messages_are_closed_once_after_their_approval_ended(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let spec = world.spec("one");
    store
        .record_call(&world.ws, spec.asked(), effects("call.asked", "one", t(1)))
        .await
        .unwrap();
    let id = spec.approval_id();
    store
        .record_slack_message(&message(&id, &world.ws, "1.000001"))
        .await
        .unwrap();
    // A second record (a retried post) keeps the first.
    store
        .record_slack_message(&message(&id, &world.ws, "2.000002"))
        .await
        .unwrap();
    let stored = store.slack_message(&id, "slack").await.unwrap().unwrap();
    assert_eq!(stored, message(&id, &world.ws, "1.000001"));
    assert_eq!(store.slack_message(&id, "other").await.unwrap(), None);

    // Pending: nothing to close.
    assert!(to_close(store, 20).await.is_empty());
    store
        .decide(&world.ws, &spec.reject(t(30)), &Effects::none())
        .await
        .unwrap();
    assert_eq!(
        to_close(store, 40).await,
        vec![(id.clone(), ApprovalStatus::Rejected)]
    );
    // On another channel's list it is not.
    assert!(store
        .slack_messages_to_close("other", t(40), 10)
        .await
        .unwrap()
        .is_empty());

    // One claim wins until it lapses; a claimed message is not listed meanwhile.
    assert!(store
        .claim_slack_message(&id, "slack", t(40), t(70))
        .await
        .unwrap());
    assert!(!store
        .claim_slack_message(&id, "slack", t(41), t(71))
        .await
        .unwrap());
    assert!(to_close(store, 50).await.is_empty());
    // The claimer died: after the claim, another node may take it.
    assert_eq!(to_close(store, 70).await.len(), 1);
    assert!(store
        .claim_slack_message(&id, "slack", t(70), t(100))
        .await
        .unwrap());
    store
        .close_slack_message(&id, "slack", t(75))
        .await
        .unwrap();
    assert!(to_close(store, 200).await.is_empty());
    assert!(!store
        .claim_slack_message(&id, "slack", t(200), t(230))
        .await
        .unwrap());
    let closed = store.slack_message(&id, "slack").await.unwrap().unwrap();
    assert_eq!(closed.closed_at, Some(t(75)));
}

pub async fn a_slack_request_is_accepted_once(ctx: Ctx) {
    let store = ctx.store.as_ref();
    assert!(store
        .first_slack_request("v0=aa", t(100), t(0))
        .await
        .unwrap());
    assert!(!store
        .first_slack_request("v0=aa", t(101), t(0))
        .await
        .unwrap());
    assert!(store
        .first_slack_request("v0=bb", t(102), t(0))
        .await
        .unwrap());
    // Signatures older than `forget_before` are forgotten (their requests are refused
    // for their timestamp before this lookup).
    assert!(store
        .first_slack_request("v0=aa", t(1000), t(500))
        .await
        .unwrap());
}

pub async fn an_approvals_trace_context_is_kept_once(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let spec = world.spec("traced");
    store
        .record_call(
            &world.ws,
            spec.asked(),
            effects("call.asked", "traced", t(1)),
        )
        .await
        .unwrap();
    let id = spec.approval_id();
    assert_eq!(store.approval_trace(&id).await.unwrap(), None);
    let first = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    store.record_approval_trace(&id, first).await.unwrap();
    store
        .record_approval_trace(
            &id,
            "00-11111111111111111111111111111111-2222222222222222-01",
        )
        .await
        .unwrap();
    assert_eq!(
        store.approval_trace(&id).await.unwrap().as_deref(),
        Some(first)
    );
}
