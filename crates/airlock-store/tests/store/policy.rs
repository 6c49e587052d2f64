//! Policy versions and the cancellation of approvals made under another policy (G4).

use super::fixtures::{effects, policy, t, world, POLICY_1, POLICY_2};
use super::harness::Ctx;
use airlock_protocol::{Approval, ApprovalStatus, CallStatus, DecidedBy};
use airlock_store::{Effects, StoreError};

pub async fn every_policy_version_is_kept(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let none = |_: &Approval| Effects::none();
    assert_eq!(
        store.current_policy(&world.ws).await.unwrap(),
        Some(policy(1, POLICY_1))
    );
    assert_eq!(store.current_policy("ws_nowhere").await.unwrap(), None);

    let second = policy(2, POLICY_2);
    store
        .put_policy(
            &world.ws,
            &second,
            &effects("policy.updated", "2", t(2)),
            "stale",
            &none,
        )
        .await
        .unwrap();
    assert_eq!(
        store.current_policy(&world.ws).await.unwrap(),
        Some(second.clone())
    );
    // The same digest again is still a new version (the text may differ).
    let third = policy(3, POLICY_2);
    store
        .put_policy(&world.ws, &third, &Effects::none(), "stale", &none)
        .await
        .unwrap();
    assert_eq!(
        store.current_policy(&world.ws).await.unwrap(),
        Some(third.clone())
    );

    // A version that is not newer is refused and writes nothing.
    let before = ctx.row_counts().await;
    for stale in [policy(3, POLICY_1), policy(1, POLICY_1)] {
        let error = store
            .put_policy(
                &world.ws,
                &stale,
                &effects("policy.updated", "x", t(9)),
                "stale",
                &none,
            )
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");
    }
    assert_eq!(ctx.row_counts().await, before);
    // Every version is kept: two workspaces' version 1, and versions 2 and 3 here.
    assert_eq!(before["policies"], 4);

    let mut current = store.current_policies().await.unwrap();
    current.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        current,
        vec![
            (world.ws.clone(), third),
            (world.other.clone(), policy(1, POLICY_1))
        ]
    );
}

pub async fn put_policy_cancels_stale_pending_approvals(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let ws = world.ws.as_str();
    let old = world.spec("old");
    let mut fresh = world.spec("fresh");
    fresh.policy = POLICY_2.into();
    let mut decided = world.spec("decided");
    decided.created_at = t(1);
    let mut elsewhere = world.spec("elsewhere");
    elsewhere.agent = world.other_agent.clone();
    elsewhere.session = None;
    for spec in [&old, &decided] {
        store
            .record_call(ws, spec.asked(), Effects::none())
            .await
            .unwrap();
    }
    store
        .record_call(&world.other, elsewhere.asked(), Effects::none())
        .await
        .unwrap();
    store
        .decide(ws, &decided.approve(t(2)), &Effects::none())
        .await
        .unwrap();

    let on_cancel = |approval: &Approval| effects("approval.cancelled", &approval.id, t(10));
    let cancelled = store
        .put_policy(
            ws,
            &policy(2, POLICY_2),
            &effects("policy.updated", "2", t(10)),
            "stale_policy: changed",
            &on_cancel,
        )
        .await
        .unwrap();

    // Only the pending approval of this workspace under another digest is cancelled.
    assert_eq!(cancelled.len(), 1);
    let approval = &cancelled[0];
    assert_eq!(approval.id, old.approval_id());
    assert_eq!(approval.status, ApprovalStatus::Cancelled);
    assert_eq!(approval.decided_by.as_deref(), Some("system"));
    assert_eq!(
        approval.decision_reason.as_deref(),
        Some("stale_policy: changed")
    );
    assert_eq!(approval.decided_at, Some(policy(2, POLICY_2).updated_at));
    assert_eq!(
        store
            .get_approval(ws, &old.approval_id())
            .await
            .unwrap()
            .as_ref(),
        Some(approval)
    );
    let call = store.get_call(ws, &old.call_id()).await.unwrap().unwrap();
    assert_eq!(call.status, CallStatus::Cancelled);
    assert_eq!(call.decided_by, DecidedBy::System);
    assert_eq!(call.decided_at, approval.decided_at);

    // An approval made under the new policy after the change stays pending.
    store
        .record_call(ws, fresh.asked(), Effects::none())
        .await
        .unwrap();
    let status = |id: String, ws: &'static str| async move {
        store.get_approval(ws, &id).await.unwrap().unwrap().status
    };
    assert_eq!(
        status(fresh.approval_id(), "ws_a").await,
        ApprovalStatus::Pending
    );
    assert_eq!(
        status(decided.approval_id(), "ws_a").await,
        ApprovalStatus::Approved
    );
    assert_eq!(
        status(elsewhere.approval_id(), "ws_b").await,
        ApprovalStatus::Pending
    );

    // The policy change is recorded first, then one cancellation with its own effects.
    let audit = store.audit_after(ws, 0, 100).await.unwrap();
    let kinds: Vec<(&str, &str)> = audit
        .iter()
        .map(|record| (record.kind.as_str(), record.subject.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [("policy.updated", "2"), ("approval.cancelled", "apr_old")]
    );
    let events = store.events_after(ws, 0, 100).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|event| event.kind.as_str()).collect();
    assert_eq!(kinds, ["policy.updated", "approval.cancelled"]);
}
