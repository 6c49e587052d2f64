//! Spending a grant inside a run (G1 with the run's lease) and the outbox written with it:
//! the effect exists exactly when its grant was spent on it, and is delivered once.

use super::audit::assert_chain;
use super::fixtures::{
    effects, gated_step, lease, outbox_item, run_events, run_moves, t, world, writes_nothing, Spec,
    World,
};
use super::harness::Ctx;
use airlock_protocol::{OutboxItem, RunState, Session, StepState};
use airlock_store::{Effects, Grant, RedeemError, RunUpdate, Store, StoreError};

/// Records an allowed call for each id, and starts `run_1` in the world's session, held
/// by `node_a` until 100, with a gated step per call.
async fn run_with_allowed_calls(store: &dyn Store, world: &World, ids: &[&str]) -> Vec<Spec> {
    let specs: Vec<Spec> = ids.iter().map(|id| world.spec(id)).collect();
    for spec in &specs {
        store
            .record_call(&world.ws, spec.allowed(), Effects::none())
            .await
            .unwrap();
    }
    let steps = specs
        .iter()
        .zip(0..)
        .map(|(spec, index)| gated_step(index, Some(&spec.call_id())))
        .collect();
    store
        .start_run(
            &world.ws,
            &world.run("run_1", &world.session, 10),
            &lease("node_a", 100),
            &RunUpdate {
                steps,
                ..run_events(10, &["run_started"])
            },
        )
        .await
        .unwrap();
    specs
}

/// The update that marks step `index` started at `t(at)`.
fn tool_started(index: u32, call_id: &str, at: i64) -> RunUpdate {
    let mut step = gated_step(index, Some(call_id));
    step.step.state = StepState::Started;
    RunUpdate {
        steps: vec![step],
        effects: effects("run.tool_started", call_id, t(at)),
        ..run_events(at, &["tool_started"])
    }
}

pub async fn redeem_for_run_spends_the_grant_with_its_outbox_row_and_update(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let specs = run_with_allowed_calls(store, &world, &["mail"]).await;
    let item = outbox_item("obx_1", "call_mail", Some("run_1"), 20);

    let grant = store
        .redeem_for_run(
            &world.ws,
            "call_mail",
            t(20),
            &effects("grant.consumed", "grt_mail", t(20)),
            Some(&item),
            "run_1",
            "node_a",
            &tool_started(0, "call_mail", 20),
        )
        .await
        .unwrap();
    assert_eq!(
        grant,
        Grant {
            consumed_at: Some(t(20)),
            ..specs[0].grant()
        }
    );
    assert_eq!(store.list_outbox(&world.ws, 10).await.unwrap(), [item]);
    let journal = store
        .run_events_after(&world.ws, "run_1", 0, 10)
        .await
        .unwrap();
    assert_eq!(
        journal.last().map(|event| (event.seq, event.kind.as_str())),
        Some((2, "tool_started"))
    );
    let steps = store.run_steps(&world.ws, "run_1").await.unwrap();
    assert_eq!(steps[0].step.state, StepState::Started);
    // The redeem's effects and the update's, in one chain.
    let audit = store.audit_after(&world.ws, 0, 10).await.unwrap();
    let kinds: Vec<&str> = audit.iter().map(|record| record.kind.as_str()).collect();
    assert_eq!(kinds, ["grant.consumed", "run.tool_started"]);
    assert_chain(&audit);

    // Spent: no second effect, no journal event, no audit record.
    for at in [21, 22] {
        let again = writes_nothing(
            &ctx,
            &world,
            "run_1",
            store.redeem_for_run(
                &world.ws,
                "call_mail",
                t(at),
                &effects("grant.consumed", "grt_mail", t(at)),
                Some(&outbox_item(
                    &format!("obx_{at}"),
                    "call_mail",
                    Some("run_1"),
                    at,
                )),
                "run_1",
                "node_a",
                &tool_started(0, "call_mail", at),
            ),
        )
        .await;
        assert!(matches!(again, Err(RedeemError::Spent)), "{again:?}");
    }
    // A plain redeem finds it spent as well.
    let plain = store
        .redeem(&world.ws, "call_mail", t(23), &Effects::none())
        .await;
    assert!(matches!(plain, Err(RedeemError::Spent)), "{plain:?}");
}

pub async fn redeem_for_run_refusals_write_nothing(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    run_with_allowed_calls(store, &world, &["mail"]).await;
    store
        .record_call(&world.ws, world.spec("denied").denied(), Effects::none())
        .await
        .unwrap();
    let item = outbox_item("obx_1", "call_mail", Some("run_1"), 20);

    type Expected = fn(&RedeemError) -> bool;
    let lease_lost: Expected = |e| matches!(e, RedeemError::Store(StoreError::LeaseLost));
    let attempt = |call_id: &'static str, run_id: &'static str, owner: &'static str| {
        let (ctx, world, item) = (&ctx, &world, &item);
        async move {
            writes_nothing(
                ctx,
                world,
                "run_1",
                ctx.store.redeem_for_run(
                    &world.ws,
                    call_id,
                    t(20),
                    &effects("grant.consumed", call_id, t(20)),
                    Some(item),
                    run_id,
                    owner,
                    &tool_started(0, call_id, 20),
                ),
            )
            .await
        }
    };
    let cases: [(&str, &str, &str, Expected); 4] = [
        // Not the holder: the grant stays unspent.
        ("call_mail", "run_1", "node_b", lease_lost),
        ("call_mail", "run_nope", "node_a", lease_lost),
        ("call_denied", "run_1", "node_a", |e| {
            matches!(e, RedeemError::NoGrant)
        }),
        ("call_nope", "run_1", "node_a", |e| {
            matches!(e, RedeemError::NotFound)
        }),
    ];
    for (call_id, run_id, owner, expected) in cases {
        let outcome = attempt(call_id, run_id, owner).await;
        assert!(
            matches!(&outcome, Err(error) if expected(error)),
            "{call_id} in {run_id} by {owner}: {outcome:?}"
        );
    }

    // A suspended run is held by no one.
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &run_moves(21, RunState::AwaitingApproval, "run_suspended"),
        )
        .await
        .unwrap();
    let outcome = attempt("call_mail", "run_1", "node_a").await;
    assert!(
        matches!(&outcome, Err(error) if lease_lost(error)),
        "{outcome:?}"
    );

    // The grant was never spent: its new holder redeems it (here without an outbox row).
    store
        .claim_run(
            &world.ws,
            "run_1",
            t(22),
            &lease("node_b", 52),
            &run_events(22, &["run_resumed"]),
        )
        .await
        .unwrap()
        .unwrap();
    let grant = store
        .redeem_for_run(
            &world.ws,
            "call_mail",
            t(23),
            &Effects::none(),
            None,
            "run_1",
            "node_b",
            &tool_started(0, "call_mail", 23),
        )
        .await
        .unwrap();
    assert_eq!(grant.consumed_at, Some(t(23)));
    assert_eq!(
        store.list_outbox(&world.ws, 10).await.unwrap(),
        Vec::<OutboxItem>::new()
    );
}

pub async fn outbox_lists_newest_first_and_delivers_what_is_due(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    run_with_allowed_calls(store, &world, &["m1", "m2", "m3", "m4"]).await;
    // The other workspace has an effect of its own.
    store
        .create_session(
            &world.other,
            &Session {
                id: "ses_other".into(),
                agent_id: Some(world.other_agent.clone()),
                title: None,
                task_id: None,
                external_id: None,
                created_at: t(0),
                created_by: None,
                mode: None,
            },
        )
        .await
        .unwrap();
    let mut other = world.spec("mo");
    other.agent = world.other_agent.clone();
    other.session = Some("ses_other".into());
    store
        .record_call(&world.other, other.allowed(), Effects::none())
        .await
        .unwrap();
    store
        .start_run(
            &world.other,
            &airlock_protocol::Run {
                agent_id: world.other_agent.clone(),
                ..world.run("run_other", "ses_other", 10)
            },
            &lease("node_a", 100),
            &run_events(10, &["run_started"]),
        )
        .await
        .unwrap();
    let items = [
        (
            "ws_a",
            outbox_item("obx_1", "call_m1", Some("run_1"), 10),
            "run_1",
        ),
        (
            "ws_b",
            outbox_item("obx_o", "call_mo", Some("run_other"), 15),
            "run_other",
        ),
        ("ws_a", outbox_item("obx_3", "call_m3", None, 30), "run_1"),
        // Made in the same millisecond as `obx_3`, after it.
        ("ws_a", outbox_item("obx_4", "call_m4", None, 30), "run_1"),
        (
            "ws_a",
            outbox_item("obx_2", "call_m2", Some("run_1"), 20),
            "run_1",
        ),
    ];
    for (workspace, item, run_id) in &items {
        store
            .redeem_for_run(
                workspace,
                &item.call_id,
                item.created_at,
                &Effects::none(),
                Some(item),
                run_id,
                "node_a",
                &RunUpdate::default(),
            )
            .await
            .unwrap();
    }
    let ids = |listed: Vec<OutboxItem>| -> Vec<String> {
        listed.into_iter().map(|item| item.id).collect()
    };
    assert_eq!(
        ids(store.list_outbox(&world.ws, 10).await.unwrap()),
        ["obx_4", "obx_3", "obx_2", "obx_1"]
    );
    assert_eq!(
        ids(store.list_outbox(&world.ws, 2).await.unwrap()),
        ["obx_4", "obx_3"]
    );
    assert_eq!(
        ids(store.list_outbox(&world.other, 10).await.unwrap()),
        ["obx_o"]
    );

    let due = |now: i64, limit: u32| async move {
        store
            .outbox_due(t(now), limit)
            .await
            .unwrap()
            .into_iter()
            .map(|(workspace, item)| format!("{workspace}/{}", item.id))
            .collect::<Vec<_>>()
    };
    // Due from when it was made, oldest first, across workspaces.
    assert_eq!(due(9, 10).await, Vec::<String>::new());
    assert_eq!(
        due(20, 10).await,
        ["ws_a/obx_1", "ws_b/obx_o", "ws_a/obx_2"]
    );
    assert_eq!(due(20, 1).await, ["ws_a/obx_1"]);

    // A failed attempt: counted, its error kept, not due again before `retry_at`.
    store
        .outbox_attempt(
            &world.ws,
            "obx_1",
            t(31),
            Some("smtp: 451 try later"),
            Some(t(60)),
        )
        .await
        .unwrap();
    let failed = store.list_outbox(&world.ws, 10).await.unwrap()[3].clone();
    assert_eq!(
        failed,
        OutboxItem {
            attempts: 1,
            last_error: Some("smtp: 451 try later".into()),
            ..items[0].1.clone()
        }
    );
    assert_eq!(
        due(59, 10).await,
        ["ws_b/obx_o", "ws_a/obx_2", "ws_a/obx_3", "ws_a/obx_4"]
    );
    // Due again at `retry_at`. (Where it comes in the order is not pinned: "oldest first"
    // may mean by creation or by next attempt.)
    let mut again = due(60, 10).await;
    again.sort();
    assert_eq!(
        again,
        [
            "ws_a/obx_1",
            "ws_a/obx_2",
            "ws_a/obx_3",
            "ws_a/obx_4",
            "ws_b/obx_o"
        ]
    );

    // Delivered on the retry: never due again.
    store
        .outbox_attempt(&world.ws, "obx_1", t(61), None, None)
        .await
        .unwrap();
    let delivered = store.list_outbox(&world.ws, 10).await.unwrap()[3].clone();
    assert_eq!(
        (
            delivered.id.as_str(),
            delivered.attempts,
            delivered.delivered_at
        ),
        ("obx_1", 2, Some(t(61)))
    );
    assert_eq!(
        due(1000, 10).await,
        ["ws_b/obx_o", "ws_a/obx_2", "ws_a/obx_3", "ws_a/obx_4"]
    );

    // An attempt names the item in its workspace: another workspace's id changes nothing.
    store
        .outbox_attempt(&world.other, "obx_2", t(62), None, None)
        .await
        .unwrap();
    assert_eq!(
        store.list_outbox(&world.ws, 10).await.unwrap()[2],
        items[4].1
    );
}

/// Of several nodes claiming one outbox item for delivery, exactly one gets it; a claimed
/// item is not due again until the claim runs out, and a delivered one is never claimed.
pub async fn outbox_items_are_claimed_by_one_node_at_a_time(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    run_with_allowed_calls(store, &world, &["mail"]).await;
    let item = outbox_item("obx_1", "call_mail", Some("run_1"), 20);
    store
        .redeem_for_run(
            &world.ws,
            "call_mail",
            t(20),
            &Effects::none(),
            Some(&item),
            "run_1",
            "node_a",
            &RunUpdate::default(),
        )
        .await
        .unwrap();

    for round in 0..5 {
        let now = t(30 + round * 1000);
        let until = t(30 + round * 1000 + 500);
        let claims = futures::future::join_all(
            (0..6).map(|_| store.claim_outbox(&world.ws, "obx_1", now, until)),
        )
        .await;
        let won = claims
            .iter()
            .filter(|claim| *claim.as_ref().unwrap())
            .count();
        assert_eq!(won, 1, "round {round}: {claims:?}");
        // Claimed: not due before the claim runs out, claimable again after.
        assert!(store
            .outbox_due(t(30 + round * 1000 + 499), 10)
            .await
            .unwrap()
            .is_empty());
        assert!(!store
            .claim_outbox(&world.ws, "obx_1", t(30 + round * 1000 + 499), until)
            .await
            .unwrap());
    }
    assert!(
        !store
            .claim_outbox(&world.other, "obx_1", t(10_000), t(20_000))
            .await
            .unwrap(),
        "another workspace's item"
    );
    store
        .outbox_attempt(&world.ws, "obx_1", t(10_000), None, None)
        .await
        .unwrap();
    assert!(
        !store
            .claim_outbox(&world.ws, "obx_1", t(20_000), t(30_000))
            .await
            .unwrap(),
        "a delivered item"
    );
}
