//! What the runtime's steps leave behind, read typed: a real SQLite store, the real gate
//! and policy, only the model scripted, no HTTP server (`runtime.rs` covers execution,
//! approval and edits). Each test drives a run through the leg's named steps (a call put
//! to the gate, settled, executed or refused, the run suspended, finished or cancelled)
//! and reads back the journal, the workspace events and the audit records, every one of
//! which must read as its typed kind (`airlock_protocol::events`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airlock_agent::{Runtime, RuntimeConfig};
use airlock_gate::clock::SystemClock;
use airlock_gate::Gate;
use airlock_protocol::events::ToolFinished;
use airlock_protocol::{
    AgentSpec, AuditEvent, DecisionRequest, DecisionVerdict, LlmConfig, Principal, Run, RunEvent,
    RunEventData, RunState, StepStatus, WorkspaceEventData,
};
use airlock_store::sqlite::SqliteStore;
use airlock_store::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// Reads are allowed, mail is asked, everything else is denied.
const POLICY: &str = r#"
version = 1
default = "deny"
deadline = "1h"
secrets = "deny"

[[rules]]
name = "clock-is-fine"
tool = "clock.now"
decision = "allow"

[[rules]]
name = "mail-needs-a-person"
tool = "email.send"
decision = "ask"
"#;

const SCENARIOS: &str = r##"
[[scenario]]
marker = "#time"
[[scenario.turn]]
events = [{ type = "text", text = "Looking." }, { type = "tool_use", name = "clock.now", arguments = {} }]
[[scenario.turn]]
events = [{ type = "text", text = "It is late." }]

[[scenario]]
marker = "#email"
[[scenario.turn]]
events = [{ type = "tool_use", name = "email.send", arguments = { to = "bob@example.com", subject = "Report", body = "Hi Bob" } }]
[[scenario.turn]]
events = [{ type = "text", text = "Done." }]

[[scenario]]
marker = "#nosuch"
[[scenario.turn]]
events = [{ type = "tool_use", name = "teleport", arguments = { to = "mars" } }]
[[scenario.turn]]
events = [{ type = "text", text = "I cannot teleport." }]

[[scenario]]
marker = "#shell"
[[scenario.turn]]
events = [{ type = "tool_use", name = "shell.exec", arguments = { command = "ls" } }]
[[scenario.turn]]
events = [{ type = "text", text = "Not allowed, then." }]
"##;

/// How long a run may take to get where a test waits for it.
const PATIENCE: Duration = Duration::from_secs(30);

struct World {
    _dir: TempDir,
    gate: Gate,
    runtime: Runtime,
    owner: Principal,
    session: String,
    stop: CancellationToken,
}

impl Drop for World {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn world() -> World {
    let dir = TempDir::new().unwrap();
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.path().join("airlock.db"))
            .await
            .unwrap(),
    );
    let gate = Gate::new(store, Arc::new(SystemClock)).await.unwrap();
    let token = gate
        .bootstrap("default", "owner")
        .await
        .unwrap()
        .unwrap()
        .owner_token;
    let owner = gate.authenticate(&token).await.unwrap();
    gate.put_policy(&owner, POLICY).await.unwrap();
    let runtime = Runtime::new(gate.clone(), RuntimeConfig::under(dir.path()));
    let stop = CancellationToken::new();
    tokio::spawn({
        let runtime = runtime.clone();
        let stop = stop.clone();
        async move { runtime.run_background(stop).await }
    });
    let scenarios = dir.path().join("scenarios.toml");
    std::fs::write(&scenarios, SCENARIOS).unwrap();
    let (agent, _token) = gate
        .create_agent(
            &owner,
            AgentSpec {
                name: "tester".into(),
                llm: Some(LlmConfig {
                    base_url: format!("scripted:{}", scenarios.display()),
                    model: "script".into(),
                    api_key_env: None,
                    stream: None,
                }),
                ..AgentSpec::default()
            },
        )
        .await
        .unwrap();
    let session = gate
        .create_session(&owner, Some(agent.id), Some("test".into()))
        .await
        .unwrap()
        .id;
    World {
        _dir: dir,
        gate,
        runtime,
        owner,
        session,
        stop,
    }
}

impl World {
    /// Waits until the run is in `state` (a deadline is the backstop, not the basis).
    async fn until(&self, run: &Run, state: RunState) -> Run {
        let started = Instant::now();
        loop {
            let now = self.runtime.get_run(&self.owner, &run.id).await.unwrap();
            if now.state == state {
                return now;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "run {} is {}, not {state}",
                run.id,
                now.state
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The run's journal, every event read as its typed kind.
    async fn journal(&self, run: &Run) -> Vec<RunEventData> {
        let events: Vec<RunEvent> = self
            .runtime
            .run_events(&self.owner, &run.id, 0, 1000)
            .await
            .unwrap();
        events
            .into_iter()
            .map(|event| typed(&event.kind, event.data, RunEventData::from_parts))
            .collect()
    }

    /// The journal's kinds in order, with the text deltas left out (their chunking is the
    /// provider's business).
    async fn kinds(&self, run: &Run) -> Vec<&'static str> {
        self.journal(run)
            .await
            .iter()
            .map(RunEventData::kind)
            .filter(|kind| *kind != "text_delta")
            .collect()
    }

    /// Every workspace event and audit record so far reads as its typed kind.
    async fn all_typed(&self) -> (Vec<WorkspaceEventData>, Vec<AuditEvent>) {
        let events = self.gate.events_after(&self.owner, 0, 1000).await.unwrap();
        let audit = self.gate.audit_after(&self.owner, 0, 1000).await.unwrap();
        (
            events
                .into_iter()
                .map(|e| typed(&e.kind, e.data, WorkspaceEventData::from_parts))
                .collect(),
            audit
                .into_iter()
                .map(|r| typed(&r.kind, r.data, AuditEvent::from_parts))
                .collect(),
        )
    }
}

/// A stored kind and data read as its typed kind; anything else fails the test.
fn typed<T>(
    kind: &str,
    data: serde_json::Value,
    read: fn(&str, serde_json::Value) -> Result<T, airlock_protocol::EventError>,
) -> T {
    read(kind, data).unwrap_or_else(|error| panic!("{kind}: {error}"))
}

fn finished(journal: &[RunEventData]) -> Vec<&ToolFinished> {
    journal
        .iter()
        .filter_map(|event| match event {
            RunEventData::ToolFinished(finished) => Some(finished),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_allowed_call_runs_once_and_the_run_completes() {
    let world = world().await;
    let run = world
        .runtime
        .post_message(&world.owner, &world.session, "what time is it? #time")
        .await
        .unwrap();
    let run = world.until(&run, RunState::Completed).await;
    assert_eq!(
        world.kinds(&run).await,
        [
            "run_started",
            "tool_call",
            "tool_decided",
            "tool_started",
            "tool_finished",
            "step_finished",
            "run_completed",
        ]
    );
    let journal = world.journal(&run).await;
    let RunEventData::ToolDecided(decided) =
        &journal.iter().find(|e| e.kind() == "tool_decided").unwrap()
    else {
        unreachable!()
    };
    assert_eq!(decided.rule.as_deref(), Some("clock-is-fine"));
    let done = finished(&journal);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, StepStatus::Ok);
    assert_eq!(done[0].rule.as_deref(), Some("clock-is-fine"));
    match journal.last() {
        Some(RunEventData::RunCompleted(completed)) => {
            assert_eq!(completed.text.as_deref(), Some("It is late."));
        }
        other => panic!("the last event is {other:?}"),
    }
    // The model's text streamed before the call.
    assert!(journal
        .iter()
        .any(|e| matches!(e, RunEventData::TextDelta(delta) if delta.text.contains("Looking"))));

    let (events, audit) = world.all_typed().await;
    let states: Vec<RunState> = events
        .iter()
        .filter_map(|event| match event {
            WorkspaceEventData::RunState(changed) if changed.run_id == run.id => {
                Some(changed.state)
            }
            _ => None,
        })
        .collect();
    assert_eq!(states, [RunState::Running, RunState::Completed]);
    assert!(audit
        .iter()
        .any(|record| matches!(record, AuditEvent::CallAllowed(call) if call.tool == "clock.now")));
    assert!(audit.iter().any(
        |record| matches!(record, AuditEvent::GrantConsumed(grant) if grant.tool == "clock.now")
    ));
}

#[tokio::test]
async fn an_asked_call_suspends_the_run_until_a_person_decides() {
    let world = world().await;
    let run = world
        .runtime
        .post_message(&world.owner, &world.session, "mail the report #email")
        .await
        .unwrap();
    let run = world.until(&run, RunState::AwaitingApproval).await;
    let journal = world.journal(&run).await;
    let required = journal
        .iter()
        .find_map(|event| match event {
            RunEventData::ApprovalRequired(required) => Some(required.clone()),
            _ => None,
        })
        .expect("an approval_required event");
    assert_eq!(required.tool, "email.send");
    assert_eq!(required.rule.as_deref(), Some("mail-needs-a-person"));
    match journal.last() {
        Some(RunEventData::RunSuspended(suspended)) => {
            assert_eq!(
                suspended.waiting_for,
                std::slice::from_ref(&required.approval_id)
            );
        }
        other => panic!("the last event is {other:?}"),
    }

    world
        .gate
        .decide(
            &world.owner,
            &required.approval_id,
            DecisionRequest {
                decision: DecisionVerdict::Approve,
                binding_digest: required.binding_digest.clone(),
                reason: Some("fine".into()),
                remember: None,
                arguments: None,
            },
        )
        .await
        .unwrap();
    let run = world.until(&run, RunState::Completed).await;
    let journal = world.journal(&run).await;
    assert!(journal.iter().any(|e| e.kind() == "run_resumed"));
    let done = finished(&journal);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, StepStatus::Ok);
    assert!(done[0]
        .approver
        .as_deref()
        .is_some_and(|a| a.starts_with("user:")));
    // The mail is a row in the outbox, written with the grant's consumption.
    assert_eq!(done[0].output["kind"], "email");
    assert_eq!(done[0].output["recipient"], "bob@example.com");

    let (events, audit) = world.all_typed().await;
    assert!(events.iter().any(
        |e| matches!(e, WorkspaceEventData::ApprovalRequested(a) if a.id == required.approval_id)
    ));
    assert!(events.iter().any(
        |e| matches!(e, WorkspaceEventData::ApprovalDecided(a) if a.id == required.approval_id)
    ));
    let approved = audit
        .iter()
        .find_map(|record| match record {
            AuditEvent::ApprovalApproved(decided) => Some(decided),
            _ => None,
        })
        .expect("an approval.approved record");
    assert_eq!(approved.approval.approval_id, required.approval_id);
    assert!(approved.grant_id.is_some());
    assert!(audit
        .iter()
        .any(|record| matches!(record, AuditEvent::ApprovalRequested(asked) if asked.approval_id == required.approval_id)));
}

#[tokio::test]
async fn a_call_that_cannot_run_is_refused_before_the_gate() {
    let world = world().await;
    let run = world
        .runtime
        .post_message(&world.owner, &world.session, "go to mars #nosuch")
        .await
        .unwrap();
    let run = world.until(&run, RunState::Completed).await;
    // Refused as it became a step: no verdict, no start; the turn is settled all the
    // same (`step_finished`, as every turn with tool calls ends); the model is told why
    // and answers.
    assert_eq!(
        world.kinds(&run).await,
        [
            "run_started",
            "tool_call",
            "tool_finished",
            "step_finished",
            "run_completed"
        ]
    );
    let journal = world.journal(&run).await;
    let done = finished(&journal);
    assert_eq!(done[0].status, StepStatus::Error);
    assert_eq!(done[0].call_id, None);
    let error = done[0].output["error"].as_str().unwrap();
    assert!(
        error.starts_with("unknown tool `teleport`; the tools are: "),
        "{error}"
    );
    assert!(error.contains("clock.now"), "{error}");
    // Nothing reached the gate, so nothing was audited as a call.
    let (_, audit) = world.all_typed().await;
    assert!(!audit.iter().any(|record| matches!(
        record,
        AuditEvent::CallAllowed(_) | AuditEvent::CallDenied(_) | AuditEvent::ApprovalRequested(_)
    )));
}

#[tokio::test]
async fn a_denied_call_is_told_to_the_model_and_never_runs() {
    let world = world().await;
    let run = world
        .runtime
        .post_message(&world.owner, &world.session, "list files #shell")
        .await
        .unwrap();
    let run = world.until(&run, RunState::Completed).await;
    assert_eq!(
        world.kinds(&run).await,
        [
            "run_started",
            "tool_call",
            "tool_decided",
            "tool_finished",
            "step_finished",
            "run_completed",
        ]
    );
    let journal = world.journal(&run).await;
    let done = finished(&journal);
    assert_eq!(done[0].status, StepStatus::Denied);
    assert!(done[0].output.as_str().unwrap().starts_with("Denied: "));
    let (_, audit) = world.all_typed().await;
    assert!(audit
        .iter()
        .any(|record| matches!(record, AuditEvent::CallDenied(call) if call.tool == "shell.exec")));
    assert!(!audit
        .iter()
        .any(|record| matches!(record, AuditEvent::GrantConsumed(_))));
}

#[tokio::test]
async fn a_cancelled_run_ends_its_journal_with_who_cancelled_it() {
    let world = world().await;
    let run = world
        .runtime
        .post_message(&world.owner, &world.session, "mail the report #email")
        .await
        .unwrap();
    let run = world.until(&run, RunState::AwaitingApproval).await;
    world
        .runtime
        .cancel_run(&world.owner, &run.id)
        .await
        .unwrap();
    let run = world.until(&run, RunState::Cancelled).await;
    let journal = world.journal(&run).await;
    match journal.last() {
        Some(event @ RunEventData::RunCancelled(cancelled)) => {
            assert!(event.is_terminal());
            assert_eq!(cancelled.by, world.owner.actor());
        }
        other => panic!("the last event is {other:?}"),
    }
    let (_, audit) = world.all_typed().await;
    assert!(audit
        .iter()
        .any(|record| matches!(record, AuditEvent::ApprovalCancelled(closed) if closed.status == airlock_protocol::ApprovalStatus::Cancelled)));
}
