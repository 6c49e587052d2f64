//! A late decision is not lost (issue 23): when a hook's wait ends before a person
//! decides, the agent is told to retry, and its identical retry in the same session
//! adopts the earlier call instead of opening a second approval — an approval lets the
//! retry through once, a rejection answers it once, a pending one is waited on again.
//! Never across sessions, agents or different arguments; concurrent retries redeem once.

use crate::support::{audit_records, decide, manual_server, server, until_waiting, POLICY};
use airlock_testkit::{Reply, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

fn payload(session: &str, to: &str) -> Value {
    json!({
        "session_id": session,
        "cwd": "/home/ana/shop",
        "hook_event_name": "PreToolUse",
        "tool_name": "email.send",
        "tool_input": {"to": to, "body": "the quarterly figures"},
    })
}

async fn hook(server: &TestServer, token: &str, wait_s: u64, body: &Value) -> (String, String) {
    let reply: Reply = server
        .client
        .post(
            &format!("/v1/hooks/claude-code?wait_s={wait_s}"),
            token,
            body,
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text);
    let inner = &reply.body["hookSpecificOutput"];
    (
        inner["permissionDecision"].as_str().unwrap().to_owned(),
        inner["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}

/// Posts `body` to the hook endpoint `path` (with its query) in a task of its own, for
/// calls that wait on a person or race each other.
fn spawn_hook(
    server: &TestServer,
    token: &str,
    path: &str,
    body: &Value,
) -> tokio::task::JoinHandle<Reply> {
    let (client, token, path, body) = (
        server.client.clone(),
        token.to_owned(),
        path.to_owned(),
        body.clone(),
    );
    tokio::spawn(async move { client.post(&path, &token, &body).await.unwrap() })
}

/// Every approval of the workspace, newest first.
async fn approvals(server: &TestServer) -> Vec<Value> {
    server
        .client
        .get("/v1/approvals?limit=100", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()["items"]
        .as_array()
        .unwrap()
        .clone()
}

async fn kinds(server: &TestServer, kind: &str) -> Vec<Value> {
    audit_records(server)
        .await
        .into_iter()
        .filter(|record| record["kind"] == kind)
        .collect()
}

#[tokio::test]
async fn a_retry_after_a_late_approval_runs_once_with_that_approval() {
    let (server, agent) = server().await;
    let call = payload("s-late", "bob@acme.test");
    let (decision, reason) = hook(&server, &agent, 1, &call).await;
    assert_eq!(decision, "deny");
    let first = approvals(&server).await;
    assert_eq!(first.len(), 1);
    let id = first[0]["id"].as_str().unwrap();
    assert!(reason.contains(id), "{reason}");
    assert!(reason.contains("retry exactly the same call"), "{reason}");
    assert!(reason.contains("no new approval is opened"), "{reason}");

    decide(&server, &server.owner_token, &first[0], "approve")
        .await
        .expect_status(200)
        .unwrap();
    let (decision, reason) = hook(&server, &agent, 1, &call).await;
    assert_eq!(decision, "allow", "{reason}");
    assert!(reason.contains(id), "{reason}");
    assert_eq!(approvals(&server).await.len(), 1, "no second approval");
    let consumed = kinds(&server, "grant.consumed").await;
    assert_eq!(consumed.len(), 1);
    let adopted = kinds(&server, "call.adopted").await;
    assert_eq!(adopted.len(), 1, "the adoption is audited");
    assert_eq!(adopted[0]["data"]["approval_id"], id);
    assert_eq!(adopted[0]["data"]["outcome"], "approved");

    // The approval was used: the next identical call is a new question.
    let (decision, _) = hook(&server, &agent, 0, &call).await;
    assert_eq!(decision, "deny");
    assert_eq!(approvals(&server).await.len(), 2);
    assert_eq!(kinds(&server, "grant.consumed").await.len(), 1);
}

#[tokio::test]
async fn a_retry_after_a_late_rejection_is_told_the_reason_once() {
    let (server, agent) = server().await;
    let call = payload("s-reject", "bob@acme.test");
    hook(&server, &agent, 1, &call).await;
    let first = approvals(&server).await;
    decide(&server, &server.owner_token, &first[0], "reject")
        .await
        .expect_status(200)
        .unwrap();
    let (decision, reason) = hook(&server, &agent, 1, &call).await;
    assert_eq!(decision, "deny");
    assert!(reason.contains("rejected by a person"), "{reason}");
    assert!(reason.contains("checked"), "the person's reason: {reason}");
    assert_eq!(approvals(&server).await.len(), 1);
    assert_eq!(kinds(&server, "call.adopted").await.len(), 1);
    // Told once: asking again is a new question for a person.
    let (_, reason) = hook(&server, &agent, 0, &call).await;
    assert!(reason.contains("still pending"), "{reason}");
    assert_eq!(approvals(&server).await.len(), 2);
}

#[tokio::test]
async fn a_retry_while_still_pending_waits_on_the_same_approval() {
    let (server, agent) = server().await;
    let call = payload("s-pending", "bob@acme.test");
    hook(&server, &agent, 1, &call).await;
    // Still undecided: the retry waits again on the same approval, and is held again.
    let (decision, _) = hook(&server, &agent, 1, &call).await;
    assert_eq!(decision, "deny");
    assert_eq!(approvals(&server).await.len(), 1);

    let waiting = spawn_hook(&server, &agent, "/v1/hooks/claude-code?wait_s=30", &call);
    until_waiting(&server, 1).await;
    let first = approvals(&server).await;
    assert_eq!(first.len(), 1, "the waiting retry opened nothing");
    decide(&server, &server.owner_token, &first[0], "approve")
        .await
        .expect_status(200)
        .unwrap();
    let reply = waiting.await.unwrap();
    assert_eq!(
        reply.body["hookSpecificOutput"]["permissionDecision"], "allow",
        "{}",
        reply.text
    );
    assert_eq!(kinds(&server, "grant.consumed").await.len(), 1);
    assert_eq!(kinds(&server, "call.adopted").await.len(), 1);
}

#[tokio::test]
async fn another_session_agent_or_argument_is_never_adopted() {
    let (server, agent) = server().await;
    let (_, other_agent) = server.create_agent("other").await.unwrap();
    hook(&server, &agent, 1, &payload("s-one", "bob@acme.test")).await;
    let first = approvals(&server).await;
    decide(&server, &server.owner_token, &first[0], "approve")
        .await
        .expect_status(200)
        .unwrap();
    for (token, body) in [
        (&agent, payload("s-two", "bob@acme.test")),
        (&agent, payload("s-one", "eve@acme.test")),
        (&other_agent, payload("s-one", "bob@acme.test")),
    ] {
        let (decision, reason) = hook(&server, token, 0, &body).await;
        assert_eq!(decision, "deny", "{body}: {reason}");
        assert!(reason.contains("still pending"), "{reason}");
    }
    assert_eq!(approvals(&server).await.len(), 4);
    assert!(kinds(&server, "grant.consumed").await.is_empty());
    // A call with no session is never held: its retry is a new question.
    let mut no_session = payload("x", "bob@acme.test");
    no_session.as_object_mut().unwrap().remove("session_id");
    hook(&server, &agent, 0, &no_session).await;
    let (_, reason) = hook(&server, &agent, 0, &no_session).await;
    assert!(!reason.contains("no new approval"), "{reason}");
    assert_eq!(approvals(&server).await.len(), 6);
}

#[tokio::test]
async fn concurrent_retries_of_an_approved_call_redeem_it_once() {
    let (server, agent) = server().await;
    let call = payload("s-race", "bob@acme.test");
    hook(&server, &agent, 1, &call).await;
    let first = approvals(&server).await;
    decide(&server, &server.owner_token, &first[0], "approve")
        .await
        .expect_status(200)
        .unwrap();
    let retries: Vec<_> = (0..8)
        .map(|_| spawn_hook(&server, &agent, "/v1/hooks/claude-code?wait_s=0", &call))
        .collect();
    let mut allowed = 0;
    for retry in retries {
        let reply = retry.await.unwrap();
        if reply.body["hookSpecificOutput"]["permissionDecision"] == "allow" {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 1, "exactly one retry runs the approved call");
    let consumed = kinds(&server, "grant.consumed").await;
    assert_eq!(consumed.len(), 1);
    assert_eq!(consumed[0]["data"]["call_id"], first[0]["call_id"]);
}

/// Identical retries that arrive together while the held call is still pending all wait
/// on its one approval (none opens another); once a person approves, exactly one of them
/// runs the call, and the others are refused rather than asked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_retries_while_pending_wait_on_one_approval_and_run_once() {
    let (server, agent) = server().await;
    let call = payload("s-pending-race", "bob@acme.test");
    let (decision, _) = hook(&server, &agent, 0, &call).await;
    assert_eq!(decision, "deny");
    const RETRIES: usize = 3;
    let retries: Vec<_> = (0..RETRIES)
        .map(|_| spawn_hook(&server, &agent, "/v1/hooks/claude-code?wait_s=30", &call))
        .collect();
    until_waiting(&server, RETRIES).await;
    let asked = approvals(&server).await;
    assert_eq!(asked.len(), 1, "the waiting retries opened nothing");
    decide(&server, &server.owner_token, &asked[0], "approve")
        .await
        .expect_status(200)
        .unwrap();
    let mut reasons = Vec::new();
    for retry in retries {
        let reply = retry.await.unwrap();
        let inner = &reply.body["hookSpecificOutput"];
        reasons.push((
            inner["permissionDecision"].as_str().unwrap().to_owned(),
            inner["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .to_owned(),
        ));
    }
    let allowed: Vec<_> = reasons.iter().filter(|(d, _)| d == "allow").collect();
    assert_eq!(allowed.len(), 1, "{reasons:?}");
    assert!(
        allowed[0].1.contains(asked[0]["id"].as_str().unwrap()),
        "{reasons:?}"
    );
    for (decision, reason) in reasons.iter().filter(|(d, _)| d != "allow") {
        assert_eq!(decision, "deny");
        assert!(reason.contains("could not be redeemed"), "{reason}");
    }
    assert_eq!(approvals(&server).await.len(), 1, "no second approval");
    let consumed = kinds(&server, "grant.consumed").await;
    assert_eq!(consumed.len(), 1);
    assert_eq!(consumed[0]["data"]["call_id"], asked[0]["call_id"]);
    assert_eq!(kinds(&server, "call.adopted").await.len(), 1);
}

#[tokio::test]
async fn an_approval_expired_while_held_is_asked_afresh() {
    let (server, agent) = manual_server(POLICY).await;
    let call = payload("s-expired", "bob@acme.test");
    hook(&server, &agent, 0, &call).await;
    // Held only when a wait ended: wait_s=0 holds too (the hook answered "still pending").
    server.advance(Duration::from_secs(2 * 60 * 60)).unwrap();
    let expired = || async {
        approvals(&server)
            .await
            .iter()
            .any(|approval| approval["status"] == "expired")
    };
    let start = std::time::Instant::now();
    while !expired().await {
        assert!(start.elapsed() < crate::support::PATIENCE, "never expired");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (decision, reason) = hook(&server, &agent, 0, &call).await;
    assert_eq!(decision, "deny");
    assert!(reason.contains("still pending"), "a new question: {reason}");
    assert_eq!(approvals(&server).await.len(), 2);
    assert!(kinds(&server, "call.adopted").await.is_empty());
}

#[tokio::test]
async fn a_gemini_retry_adopts_too() {
    let (server, agent) = server().await;
    let gemini = json!({
        "session_id": "g-1",
        "cwd": "/home/ana/shop",
        "hook_event_name": "BeforeTool",
        "tool_name": "email.send",
        "tool_input": {"to": "bob@acme.test"},
    });
    let post = |body: Value| {
        let client = server.client.clone();
        let token = agent.clone();
        async move {
            client
                .post("/v1/hooks/gemini?wait_s=0", &token, &body)
                .await
                .unwrap()
        }
    };
    let reply = post(gemini.clone()).await;
    assert_eq!(reply.body["decision"], "deny", "{}", reply.text);
    let first = approvals(&server).await;
    decide(&server, &server.owner_token, &first[0], "approve")
        .await
        .expect_status(200)
        .unwrap();
    let reply = post(gemini).await;
    assert_eq!(reply.body["decision"], "allow", "{}", reply.text);
    assert_eq!(approvals(&server).await.len(), 1);
}

/// A Codex payload; `PermissionRequest` carries no `tool_use_id`, as Codex sends it.
fn codex(event: &str, turn_id: &str, to: &str) -> Value {
    let mut body = json!({"session_id": "cx-1", "turn_id": turn_id, "cwd": "/home/ana/shop",
        "hook_event_name": event, "model": "gpt-5", "permission_mode": "default",
        "tool_name": "email.send", "tool_use_id": "call_7", "transcript_path": null,
        "tool_input": {"to": to, "body": "hi"}});
    if event == "PermissionRequest" {
        body.as_object_mut().unwrap().remove("tool_use_id");
    }
    body
}

async fn codex_hook(server: &TestServer, token: &str, wait_s: u64, body: &Value) -> Value {
    let reply: Reply = server
        .client
        .post(&format!("/v1/hooks/codex?wait_s={wait_s}"), token, body)
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body
}

/// Codex's `PermissionRequest` for a call its `PreToolUse` already let through (same call,
/// same turn) takes that verdict: one question, one grant — once.
#[tokio::test]
async fn a_codex_escalation_of_an_approved_call_is_not_asked_again() {
    let (server, agent) = server().await;
    let waiting = spawn_hook(
        &server,
        &agent,
        "/v1/hooks/codex?wait_s=30",
        &codex("PreToolUse", "turn_1", "bob@acme.test"),
    );
    until_waiting(&server, 1).await;
    let first = approvals(&server).await;
    decide(&server, &server.owner_token, &first[0], "approve")
        .await
        .expect_status(200)
        .unwrap();
    let reply = waiting.await.unwrap();
    assert_eq!(reply.body, json!({}), "PreToolUse allows: {}", reply.text);

    let escalation = codex_hook(
        &server,
        &agent,
        0,
        &codex("PermissionRequest", "turn_1", "bob@acme.test"),
    )
    .await;
    assert_eq!(
        escalation["hookSpecificOutput"]["decision"]["behavior"], "allow",
        "{escalation}"
    );
    assert_eq!(approvals(&server).await.len(), 1, "asked once");
    assert_eq!(kinds(&server, "grant.consumed").await.len(), 1, "one grant");
    let adopted = kinds(&server, "call.adopted").await;
    assert_eq!(adopted.len(), 1);
    assert_eq!(adopted[0]["data"]["escalation"], true);

    // Taken once: the same request again, another turn, or other arguments are judged
    // afresh (here: asked).
    for body in [
        codex("PermissionRequest", "turn_1", "bob@acme.test"),
        codex("PermissionRequest", "turn_2", "bob@acme.test"),
        codex("PermissionRequest", "turn_1", "eve@acme.test"),
    ] {
        let answer = codex_hook(&server, &agent, 0, &body).await;
        assert_eq!(
            answer["hookSpecificOutput"]["decision"]["behavior"], "deny",
            "{body}: {answer}"
        );
    }
    // Two new approvals: the second request is the identical call of the first (another
    // turn does not make another call), so it waits on the first one's approval.
    assert_eq!(approvals(&server).await.len(), 3);
}

/// Codex adds the model's justification (`description`) to the `PermissionRequest`; it is
/// not part of what runs, so the escalation still takes the `PreToolUse` verdict.
#[tokio::test]
async fn a_codex_escalation_with_a_justification_takes_the_approval() {
    let (server, agent) = server().await;
    let shell = |event: &str, input: Value| {
        json!({"session_id": "cx-2", "turn_id": "t-1", "cwd": "/home/ana/shop",
            "hook_event_name": event, "tool_name": "Bash", "tool_input": input})
    };
    let first = shell("PreToolUse", json!({"command": "make deploy"}));
    let waiting = spawn_hook(&server, &agent, "/v1/hooks/codex?wait_s=30", &first);
    until_waiting(&server, 1).await;
    let asked = approvals(&server).await;
    decide(&server, &server.owner_token, &asked[0], "approve")
        .await
        .expect_status(200)
        .unwrap();
    assert_eq!(waiting.await.unwrap().body, json!({}));
    let escalation = codex_hook(
        &server,
        &agent,
        0,
        &shell(
            "PermissionRequest",
            json!({"command": "make deploy", "description": "needs the network"}),
        ),
    )
    .await;
    assert_eq!(
        escalation["hookSpecificOutput"]["decision"]["behavior"], "allow",
        "{escalation}"
    );
    assert_eq!(approvals(&server).await.len(), 1);
    // Another command in the same turn is another call.
    let other = codex_hook(
        &server,
        &agent,
        0,
        &shell(
            "PermissionRequest",
            json!({"command": "make deploy --force"}),
        ),
    )
    .await;
    assert_eq!(
        other["hookSpecificOutput"]["decision"]["behavior"], "deny",
        "{other}"
    );
}
