//! Runs survive restarts (G7): a suspended run resumes after a restart, a run decided
//! while no server ran is resumed once by the sweeper, and a tool interrupted mid-way is
//! reported as an unknown outcome, never run again.

use super::support::*;
use airlock_gate::decide::{DecisionRequest, Verdict};
use std::time::Duration;

/// Restart while a run is `awaiting_approval`, approve → it completes, the email once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_run_survives_a_restart() {
    let mut server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "#email").await;
    let approval_id =
        approvals_required(&journal_until(&server, &run_id, "run_suspended").await).remove(0);

    server.restart().await.unwrap();
    assert_eq!(run(&server, &run_id).await["state"], "awaiting_approval");
    assert_eq!(
        decide(&server, &approval_id, "approve", "after restart").await,
        200
    );
    until_state(&server, &run_id, "completed").await;
    assert_eq!(outbox(&server).await.len(), 1);
    let journal = whole_journal(&server, &run_id).await;
    assert_continuous(&journal);
    assert_eq!(
        kinds(&journal)
            .iter()
            .filter(|k| *k == "run_resumed")
            .count(),
        1
    );
}

/// A decision committed while no server drives the run (the process died between the
/// decision and the resume): the next start's sweeper resumes it, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decided_but_not_resumed_run_is_resumed_once_by_the_sweeper() {
    let mut server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "#email").await;
    let approval_id =
        approvals_required(&journal_until(&server, &run_id, "run_suspended").await).remove(0);
    let digest = approval(&server, &approval_id).await["binding_digest"]
        .as_str()
        .unwrap()
        .to_owned();

    server.stop().await.unwrap();
    {
        let gate = server.offline_gate().await.unwrap();
        let owner = gate.authenticate(&server.owner_token).await.unwrap();
        gate.decide(
            &owner,
            &approval_id,
            DecisionRequest {
                decision: Verdict::Approve,
                binding_digest: digest,
                reason: None,
                remember: None,
                arguments: None,
            },
        )
        .await
        .unwrap();
    }
    server.restart().await.unwrap();
    until_state(&server, &run_id, "completed").await;
    assert_eq!(outbox(&server).await.len(), 1);
    let journal = whole_journal(&server, &run_id).await;
    assert_continuous(&journal);
    assert_eq!(
        kinds(&journal)
            .iter()
            .filter(|k| *k == "run_resumed")
            .count(),
        1
    );
}

/// A tool interrupted after its grant was consumed is reported as an unknown outcome and
/// never run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_tool_is_an_unknown_outcome_never_retried() {
    let mut server = runtime_server().await;
    server
        .put_policy(&format!(
            "{RUNTIME_POLICY}\n[[rules]]\ntool = \"shell.exec\"\ndecision = \"allow\"\n"
        ))
        .await
        .unwrap();
    let (workspace, session) = workspace_agent(
        &server,
        "slow",
        r##"
[[scenario]]
marker = "#slow"
[[scenario.turn]]
events = [{ type = "tool_use", name = "shell.exec", arguments = { command = "echo run >> count.txt; sleep 20" } }]
[[scenario.turn]]
events = [{ type = "text", text = "After the command." }]
"##,
    )
    .await;
    let run_id = say(&server, &session, "#slow").await;
    journal_until(&server, &run_id, "tool_started").await;
    let counter = workspace.join("count.txt");
    let start = std::time::Instant::now();
    // `>>` creates the file before `echo` writes to it: wait for the line itself, so the
    // restart never lands between the two.
    while !std::fs::read_to_string(&counter).is_ok_and(|runs| runs.lines().count() > 0) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the command never ran"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    server.restart().await.unwrap();
    // On PostgreSQL another node could hold the run: its lease must run out first.
    server.advance(Duration::from_secs(600)).unwrap();
    until_state(&server, &run_id, "completed").await;
    let step = reply(&server, &session, &run_id).await["steps"][0].clone();
    assert_eq!(step["status"], "error");
    assert!(step["output"]["error"]
        .as_str()
        .unwrap()
        .starts_with("unknown outcome"));
    let runs = std::fs::read_to_string(&counter).unwrap();
    assert_eq!(runs.lines().count(), 1, "the command ran again: {runs:?}");
}
