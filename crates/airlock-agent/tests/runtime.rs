//! The runtime over a gate and a temp-dir SQLite store, with the demo's scripted model:
//! no HTTP server (the server's end-to-end tests cover the wire).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airlock_agent::{Runtime, RuntimeConfig};
use airlock_gate::clock::SystemClock;
use airlock_gate::decide::{DecisionRequest, Verdict};
use airlock_gate::identity::AgentSpec;
use airlock_gate::Gate;
use airlock_protocol::{ApprovalStatus, LlmConfig, Principal, Run, RunState};
use airlock_store::sqlite::SqliteStore;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The clock is allowed; mail (and everything else) is asked.
const POLICY: &str = r#"
version = 1
default = "ask"
deadline = "1h"

[[rules]]
name = "clock-is-fine"
tool = "clock.now"
decision = "allow"
"#;

/// A backstop for waiting on a run; the waits end as soon as the condition holds.
const PATIENCE: Duration = Duration::from_secs(20);

struct World {
    _dir: tempfile::TempDir,
    gate: Gate,
    runtime: Runtime,
    owner: Principal,
    session: String,
    stop: CancellationToken,
}

impl World {
    async fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(
            SqliteStore::open(&dir.path().join("airlock.db"))
                .await
                .unwrap(),
        );
        let gate = Gate::new(store, Arc::new(SystemClock)).await.unwrap();
        let boot = gate.bootstrap("default", "owner").await.unwrap().unwrap();
        let owner = gate.authenticate(&boot.owner_token).await.unwrap();
        gate.put_policy(&owner, POLICY).await.unwrap();
        let runtime = Runtime::new(gate.clone(), RuntimeConfig::under(dir.path()));
        let stop = CancellationToken::new();
        tokio::spawn({
            let runtime = runtime.clone();
            let stop = stop.clone();
            async move { runtime.run_background(stop).await }
        });
        let spec = AgentSpec {
            name: "assistant".into(),
            llm: Some(LlmConfig {
                base_url: "scripted:demo".into(),
                model: "scripted".into(),
                api_key_env: None,
                stream: None,
            }),
            ..AgentSpec::default()
        };
        let (agent, _) = gate.create_agent(&owner, spec).await.unwrap();
        let session = gate
            .create_session(&owner, Some(agent.id), Some("test".into()))
            .await
            .unwrap();
        World {
            _dir: dir,
            gate,
            runtime,
            owner,
            session: session.id,
            stop,
        }
    }

    /// Waits until the run is in `state` (or fails after [`PATIENCE`]).
    async fn wait_for(&self, run_id: &str, state: RunState) -> Run {
        let started = Instant::now();
        loop {
            let run = self.runtime.get_run(&self.owner, run_id).await.unwrap();
            if run.state == state {
                return run;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "the run is {} after {PATIENCE:?}, not {state}",
                run.state
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn kinds(&self, run_id: &str) -> Vec<String> {
        let events = self
            .runtime
            .run_events(&self.owner, run_id, 0, 1000)
            .await
            .unwrap();
        let seqs: Vec<u64> = events.iter().map(|event| event.seq).collect();
        let expected: Vec<u64> = (1..=events.len() as u64).collect();
        assert_eq!(seqs, expected, "the journal has a gap");
        events.into_iter().map(|event| event.kind).collect()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_tool_runs_once_and_the_run_completes() {
    let world = World::new().await;
    let run = world
        .runtime
        .post_message(&world.owner, &world.session, "what time is it?")
        .await
        .unwrap();
    world.wait_for(&run.id, RunState::Completed).await;
    let kinds = world.kinds(&run.id).await;
    assert_eq!(kinds.first().map(String::as_str), Some("run_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("run_completed"));
    let started = kinds.iter().filter(|kind| *kind == "tool_started").count();
    let finished = kinds.iter().filter(|kind| *kind == "tool_finished").count();
    assert_eq!((started, finished), (1, 1), "{kinds:?}");
    assert!(!kinds.iter().any(|kind| kind == "approval_required"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asked_call_suspends_the_run_and_an_approval_resumes_it_to_the_outbox() {
    let world = World::new().await;
    let run = world
        .runtime
        .post_message(&world.owner, &world.session, "send the email please")
        .await
        .unwrap();
    world.wait_for(&run.id, RunState::AwaitingApproval).await;
    assert!(world
        .runtime
        .outbox(&world.owner, 10)
        .await
        .unwrap()
        .is_empty());
    let pending = world
        .gate
        .list_approvals(&world.owner, Some(ApprovalStatus::Pending), 10, None)
        .await
        .unwrap();
    let [approval] = &pending[..] else {
        panic!("expected one pending approval, got {pending:?}");
    };
    assert_eq!(approval.tool, "email.send");
    let decision = DecisionRequest {
        decision: Verdict::Approve,
        binding_digest: approval.binding_digest.clone(),
        reason: None,
        remember: None,
        arguments: None,
    };
    world
        .gate
        .decide(&world.owner, &approval.id, decision)
        .await
        .unwrap();
    // Nobody polls the run: the decision's signal resumes it.
    world.wait_for(&run.id, RunState::Completed).await;
    let kinds = world.kinds(&run.id).await;
    for kind in ["approval_required", "run_suspended", "step_finished"] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} in {kinds:?}");
    }
    assert_eq!(kinds.last().map(String::as_str), Some("run_completed"));
    let outbox = world.runtime.outbox(&world.owner, 10).await.unwrap();
    assert_eq!(outbox.len(), 1, "{outbox:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_approval_runs_exactly_the_edited_arguments_once_and_the_model_is_told() {
    let world = World::new().await;
    let run = world
        .runtime
        .post_message(&world.owner, &world.session, "send the email please")
        .await
        .unwrap();
    world.wait_for(&run.id, RunState::AwaitingApproval).await;
    let pending = world
        .gate
        .list_approvals(&world.owner, Some(ApprovalStatus::Pending), 10, None)
        .await
        .unwrap();
    let [approval] = &pending[..] else {
        panic!("expected one pending approval, got {pending:?}");
    };
    let call = world
        .gate
        .get_call(&world.owner, &approval.call_id)
        .await
        .unwrap();
    let mut edited = call.arguments.clone();
    edited["to"] = "carol@edited.test".into();
    assert_ne!(edited, call.arguments);
    let decision = DecisionRequest {
        decision: Verdict::Approve,
        binding_digest: approval.binding_digest.clone(),
        reason: None,
        remember: None,
        arguments: Some(edited.clone()),
    };
    world
        .gate
        .decide(&world.owner, &approval.id, decision)
        .await
        .unwrap();
    world.wait_for(&run.id, RunState::Completed).await;
    // One outbox row, to the edited recipient: the edit ran, once.
    let outbox = world.runtime.outbox(&world.owner, 10).await.unwrap();
    let [item] = &outbox[..] else {
        panic!("expected one outbox item, got {outbox:?}");
    };
    assert_eq!(item.recipient, "carol@edited.test");
    assert_eq!(item.call_id, call.id);
    // The model read what a person changed.
    let events = world
        .runtime
        .run_events(&world.owner, &run.id, 0, 1000)
        .await
        .unwrap();
    let finished = events
        .iter()
        .find(|event| event.kind == "tool_finished")
        .expect("a finished tool");
    let text = finished.data.to_string();
    assert!(text.contains("edited_by_person"), "{text}");
    assert!(text.contains("carol@edited.test"), "{text}");
}
