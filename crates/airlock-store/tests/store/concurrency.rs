//! Racing deciders and redeemers: exactly one wins, the others are refused and write
//! nothing (G1, G3).

use super::audit::assert_chain;
use super::fixtures::{effects, t, world, Spec};
use super::harness::Ctx;
use airlock_store::{DecideError, Decision, Grant, RedeemError};
use std::sync::Arc;
use tokio::sync::Barrier;

pub async fn fifty_concurrent_decisions_have_one_winner(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("race");
    ctx.store
        .record_call(
            &world.ws,
            spec.asked(),
            effects("approval.requested", "apr_race", t(0)),
        )
        .await
        .unwrap();

    const DECIDERS: usize = 50;
    // All tasks start deciding together, so the race is real.
    let barrier = Arc::new(Barrier::new(DECIDERS));
    let mut tasks = Vec::new();
    for n in 0..DECIDERS {
        let store = Arc::clone(&ctx.store);
        let barrier = Arc::clone(&barrier);
        let ws = world.ws.clone();
        let base = if n % 2 == 0 {
            spec.approve(t(10))
        } else {
            spec.reject(t(10))
        };
        // Each decider is a different click: its own grant id and actor.
        let decision = Decision {
            decided_by: format!("user:usr_{n}"),
            grant: base.grant.as_ref().map(|grant| Grant {
                id: format!("grt_race_{n}"),
                ..grant.clone()
            }),
            ..base
        };
        let kind = if decision.approve {
            "approval.approved"
        } else {
            "approval.rejected"
        };
        let fx = effects(kind, "apr_race", t(10));
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store.decide(&ws, &decision, &fx).await
        }));
    }
    let mut winners = Vec::new();
    let mut refused = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(decided) => winners.push(decided),
            Err(DecideError::AlreadyDecided(_)) => refused += 1,
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!((winners.len(), refused), (1, DECIDERS - 1));
    let winner = &winners[0];

    // The store holds the winner's decision, and exactly one decision record.
    let store = ctx.store.as_ref();
    assert_eq!(
        store
            .get_approval(&world.ws, "apr_race")
            .await
            .unwrap()
            .as_ref(),
        Some(&winner.approval)
    );
    let decisions: Vec<_> = store
        .audit_after(&world.ws, 0, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|record| record.kind != "approval.requested")
        .collect();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].subject, "apr_race");
    let rows = ctx.row_counts().await;
    assert_eq!((rows["audit"], rows["events"]), (2, 2));
    assert_eq!(rows["grants"], i64::from(winner.grant.is_some()));
}

pub async fn twenty_concurrent_redeems_have_one_winner(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let spec = world.spec("once");
    ctx.store
        .record_call(
            &world.ws,
            spec.allowed(),
            effects("call.allowed", "call_once", t(0)),
        )
        .await
        .unwrap();

    const REDEEMERS: usize = 20;
    let barrier = Arc::new(Barrier::new(REDEEMERS));
    let mut tasks = Vec::new();
    for n in 0..REDEEMERS {
        let store = Arc::clone(&ctx.store);
        let barrier = Arc::clone(&barrier);
        let ws = world.ws.clone();
        let at = t(10 + i64::try_from(n).unwrap());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let fx = effects("grant.consumed", "grt_once", at);
            store.redeem(&ws, "call_once", at, &fx).await
        }));
    }
    let mut winners = Vec::new();
    let mut spent = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(grant) => winners.push(grant),
            Err(RedeemError::Spent) => spent += 1,
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!((winners.len(), spent), (1, REDEEMERS - 1));
    let consumed: Vec<_> = ctx
        .store
        .audit_after(&world.ws, 0, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|record| record.kind == "grant.consumed")
        .collect();
    assert_eq!(consumed.len(), 1);
    assert_eq!(consumed[0].at, winners[0].consumed_at.unwrap().to_string());
}

/// Calls recorded at once (the gate under load, batched by group commit on SQLite) are
/// all stored with their grants, their audit records form one unbroken chain per
/// workspace, and a call that cannot be stored (its id is taken) fails alone, leaving
/// nothing behind.
pub async fn concurrent_calls_are_all_recorded_and_chained(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    ctx.store
        .record_call(
            &world.ws,
            world.spec("taken").allowed(),
            effects("call.allowed", "call_taken", t(0)),
        )
        .await
        .unwrap();

    const CALLS: usize = 60;
    const TAKEN: usize = 7;
    let barrier = Arc::new(Barrier::new(CALLS));
    let mut tasks = Vec::new();
    for n in 0..CALLS {
        let store = Arc::clone(&ctx.store);
        let barrier = Arc::clone(&barrier);
        let (ws, spec) = if n % 3 == 0 {
            let spec = Spec {
                agent: world.other_agent.clone(),
                session: None,
                ..world.spec(&format!("b{n}"))
            };
            (world.other.clone(), spec)
        } else if n == TAKEN {
            (world.ws.clone(), world.spec("taken"))
        } else {
            (world.ws.clone(), world.spec(&format!("a{n}")))
        };
        let fx = effects("call.allowed", &spec.call_id(), t(1));
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store.record_call(&ws, spec.allowed(), fx.clone()).await
        }));
    }
    let mut failed = Vec::new();
    for (n, task) in tasks.into_iter().enumerate() {
        if task.await.unwrap().is_err() {
            failed.push(n);
        }
    }
    assert_eq!(failed, vec![TAKEN], "only the call with the taken id fails");

    let in_b = (0..CALLS).filter(|n| n % 3 == 0).count();
    let in_a = 1 + CALLS - in_b - 1;
    for (ws, expected) in [(&world.ws, in_a), (&world.other, in_b)] {
        let records = ctx.store.audit_after(ws, 0, 1_000).await.unwrap();
        assert_eq!(records.len(), expected, "audit records of {ws}");
        assert_chain(&records);
    }
    let rows = ctx.row_counts().await;
    assert_eq!(
        (rows["calls"], rows["grants"], rows["audit"], rows["events"]),
        (CALLS as i64, CALLS as i64, CALLS as i64, CALLS as i64),
        "one call, grant, audit record and event per stored call"
    );
}
