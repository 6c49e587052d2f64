//! Recording calls as the gate decided them, and reading calls and approvals back.

use super::fixtures::{effects, t, world};
use super::harness::Ctx;
use airlock_protocol::ApprovalStatus;
use airlock_store::{ApprovalFilter, Effects, RedeemError};

pub async fn allowed_call_is_recorded_with_its_grant(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let spec = world.spec("ok");
    let new_call = spec.allowed();
    store
        .record_call(
            &world.ws,
            new_call.clone(),
            effects("call.allowed", "call_ok", t(0)),
        )
        .await
        .unwrap();
    // Stored exactly as given, arguments included (the gate redacted them already).
    assert_eq!(
        store.get_call(&world.ws, &spec.call_id()).await.unwrap(),
        Some(new_call.call)
    );
    let rows = ctx.row_counts().await;
    assert_eq!(
        (rows["calls"], rows["grants"], rows["approvals"]),
        (1, 1, 0)
    );
    assert_eq!((rows["audit"], rows["events"]), (1, 1));
    let grant = store
        .redeem(&world.ws, &spec.call_id(), t(1), &Effects::none())
        .await
        .unwrap();
    assert_eq!(grant.id, "grt_ok");
}

pub async fn denied_call_is_recorded_without_grant(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let spec = world.spec("no");
    let new_call = spec.denied();
    store
        .record_call(
            &world.ws,
            new_call.clone(),
            effects("call.denied", "call_no", t(0)),
        )
        .await
        .unwrap();
    assert_eq!(
        store.get_call(&world.ws, &spec.call_id()).await.unwrap(),
        Some(new_call.call)
    );
    let rows = ctx.row_counts().await;
    assert_eq!(
        (rows["calls"], rows["grants"], rows["approvals"]),
        (1, 0, 0)
    );
    let redeemed = store
        .redeem(&world.ws, &spec.call_id(), t(1), &Effects::none())
        .await;
    assert!(
        matches!(redeemed, Err(RedeemError::NoGrant)),
        "{redeemed:?}"
    );
}

pub async fn pending_call_is_recorded_with_its_approval(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let spec = world.spec("ask");
    let new_call = spec.asked();
    store
        .record_call(
            &world.ws,
            new_call.clone(),
            effects("approval.requested", "apr_ask", t(0)),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .get_call(&world.ws, &spec.call_id())
            .await
            .unwrap()
            .as_ref(),
        Some(&new_call.call)
    );
    assert_eq!(
        store
            .get_approval(&world.ws, &spec.approval_id())
            .await
            .unwrap(),
        new_call.approval
    );
    assert_eq!(
        store.get_approval(&world.ws, "apr_nope").await.unwrap(),
        None
    );
    assert_eq!(store.get_call(&world.ws, "call_nope").await.unwrap(), None);
    let rows = ctx.row_counts().await;
    assert_eq!(
        (rows["calls"], rows["grants"], rows["approvals"]),
        (1, 0, 1)
    );
    let audit = store.audit_after(&world.ws, 0, 10).await.unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].kind, "approval.requested");
    assert_eq!(store.last_event_id(&world.ws).await.unwrap(), 1);

    // An id used twice is refused whole: no second approval, no audit record.
    let before = ctx.row_counts().await;
    assert!(store
        .record_call(
            &world.ws,
            new_call.clone(),
            effects("approval.requested", "apr_ask", t(1))
        )
        .await
        .is_err());
    assert_eq!(ctx.row_counts().await, before);
}

pub async fn list_approvals_filters_and_orders_newest_first(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let ws = world.ws.as_str();
    // Created at t(1), t(2), t(3), then two in the same millisecond t(4): the later
    // insert is the newer one.
    let mut specs = Vec::new();
    for (id, second, in_session) in [
        ("a", 1, true),
        ("b", 2, false),
        ("c", 3, true),
        ("d", 4, true),
        ("e", 4, false),
    ] {
        let mut spec = world.spec(id);
        spec.created_at = t(second);
        if !in_session {
            spec.session = None;
        }
        store
            .record_call(ws, spec.asked(), Effects::none())
            .await
            .unwrap();
        specs.push(spec);
    }
    store
        .decide(ws, &specs[2].approve(t(5)), &Effects::none())
        .await
        .unwrap();
    store
        .decide(ws, &specs[0].reject(t(5)), &Effects::none())
        .await
        .unwrap();

    let listed = |status: Option<ApprovalStatus>,
                  session_id: Option<&str>,
                  before: Option<&str>,
                  limit: u32| {
        let filter = ApprovalFilter {
            status,
            session_id: session_id.map(str::to_owned),
            run_id: None,
            before: before.map(str::to_owned),
            limit,
        };
        async move {
            store
                .list_approvals(ws, &filter)
                .await
                .unwrap()
                .into_iter()
                .map(|approval| approval.id)
                .collect::<Vec<_>>()
        }
    };
    let list = |status: Option<ApprovalStatus>, session_id: Option<&str>, limit: u32| {
        listed(status, session_id, None, limit)
    };
    assert_eq!(
        list(None, None, 100).await,
        ["apr_e", "apr_d", "apr_c", "apr_b", "apr_a"]
    );
    assert_eq!(list(None, None, 2).await, ["apr_e", "apr_d"]);
    assert_eq!(
        list(Some(ApprovalStatus::Pending), None, 100).await,
        ["apr_e", "apr_d", "apr_b"]
    );
    assert_eq!(
        list(Some(ApprovalStatus::Approved), None, 100).await,
        ["apr_c"]
    );
    assert_eq!(
        list(Some(ApprovalStatus::Rejected), None, 100).await,
        ["apr_a"]
    );
    assert!(list(Some(ApprovalStatus::Expired), None, 100)
        .await
        .is_empty());
    let session = world.session.as_str();
    assert_eq!(
        list(None, Some(session), 100).await,
        ["apr_d", "apr_c", "apr_a"]
    );
    assert_eq!(
        list(Some(ApprovalStatus::Pending), Some(session), 100).await,
        ["apr_d"]
    );
    assert!(list(None, Some("ses_nope"), 100).await.is_empty());

    // The next page: what is older than an approval, in the same order (`apr_d` and
    // `apr_e` share their millisecond; the later insert is the newer).
    let page = |status: Option<ApprovalStatus>, before: &str, limit: u32| {
        listed(status, None, Some(before), limit)
    };
    assert_eq!(
        page(None, "apr_e", 100).await,
        ["apr_d", "apr_c", "apr_b", "apr_a"]
    );
    assert_eq!(page(None, "apr_d", 2).await, ["apr_c", "apr_b"]);
    assert_eq!(
        page(Some(ApprovalStatus::Pending), "apr_e", 100).await,
        ["apr_d", "apr_b"]
    );
    assert!(page(None, "apr_a", 100).await.is_empty());
    assert!(page(None, "apr_nope", 100).await.is_empty());
}

pub async fn pending_call_under_a_replaced_policy_is_refused_whole(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let spec = world.spec("stale");
    let mut new_call = spec.asked();
    if let Some(approval) = new_call.approval.as_mut() {
        approval.policy_digest = "a policy that is no longer in force".into();
    }
    let before = ctx.row_counts().await;
    let refused = store
        .record_call(
            &world.ws,
            new_call.clone(),
            effects("approval.requested", "apr_stale", t(0)),
        )
        .await;
    assert!(
        matches!(refused, Err(airlock_store::StoreError::StalePolicy)),
        "{refused:?}"
    );
    assert_eq!(ctx.row_counts().await, before);
    // Allowed and denied calls carry no approval to strand, and are recorded.
    store
        .record_call(&world.ws, spec.allowed(), Effects::none())
        .await
        .unwrap();
}
