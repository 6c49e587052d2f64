//! Pausing and resuming a run (DESIGN.md §11.6, §10 item 11): a pause cancels the run's
//! pending approvals in its transaction, so a later click is refused; a resume asks again
//! with a new approval which, once approved, runs the tool exactly once; a tool running at
//! the pause finishes and is journalled but no next turn starts; and a crowd of pauses,
//! resumes and decisions on one run ends consistent.

use super::support::{
    approval, approvals_required, decide, journal_until, kinds, outbox, pending_approvals, run,
    runtime_server, say, scripted_agent, until_state, whole_journal, workspace_agent,
    RUNTIME_POLICY,
};
use crate::support::PATIENCE;
use airlock_testkit::{Reply, TestServer};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn post(server: &TestServer, path: &str) -> Reply {
    server
        .client
        .post_empty(path, &server.owner_token)
        .await
        .unwrap()
}

/// The pending approvals of the workspace (one run per test), once they are `count`.
async fn pending_when(server: &TestServer, count: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let pending = pending_approvals(server).await;
        if pending.len() == count {
            return pending;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "never {count} pending approvals: {pending:#?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_closes_approvals_and_resume_asks_again_once() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "#email").await;
    let first =
        approvals_required(&journal_until(&server, &run_id, "run_suspended").await).remove(0);

    let paused = post(&server, &format!("/v1/runs/{run_id}/pause")).await;
    assert_eq!(paused.status, 200, "{}", paused.text);
    let paused: Value = serde_json::from_str(&paused.text).unwrap();
    assert_eq!(paused["state"], "paused");
    let closed = approval(&server, &first).await;
    assert_eq!(closed["status"], "cancelled", "{closed}");
    assert!(
        closed["decision_reason"]
            .as_str()
            .unwrap()
            .contains("paused"),
        "{closed}"
    );
    // A later click is refused with the same problem a cancel gives.
    let click = server
        .client
        .post(
            &format!("/v1/approvals/{first}/decision"),
            &server.owner_token,
            &serde_json::json!({"decision": "approve", "binding_digest": closed["binding_digest"]}),
        )
        .await
        .unwrap();
    assert_eq!(click.status, 409, "{}", click.text);
    assert_eq!(click.problem_type(), "already_decided");
    assert_eq!(run(&server, &run_id).await["state"], "paused");
    assert!(pending_approvals(&server).await.is_empty());
    // Pausing twice, resuming what is not paused, unknown runs: precise refusals.
    let again = post(&server, &format!("/v1/runs/{run_id}/pause")).await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert!(again.text.contains("the run is paused"), "{}", again.text);
    for verb in ["pause", "resume"] {
        let unknown = post(&server, &format!("/v1/runs/run_nope/{verb}")).await;
        assert_eq!(unknown.status, 404, "{}", unknown.text);
    }
    // A new message cannot start a second run beside the paused one.
    let beside = server
        .client
        .post(
            &format!("/v1/sessions/{}/messages", agent.session),
            &server.owner_token,
            &serde_json::json!({"text": "#time"}),
        )
        .await
        .unwrap();
    assert_eq!(beside.status, 409, "{}", beside.text);

    let resumed = post(&server, &format!("/v1/runs/{run_id}/resume")).await;
    assert_eq!(resumed.status, 200, "{}", resumed.text);
    let second = pending_when(&server, 1).await.remove(0);
    let second_id = second["id"].as_str().unwrap().to_owned();
    assert_ne!(
        second_id, first,
        "a new approval, never the old one revived"
    );
    assert_eq!(approval(&server, &first).await["status"], "cancelled");
    assert_eq!(
        decide(&server, &second_id, "approve", "fine now").await,
        200
    );
    until_state(&server, &run_id, "completed").await;
    let sent = outbox(&server).await;
    assert_eq!(sent.len(), 1, "the email ran exactly once: {sent:#?}");

    let journal = whole_journal(&server, &run_id).await;
    let kinds = kinds(&journal);
    for kind in ["run_paused", "run_unpaused"] {
        assert_eq!(kinds.iter().filter(|k| *k == kind).count(), 1, "{kinds:?}");
    }
    assert_eq!(approvals_required(&journal), vec![first, second_id]);
    let resume_ended = post(&server, &format!("/v1/runs/{run_id}/resume")).await;
    assert_eq!(resume_ended.status, 409, "{}", resume_ended.text);
    let paused_ended = post(&server, &format!("/v1/runs/{run_id}/pause")).await;
    assert_eq!(paused_ended.status, 409, "{}", paused_ended.text);
    // The person's pause and resume are in the audit chain, and the chain verifies.
    let audit = server
        .client
        .get("/v1/audit?limit=500", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let audit_kinds: Vec<&str> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["kind"].as_str())
        .collect();
    assert!(audit_kinds.contains(&"run.paused"), "{audit_kinds:?}");
    assert!(audit_kinds.contains(&"run.resumed"), "{audit_kinds:?}");
    let verified = server
        .client
        .get("/v1/audit/verify", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(verified["ok"], true, "{verified}");
}

/// Crowds of 200 concurrent pauses, resumes and decisions on one run with two parallel calls: at
/// every quiet point a paused run has no pending approval, and once driven to the end each
/// email went out exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pause_resume_and_decisions_race_to_a_consistent_end() {
    let server = Arc::new(runtime_server().await);
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "#two-emails").await;
    journal_until(&server, &run_id, "run_suspended").await;

    // Crowds of 200 race until both a pause and a resume have taken effect: in one crowd
    // every resume may read the run before the pause commits (seen on PostgreSQL), which
    // leaves nothing to resume. Each crowd still races decisions against both.
    let mut succeeded = [0; 3];
    for _crowd in 0..10 {
        let mut tasks = Vec::new();
        for n in 0..200 {
            let (server, run_id) = (Arc::clone(&server), run_id.clone());
            tasks.push(tokio::spawn(async move {
                match n % 3 {
                    0 => {
                        post(&server, &format!("/v1/runs/{run_id}/pause"))
                            .await
                            .status
                    }
                    1 => {
                        post(&server, &format!("/v1/runs/{run_id}/resume"))
                            .await
                            .status
                    }
                    _ => {
                        // Approves whatever is pending now (it may be closed meanwhile).
                        let mut status = reqwest::StatusCode::OK;
                        for pending in pending_approvals(&server).await {
                            let id = pending["id"].as_str().unwrap();
                            let code = decide(&server, id, "approve", "race").await;
                            status = reqwest::StatusCode::from_u16(code).unwrap();
                        }
                        status
                    }
                }
            }));
        }
        for (n, task) in tasks.into_iter().enumerate() {
            let status = task.await.unwrap().as_u16();
            // Every answer is a success or a precise conflict; never a 5xx.
            assert!(matches!(status, 200 | 409), "status {status}");
            if status == 200 {
                succeeded[n % 3] += 1;
            }
        }
        if succeeded[0] > 0 && succeeded[1] > 0 {
            break;
        }
    }
    // The crowds really raced: pauses and resumes both took effect.
    assert!(
        succeeded[0] > 0 && succeeded[1] > 0,
        "pauses, resumes, decisions that succeeded: {succeeded:?}"
    );

    // Quiet: paused with nothing pending, or moving on. A paused run must hold no
    // pending approval once its legs have stopped.
    let start = Instant::now();
    loop {
        let state = run(&server, &run_id).await["state"].clone();
        if state == "paused" {
            pending_when(&server, 0).await;
            let resumed = post(&server, &format!("/v1/runs/{run_id}/resume")).await;
            assert!(
                matches!(resumed.status.as_u16(), 200 | 409),
                "{}",
                resumed.text
            );
        } else if state == "completed" {
            break;
        } else {
            for pending in pending_approvals(&server).await {
                decide(&server, pending["id"].as_str().unwrap(), "approve", "end").await;
            }
        }
        assert!(
            start.elapsed() < PATIENCE * 2,
            "the run never completed: {state}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let sent = outbox(&server).await;
    let mut recipients: Vec<&str> = sent
        .iter()
        .map(|item| item["recipient"].as_str().unwrap())
        .collect();
    recipients.sort_unstable();
    assert_eq!(
        recipients,
        vec!["ann@example.com", "cid@example.com"],
        "each email exactly once: {sent:#?}"
    );
    assert!(pending_approvals(&server).await.is_empty());
}

/// A tool already executing when the run is paused finishes and its result is journalled,
/// but the next model turn does not start; the resume waits until that leg let go, then
/// continues without running the tool again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_running_at_the_pause_finishes_and_the_next_turn_waits() {
    let server = runtime_server().await;
    server
        .put_policy(&format!(
            "{RUNTIME_POLICY}\n[[rules]]\ntool = \"shell.exec\"\ndecision = \"allow\"\n"
        ))
        .await
        .unwrap();
    // The command runs until the test creates `release` in the agent's folder.
    let (workspace, session) = workspace_agent(
        &server,
        "held",
        r##"
[[scenario]]
marker = "#held"
[[scenario.turn]]
events = [{ type = "tool_use", name = "shell.exec", arguments = { command = "echo run >> count.txt; while [ ! -f release ]; do sleep 0.02; done; echo released" } }]
[[scenario.turn]]
events = [{ type = "text", text = "After the command." }]
"##,
    )
    .await;
    let run_id = say(&server, &session, "#held").await;
    journal_until(&server, &run_id, "tool_started").await;

    let paused = post(&server, &format!("/v1/runs/{run_id}/pause")).await;
    assert_eq!(paused.status, 200, "{}", paused.text);
    // The leg is still in its step: a resume now is refused, precisely.
    let early = post(&server, &format!("/v1/runs/{run_id}/resume")).await;
    assert_eq!(early.status, 409, "{}", early.text);
    assert!(early.text.contains("still finishing"), "{}", early.text);

    std::fs::write(workspace.join("release"), "").unwrap();
    let journal = journal_until(&server, &run_id, "tool_finished").await;
    let finished = journal.last().unwrap();
    assert!(
        finished["data"]["output"].to_string().contains("released"),
        "{finished}"
    );
    // Once the leg let go, the resume is accepted; until then it is a precise 409.
    let start = Instant::now();
    loop {
        let resumed = post(&server, &format!("/v1/runs/{run_id}/resume")).await;
        if resumed.status == 200 {
            break;
        }
        assert_eq!(resumed.status, 409, "{}", resumed.text);
        assert!(
            start.elapsed() < PATIENCE,
            "never resumable: {}",
            resumed.text
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    until_state(&server, &run_id, "completed").await;
    let journal = whole_journal(&server, &run_id).await;
    let kinds = kinds(&journal);
    // Between the tool's result and the resume nothing moved: no model turn started.
    let after_result = kinds.iter().position(|k| k == "tool_finished").unwrap();
    let unpaused = kinds.iter().position(|k| k == "run_unpaused").unwrap();
    assert_eq!(
        &kinds[after_result + 1..unpaused],
        &[] as &[String],
        "{kinds:?}"
    );
    assert_eq!(kinds.iter().filter(|k| *k == "tool_started").count(), 1);
    let runs = std::fs::read_to_string(workspace.join("count.txt")).unwrap();
    assert_eq!(runs.lines().count(), 1, "the command ran again: {runs:?}");
    assert!(kinds.contains(&"run_completed".to_owned()), "{kinds:?}");
}

/// F8: a tool already executing when the run is cancelled finishes, and its result is
/// journalled (`tool_finished`, the step `finished`), as after a pause: the journal says
/// what ran. The run stays cancelled and nothing else moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_running_at_the_cancel_finishes_and_is_journalled() {
    let server = runtime_server().await;
    server
        .put_policy(&format!(
            "{RUNTIME_POLICY}\n[[rules]]\ntool = \"shell.exec\"\ndecision = \"allow\"\n"
        ))
        .await
        .unwrap();
    let (workspace, session) = workspace_agent(
        &server,
        "cancelled",
        r##"
[[scenario]]
marker = "#held"
[[scenario.turn]]
events = [{ type = "tool_use", name = "shell.exec", arguments = { command = "while [ ! -f release ]; do sleep 0.02; done; echo effect > done.txt; echo released" } }]
[[scenario.turn]]
events = [{ type = "text", text = "Never asked." }]
"##,
    )
    .await;
    let run_id = say(&server, &session, "#held").await;
    journal_until(&server, &run_id, "tool_started").await;

    let cancelled = post(&server, &format!("/v1/runs/{run_id}/cancel")).await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    std::fs::write(workspace.join("release"), "").unwrap();
    let start = Instant::now();
    let step = loop {
        let view = run(&server, &run_id).await;
        let step = view["steps"][0].clone();
        if step["state"] == "finished" {
            assert_eq!(view["state"], "cancelled", "{view}");
            break step;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the step never finished: {view}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(step["status"], "ok", "{step}");
    assert!(step["output"].to_string().contains("released"), "{step}");
    assert!(workspace.join("done.txt").exists());

    // A stream ends at `run_cancelled`; one opened after it sends the tool's result.
    let journal = whole_journal(&server, &run_id).await;
    assert_eq!(kinds(&journal).last().unwrap(), "run_cancelled");
    let mut after = crate::support::SseReader::open_path(
        &server,
        &server.owner_token,
        &format!("/v1/runs/{run_id}/events?after={}", journal.len()),
        None,
    )
    .await;
    let rest: Vec<Value> = after
        .read_to_end()
        .await
        .into_iter()
        .map(|event| serde_json::from_str(&event.data).unwrap())
        .collect();
    assert_eq!(kinds(&rest), ["tool_finished"], "{rest:?}");
    assert_eq!(rest[0]["seq"].as_u64().unwrap(), journal.len() as u64 + 1);
    // The session takes a new message: the cancelled run holds nothing.
    say(&server, &session, "#held").await;
}
