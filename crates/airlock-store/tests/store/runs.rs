//! The built-in runtime's runs: started one live run per session, written only by the
//! node holding the lease (journal with a continuous `seq`, steps by index, effects in
//! the same transaction), and cancelled by anyone.

use super::audit::assert_chain;
use super::fixtures::{
    effects, finished_step, gated_step, lease, run_event, run_events, run_moves, run_view, seqs,
    start_run_held, t, world, writes_nothing,
};
use super::harness::Ctx;
use airlock_protocol::{Approval, ApprovalStatus, CallStatus, Run, RunState};
use airlock_store::{ClosingApprovals, DecideError, Effects, RunEventEntry, RunUpdate, StoreError};
use jiff::Timestamp;
use std::sync::Arc;
use tokio::sync::Barrier;

pub async fn start_run_creates_a_running_run_and_applies_its_update(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let run = world.run("run_1", &world.session, 10);
    let update = RunUpdate {
        at: Some(t(10)),
        events: vec![run_event("run_started", 10), run_event("text_delta", 11)],
        messages: vec![world.message("msg_1", "run_1", "user", 10)],
        steps: vec![gated_step(0, None)],
        effects: effects("run.started", "run_1", t(10)),
        ..RunUpdate::default()
    };
    let appended = store
        .start_run(&world.ws, &run, &lease("node_a", 40), &update)
        .await
        .unwrap();
    assert_eq!(seqs(&appended), [1, 2]);
    assert_eq!(appended[1].kind, "text_delta");
    assert_eq!(appended[1].data, update.events[1].data);
    let (stored, journal, steps) = run_view(store, &world.ws, "run_1").await;
    assert_eq!(
        stored,
        Some(Run {
            last_seq: 2,
            ..run.clone()
        })
    );
    assert_eq!(journal, appended);
    assert_eq!(steps, update.steps);
    assert_eq!(
        store
            .session_messages(&world.ws, &world.session)
            .await
            .unwrap(),
        update.messages
    );
    let audit = store.audit_after(&world.ws, 0, 100).await.unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(
        (audit[0].kind.as_str(), audit[0].subject.as_str()),
        ("run.started", "run_1")
    );
    assert_eq!(
        store.events_after(&world.ws, 0, 100).await.unwrap().len(),
        1
    );
    // Another workspace sees nothing of it.
    assert_eq!(store.get_run(&world.other, "run_1").await.unwrap(), None);

    // While it is live, running or suspended, the session takes no second run.
    let second = world.run("run_2", &world.session, 20);
    let second_update = RunUpdate {
        messages: vec![world.message("msg_2", "run_2", "user", 20)],
        effects: effects("run.started", "run_2", t(20)),
        ..run_events(20, &["run_started"])
    };
    for state in [RunState::Running, RunState::AwaitingApproval] {
        if state == RunState::AwaitingApproval {
            store
                .update_run(
                    &world.ws,
                    "run_1",
                    "node_a",
                    &run_moves(15, state, "run_suspended"),
                )
                .await
                .unwrap();
        }
        let refused = writes_nothing(
            &ctx,
            &world,
            "run_2",
            store.start_run(&world.ws, &second, &lease("node_b", 50), &second_update),
        )
        .await;
        assert!(
            matches!(refused, Err(StoreError::Conflict(_))),
            "{state}: {refused:?}"
        );
        assert_eq!(store.get_run(&world.ws, "run_2").await.unwrap(), None);
    }

    // Once it ended, the next run starts.
    store
        .claim_run(
            &world.ws,
            "run_1",
            t(16),
            &lease("node_a", 46),
            &run_events(16, &["run_resumed"]),
        )
        .await
        .unwrap()
        .unwrap();
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &run_moves(17, RunState::Completed, "run_completed"),
        )
        .await
        .unwrap();
    let appended = store
        .start_run(&world.ws, &second, &lease("node_b", 50), &second_update)
        .await
        .unwrap();
    assert_eq!(seqs(&appended), [1], "seq is per run");
    let runs = store.session_runs(&world.ws, &world.session).await.unwrap();
    let states: Vec<(&str, RunState)> = runs
        .iter()
        .map(|run| (run.id.as_str(), run.state))
        .collect();
    assert_eq!(
        states,
        [("run_1", RunState::Completed), ("run_2", RunState::Running)]
    );
}

pub async fn concurrent_starts_in_one_session_have_one_winner(ctx: Ctx) {
    let world = world(ctx.store.as_ref()).await;
    const STARTERS: usize = 10;
    let barrier = Arc::new(Barrier::new(STARTERS));
    let mut tasks = Vec::new();
    for n in 0..STARTERS {
        let store = Arc::clone(&ctx.store);
        let barrier = Arc::clone(&barrier);
        let ws = world.ws.clone();
        let run = world.run(&format!("run_{n}"), &world.session, 10);
        let update = RunUpdate {
            messages: vec![world.message(&format!("msg_{n}"), &run.id, "user", 10)],
            ..run_events(10, &["run_started"])
        };
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store
                .start_run(&ws, &run, &lease(&format!("node_{n}"), 40), &update)
                .await
        }));
    }
    let mut started = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => started += 1,
            Err(StoreError::Conflict(_)) => {}
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!(started, 1);
    let rows = ctx.row_counts().await;
    assert_eq!(
        (rows["runs"], rows["run_events"], rows["messages"]),
        (1, 1, 1)
    );
}

pub async fn update_run_keeps_seq_continuous_and_renews_the_lease(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    start_run_held(store, &world, "run_1", &world.session, 10, "node_a").await;

    let mut expected_seq = 1;
    for (at, kinds) in [
        (11, &["text_delta", "tool_call"][..]),
        (12, &[][..]),
        (13, &["tool_decided", "tool_started", "tool_finished"][..]),
    ] {
        let update = RunUpdate {
            // Each write renews the lease for 30 seconds.
            lease: Some(lease("node_a", at + 30)),
            effects: effects("run.progress", "run_1", t(at)),
            ..run_events(at, kinds)
        };
        let appended = store
            .update_run(&world.ws, "run_1", "node_a", &update)
            .await
            .unwrap();
        let wanted: Vec<u64> = (expected_seq + 1..=expected_seq + kinds.len() as u64).collect();
        assert_eq!(seqs(&appended), wanted, "at {at}");
        expected_seq += kinds.len() as u64;
        let run = store.get_run(&world.ws, "run_1").await.unwrap().unwrap();
        assert_eq!((run.last_seq, run.updated_at), (expected_seq, t(at)));
    }
    let journal = store
        .run_events_after(&world.ws, "run_1", 0, 100)
        .await
        .unwrap();
    let kinds: Vec<&str> = journal.iter().map(|event| event.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "text_delta",
            "tool_call",
            "tool_decided",
            "tool_started",
            "tool_finished"
        ]
    );
    assert_eq!(seqs(&journal), (1..=6).collect::<Vec<u64>>());
    // The effects went to the audit chain and the event stream, in the same writes.
    let audit = store.audit_after(&world.ws, 0, 100).await.unwrap();
    assert_eq!(audit.len(), 3);
    assert_chain(&audit);
    assert_eq!(
        store.events_after(&world.ws, 0, 100).await.unwrap().len(),
        3
    );

    // The renewed lease (until 43) holds against a takeover at 42, not at 44.
    let takeover = run_events(42, &["run_resumed"]);
    let early = store
        .claim_run(&world.ws, "run_1", t(42), &lease("node_b", 72), &takeover)
        .await
        .unwrap();
    assert_eq!(early, None);
    let late = store
        .claim_run(&world.ws, "run_1", t(44), &lease("node_b", 74), &takeover)
        .await
        .unwrap();
    assert_eq!(late.map(|run| run.last_seq), Some(7));

    // A failure keeps its error. The events an update returns are the events as stored
    // (a live reader and one replaying the journal see the same), to the millisecond.
    let precise = Timestamp::from_nanosecond(1_735_689_645_123_456_789).unwrap();
    let failed = RunUpdate {
        at: Some(precise),
        state: Some((RunState::Failed, Some("the model is unreachable".into()))),
        events: vec![RunEventEntry {
            at: precise,
            ..run_event("run_failed", 45)
        }],
        ..RunUpdate::default()
    };
    let appended = store
        .update_run(&world.ws, "run_1", "node_b", &failed)
        .await
        .unwrap();
    assert_eq!(
        appended,
        store
            .run_events_after(&world.ws, "run_1", 7, 10)
            .await
            .unwrap()
    );
    assert_eq!(appended[0].at.as_millisecond(), precise.as_millisecond());
    let run = store.get_run(&world.ws, "run_1").await.unwrap().unwrap();
    assert_eq!(
        (run.state, run.error.as_deref(), run.last_seq),
        (RunState::Failed, Some("the model is unreachable"), 8)
    );
}

pub async fn update_run_without_the_lease_is_lease_lost_and_writes_nothing(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    start_run_held(store, &world, "run_1", &world.session, 10, "node_a").await;
    let update = RunUpdate {
        messages: vec![world.message("msg_x", "run_1", "assistant", 12)],
        steps: vec![gated_step(0, None)],
        effects: effects("run.progress", "run_1", t(12)),
        ..run_events(12, &["text_delta"])
    };

    // Who may write: the holder, of a running run, in its workspace.
    let check_refused = |workspace: &str, run_id: &str, owner: &str| {
        let (workspace, run_id, owner) =
            (workspace.to_owned(), run_id.to_owned(), owner.to_owned());
        let (ctx, world, update) = (&ctx, &world, &update);
        async move {
            let refused = writes_nothing(
                ctx,
                world,
                "run_1",
                ctx.store.update_run(&workspace, &run_id, &owner, update),
            )
            .await;
            assert!(
                matches!(refused, Err(StoreError::LeaseLost)),
                "{workspace}/{run_id} by {owner}: {refused:?}"
            );
        }
    };
    check_refused(&world.ws, "run_1", "node_b").await;
    check_refused(&world.ws, "run_nope", "node_a").await;
    check_refused(&world.other, "run_1", "node_a").await;

    // Suspending drops the lease: its holder can no longer write.
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &run_moves(13, RunState::AwaitingApproval, "run_suspended"),
        )
        .await
        .unwrap();
    check_refused(&world.ws, "run_1", "node_a").await;

    // Nor can anyone write to a run that ended, its last holder included.
    store
        .claim_run(
            &world.ws,
            "run_1",
            t(14),
            &lease("node_b", 44),
            &run_events(14, &["run_resumed"]),
        )
        .await
        .unwrap()
        .unwrap();
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_b",
            &run_moves(15, RunState::Completed, "run_completed"),
        )
        .await
        .unwrap();
    for owner in ["node_a", "node_b"] {
        check_refused(&world.ws, "run_1", owner).await;
    }
    let run = store.get_run(&world.ws, "run_1").await.unwrap().unwrap();
    assert_eq!((run.state, run.last_seq), (RunState::Completed, 4));
}

pub async fn steps_are_upserted_by_index(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let asked = world.spec("mail");
    store
        .record_call(&world.ws, asked.asked(), Effects::none())
        .await
        .unwrap();
    start_run_held(store, &world, "run_1", &world.session, 10, "node_a").await;
    let gated = [gated_step(0, Some("call_mail")), gated_step(1, None)];
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &RunUpdate {
                steps: gated.to_vec(),
                ..run_events(11, &["tool_call", "tool_call"])
            },
        )
        .await
        .unwrap();
    assert_eq!(store.run_steps(&world.ws, "run_1").await.unwrap(), gated);

    // The first step finishes: same index, same tool and arguments, every outcome field set.
    let finished = finished_step(0, Some("call_mail"), 20);
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &RunUpdate {
                steps: vec![finished.clone()],
                ..run_events(20, &["tool_finished"])
            },
        )
        .await
        .unwrap();
    let steps = store.run_steps(&world.ws, "run_1").await.unwrap();
    assert_eq!(steps, [finished, gated[1].clone()]);
    assert_eq!(ctx.row_counts().await["run_steps"], 2);

    // A gated call names its run; nothing else does.
    assert_eq!(
        store.run_of_call(&world.ws, "call_mail").await.unwrap(),
        Some("run_1".to_owned())
    );
    assert_eq!(
        store.run_of_call(&world.ws, "call_nope").await.unwrap(),
        None
    );
    assert_eq!(
        store.run_of_call(&world.other, "call_mail").await.unwrap(),
        None
    );
}

pub async fn cancel_run_ends_a_live_run_whoever_holds_it(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    world.add_session(store, "ses_b").await;
    start_run_held(store, &world, "run_1", &world.session, 10, "node_a").await;
    start_run_held(store, &world, "run_2", "ses_b", 10, "node_a").await;
    // run_2 waits on a pending approval, and holds a step whose approval was decided.
    let (waiting, decided) = (world.spec("waiting"), world.spec("decided"));
    for spec in [&waiting, &decided] {
        store
            .record_call(&world.ws, spec.asked(), Effects::none())
            .await
            .unwrap();
    }
    store
        .decide(&world.ws, &decided.approve(t(5)), &Effects::none())
        .await
        .unwrap();
    store
        .update_run(
            &world.ws,
            "run_2",
            "node_a",
            &RunUpdate {
                steps: vec![
                    gated_step(0, Some("call_decided")),
                    gated_step(1, Some("call_waiting")),
                ],
                ..run_moves(11, RunState::AwaitingApproval, "run_suspended")
            },
        )
        .await
        .unwrap();
    let cancelled = |at| RunUpdate {
        effects: effects("run.cancelled", "run", t(at)),
        ..run_events(at, &["run_cancelled"])
    };
    let close = |approval: &Approval| effects("approval.cancelled", &approval.id, t(20));
    let closing = |at| ClosingApprovals {
        at: t(at),
        reason: "the run was cancelled",
        effects: &close,
    };

    // Running (held by node_a) and suspended alike; the pending approval closes with the
    // run, in its transaction, and the decided one stays decided.
    for (run_id, last_seq, closes) in [("run_1", 2, 0), ("run_2", 3, 1)] {
        let (run, closed) = store
            .cancel_run(&world.ws, run_id, &cancelled(20), &closing(20))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (run.state, run.last_seq, run.updated_at, run.error.clone()),
            (RunState::Cancelled, last_seq, t(20), None),
            "{run_id}"
        );
        assert_eq!(closed.len(), closes, "{run_id}");
        assert_eq!(store.get_run(&world.ws, run_id).await.unwrap(), Some(run));
    }
    let ws = world.ws.clone();
    let approval = |id: String| {
        let ws = ws.clone();
        async move { store.get_approval(&ws, &id).await.unwrap().unwrap() }
    };
    let closed = approval(waiting.approval_id()).await;
    assert_eq!(closed.status, ApprovalStatus::Cancelled);
    assert_eq!(
        closed.decision_reason.as_deref(),
        Some("the run was cancelled")
    );
    assert_eq!(
        store
            .get_call(&world.ws, "call_waiting")
            .await
            .unwrap()
            .unwrap()
            .status,
        CallStatus::Cancelled
    );
    assert_eq!(
        approval(decided.approval_id()).await.status,
        ApprovalStatus::Approved
    );
    // Two runs' records and the one closed approval's.
    assert_eq!(store.audit_after(&world.ws, 0, 10).await.unwrap().len(), 3);
    // A click on the closed approval is refused.
    let click = store
        .decide(&world.ws, &waiting.approve(t(21)), &Effects::none())
        .await;
    assert!(
        matches!(
            click,
            Err(DecideError::AlreadyDecided(ApprovalStatus::Cancelled))
        ),
        "{click:?}"
    );

    // The lease went with it: no write, no takeover, nothing stalled.
    let stale = store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &run_events(21, &["text_delta"]),
        )
        .await;
    assert!(matches!(stale, Err(StoreError::LeaseLost)), "{stale:?}");
    let taken = store
        .claim_run(
            &world.ws,
            "run_1",
            t(1000),
            &lease("node_b", 1030),
            &run_events(1000, &["run_resumed"]),
        )
        .await
        .unwrap();
    assert_eq!(taken, None);
    assert_eq!(
        store.stalled_runs(t(1000), 100).await.unwrap(),
        Vec::<(String, String)>::new()
    );

    // Cancelling what already ended, what does not exist or another workspace's run.
    for (workspace, run_id) in [
        (&world.ws, "run_1"),
        (&world.ws, "run_nope"),
        (&world.other, "run_2"),
    ] {
        let outcome = writes_nothing(
            &ctx,
            &world,
            "run_1",
            store.cancel_run(workspace, run_id, &cancelled(30), &closing(30)),
        )
        .await
        .unwrap();
        assert_eq!(outcome, None, "{workspace}/{run_id}");
    }

    // The session is free for the next run; once that one completed, it is not
    // cancellable either.
    start_run_held(store, &world, "run_3", &world.session, 40, "node_b").await;
    store
        .update_run(
            &world.ws,
            "run_3",
            "node_b",
            &run_moves(41, RunState::Completed, "run_completed"),
        )
        .await
        .unwrap();
    let outcome = writes_nothing(
        &ctx,
        &world,
        "run_3",
        store.cancel_run(&world.ws, "run_3", &cancelled(42), &closing(42)),
    )
    .await
    .unwrap();
    assert_eq!(outcome, None);
}
