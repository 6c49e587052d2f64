//! Pausing and resuming a run (DESIGN.md §11.6): the pause closes the pending approvals
//! of its steps and of calls its agent made in its session since it started, in its
//! transaction; a paused run takes no write but a running tool's result, is neither
//! claimed nor stalled; a resume refuses until the leg that held it let go, then leaves
//! the run for any node to claim, with each cancelled step ready to be asked again.

use super::fixtures::{effects, gated_step, lease, run_events, start_run_held, t, world};
use super::fixtures::{finished_step, writes_nothing};
use super::harness::Ctx;
use airlock_protocol::{Approval, ApprovalStatus, RunState, StepState};
use airlock_store::{ClosingApprovals, RunUpdate, StoreError};

pub async fn pause_closes_what_the_run_asked_and_resume_asks_again(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    world.add_session(store, "ses_b").await;
    start_run_held(store, &world, "run_1", &world.session, 10, "node_a").await;
    let specs = four_asked_calls(store, &world).await;
    let mut running = gated_step(1, None);
    running.step.state = StepState::Started;
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &RunUpdate {
                steps: vec![gated_step(0, Some("call_step")), running],
                lease: Some(lease("node_a", 40)),
                ..run_events(13, &["tool_started"])
            },
        )
        .await
        .unwrap();

    let close = |approval: &Approval| effects("approval.cancelled", &approval.id, t(14));
    let closing = ClosingApprovals {
        at: t(14),
        reason: "the run was paused",
        effects: &close,
    };
    let paused_update = RunUpdate {
        effects: effects("run.paused", "run_1", t(14)),
        ..run_events(14, &["run_paused"])
    };
    let (run, closed) = store
        .pause_run(&world.ws, "run_1", &paused_update, &closing)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((run.state, run.last_seq), (RunState::Paused, 3));
    only_the_runs_closed(store, &world, &specs, &closed).await;
    // The tool still executing keeps the lease: its leg renews it (to the same end here,
    // so what follows reads as before), and nobody else can.
    assert!(store
        .renew_lease(&world.ws, "run_1", &lease("node_a", 40))
        .await
        .unwrap());
    assert!(!store
        .renew_lease(&world.ws, "run_1", &lease("node_b", 40))
        .await
        .unwrap());
    // Pausing again changes nothing.
    let again = writes_nothing(
        &ctx,
        &world,
        "run_1",
        store.pause_run(&world.ws, "run_1", &paused_update, &closing),
    )
    .await
    .unwrap();
    assert!(again.is_none());

    // The holder may not go on, nobody claims it, it is not stalled.
    let on = store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &run_events(15, &["text_delta"]),
        )
        .await;
    assert!(matches!(on, Err(StoreError::LeaseLost)), "{on:?}");
    let claimed = store
        .claim_run(
            &world.ws,
            "run_1",
            t(1000),
            &lease("node_b", 1030),
            &run_events(1000, &["run_resumed"]),
        )
        .await
        .unwrap();
    assert_eq!(claimed, None);
    assert!(store.stalled_runs(t(1000), 100).await.unwrap().is_empty());

    // While the tool may still run, a resume is refused and writes nothing.
    let early = writes_nothing(
        &ctx,
        &world,
        "run_1",
        store.resume_run(
            &world.ws,
            "run_1",
            t(15),
            &run_events(15, &["run_unpaused"]),
        ),
    )
    .await;
    assert!(matches!(early, Err(StoreError::Conflict(_))), "{early:?}");
    // The running tool's result is journalled; the run stays paused.
    let result = RunUpdate {
        steps: vec![finished_step(1, None, 16)],
        lease: Some(lease("node_a", 46)),
        while_paused: true,
        ..run_events(16, &["tool_finished"])
    };
    let other_node = store
        .update_run(&world.ws, "run_1", "node_b", &result)
        .await;
    assert!(
        matches!(other_node, Err(StoreError::LeaseLost)),
        "{other_node:?}"
    );
    store
        .update_run(&world.ws, "run_1", "node_a", &result)
        .await
        .unwrap();
    assert_eq!(
        store
            .get_run(&world.ws, "run_1")
            .await
            .unwrap()
            .unwrap()
            .state,
        RunState::Paused
    );

    // The leg keeps the lease until it has stopped and let go; only its owner can.
    let still = store
        .resume_run(
            &world.ws,
            "run_1",
            t(17),
            &run_events(17, &["run_unpaused"]),
        )
        .await;
    assert!(matches!(still, Err(StoreError::Conflict(_))), "{still:?}");
    assert!(!store
        .release_paused(&world.ws, "run_1", "node_b")
        .await
        .unwrap());
    assert!(store
        .release_paused(&world.ws, "run_1", "node_a")
        .await
        .unwrap());
    let resumed = store
        .resume_run(
            &world.ws,
            "run_1",
            t(17),
            &run_events(17, &["run_unpaused"]),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (resumed.state, resumed.last_seq),
        (RunState::AwaitingApproval, 5)
    );
    let steps = store.run_steps(&world.ws, "run_1").await.unwrap();
    assert_eq!(steps[0].step.call_id, None, "asked again: no call yet");
    assert_eq!(steps[0].step.state, StepState::Gated);
    assert_eq!(steps[1].step.state, StepState::Finished);
    // The old approval stays cancelled.
    assert_eq!(
        store
            .get_approval(&world.ws, "apr_step")
            .await
            .unwrap()
            .unwrap()
            .status,
        ApprovalStatus::Cancelled
    );
    // The lease is gone; the run waits for any node to claim it.
    let stale = store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &run_events(18, &["text_delta"]),
        )
        .await;
    assert!(matches!(stale, Err(StoreError::LeaseLost)), "{stale:?}");
    assert_eq!(
        store.stalled_runs(t(18), 100).await.unwrap(),
        vec![(world.ws.clone(), "run_1".to_owned())]
    );
    let again = writes_nothing(
        &ctx,
        &world,
        "run_1",
        store.resume_run(
            &world.ws,
            "run_1",
            t(19),
            &run_events(19, &["run_unpaused"]),
        ),
    )
    .await
    .unwrap();
    assert!(again.is_none(), "only a paused run resumes");
    assert!(store
        .claim_run(
            &world.ws,
            "run_1",
            t(20),
            &lease("node_b", 50),
            &run_events(20, &["run_resumed"]),
        )
        .await
        .unwrap()
        .is_some());
}

/// A cancel closes the same approvals as a pause, the one of a call its leg had not yet
/// tied to a step too (DESIGN.md §10 item 11: a later click is refused), and leaves other
/// sessions' and earlier calls' approvals alone.
pub async fn cancel_closes_what_a_pause_closes(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    world.add_session(store, "ses_b").await;
    start_run_held(store, &world, "run_1", &world.session, 10, "node_a").await;
    let specs = four_asked_calls(store, &world).await;
    store
        .update_run(
            &world.ws,
            "run_1",
            "node_a",
            &RunUpdate {
                steps: vec![gated_step(0, Some("call_step"))],
                lease: Some(lease("node_a", 40)),
                ..run_events(13, &["tool_gated"])
            },
        )
        .await
        .unwrap();
    let close = |approval: &Approval| effects("approval.cancelled", &approval.id, t(14));
    let closing = ClosingApprovals {
        at: t(14),
        reason: "the run was cancelled",
        effects: &close,
    };
    let (run, closed) = store
        .cancel_run(
            &world.ws,
            "run_1",
            &RunUpdate {
                effects: effects("run.cancelled", "run_1", t(14)),
                ..run_events(14, &["run_cancelled"])
            },
            &closing,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.state, RunState::Cancelled);
    only_the_runs_closed(store, &world, &specs, &closed).await;
}

/// A step's call, a call the leg made but wrote no step for yet, a call of another
/// session, and one of this session from before the run (started at 10), all asked.
async fn four_asked_calls(
    store: &dyn airlock_store::Store,
    world: &super::fixtures::World,
) -> Vec<super::fixtures::Spec> {
    let mut specs = Vec::new();
    for (id, session, at) in [
        ("step", world.session.as_str(), 11),
        ("orphan", world.session.as_str(), 12),
        ("other", "ses_b", 12),
        ("before", world.session.as_str(), 5),
    ] {
        let mut spec = world.spec(id);
        spec.session = Some(session.to_owned());
        spec.created_at = t(at);
        store
            .record_call(&world.ws, spec.asked(), airlock_store::Effects::none())
            .await
            .unwrap();
        specs.push(spec);
    }
    specs
}

/// The run's two approvals (its step's and the orphan's) were closed, and only they.
async fn only_the_runs_closed(
    store: &dyn airlock_store::Store,
    world: &super::fixtures::World,
    specs: &[super::fixtures::Spec],
    closed: &[Approval],
) {
    let closed: Vec<&str> = closed.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(closed, ["apr_orphan", "apr_step"]);
    for (spec, status) in specs.iter().zip([
        ApprovalStatus::Cancelled,
        ApprovalStatus::Cancelled,
        ApprovalStatus::Pending,
        ApprovalStatus::Pending,
    ]) {
        let approval = store
            .get_approval(&world.ws, &spec.approval_id())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(approval.status, status, "{}", spec.id);
    }
}
