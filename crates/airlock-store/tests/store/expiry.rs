//! Expiring overdue approvals (G4: recorded as `expired`, never as a rejection) and the
//! sweeper's next deadline.

use super::fixtures::{effects, t, world, Spec, World};
use super::harness::Ctx;
use airlock_protocol::{Approval, ApprovalStatus, CallStatus, DecidedBy};
use airlock_store::{DecideError, Effects};

fn due_at(world: &World, id: &str, deadline: i64) -> Spec {
    let mut spec = world.spec(id);
    spec.deadline = t(deadline);
    spec
}

fn on_expire(approval: &Approval) -> Effects {
    effects(
        "approval.expired",
        &approval.id,
        approval.decided_at.unwrap(),
    )
}

pub async fn expire_due_moves_only_due_approvals(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let specs = [
        due_at(&world, "early", 10),
        due_at(&world, "exact", 20),
        due_at(&world, "later", 30),
        due_at(&world, "decided", 5),
    ];
    for spec in &specs {
        store
            .record_call(&world.ws, spec.asked(), Effects::none())
            .await
            .unwrap();
    }
    store
        .decide(&world.ws, &specs[3].approve(t(1)), &Effects::none())
        .await
        .unwrap();

    // Due means deadline at or before `now`.
    let expired = store.expire_due(t(20), 100, &on_expire).await.unwrap();
    let ids: Vec<(&str, &str)> = expired
        .iter()
        .map(|(ws, approval)| (ws.as_str(), approval.id.as_str()))
        .collect();
    assert_eq!(ids, [("ws_a", "apr_early"), ("ws_a", "apr_exact")]);
    for (_, approval) in &expired {
        assert_eq!(approval.status, ApprovalStatus::Expired);
        assert_eq!(approval.decided_by.as_deref(), Some("system"));
        assert_eq!(approval.decision_reason.as_deref(), Some("expired"));
        assert_eq!(approval.decided_at, Some(t(20)));
        assert_eq!(
            store
                .get_approval(&world.ws, &approval.id)
                .await
                .unwrap()
                .as_ref(),
            Some(approval)
        );
        let call = store
            .get_call(&world.ws, &approval.call_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(call.status, CallStatus::Expired);
        assert_eq!(call.decided_by, DecidedBy::System);
        assert_eq!(call.decided_at, Some(t(20)));
    }
    let status = |id: &'static str| async move {
        store
            .get_approval("ws_a", id)
            .await
            .unwrap()
            .unwrap()
            .status
    };
    assert_eq!(status("apr_later").await, ApprovalStatus::Pending);
    assert_eq!(status("apr_decided").await, ApprovalStatus::Approved);
    let audit = store.audit_after(&world.ws, 0, 100).await.unwrap();
    let subjects: Vec<&str> = audit.iter().map(|record| record.subject.as_str()).collect();
    assert_eq!(subjects, ["apr_early", "apr_exact"]);

    // Idempotent: nothing more is due, nothing is written.
    let before = ctx.row_counts().await;
    assert!(store
        .expire_due(t(20), 100, &on_expire)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .expire_due(t(29), 100, &on_expire)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(ctx.row_counts().await, before);

    // An expired approval cannot be decided afterwards.
    let outcome = store
        .decide(&world.ws, &specs[0].approve(t(5)), &Effects::none())
        .await;
    assert!(
        matches!(
            outcome,
            Err(DecideError::AlreadyDecided(ApprovalStatus::Expired))
        ),
        "{outcome:?}"
    );
}

pub async fn expire_due_honours_the_limit_across_workspaces(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    for (id, deadline) in [("a1", 1), ("a2", 3)] {
        store
            .record_call(
                &world.ws,
                due_at(&world, id, deadline).asked(),
                Effects::none(),
            )
            .await
            .unwrap();
    }
    let mut elsewhere = due_at(&world, "b1", 2);
    elsewhere.agent = world.other_agent.clone();
    elsewhere.session = None;
    store
        .record_call(&world.other, elsewhere.asked(), Effects::none())
        .await
        .unwrap();

    // Earliest deadlines first, at most `limit` per call.
    let first = store.expire_due(t(10), 2, &on_expire).await.unwrap();
    let ids: Vec<(&str, &str)> = first
        .iter()
        .map(|(ws, a)| (ws.as_str(), a.id.as_str()))
        .collect();
    assert_eq!(ids, [("ws_a", "apr_a1"), ("ws_b", "apr_b1")]);
    let second = store.expire_due(t(10), 2, &on_expire).await.unwrap();
    let ids: Vec<(&str, &str)> = second
        .iter()
        .map(|(ws, a)| (ws.as_str(), a.id.as_str()))
        .collect();
    assert_eq!(ids, [("ws_a", "apr_a2")]);
    // Each expiry's effects went to its own workspace's chain.
    assert_eq!(store.audit_after(&world.ws, 0, 10).await.unwrap().len(), 2);
    let other = store.audit_after(&world.other, 0, 10).await.unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].subject, "apr_b1");
}

pub async fn next_deadline_is_the_earliest_pending_one(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    assert_eq!(store.next_deadline().await.unwrap(), None);
    let specs = [
        due_at(&world, "x", 30),
        due_at(&world, "y", 10),
        due_at(&world, "z", 20),
    ];
    for spec in &specs {
        store
            .record_call(&world.ws, spec.asked(), Effects::none())
            .await
            .unwrap();
    }
    assert_eq!(store.next_deadline().await.unwrap(), Some(t(10)));
    store
        .decide(&world.ws, &specs[1].reject(t(1)), &Effects::none())
        .await
        .unwrap();
    assert_eq!(store.next_deadline().await.unwrap(), Some(t(20)));
    store.expire_due(t(25), 10, &on_expire).await.unwrap();
    assert_eq!(store.next_deadline().await.unwrap(), Some(t(30)));
    store.expire_due(t(30), 10, &on_expire).await.unwrap();
    assert_eq!(store.next_deadline().await.unwrap(), None);
}
