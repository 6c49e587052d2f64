//! A coding agent's hook call reads everything it needs before it is judged in one
//! statement (`Store::hook_reads`, issue 19): each part must answer exactly what its own
//! read answers (`get_session`, `call_redeemed_under`, `held_for_retry`,
//! `ambiguous_twin`), found or not, and nothing of another workspace or agent.

use super::fixtures::{effects, t, world, World};
use super::harness::Ctx;
use airlock_protocol::Call;
use airlock_store::{Effects, HookFound, HookReads, RedeemRequest, Store};
use serde_json::Value;

/// The separate reads, as the gate made them before.
async fn one_by_one(store: &dyn Store, workspace: &str, reads: &HookReads<'_>) -> HookFound {
    let session = match reads.session_id {
        Some(id) => store.get_session(workspace, id).await.unwrap(),
        None => None,
    };
    let redeemed_under = match reads.redeem_key {
        Some(key) => store
            .call_redeemed_under(workspace, reads.agent_id, key)
            .await
            .unwrap(),
        None => None,
    };
    let held = match reads.retry_key {
        Some(key) => store
            .held_for_retry(workspace, key)
            .await
            .unwrap()
            .map(|call| call.id),
        None => None,
    };
    let ambiguous_twin = store
        .ambiguous_twin(workspace, reads.agent_id, reads.tool, reads.arguments)
        .await
        .unwrap()
        .twin;
    HookFound {
        session,
        redeemed_under,
        held,
        ambiguous_twin,
    }
}

/// `hook_reads` for `reads`, checked against the separate reads.
async fn both(store: &dyn Store, workspace: &str, reads: &HookReads<'_>) -> HookFound {
    let found = store.hook_reads(workspace, reads).await.unwrap();
    assert_eq!(
        found,
        one_by_one(store, workspace, reads).await,
        "{reads:?}"
    );
    found
}

fn reads<'a>(world: &'a World, call: &'a Call) -> HookReads<'a> {
    HookReads {
        agent_id: &world.agent,
        session_id: Some(&world.session),
        redeem_key: Some("claude-code:toolu_1"),
        retry_key: Some("retry-1"),
        tool: &call.tool,
        arguments: &call.arguments,
    }
}

pub async fn hook_reads_answer_as_the_separate_reads(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let lost = world.spec("lost");
    let call = lost.allowed().call;

    // Nothing yet but the session.
    let found = both(store, &world.ws, &reads(&world, &call)).await;
    assert_eq!(
        found.session.map(|session| session.id),
        Some(world.session.clone())
    );
    assert_eq!(found.redeemed_under, None);
    assert_eq!(found.held, None);
    assert_eq!(found.ambiguous_twin, None);
    let nothing = HookReads {
        session_id: None,
        redeem_key: None,
        retry_key: None,
        ..reads(&world, &call)
    };
    assert_eq!(both(store, &world.ws, &nothing).await, HookFound::default());

    // A call redeemed under the hook's key, then left without an outcome until it turned
    // ambiguous: its twin.
    store
        .record_call(&world.ws, lost.allowed(), Effects::none())
        .await
        .unwrap();
    let request = RedeemRequest {
        at: t(10),
        key: Some("claude-code:toolu_1"),
        outcome_due: Some(t(70)),
    };
    store
        .redeem_keyed(&world.ws, &call.id, &request, &Effects::none())
        .await
        .unwrap();
    let found = both(store, &world.ws, &reads(&world, &call)).await;
    assert_eq!(found.redeemed_under, Some(call.id.clone()));
    assert_eq!(found.ambiguous_twin, None);
    let on_mark = |_: &str, call: &Call| effects("call.ambiguous", &call.id, t(100));
    store.mark_ambiguous(t(100), 10, &on_mark).await.unwrap();
    let found = both(store, &world.ws, &reads(&world, &call)).await;
    assert_eq!(found.ambiguous_twin, Some(call.id.clone()));
    // Other arguments have no twin; another key finds no redeem.
    let other: Value = serde_json::json!({"to": "eve@else.test"});
    let elsewhere = HookReads {
        redeem_key: Some("claude-code:toolu_2"),
        arguments: &other,
        ..reads(&world, &call)
    };
    let found = both(store, &world.ws, &elsewhere).await;
    assert_eq!((found.redeemed_under, found.ambiguous_twin), (None, None));

    // Calls held for a retry: the newest under the key.
    for (id, at) in [("held_old", 20), ("held_new", 30)] {
        let mut spec = world.spec(id);
        spec.created_at = t(at);
        store
            .record_call(&world.ws, spec.asked(), Effects::none())
            .await
            .unwrap();
        store
            .hold_for_retry(&world.ws, &spec.call_id(), "retry-1")
            .await
            .unwrap();
    }
    let found = both(store, &world.ws, &reads(&world, &call)).await;
    assert_eq!(found.held.as_deref(), Some("call_held_new"));

    // Another workspace sees none of it, not even a session of the same id.
    let found = both(store, &world.other, &reads(&world, &call)).await;
    assert_eq!(found, HookFound::default());
    // Another agent finds neither the redeem nor the twin (both are per agent).
    let stranger = HookReads {
        agent_id: &world.other_agent,
        ..reads(&world, &call)
    };
    let found = both(store, &world.ws, &stranger).await;
    assert_eq!((found.redeemed_under, found.ambiguous_twin), (None, None));
}
