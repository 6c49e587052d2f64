//! No approved call silently lost (DESIGN.md §11.8): a redeem under an idempotency key
//! replays to that key only, outcomes are stored once and only for the call's agent,
//! overdue calls are marked ambiguous once however many nodes sweep, and a person's
//! reconciliation settles one once.

use super::fixtures::{agent, effects, t, token_hash, world, World};
use super::harness::Ctx;
use airlock_protocol::{Call, CallOutcome, OutcomeStatus, Reconciliation, Resolution};
use airlock_store::{Effects, RedeemError, RedeemRequest, Redemption, SettleError, Store};
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::Barrier;

fn keyed(at: i64, key: Option<&str>) -> RedeemRequest<'_> {
    RedeemRequest {
        at: t(at),
        key,
        outcome_due: Some(t(at + 60)),
    }
}

async fn allowed(store: &dyn Store, world: &World, id: &str) {
    store
        .record_call(&world.ws, world.spec(id).allowed(), Effects::none())
        .await
        .unwrap();
}

async fn redeemed(store: &dyn Store, world: &World, id: &str, at: i64) {
    allowed(store, world, id).await;
    store
        .redeem_keyed(
            &world.ws,
            &format!("call_{id}"),
            &keyed(at, Some(id)),
            &Effects::none(),
        )
        .await
        .unwrap();
}

fn outcome(status: OutcomeStatus, detail: Option<&str>, at: i64) -> CallOutcome {
    CallOutcome {
        status,
        detail: detail.map(str::to_owned),
        reported_at: t(at),
    }
}

async fn audit_kinds(store: &dyn Store, world: &World, kind: &str) -> usize {
    store
        .audit_after(&world.ws, 0, 10_000)
        .await
        .unwrap()
        .iter()
        .filter(|record| record.kind == kind)
        .count()
}

pub async fn a_redeem_under_a_key_replays_to_that_key_only(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    allowed(store, &world, "keyed").await;
    let first = store
        .redeem_keyed(
            &world.ws,
            "call_keyed",
            &keyed(5, Some("key-1")),
            &effects("grant.consumed", "grt_keyed", t(5)),
        )
        .await
        .unwrap();
    assert!(!first.replayed);
    assert_eq!(first.grant.consumed_at, Some(t(5)));
    let call = store
        .get_call(&world.ws, "call_keyed")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(call.redeemed_at, Some(t(5)));
    let before = ctx.row_counts().await;

    // The same key, later: the same grant, consumed when it was, and nothing written.
    let again = store
        .redeem_keyed(
            &world.ws,
            "call_keyed",
            &keyed(9, Some("key-1")),
            &effects("grant.consumed", "grt_keyed", t(9)),
        )
        .await
        .unwrap();
    assert_eq!(
        again,
        Redemption {
            grant: first.grant.clone(),
            replayed: true,
            arguments: None,
        }
    );
    // Any other key, or none, is a second execution: refused.
    for key in [Some("key-2"), Some("KEY-1"), None] {
        let refused = store
            .redeem_keyed(&world.ws, "call_keyed", &keyed(10, key), &Effects::none())
            .await;
        assert!(
            matches!(refused, Err(RedeemError::Spent)),
            "{key:?}: {refused:?}"
        );
    }
    assert_eq!(ctx.row_counts().await, before);
    assert_eq!(audit_kinds(store, &world, "grant.consumed").await, 1);

    // A grant consumed without a key replays to nobody.
    allowed(store, &world, "plain").await;
    store
        .redeem(&world.ws, "call_plain", t(11), &Effects::none())
        .await
        .unwrap();
    let refused = store
        .redeem_keyed(
            &world.ws,
            "call_plain",
            &keyed(12, Some("k")),
            &Effects::none(),
        )
        .await;
    assert!(matches!(refused, Err(RedeemError::Spent)), "{refused:?}");
    // The key survives a restart with its answer (both were one update).
    let ctx = ctx.restart().await;
    let replayed = ctx
        .store
        .redeem_keyed(
            &world.ws,
            "call_keyed",
            &keyed(20, Some("key-1")),
            &Effects::none(),
        )
        .await
        .unwrap();
    assert_eq!(replayed.grant, first.grant);
    assert!(replayed.replayed);
}

const REDEEMERS: usize = 200;

/// Races `REDEEMERS` redeems of one grant, the `n`th under `key(n)`.
async fn race(
    ctx: &Ctx,
    world: &World,
    key: fn(usize) -> String,
) -> Vec<Result<Redemption, RedeemError>> {
    allowed(ctx.store.as_ref(), world, "race").await;
    let barrier = Arc::new(Barrier::new(REDEEMERS));
    let mut tasks = Vec::new();
    for n in 0..REDEEMERS {
        let store = Arc::clone(&ctx.store);
        let barrier = Arc::clone(&barrier);
        let ws = world.ws.clone();
        tasks.push(tokio::spawn(async move {
            let key = key(n);
            let request = keyed(10 + i64::try_from(n).unwrap(), Some(&key));
            barrier.wait().await;
            let fx = effects("grant.consumed", "grt_race", request.at);
            store.redeem_keyed(&ws, "call_race", &request, &fx).await
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    outcomes
}

pub async fn two_hundred_concurrent_redeems_under_one_key_answer_one_grant(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let outcomes = race(&ctx, &world, |_| "the-one-key".to_owned()).await;
    let answers: Vec<Redemption> = outcomes.into_iter().map(Result::unwrap).collect();
    let first: Vec<&Redemption> = answers.iter().filter(|a| !a.replayed).collect();
    assert_eq!(first.len(), 1, "exactly one redeem consumed the grant");
    assert!(
        answers.iter().all(|a| a.grant == first[0].grant),
        "one grant for all"
    );
    assert_eq!(
        audit_kinds(ctx.store.as_ref(), &world, "grant.consumed").await,
        1
    );
}

pub async fn two_hundred_concurrent_redeems_under_many_keys_have_one_winner(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let outcomes = race(&ctx, &world, |n| format!("key-{n}")).await;
    let mut winners = 0;
    let mut spent = 0;
    for outcome in outcomes {
        match outcome {
            Ok(redemption) => {
                assert!(!redemption.replayed);
                winners += 1;
            }
            Err(RedeemError::Spent) => spent += 1,
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!((winners, spent), (1, REDEEMERS - 1));
    assert_eq!(
        audit_kinds(ctx.store.as_ref(), &world, "grant.consumed").await,
        1
    );
}

pub async fn an_outcome_is_stored_once_and_only_for_its_agent(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    store
        .create_agent(
            &world.ws,
            &agent("agt_c", "other"),
            &token_hash("tok_agt_c"),
            &Effects::none(),
        )
        .await
        .unwrap();
    allowed(store, &world, "ran").await;
    let ok = outcome(OutcomeStatus::Succeeded, None, 7);
    let fx = effects("call.outcome", "call_ran", t(7));
    // Not redeemed yet: there is nothing to report on.
    let early = store
        .record_outcome(&world.ws, "call_ran", &world.agent, &ok, &fx)
        .await;
    assert!(matches!(early, Err(SettleError::NotRedeemed)), "{early:?}");
    store
        .redeem_keyed(
            &world.ws,
            "call_ran",
            &keyed(5, Some("k")),
            &Effects::none(),
        )
        .await
        .unwrap();
    let before = ctx.row_counts().await;
    // Another agent, here or in another workspace, does not see the call.
    for (ws, agent) in [
        (&world.ws, "agt_c"),
        (&world.other, world.other_agent.as_str()),
    ] {
        let refused = store.record_outcome(ws, "call_ran", agent, &ok, &fx).await;
        assert!(
            matches!(refused, Err(SettleError::NotFound)),
            "{agent}: {refused:?}"
        );
    }
    assert_eq!(ctx.row_counts().await, before);

    let recorded = store
        .record_outcome(&world.ws, "call_ran", &world.agent, &ok, &fx)
        .await
        .unwrap();
    assert!(recorded.stored);
    assert_eq!(recorded.call.outcome, Some(ok.clone()));
    let after = ctx.row_counts().await;
    // The same report again (a retry): answered, not stored twice.
    let again = store
        .record_outcome(
            &world.ws,
            "call_ran",
            &world.agent,
            &outcome(OutcomeStatus::Succeeded, None, 9),
            &fx,
        )
        .await
        .unwrap();
    assert!(!again.stored);
    assert_eq!(again.call.outcome, Some(ok.clone()));
    // A different one is refused; the first stands.
    let other = outcome(OutcomeStatus::Failed, Some("exit code 1"), 9);
    let refused = store
        .record_outcome(&world.ws, "call_ran", &world.agent, &other, &fx)
        .await;
    assert!(
        matches!(refused, Err(SettleError::AlreadyReported)),
        "{refused:?}"
    );
    assert_eq!(ctx.row_counts().await, after);
    assert_eq!(audit_kinds(store, &world, "call.outcome").await, 1);
    let call = store
        .get_call(&world.ws, "call_ran")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(call.outcome, Some(ok));
}

/// Effects of marking one call ambiguous.
fn on_mark(_: &str, call: &Call) -> Effects {
    effects(
        "call.ambiguous",
        &call.id,
        call.ambiguous_at.unwrap_or(t(0)),
    )
}

pub async fn overdue_calls_are_marked_ambiguous_once_across_nodes(ctx: Ctx) {
    let store = Arc::clone(&ctx.store);
    let world = world(store.as_ref()).await;
    const CALLS: usize = 30;
    for n in 0..CALLS {
        redeemed(store.as_ref(), &world, &format!("due{n}"), 10).await;
    }
    // Reported on: never ambiguous. Due later: not yet.
    store
        .record_outcome(
            &world.ws,
            "call_due0",
            &world.agent,
            &outcome(OutcomeStatus::Failed, None, 20),
            &Effects::none(),
        )
        .await
        .unwrap();
    redeemed(store.as_ref(), &world, "later", 400).await;
    assert_eq!(store.next_outcome_due().await.unwrap(), Some(t(70)));

    // Two nodes sweep at once, each in small batches, until nothing is left.
    let second = ctx.another_node().await;
    let mut sweepers = Vec::new();
    for node in [Arc::clone(&store), second] {
        sweepers.push(tokio::spawn(async move {
            let mut marked = Vec::new();
            loop {
                let batch = node.mark_ambiguous(t(100), 4, &on_mark).await.unwrap();
                if batch.is_empty() {
                    return marked;
                }
                marked.extend(batch.into_iter().map(|(_, call)| call.id));
            }
        }));
    }
    let mut all = Vec::new();
    for sweeper in sweepers {
        all.extend(sweeper.await.unwrap());
    }
    let unique: BTreeSet<&String> = all.iter().collect();
    assert_eq!(
        all.len(),
        CALLS - 1,
        "each overdue call marked once: {all:?}"
    );
    assert_eq!(unique.len(), CALLS - 1);
    assert!(!unique.contains(&"call_due0".to_owned()));
    assert_eq!(
        audit_kinds(store.as_ref(), &world, "call.ambiguous").await,
        CALLS - 1
    );
    assert_eq!(store.next_outcome_due().await.unwrap(), Some(t(460)));
    let listed = store.list_ambiguous(&world.ws, 1000).await.unwrap();
    assert_eq!(listed.len(), CALLS - 1);
    assert!(listed.iter().all(|call| call.ambiguous_at == Some(t(100))));
    assert!(store
        .list_ambiguous(&world.other, 1000)
        .await
        .unwrap()
        .is_empty());
    // Nothing is left to mark.
    assert!(store
        .mark_ambiguous(t(200), 100, &on_mark)
        .await
        .unwrap()
        .is_empty());
}

/// What `ambiguous_twin` answers for the agent's call: the twin, and whether the workspace
/// holds any unsettled ambiguous call.
async fn twin(
    store: &dyn Store,
    workspace: &str,
    agent: &str,
    tool: &str,
    arguments: &serde_json::Value,
) -> (Option<String>, bool) {
    let found = store
        .ambiguous_twin(workspace, agent, tool, arguments)
        .await
        .unwrap();
    (found.twin, found.any_in_workspace)
}

pub async fn a_reconciliation_settles_an_ambiguous_call_once(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    redeemed(store, &world, "lost", 10).await;
    let call = store
        .get_call(&world.ws, "call_lost")
        .await
        .unwrap()
        .unwrap();
    let reconciliation = Reconciliation {
        resolution: Resolution::DidNotRun,
        by: "user:usr_a".into(),
        reason: Some("no such mail in the outbox".into()),
        at: t(200),
    };
    let fx = effects("call.reconciled", "call_lost", t(200));
    let early = store
        .reconcile(&world.ws, "call_lost", &reconciliation, &fx)
        .await;
    assert!(matches!(early, Err(SettleError::NotAmbiguous)), "{early:?}");
    assert_eq!(
        twin(store, &world.ws, &world.agent, &call.tool, &call.arguments).await,
        (None, false)
    );
    store.mark_ambiguous(t(100), 10, &on_mark).await.unwrap();
    assert_eq!(
        twin(store, &world.ws, &world.agent, &call.tool, &call.arguments).await,
        (Some("call_lost".to_owned()), true)
    );
    // Another tool has no twin, but the workspace holds an ambiguous call; another
    // workspace holds none.
    assert_eq!(
        twin(
            store,
            &world.ws,
            &world.agent,
            "other.tool",
            &call.arguments
        )
        .await,
        (None, true)
    );
    assert_eq!(
        twin(
            store,
            &world.other,
            &world.agent,
            &call.tool,
            &call.arguments
        )
        .await,
        (None, false)
    );
    let before = ctx.row_counts().await;
    let nope = store
        .reconcile(&world.other, "call_lost", &reconciliation, &fx)
        .await;
    assert!(matches!(nope, Err(SettleError::NotFound)), "{nope:?}");
    assert_eq!(ctx.row_counts().await, before);

    let settled = store
        .reconcile(&world.ws, "call_lost", &reconciliation, &fx)
        .await
        .unwrap();
    assert_eq!(settled.reconciliation, Some(reconciliation.clone()));
    let again = store
        .reconcile(&world.ws, "call_lost", &reconciliation, &fx)
        .await;
    assert!(
        matches!(again, Err(SettleError::AlreadyReconciled)),
        "{again:?}"
    );
    assert!(store
        .list_ambiguous(&world.ws, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        twin(store, &world.ws, &world.agent, &call.tool, &call.arguments).await,
        (None, false)
    );
    // The grant stays spent: nothing is revived.
    let refused = store
        .redeem(&world.ws, "call_lost", t(300), &Effects::none())
        .await;
    assert!(matches!(refused, Err(RedeemError::Spent)), "{refused:?}");
    assert_eq!(audit_kinds(store, &world, "call.reconciled").await, 1);
}
