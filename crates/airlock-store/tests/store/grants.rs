//! Consuming grants (G1): once, and refusals that say why and write nothing.

use super::fixtures::{effects, t, world};
use super::harness::Ctx;
use airlock_store::{Effects, Grant, RedeemError, RedeemRequest};

pub async fn a_grant_is_redeemed_once(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let allowed = world.spec("allowed");
    store
        .record_call(&world.ws, allowed.allowed(), Effects::none())
        .await
        .unwrap();

    let grant = store
        .redeem(
            &world.ws,
            "call_allowed",
            t(5),
            &effects("grant.consumed", "grt_allowed", t(5)),
        )
        .await
        .unwrap();
    assert_eq!(
        grant,
        Grant {
            consumed_at: Some(t(5)),
            ..allowed.grant()
        }
    );
    let before = ctx.row_counts().await;
    assert_eq!(before["audit"], 1);
    for at in [t(5), t(6)] {
        let again = store
            .redeem(
                &world.ws,
                "call_allowed",
                at,
                &effects("grant.consumed", "grt_allowed", at),
            )
            .await;
        assert!(matches!(again, Err(RedeemError::Spent)), "{again:?}");
    }
    // Spent attempts append nothing.
    assert_eq!(ctx.row_counts().await, before);

    // An approved call's grant works the same way.
    let asked = world.spec("asked");
    store
        .record_call(&world.ws, asked.asked(), Effects::none())
        .await
        .unwrap();
    store
        .decide(&world.ws, &asked.approve(t(7)), &Effects::none())
        .await
        .unwrap();
    let grant = store
        .redeem(&world.ws, "call_asked", t(8), &Effects::none())
        .await
        .unwrap();
    assert_eq!(
        (grant.id.as_str(), grant.consumed_at),
        ("grt_asked", Some(t(8)))
    );
    let again = store
        .redeem(&world.ws, "call_asked", t(9), &Effects::none())
        .await;
    assert!(matches!(again, Err(RedeemError::Spent)), "{again:?}");
}

/// Which refusal a case expects.
type Expected = fn(&RedeemError) -> bool;

pub async fn redeem_refusals_say_why(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let denied = world.spec("denied");
    let pending = world.spec("pending");
    let allowed = world.spec("allowed");
    store
        .record_call(&world.ws, denied.denied(), Effects::none())
        .await
        .unwrap();
    store
        .record_call(&world.ws, pending.asked(), Effects::none())
        .await
        .unwrap();
    store
        .record_call(&world.ws, allowed.allowed(), Effects::none())
        .await
        .unwrap();
    let before = ctx.row_counts().await;
    let cases: [(&str, &str, Expected); 4] = [
        (&world.ws, "call_nope", |e| {
            matches!(e, RedeemError::NotFound)
        }),
        (&world.ws, "call_denied", |e| {
            matches!(e, RedeemError::NoGrant)
        }),
        (&world.ws, "call_pending", |e| {
            matches!(e, RedeemError::NoGrant)
        }),
        (&world.other, "call_allowed", |e| {
            matches!(e, RedeemError::NotFound)
        }),
    ];
    for (ws, call_id, expected) in cases {
        let outcome = store
            .redeem(ws, call_id, t(5), &effects("grant.consumed", call_id, t(5)))
            .await;
        assert!(
            matches!(&outcome, Err(error) if expected(error)),
            "{call_id}: {outcome:?}"
        );
    }
    assert_eq!(ctx.row_counts().await, before);
    // The allowed call's grant is still there for its own workspace.
    store
        .redeem(&world.ws, "call_allowed", t(6), &Effects::none())
        .await
        .unwrap();
}

/// A call held for its agent's retry is found by its key; of two releases only the first
/// one ends the hold and appends its effects; a released call is found no more.
pub async fn a_held_call_is_released_once(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let asked = world.spec("asked");
    store
        .record_call(&world.ws, asked.asked(), Effects::none())
        .await
        .unwrap();
    assert!(store
        .held_for_retry(&world.ws, "key-1")
        .await
        .unwrap()
        .is_none());
    store
        .hold_for_retry(&world.ws, "call_asked", "key-1")
        .await
        .unwrap();
    let held = store.held_for_retry(&world.ws, "key-1").await.unwrap();
    assert_eq!(held.map(|call| call.id).as_deref(), Some("call_asked"));
    // Another workspace's key space is another workspace's.
    assert!(store
        .held_for_retry("ws_elsewhere", "key-1")
        .await
        .unwrap()
        .is_none());

    let before = ctx.row_counts().await;
    // A release under another key ends nothing and writes nothing.
    let wrong = store
        .release_retry(
            &world.ws,
            "call_asked",
            "key-2",
            &effects("call.adopted", "call_asked", t(5)),
        )
        .await
        .unwrap();
    assert!(!wrong);
    assert_eq!(ctx.row_counts().await, before);
    let first = store
        .release_retry(
            &world.ws,
            "call_asked",
            "key-1",
            &effects("call.adopted", "call_asked", t(5)),
        )
        .await
        .unwrap();
    let second = store
        .release_retry(
            &world.ws,
            "call_asked",
            "key-1",
            &effects("call.adopted", "call_asked", t(6)),
        )
        .await
        .unwrap();
    assert!(first);
    assert!(!second);
    assert_eq!(ctx.row_counts().await["audit"], before["audit"] + 1);
    assert!(store
        .held_for_retry(&world.ws, "key-1")
        .await
        .unwrap()
        .is_none());
}

/// An allowed call recorded with its grant already consumed (a hook's call): one commit
/// writes the call (redeemed, with its outcome deadline, held under `hold`), the grant
/// consumed under the key, and both steps' records in order; a redeem under that key
/// replays the same grant, any other is `Spent`. A call that is not allowed is refused
/// whole.
pub async fn an_allowed_call_is_redeemed_in_the_commit_that_records_it(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let allowed = world.spec("allowed");
    let mut both = effects("call.allowed", "call_allowed", t(5));
    both.audit
        .extend(effects("grant.consumed", "grt_allowed", t(5)).audit);
    let request = RedeemRequest {
        at: t(5),
        key: Some("hook:toolu_1"),
        outcome_due: Some(t(65)),
    };
    let commits = store.commits();
    store
        .record_call_redeemed(
            &world.ws,
            allowed.allowed(),
            &request,
            Some("esc_1"),
            both.clone(),
        )
        .await
        .unwrap();
    assert_eq!(
        store.commits() - commits,
        1,
        "one commit for call and redeem"
    );

    let call = store
        .get_call(&world.ws, "call_allowed")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(call.redeemed_at, Some(t(5)));
    let held = store.held_for_retry(&world.ws, "esc_1").await.unwrap();
    assert_eq!(held.map(|call| call.id), Some("call_allowed".to_owned()));
    assert_eq!(
        store
            .call_redeemed_under(&world.ws, &world.agent, "hook:toolu_1")
            .await
            .unwrap(),
        Some("call_allowed".to_owned())
    );
    let kinds: Vec<String> = store
        .audit_after(&world.ws, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.kind)
        .collect();
    assert_eq!(kinds, ["call.allowed", "grant.consumed"]);

    let before = ctx.row_counts().await;
    let replay = RedeemRequest {
        at: t(9),
        key: Some("hook:toolu_1"),
        outcome_due: Some(t(69)),
    };
    let replayed = store
        .redeem_keyed(
            &world.ws,
            "call_allowed",
            &replay,
            &effects("grant.consumed", "x", t(9)),
        )
        .await
        .unwrap();
    assert!(replayed.replayed);
    assert_eq!(
        replayed.grant,
        Grant {
            consumed_at: Some(t(5)),
            ..allowed.grant()
        }
    );
    for key in [Some("hook:toolu_2"), None] {
        let other = RedeemRequest { key, ..replay };
        let spent = store
            .redeem_keyed(&world.ws, "call_allowed", &other, &Effects::none())
            .await;
        assert!(matches!(spent, Err(RedeemError::Spent)), "{spent:?}");
    }
    assert_eq!(
        ctx.row_counts().await,
        before,
        "replays and refusals write nothing"
    );

    // Only an allowed call has a grant to consume.
    let asked = world.spec("asked");
    let refused = store
        .record_call_redeemed(&world.ws, asked.asked(), &request, None, both.clone())
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(ctx.row_counts().await, before);
}
