//! Picking a run back up: a suspended or abandoned run is claimed by exactly one node,
//! the sweeper finds the runs that should move and do not, and a run survives a restart.

use super::fixtures::{
    effects, finished_step, gated_step, lease, run_events, run_moves, run_view, seqs,
    start_run_held, t, world, writes_nothing,
};
use super::harness::Ctx;
use airlock_protocol::{Run, RunState};
use airlock_store::{Effects, RunUpdate, StoreError};
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::Barrier;

pub async fn claim_run_takes_over_a_suspended_or_abandoned_run(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    // Held by node_a until 40.
    start_run_held(store, &world, "run_1", &world.session, 10, "node_a").await;
    let resumed = |at| RunUpdate {
        effects: effects("run.resumed", "run_1", t(at)),
        ..run_events(at, &["run_resumed"])
    };
    let refuse = |now: i64, owner: &'static str| {
        let (ctx, world, update) = (&ctx, &world, resumed(now));
        async move {
            let claimed = writes_nothing(
                ctx,
                world,
                "run_1",
                ctx.store
                    .claim_run(&world.ws, "run_1", t(now), &lease(owner, now + 30), &update),
            )
            .await
            .unwrap();
            assert_eq!(claimed, None, "claimed at {now} by {owner}");
        }
    };

    // A live lease (running out *before* now is what frees it) keeps the run.
    refuse(30, "node_b").await;
    refuse(40, "node_b").await;

    // Ran out: taken over, with the update applied, and the old holder shut out.
    let run = store
        .claim_run(
            &world.ws,
            "run_1",
            t(41),
            &lease("node_b", 100),
            &resumed(41),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (run.state, run.last_seq, run.updated_at),
        (RunState::Running, 2, t(41))
    );
    let stale = store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &run_events(42, &["text_delta"]),
        )
        .await;
    assert!(matches!(stale, Err(StoreError::LeaseLost)), "{stale:?}");
    let appended = store
        .update_run(
            &world.ws,
            "run_1",
            "node_b",
            &run_events(42, &["text_delta"]),
        )
        .await
        .unwrap();
    assert_eq!(seqs(&appended), [3]);
    assert_eq!(store.audit_after(&world.ws, 0, 10).await.unwrap().len(), 1);

    // A suspended run is free at once, whatever lease it had.
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_b",
            &run_moves(50, RunState::AwaitingApproval, "run_suspended"),
        )
        .await
        .unwrap();
    let run = store
        .claim_run(
            &world.ws,
            "run_1",
            t(51),
            &lease("node_c", 81),
            &resumed(51),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!((run.state, run.last_seq), (RunState::Running, 5));
    refuse(52, "node_d").await;

    // An ended run, an unknown run or another workspace's run is nobody's to take.
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_c",
            &run_moves(60, RunState::Completed, "run_completed"),
        )
        .await
        .unwrap();
    refuse(1000, "node_d").await;
    for (workspace, run_id) in [(&world.ws, "run_nope"), (&world.other, "run_1")] {
        let claimed = store
            .claim_run(
                workspace,
                run_id,
                t(1000),
                &lease("node_d", 1030),
                &resumed(1000),
            )
            .await
            .unwrap();
        assert_eq!(claimed, None, "{workspace}/{run_id}");
    }
}

pub async fn concurrent_claims_have_one_winner(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    start_run_held(
        ctx.store.as_ref(),
        &world,
        "run_1",
        &world.session,
        0,
        "node_0",
    )
    .await;
    ctx.store
        .update_run(
            &world.ws,
            "run_1",
            "node_0",
            &run_moves(1, RunState::AwaitingApproval, "run_suspended"),
        )
        .await
        .unwrap();

    const ROUNDS: i64 = 20;
    for round in 1..=ROUNDS {
        let barrier = Arc::new(Barrier::new(2));
        let claim = |side: &str| {
            let store = Arc::clone(&ctx.store);
            let barrier = Arc::clone(&barrier);
            let ws = world.ws.clone();
            let owner = format!("node_{round}_{side}");
            let at = round * 10;
            tokio::spawn(async move {
                barrier.wait().await;
                let claimed = store
                    .claim_run(
                        &ws,
                        "run_1",
                        t(at),
                        &lease(&owner, at + 30),
                        &run_events(at, &["run_resumed"]),
                    )
                    .await
                    .unwrap();
                claimed.map(|_| owner)
            })
        };
        let (left, right) = tokio::join!(claim("left"), claim("right"));
        let winners: Vec<String> = [left.unwrap(), right.unwrap()]
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        // The winner holds the run, and suspends it again for the next round.
        ctx.store
            .update_run(
                &world.ws,
                "run_1",
                &winners[0],
                &run_moves(round * 10 + 1, RunState::AwaitingApproval, "run_suspended"),
            )
            .await
            .unwrap();
    }
    let journal = ctx
        .store
        .run_events_after(&world.ws, "run_1", 0, 1000)
        .await
        .unwrap();
    let total = 2 + 2 * ROUNDS as u64;
    assert_eq!(seqs(&journal), (1..=total).collect::<Vec<u64>>());
    let resumed = journal
        .iter()
        .filter(|event| event.kind == "run_resumed")
        .count();
    assert_eq!(resumed, ROUNDS as usize);
}

pub async fn stalled_runs_are_the_ones_that_should_move(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    for spec in ["approve", "expire", "cancel", "wait", "rejected"] {
        let mut spec = world.spec(spec);
        spec.deadline = t(100);
        store
            .record_call(&world.ws, spec.asked(), Effects::none())
            .await
            .unwrap();
    }
    // One suspended run per pending call; `run_wait` also waits on a call decided since.
    for (run_id, calls) in [
        ("run_approve", &["call_approve"][..]),
        ("run_expire", &["call_expire"][..]),
        ("run_cancel", &["call_cancel"][..]),
        ("run_wait", &["call_rejected", "call_wait"][..]),
    ] {
        let session = format!("ses_{run_id}");
        world.add_session(store, &session).await;
        start_run_held(store, &world, run_id, &session, 10, "node_a").await;
        let steps = calls
            .iter()
            .zip(0..)
            .map(|(call_id, index)| gated_step(index, Some(*call_id)))
            .collect();
        let suspend = RunUpdate {
            steps,
            ..run_moves(11, RunState::AwaitingApproval, "run_suspended")
        };
        store
            .update_run(&world.ws, run_id, "node_a", &suspend)
            .await
            .unwrap();
    }
    store
        .decide(
            &world.ws,
            &world.spec("rejected").reject(t(12)),
            &Effects::none(),
        )
        .await
        .unwrap();
    // Running runs: one held until 500, one (of the other workspace) until 50, one ended.
    world.add_session(store, "ses_live").await;
    store
        .start_run(
            &world.ws,
            &world.run("run_live", "ses_live", 10),
            &lease("node_a", 500),
            &run_events(10, &["run_started"]),
        )
        .await
        .unwrap();
    world.add_session(store, "ses_done").await;
    start_run_held(store, &world, "run_done", "ses_done", 10, "node_a").await;
    store
        .update_run(
            &world.ws,
            "run_done",
            "node_a",
            &run_moves(11, RunState::Completed, "run_completed"),
        )
        .await
        .unwrap();
    store
        .create_session(
            &world.other,
            &airlock_protocol::Session {
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
    store
        .start_run(
            &world.other,
            &Run {
                agent_id: world.other_agent.clone(),
                ..world.run("run_dead", "ses_other", 10)
            },
            &lease("node_b", 50),
            &run_events(10, &["run_started"]),
        )
        .await
        .unwrap();

    let stalled = |now: i64| async move {
        let listed = store.stalled_runs(t(now), 100).await.unwrap();
        let set: BTreeSet<(String, String)> = listed.iter().cloned().collect();
        assert_eq!(set.len(), listed.len(), "listed twice at {now}: {listed:?}");
        set.into_iter()
            .map(|(workspace, run)| format!("{workspace}/{run}"))
            .collect::<Vec<_>>()
    };
    // Every suspended run still waits for a person; the other workspace's lease is live.
    assert_eq!(stalled(50).await, Vec::<String>::new());
    assert_eq!(stalled(51).await, ["ws_b/run_dead"]);

    // Each way an approval ends without the run moving makes the run stalled.
    store
        .decide(
            &world.ws,
            &world.spec("approve").approve(t(60)),
            &Effects::none(),
        )
        .await
        .unwrap();
    assert_eq!(stalled(61).await, ["ws_a/run_approve", "ws_b/run_dead"]);
    store
        .cancel_approval(
            &world.ws,
            "apr_cancel",
            t(62),
            "run cancelled",
            &Effects::none(),
        )
        .await
        .unwrap();
    store
        .expire_due(t(100), 10, &|_| Effects::none())
        .await
        .unwrap();
    // `call_wait` expired too: `run_wait` has no pending call left.
    assert_eq!(
        stalled(101).await,
        [
            "ws_a/run_approve",
            "ws_a/run_cancel",
            "ws_a/run_expire",
            "ws_a/run_wait",
            "ws_b/run_dead"
        ]
    );
    assert_eq!(stalled(501).await.len(), 6, "run_live's lease ran out");
    assert_eq!(store.stalled_runs(t(501), 2).await.unwrap().len(), 2);
}

pub async fn a_run_survives_a_restart(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    let store = ctx.store.as_ref();
    let asked = world.spec("mail");
    store
        .record_call(&world.ws, asked.asked(), Effects::none())
        .await
        .unwrap();
    store
        .start_run(
            &world.ws,
            &world.run("run_1", &world.session, 10),
            &lease("node_a", 40),
            &RunUpdate {
                messages: vec![world.message("msg_1", "run_1", "user", 10)],
                ..run_events(10, &["run_started", "text_delta"])
            },
        )
        .await
        .unwrap();
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &RunUpdate {
                messages: vec![world.message("msg_2", "run_1", "assistant", 11)],
                steps: vec![finished_step(0, None, 11), gated_step(1, Some("call_mail"))],
                ..run_moves(11, RunState::AwaitingApproval, "run_suspended")
            },
        )
        .await
        .unwrap();
    let before = (
        run_view(store, &world.ws, "run_1").await,
        store
            .session_messages(&world.ws, &world.session)
            .await
            .unwrap(),
        store.run_of_call(&world.ws, "call_mail").await.unwrap(),
    );

    let ctx = ctx.restart().await;
    let store = ctx.store.as_ref();
    let after = (
        run_view(store, &world.ws, "run_1").await,
        store
            .session_messages(&world.ws, &world.session)
            .await
            .unwrap(),
        store.run_of_call(&world.ws, "call_mail").await.unwrap(),
    );
    assert_eq!(after, before);
    assert_eq!(
        before.0 .0.map(|run| run.state),
        Some(RunState::AwaitingApproval)
    );

    // Still waiting for its call; once that is decided, the sweeper finds it and a node
    // picks it up where the journal stopped.
    assert_eq!(
        store.stalled_runs(t(20), 10).await.unwrap(),
        Vec::<(String, String)>::new()
    );
    store
        .decide(&world.ws, &asked.approve(t(20)), &Effects::none())
        .await
        .unwrap();
    assert_eq!(
        store.stalled_runs(t(21), 10).await.unwrap(),
        [(world.ws.clone(), "run_1".to_owned())]
    );
    let run = store
        .claim_run(
            &world.ws,
            "run_1",
            t(21),
            &lease("node_b", 51),
            &run_events(21, &["run_resumed"]),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.last_seq, 4);
}

pub async fn renew_lease_keeps_a_held_run_and_nothing_else(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    // Held by node_a until 40.
    start_run_held(store, &world, "run_1", &world.session, 10, "node_a").await;
    let listed = |now| async move {
        let stalled = store.stalled_runs(t(now), 100).await.unwrap();
        stalled.iter().any(|(_, id)| id == "run_1")
    };
    assert!(listed(41).await, "ran out at 40");

    // Only the holder renews; anyone else, or a run that is not there, writes nothing.
    for (workspace, run_id, owner) in [
        (&world.ws, "run_1", "node_b"),
        (&world.ws, "run_nope", "node_a"),
        (&world.other, "run_1", "node_a"),
    ] {
        let renewed = writes_nothing(
            &ctx,
            &world,
            "run_1",
            store.renew_lease(workspace, run_id, &lease(owner, 100)),
        )
        .await
        .unwrap();
        assert!(!renewed, "{workspace}/{run_id} by {owner}");
    }

    // The holder's renewal, even after the lease ran out (nobody claimed it meanwhile),
    // keeps the run until the new end: not stalled, not claimable, still writable by it.
    assert!(store
        .renew_lease(&world.ws, "run_1", &lease("node_a", 100))
        .await
        .unwrap());
    assert!(!listed(41).await);
    assert!(!listed(100).await);
    assert!(listed(101).await);
    let claimed = store
        .claim_run(
            &world.ws,
            "run_1",
            t(60),
            &lease("node_b", 90),
            &run_events(60, &["run_resumed"]),
        )
        .await
        .unwrap();
    assert_eq!(claimed, None, "claimed from a renewed lease");
    let appended = store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &run_events(61, &["text_delta"]),
        )
        .await
        .unwrap();
    assert_eq!(seqs(&appended), [2]);

    // A suspended run holds no lease: nothing to renew.
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &RunUpdate {
                state: Some((RunState::AwaitingApproval, None)),
                ..run_events(62, &["run_suspended"])
            },
        )
        .await
        .unwrap();
    let renewed = writes_nothing(
        &ctx,
        &world,
        "run_1",
        store.renew_lease(&world.ws, "run_1", &lease("node_a", 200)),
    )
    .await
    .unwrap();
    assert!(!renewed, "renewed a suspended run");
}
