//! Reading the runtime back: a session's runs, a run's journal page by page, and a
//! session's conversation with every field as it was written.

use super::fixtures::{finished_step, gated_step, lease, run_events, run_moves, t, world, World};
use super::harness::Ctx;
use airlock_protocol::{Message, RunEvent, RunState, Step};
use airlock_store::{RunUpdate, Store};

/// Starts run `id` in `session` at `t(at)` (held by `node_a`), applying `update`, and ends
/// it at once so the session takes the next one.
async fn run_to_completion(
    store: &dyn Store,
    world: &World,
    (id, session, at): (&str, &str, i64),
    update: &RunUpdate,
) {
    store
        .start_run(
            &world.ws,
            &world.run(id, session, at),
            &lease("node_a", at + 30),
            update,
        )
        .await
        .unwrap();
    store
        .update_run(
            &world.ws,
            id,
            "node_a",
            &run_moves(at, RunState::Completed, "run_completed"),
        )
        .await
        .unwrap();
}

pub async fn session_runs_are_oldest_first(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    world.add_session(store, "ses_b").await;
    // Ids out of order; `run_a` and `run_b` made in the same millisecond.
    for (id, session, at) in [
        ("run_c", world.session.as_str(), 10),
        ("run_x", "ses_b", 15),
        ("run_b", world.session.as_str(), 20),
        ("run_a", world.session.as_str(), 20),
    ] {
        run_to_completion(
            store,
            &world,
            (id, session, at),
            &run_events(at, &["run_started"]),
        )
        .await;
    }
    let ws = world.ws.as_str();
    let ids = |session: &str| {
        let session = session.to_owned();
        async move {
            store
                .session_runs(ws, &session)
                .await
                .unwrap()
                .into_iter()
                .map(|run| run.id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(ids(&world.session).await, ["run_c", "run_b", "run_a"]);
    assert_eq!(ids("ses_b").await, ["run_x"]);
    assert_eq!(ids("ses_nope").await, Vec::<String>::new());
    assert!(store
        .session_runs(&world.other, &world.session)
        .await
        .unwrap()
        .is_empty());
}

pub async fn run_events_are_read_after_a_seq(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    world.add_session(store, "ses_b").await;
    let kinds = [
        "run_started",
        "text_delta",
        "tool_call",
        "tool_decided",
        "step_finished",
    ];
    // Another run's journal lives beside it, with seqs of its own.
    run_to_completion(
        store,
        &world,
        ("run_b", "ses_b", 5),
        &run_events(5, &["run_started", "text_delta"]),
    )
    .await;
    run_to_completion(
        store,
        &world,
        ("run_1", &world.session, 10),
        &run_events(10, &kinds),
    )
    .await;
    let ws = world.ws.as_str();
    let page = |after: u64, limit: u32| async move {
        store
            .run_events_after(ws, "run_1", after, limit)
            .await
            .unwrap()
    };
    let whole = page(0, 100).await;
    let read: Vec<(u64, &str)> = whole
        .iter()
        .map(|event| (event.seq, event.kind.as_str()))
        .collect();
    assert_eq!(
        read,
        [
            (1, "run_started"),
            (2, "text_delta"),
            (3, "tool_call"),
            (4, "tool_decided"),
            (5, "step_finished"),
            (6, "run_completed"),
        ]
    );
    // Each event comes back as written: time and data included.
    assert_eq!(
        whole[2],
        RunEvent {
            seq: 3,
            kind: "tool_call".into(),
            at: t(10),
            data: super::fixtures::run_event("tool_call", 10).data,
        }
    );
    // Paged by `after` and `limit`, without gaps or repeats.
    let mut paged = Vec::new();
    let mut after = 0;
    loop {
        let next = page(after, 2).await;
        assert!(next.len() <= 2);
        let Some(last) = next.last() else { break };
        after = last.seq;
        paged.extend(next);
    }
    assert_eq!(paged, whole);
    assert_eq!(page(4, 1).await, whole[4..5]);
    assert!(page(6, 10).await.is_empty());
    assert!(page(0, 0).await.is_empty());
    for (workspace, run_id) in [(&world.ws, "run_nope"), (&world.other, "run_1")] {
        let events = store
            .run_events_after(workspace, run_id, 0, 100)
            .await
            .unwrap();
        assert!(events.is_empty(), "{workspace}/{run_id}: {events:?}");
    }
}

pub async fn session_messages_round_trip_in_order(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    world.add_session(store, "ses_b").await;
    // A run's final reply carries its whole trace, optional fields set and unset.
    let trace: Vec<Step> = [
        finished_step(0, Some("call_x"), 12),
        finished_step(1, None, 13),
        gated_step(2, None),
    ]
    .into_iter()
    .map(|stored| stored.step)
    .collect();
    let first = vec![
        world.message("msg_q", "run_1", "user", 10),
        world.message("msg_p", "run_1", "assistant", 11),
        // Same millisecond: kept in the order written.
        world.message("msg_z", "run_1", "tool", 12),
        world.message("msg_a", "run_1", "tool", 12),
        Message {
            text: Some("done: ✓ «sent»\nline two".into()),
            tool_calls: Vec::new(),
            steps: trace,
            ..world.message("msg_m", "run_1", "assistant", 13)
        },
    ];
    run_to_completion(
        store,
        &world,
        ("run_1", &world.session, 10),
        &RunUpdate {
            messages: first.clone(),
            ..run_events(10, &["run_started"])
        },
    )
    .await;
    // Another session's conversation stays apart.
    run_to_completion(
        store,
        &world,
        ("run_b", "ses_b", 14),
        &RunUpdate {
            messages: vec![Message {
                session_id: "ses_b".into(),
                ..world.message("msg_b", "run_b", "user", 14)
            }],
            ..run_events(14, &["run_started"])
        },
    )
    .await;
    // The next run of the session continues the conversation.
    let second = vec![world.message("msg_0", "run_2", "user", 20)];
    run_to_completion(
        store,
        &world,
        ("run_2", &world.session, 20),
        &RunUpdate {
            messages: second.clone(),
            ..run_events(20, &["run_started"])
        },
    )
    .await;

    let conversation = store
        .session_messages(&world.ws, &world.session)
        .await
        .unwrap();
    assert_eq!(conversation, [first, second].concat());
    let other: Vec<String> = store
        .session_messages(&world.ws, "ses_b")
        .await
        .unwrap()
        .into_iter()
        .map(|message| message.id)
        .collect();
    assert_eq!(other, ["msg_b"]);
    assert!(store
        .session_messages(&world.other, &world.session)
        .await
        .unwrap()
        .is_empty());
}
