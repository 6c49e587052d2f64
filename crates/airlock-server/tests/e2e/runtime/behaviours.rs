//! DESIGN.md §10 behaviours 1–11 through the HTTP API, each its own test, with the
//! scripted agent of `support`.

use super::support::*;
use crate::support::{audit_records, unique_api_key};
use serde_json::{json, Value};
use std::time::Duration;

/// Behaviour 1: a gated `email.send` is intercepted and the run suspends with nothing in
/// the outbox and one pending approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b01_gated_email_suspends_the_run() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "please #email Bob").await;

    let events = journal_until(&server, &run_id, "run_suspended").await;
    let required = events
        .iter()
        .find(|e| e["kind"] == "approval_required")
        .expect("no approval_required");
    assert_eq!(
        required["data"]["preview"]["summary"],
        "Send email to bob@example.com"
    );
    assert_eq!(required["data"]["preview"]["body"], "Hi Bob, the report.");
    assert_eq!(kinds(&events).last().unwrap(), "run_suspended");
    assert_continuous(&events);

    let run = until_state(&server, &run_id, "awaiting_approval").await;
    assert_eq!(run["pending_approvals"].as_array().unwrap().len(), 1);
    assert!(outbox(&server).await.is_empty());
    let pending = pending_approvals(&server).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["tool"], "email.send");
    assert_eq!(pending[0]["session_id"], agent.session.as_str());
    // The journal's event carries what "approve and remember" would bind to.
    assert_eq!(required["data"]["standing_target"], "bob@example.com");
    assert_eq!(
        required["data"]["standing_target"],
        pending[0]["standing_target"]
    );
}

/// Behaviour 2: approving resumes the run without anyone polling it; it completes with
/// exactly one outbox row and an unbroken journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b02_approve_resumes_and_sends_once() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "#email").await;
    let events = journal_until(&server, &run_id, "run_suspended").await;
    let approval_id = approvals_required(&events).remove(0);

    assert_eq!(decide(&server, &approval_id, "approve", "fine").await, 200);
    let journal = whole_journal(&server, &run_id).await;
    let kinds = kinds(&journal);
    assert_continuous(&journal);
    assert_eq!(kinds.last().unwrap(), "run_completed", "{kinds:?}");
    for kind in [
        "run_started",
        "tool_call",
        "tool_decided",
        "approval_required",
        "run_suspended",
        "run_resumed",
        "tool_started",
        "tool_finished",
        "step_finished",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} in {kinds:?}");
    }
    assert_eq!(
        until_state(&server, &run_id, "completed").await["state"],
        "completed"
    );

    let outbox = outbox(&server).await;
    assert_eq!(outbox.len(), 1, "{outbox:?}");
    assert_eq!(outbox[0]["recipient"], "bob@example.com");
    assert_eq!(outbox[0]["run_id"], run_id.as_str());
    let approved: Vec<Value> = audit_records(&server)
        .await
        .into_iter()
        .filter(|r| r["kind"] == "approval.approved")
        .collect();
    assert_eq!(approved.len(), 1);
    // Its effect is the outbox row: the outcome is reported with it, once.
    let outcomes: Vec<Value> = audit_records(&server)
        .await
        .into_iter()
        .filter(|r| r["kind"] == "call.outcome")
        .collect();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert_eq!(outcomes[0]["data"]["status"], "succeeded", "{outcomes:?}");

    let reply = reply(&server, &agent.session, &run_id).await;
    assert_eq!(reply["text"], "Carrying on after the email step.");
    let steps = reply["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0]["status"], "ok");
    assert_eq!(steps[0]["tool"], "email.send");
    assert!(steps[0]["approver"].as_str().unwrap().starts_with("user:"));
}

/// Behaviour 3: a rejection (with its reason) never executes; the step is an error whose
/// output says rejected, the model sees it, and the run completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b03_reject_reaches_the_model_and_the_run_goes_on() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "#email").await;
    let events = journal_until(&server, &run_id, "run_suspended").await;
    let approval_id = approvals_required(&events).remove(0);

    assert_eq!(
        decide(&server, &approval_id, "reject", "not to Bob today").await,
        200
    );
    until_state(&server, &run_id, "completed").await;
    assert!(outbox(&server).await.is_empty());
    let reply = reply(&server, &agent.session, &run_id).await;
    let step = &reply["steps"][0];
    assert_eq!(step["status"], "error");
    let rejected = step["output"]["rejected"].as_str().unwrap();
    assert!(rejected.contains("rejected"), "{rejected}");
    assert!(rejected.contains("not to Bob today"), "{rejected}");
    // The model's next turn came after it was told: the reply is the continuation.
    assert_eq!(reply["text"], "Carrying on after the email step.");
    let journal = whole_journal(&server, &run_id).await;
    assert!(!kinds(&journal).iter().any(|k| k == "tool_started"));
}

/// Behaviour 4: a grant consumed elsewhere before the run resumes is not executed again;
/// the run completes and the approval stays approved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b04_grant_consumed_elsewhere_does_not_run_again() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "#two-emails").await;
    let events = journal_until(&server, &run_id, "run_suspended").await;
    let approvals = approvals_required(&events);
    assert_eq!(approvals.len(), 2, "both calls of the turn are gated");

    // The first is approved, and its grant is spent by someone else while the run still
    // waits for the second.
    assert_eq!(decide(&server, &approvals[0], "approve", "ok").await, 200);
    let first = approval(&server, &approvals[0]).await;
    server
        .client
        .post_empty(
            &format!("/v1/calls/{}/redeem", first["call_id"].as_str().unwrap()),
            &agent.token,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(run(&server, &run_id).await["state"], "awaiting_approval");

    assert_eq!(decide(&server, &approvals[1], "approve", "ok").await, 200);
    until_state(&server, &run_id, "completed").await;
    let outbox = outbox(&server).await;
    assert_eq!(outbox.len(), 1, "{outbox:?}");
    assert_eq!(outbox[0]["recipient"], "cid@example.com");
    let steps = reply(&server, &agent.session, &run_id).await["steps"].clone();
    assert_eq!(steps[0]["status"], "error");
    assert!(steps[0]["output"]["error"]
        .as_str()
        .unwrap()
        .contains("already consumed"));
    assert_eq!(steps[1]["status"], "ok");
    assert_eq!(approval(&server, &approvals[0]).await["status"], "approved");
}

/// Behaviour 5: an ungated tool runs with no approval row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b05_ungated_tools_run_without_an_approval() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "clocky").await;
    let run_id = say(&server, &agent.session, "what #time is it").await;
    until_state(&server, &run_id, "completed").await;
    let reply = reply(&server, &agent.session, &run_id).await;
    assert_eq!(reply["steps"][0]["tool"], "clock.now");
    assert_eq!(reply["steps"][0]["status"], "ok");
    assert!(reply["steps"][0]["output"]["now"].is_string());
    // The runtime reports the outcome of what it ran, once (DESIGN.md §11.8).
    let outcomes: Vec<Value> = audit_records(&server)
        .await
        .into_iter()
        .filter(|r| r["kind"] == "call.outcome")
        .collect();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert_eq!(outcomes[0]["data"]["status"], "succeeded", "{outcomes:?}");
    let all = server
        .client
        .get("/v1/approvals", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert!(all["items"].as_array().unwrap().is_empty(), "{all}");
}

/// Behaviour 6: a wrong binding digest is refused; the right one sent twice delivers
/// once; two concurrent runs each get exactly one effect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b06_binding_digest_and_exactly_one_effect_per_run() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let second_session = new_session(&server, &agent.id).await;
    let first_run = say(&server, &agent.session, "#email").await;
    let second_run = say(&server, &second_session, "#email").await;
    let first =
        approvals_required(&journal_until(&server, &first_run, "run_suspended").await).remove(0);
    let second =
        approvals_required(&journal_until(&server, &second_run, "run_suspended").await).remove(0);

    let wrong = server
        .client
        .post(
            &format!("/v1/approvals/{first}/decision"),
            &server.owner_token,
            &json!({"decision": "approve", "binding_digest": "0".repeat(64)}),
        )
        .await
        .unwrap();
    assert_eq!(wrong.status, 409);
    assert_eq!(wrong.problem_type(), "binding_mismatch");
    assert_eq!(approval(&server, &first).await["status"], "pending");

    let (a, b, c) = tokio::join!(
        decide(&server, &first, "approve", "once"),
        decide(&server, &first, "approve", "twice"),
        decide(&server, &second, "approve", "other run"),
    );
    let mut statuses = [a, b];
    statuses.sort();
    assert_eq!(statuses, [200, 409]);
    assert_eq!(c, 200);
    until_state(&server, &first_run, "completed").await;
    until_state(&server, &second_run, "completed").await;
    let outbox = outbox(&server).await;
    assert_eq!(outbox.len(), 2, "{outbox:?}");
    let mut runs: Vec<&str> = outbox
        .iter()
        .map(|o| o["run_id"].as_str().unwrap())
        .collect();
    runs.sort();
    let mut expected = [first_run.as_str(), second_run.as_str()];
    expected.sort();
    assert_eq!(runs, expected);
}

/// Behaviour 7: a policy change while pending makes the approval stale: deciding it is
/// refused, the run is told, nothing executes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b07_policy_change_makes_the_approval_stale() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "#email").await;
    let approval_id =
        approvals_required(&journal_until(&server, &run_id, "run_suspended").await).remove(0);

    server
        .put_policy(&RUNTIME_POLICY.replace(r#"deadline = "1h""#, r#"deadline = "2h""#))
        .await
        .unwrap();
    until_state(&server, &run_id, "completed").await;
    let refused = server
        .client
        .post(
            &format!("/v1/approvals/{approval_id}/decision"),
            &server.owner_token,
            &json!({"decision": "approve", "binding_digest": approval(&server, &approval_id).await["binding_digest"]}),
        )
        .await
        .unwrap();
    assert_eq!(refused.status, 409);
    assert_eq!(refused.problem_type(), "stale_policy");
    let step = reply(&server, &agent.session, &run_id).await["steps"][0].clone();
    assert_eq!(step["status"], "denied");
    assert!(step["output"].as_str().unwrap().starts_with("Denied: "));
    assert!(outbox(&server).await.is_empty());
}

/// Behaviour 8: past the deadline the approval expires, deciding it is refused, and the
/// model is told "expired".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b08_deadline_passed_expires_and_the_model_is_told() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "#email").await;
    let approval_id =
        approvals_required(&journal_until(&server, &run_id, "run_suspended").await).remove(0);

    server.advance(Duration::from_secs(2 * 3600)).unwrap();
    until_state(&server, &run_id, "completed").await;
    assert_eq!(approval(&server, &approval_id).await["status"], "expired");
    assert_eq!(decide(&server, &approval_id, "approve", "late").await, 409);
    let step = reply(&server, &agent.session, &run_id).await["steps"][0].clone();
    assert_eq!(step["status"], "expired");
    assert!(step["output"]["expired"].is_string());
    assert!(outbox(&server).await.is_empty());
}

/// Behaviour 9: a prohibition is final: no approver (there is nothing to approve), no
/// standing rule and no mode makes it allow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b09_a_prohibition_is_final() {
    let server = runtime_server().await;
    // Standing rules need the policy to list the tool with its target.
    server
        .put_policy(&format!(
            "{RUNTIME_POLICY}\n[tools.\"email.send\"]\nrisk = \"external\"\ntarget = \"to\"\n"
        ))
        .await
        .unwrap();
    let agent = scripted_agent(&server, "mailer").await;
    // A person tries to make it pass for this agent.
    server
        .client
        .post(
            "/v1/rules",
            &server.owner_token,
            &json!({"tool": "email.send", "target": "boss@rival.test", "scope": "agent", "scope_id": agent.id}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    for mode in ["ask", "unattended"] {
        server
            .client
            .patch(
                &format!("/v1/agents/{}", agent.id),
                &server.owner_token,
                &json!({ "mode": mode }),
            )
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        let session = new_session(&server, &agent.id).await;
        let run_id = say(&server, &session, "#rival").await;
        until_state(&server, &run_id, "completed").await;
        let step = reply(&server, &session, &run_id).await["steps"][0].clone();
        assert_eq!(step["status"], "denied", "{mode}: {step}");
        assert_eq!(step["output"], "Denied: mail to rivals is prohibited");
    }
    assert!(pending_approvals(&server).await.is_empty());
    assert!(outbox(&server).await.is_empty());
}

/// Behaviour 10: an asked call whose arguments hold an API key is denied "cannot be
/// approved exactly", and the key is stored nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b10_an_api_key_in_an_asked_call_is_denied_and_stored_nowhere() {
    let server = runtime_server().await;
    let key = unique_api_key();
    let scenarios = format!(
        r##"
[[scenario]]
marker = "#leak"
[[scenario.turn]]
events = [{{ type = "tool_use", name = "email.send", arguments = {{ to = "bob@example.com", subject = "key", body = "use {key} please" }} }}]
[[scenario.turn]]
events = [{{ type = "text", text = "I will not send keys." }}]
"##
    );
    let file = server.data_dir().join("leak.toml");
    std::fs::write(&file, scenarios).unwrap();
    let agent = agent_with_llm(
        &server,
        "leaky",
        json!({"base_url": format!("scripted:{}", file.display()), "model": "script"}),
        None,
    )
    .await;
    let run_id = say(&server, &agent.session, "#leak").await;
    until_state(&server, &run_id, "completed").await;
    let step = reply(&server, &agent.session, &run_id).await["steps"][0].clone();
    assert_eq!(step["status"], "denied");
    assert!(
        step["output"]
            .as_str()
            .unwrap()
            .contains("cannot be approved exactly"),
        "{step}"
    );
    assert!(pending_approvals(&server).await.is_empty());
    // The scenario file holds the key; the database must not.
    std::fs::remove_file(&file).unwrap();
    let bytes = server.database_bytes().await.unwrap();
    let haystack = String::from_utf8_lossy(&bytes);
    assert!(!haystack.contains(&key), "the key is in the database");
    let journal = whole_journal(&server, &run_id).await;
    assert!(!serde_json::to_string(&journal).unwrap().contains(&key));
}

/// Behaviour 11: cancelling a run closes its pending approvals; a later click is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b11_cancel_closes_pending_approvals() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "mailer").await;
    let run_id = say(&server, &agent.session, "#email").await;
    let approval_id =
        approvals_required(&journal_until(&server, &run_id, "run_suspended").await).remove(0);

    let cancelled = server
        .client
        .post_empty(&format!("/v1/runs/{run_id}/cancel"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(cancelled["state"], "cancelled");
    assert_eq!(approval(&server, &approval_id).await["status"], "cancelled");
    assert_eq!(
        decide(&server, &approval_id, "approve", "too late").await,
        409
    );
    let journal = whole_journal(&server, &run_id).await;
    assert_eq!(kinds(&journal).last().unwrap(), "run_cancelled");
    assert_continuous(&journal);
    assert!(outbox(&server).await.is_empty());
    // Cancelling again is a conflict; a new message may start a new run.
    let again = server
        .client
        .post_empty(&format!("/v1/runs/{run_id}/cancel"), &server.owner_token)
        .await
        .unwrap();
    assert_eq!(again.status, 409);
    say(&server, &agent.session, "#time").await;
}
