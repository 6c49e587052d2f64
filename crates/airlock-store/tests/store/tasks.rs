//! Scheduled tasks: settings and task rules, the due list, and dispatch — the overlap
//! guard claimed with the run it starts, by exactly one of several dispatchers.

use super::fixtures::{lease, run_events, t, world, World};
use super::harness::Ctx;
use airlock_protocol::{RuleScope, RunState, Session, StandingRule, Task};
use airlock_store::{Effects, RunUpdate, Store};

fn task(id: &str, world: &World, next: Option<i64>) -> Task {
    Task {
        id: id.into(),
        title: "nightly".into(),
        instructions: "do the thing".into(),
        agent_id: world.agent.clone(),
        cron: "0 3 * * *".into(),
        timezone: "UTC".into(),
        enabled: true,
        created_by: "user:usr_a".into(),
        created_at: t(0),
        updated_at: t(0),
        revoked_at: None,
        next_run_at: next.map(t),
        active_run_id: None,
        last_run_id: None,
    }
}

fn task_rule(id: &str, task_id: &str) -> StandingRule {
    StandingRule {
        id: id.into(),
        tool: "email.send".into(),
        target: "bob@acme.test".into(),
        scope: RuleScope::Task,
        scope_id: task_id.into(),
        created_by: "user:usr_a".into(),
        created_at: t(0),
        expires_at: None,
        revoked_at: None,
    }
}

fn session(id: &str, world: &World, task_id: &str) -> Session {
    Session {
        id: id.into(),
        agent_id: Some(world.agent.clone()),
        title: None,
        task_id: Some(task_id.into()),
        external_id: None,
        created_at: t(100),
        created_by: None,
        mode: None,
    }
}

async fn dispatch(
    store: &dyn Store,
    world: &World,
    task_id: &str,
    n: u32,
    now: i64,
    manual: bool,
) -> bool {
    let run = world.run(&format!("run_{n}"), &format!("ses_{n}"), now);
    store
        .dispatch_task(
            &world.ws,
            task_id,
            t(now),
            manual,
            Some(t(now + 86_400)),
            &session(&format!("ses_{n}"), world, task_id),
            &run,
            &lease("node_a", now + 60),
            &run_events(now, &["run_started"]),
        )
        .await
        .unwrap()
}

pub async fn tasks_keep_their_settings_and_rules_and_revoke_them(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    store
        .create_task(
            &world.ws,
            &task("task_1", &world, Some(50)),
            &[task_rule("rule_1", "task_1")],
            &Effects::none(),
        )
        .await
        .unwrap();
    store
        .create_task(
            &world.ws,
            &task("task_2", &world, None),
            &[],
            &Effects::none(),
        )
        .await
        .unwrap();
    assert_eq!(
        store.get_task(&world.ws, "task_1").await.unwrap(),
        Some(task("task_1", &world, Some(50)))
    );
    assert_eq!(store.get_task(&world.other, "task_1").await.unwrap(), None);
    let listed: Vec<String> = store
        .list_tasks(&world.ws)
        .await
        .unwrap()
        .into_iter()
        .map(|task| task.id)
        .collect();
    assert_eq!(listed.len(), 2);
    let live = store
        .live_standing_rules(&world.ws, &[(RuleScope::Task, "task_1".into())], t(10))
        .await
        .unwrap();
    assert_eq!(live.len(), 1);

    // Due: enabled, unrevoked, next run reached.
    assert!(store.due_tasks(t(49), 10).await.unwrap().is_empty());
    let due = store.due_tasks(t(50), 10).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].0, world.ws);
    assert_eq!(due[0].1.id, "task_1");

    let mut revoked = task("task_1", &world, None);
    revoked.enabled = false;
    revoked.revoked_at = Some(t(60));
    revoked.updated_at = t(60);
    store
        .update_task(&world.ws, &revoked, Some(t(60)), &Effects::none())
        .await
        .unwrap();
    assert_eq!(
        store.get_task(&world.ws, "task_1").await.unwrap(),
        Some(revoked)
    );
    assert!(store.due_tasks(t(1000), 10).await.unwrap().is_empty());
    assert!(store
        .live_standing_rules(&world.ws, &[(RuleScope::Task, "task_1".into())], t(70))
        .await
        .unwrap()
        .is_empty());
    assert!(
        !dispatch(store, &world, "task_1", 1, 1000, true).await,
        "revoked"
    );
}

pub async fn dispatch_claims_the_overlap_guard_once_and_the_end_of_the_run_frees_it(ctx: Ctx) {
    let store = ctx.store.clone();
    let world = world(store.as_ref()).await;
    store
        .create_task(
            &world.ws,
            &task("task_1", &world, Some(100)),
            &[],
            &Effects::none(),
        )
        .await
        .unwrap();
    assert!(
        !dispatch(store.as_ref(), &world, "task_1", 0, 99, false).await,
        "not due yet"
    );

    // Ten dispatchers at once (ten nodes ticking): exactly one starts a run.
    let attempts = futures::future::join_all(
        (1..=10).map(|n| dispatch(store.as_ref(), &world, "task_1", n, 100, false)),
    )
    .await;
    assert_eq!(
        attempts.iter().filter(|won| **won).count(),
        1,
        "{attempts:?}"
    );
    let winner = attempts.iter().position(|won| *won).unwrap() + 1;
    let run_id = format!("run_{winner}");
    let dispatched = store.get_task(&world.ws, "task_1").await.unwrap().unwrap();
    assert_eq!(dispatched.active_run_id.as_deref(), Some(run_id.as_str()));
    assert_eq!(dispatched.last_run_id.as_deref(), Some(run_id.as_str()));
    assert_eq!(dispatched.next_run_at, Some(t(100 + 86_400)));
    let session = store
        .get_session(&world.ws, &format!("ses_{winner}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.task_id.as_deref(), Some("task_1"));
    assert_eq!(
        store
            .get_run(&world.ws, &run_id)
            .await
            .unwrap()
            .unwrap()
            .state,
        RunState::Running
    );
    for n in 1..=10 {
        if n != winner {
            assert!(store
                .get_session(&world.ws, &format!("ses_{n}"))
                .await
                .unwrap()
                .is_none());
        }
    }

    // While the run is in progress: no dispatch, not even a manual one; a due tick is
    // skipped (its next run moves on), not queued.
    let next_day = 100 + 86_400;
    assert!(!dispatch(store.as_ref(), &world, "task_1", 20, next_day, false).await);
    assert!(!dispatch(store.as_ref(), &world, "task_1", 21, next_day, true).await);
    assert!(store
        .skip_task_tick(&world.ws, "task_1", t(next_day), Some(t(next_day + 86_400)))
        .await
        .unwrap());
    assert!(
        !store
            .skip_task_tick(&world.ws, "task_1", t(next_day), Some(t(next_day + 86_400)))
            .await
            .unwrap(),
        "not due any more"
    );

    // The run ends: the guard is free, and a manual dispatch works before the next tick.
    store
        .update_run(
            &world.ws,
            &run_id,
            "node_a",
            &RunUpdate {
                state: Some((RunState::Completed, None)),
                ..run_events(next_day, &["run_completed"])
            },
        )
        .await
        .unwrap();
    assert!(store
        .get_task(&world.ws, "task_1")
        .await
        .unwrap()
        .unwrap()
        .active_run_id
        .is_none());
    assert!(!store
        .skip_task_tick(&world.ws, "task_1", t(next_day + 1), None)
        .await
        .unwrap());
    assert!(dispatch(store.as_ref(), &world, "task_1", 30, next_day + 1, true).await);
    let manual = store.get_task(&world.ws, "task_1").await.unwrap().unwrap();
    assert_eq!(
        manual.next_run_at,
        Some(t(next_day + 86_400)),
        "a manual run keeps the schedule"
    );
}
