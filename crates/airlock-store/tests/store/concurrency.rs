//! Racing deciders and redeemers: exactly one wins, the others are refused and write
//! nothing (G1, G3).

use super::fixtures::{effects, t, world};
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
            &spec.asked(),
            &effects("approval.requested", "apr_race", t(0)),
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
            &spec.allowed(),
            &effects("call.allowed", "call_once", t(0)),
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
