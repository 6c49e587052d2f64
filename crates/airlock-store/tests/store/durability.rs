//! What survives a restart (G7): the store is dropped and the same database reopened.

use super::fixtures::{effects, t, world};
use super::harness::Ctx;
use airlock_protocol::ApprovalStatus;
use airlock_store::{ApprovalFilter, Effects, RedeemError};

pub async fn pending_approval_survives_a_restart(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("kept");
    let new_call = spec.asked();
    ctx.store
        .record_call(
            &world.ws,
            new_call.clone(),
            effects("approval.requested", "apr_kept", t(1)),
        )
        .await
        .unwrap();
    let audit_before = ctx.store.audit_after(&world.ws, 0, 100).await.unwrap();

    let ctx = ctx.restart().await;
    let store = ctx.store.as_ref();
    assert_eq!(
        store.get_approval(&world.ws, "apr_kept").await.unwrap(),
        new_call.approval
    );
    assert_eq!(
        store.get_call(&world.ws, "call_kept").await.unwrap(),
        Some(new_call.call)
    );
    let pending = ApprovalFilter {
        status: Some(ApprovalStatus::Pending),
        session_id: None,
        run_id: None,
        before: None,
        limit: 10,
    };
    assert_eq!(
        store
            .list_approvals(&world.ws, &pending)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(store.next_deadline().await.unwrap(), Some(spec.deadline));
    assert_eq!(
        store.audit_after(&world.ws, 0, 100).await.unwrap(),
        audit_before
    );

    // Still decidable, and the chain carries on from where it was.
    let decided = store
        .decide(
            &world.ws,
            &spec.approve(t(2)),
            &effects("approval.approved", "apr_kept", t(2)),
        )
        .await
        .unwrap();
    assert_eq!(decided.approval.status, ApprovalStatus::Approved);
    let audit = store.audit_after(&world.ws, 0, 100).await.unwrap();
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[1].seq, 2);
    assert_eq!(audit[1].prev_hash, audit_before[0].hash);

    // The decision itself survives the next restart.
    let ctx = ctx.restart().await;
    let approval = ctx
        .store
        .get_approval(&world.ws, "apr_kept")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(approval, decided.approval);
}

pub async fn spent_grant_stays_spent_after_a_restart(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("once");
    ctx.store
        .record_call(&world.ws, spec.allowed(), Effects::none())
        .await
        .unwrap();
    ctx.store
        .redeem(
            &world.ws,
            "call_once",
            t(1),
            &effects("grant.consumed", "grt_once", t(1)),
        )
        .await
        .unwrap();
    let ctx = ctx.restart().await;
    let again = ctx
        .store
        .redeem(&world.ws, "call_once", t(2), &Effects::none())
        .await;
    assert!(matches!(again, Err(RedeemError::Spent)), "{again:?}");
}
