//! The workspace event stream (`GET /v1/events`, DESIGN.md §6.4) follows the runtime's
//! runs as they happen: each `run.state` is sent when the run changes, not when some
//! other event later wakes the stream.

use super::support::*;
use crate::support::SseReader;
use serde_json::Value;

/// Reads the stream until the `run.state` event saying `state` for `run_id`; returns the
/// states of that run seen on the way, that one included.
async fn until_run_state(reader: &mut SseReader, run_id: &str, state: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let event = reader.next().await;
        if event.kind.as_deref() != Some("run.state") {
            continue;
        }
        let event: Value = serde_json::from_str(&event.data).unwrap();
        if event["data"]["run_id"] != run_id {
            continue;
        }
        let now = event["data"]["state"].as_str().unwrap().to_owned();
        seen.push(now.clone());
        if now == state {
            return seen;
        }
    }
}

/// F3: a run's states reach the workspace stream when they change: `running` when it
/// starts, `awaiting_approval` when it suspends, `running` again when the decision
/// resumes it, `completed` at the end; nothing else has to happen meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_states_reach_the_workspace_stream_when_they_change() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "streamed").await;
    let mut reader = SseReader::open(&server, &server.owner_token, None).await;

    let run_id = say(&server, &agent.session, "#email").await;
    let states = until_run_state(&mut reader, &run_id, "awaiting_approval").await;
    assert_eq!(states, ["running", "awaiting_approval"]);

    let events = journal_until(&server, &run_id, "run_suspended").await;
    let approval_id = approvals_required(&events).remove(0);
    assert_eq!(decide(&server, &approval_id, "approve", "ok").await, 200);
    let states = until_run_state(&mut reader, &run_id, "completed").await;
    assert_eq!(states, ["running", "completed"]);

    // A run that needs no person: its last state is the last event of the workspace.
    let run_id = say(&server, &agent.session, "#time").await;
    let states = until_run_state(&mut reader, &run_id, "completed").await;
    assert_eq!(states, ["running", "completed"]);
}
