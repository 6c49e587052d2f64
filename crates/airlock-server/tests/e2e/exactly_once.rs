//! No approved call silently lost (DESIGN.md §11.8), over HTTP: redeems under an
//! `Idempotency-Key` (200 at once under one key and under many), keys that are refused,
//! outcomes reported once by the call's agent, the hooks' after-the-fact events, and an
//! ambiguous call from the sweep to its reconciliation and the agent's fresh ask.

use crate::support::{ask, audit_records, decide, manual_server, PATIENCE, POLICY};
use airlock_protocol::Role;
use airlock_testkit::{Reply, TestServer};
use futures::future::join_all;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn redeem(server: &TestServer, agent: &str, call_id: &str, keys: &[&str]) -> Reply {
    let mut request = server.client.request(
        Method::POST,
        &format!("/v1/calls/{call_id}/redeem"),
        Some(agent),
    );
    for key in keys {
        request = request.header("Idempotency-Key", *key);
    }
    server.client.send(request).await.unwrap()
}

async fn allowed(server: &TestServer, agent: &str) -> Value {
    let call = server
        .submit(agent, "fs.read", json!({"path": "/srv/a"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "allowed", "{call}");
    call
}

fn count(records: &[Value], kind: &str, call_id: &str) -> usize {
    records
        .iter()
        .filter(|r| r["kind"] == kind && r["data"]["call_id"] == call_id)
        .count()
}

async fn outcome(server: &TestServer, token: &str, call_id: &str, body: Value) -> Reply {
    server
        .client
        .post(&format!("/v1/calls/{call_id}/outcome"), token, &body)
        .await
        .unwrap()
}

const RACERS: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_redeems_under_one_key_all_get_the_same_200() {
    let (server, agent) = manual_server(POLICY).await;
    let call = allowed(&server, &agent).await;
    let id = call["id"].as_str().unwrap().to_owned();
    let replies = join_all((0..RACERS).map(|_| redeem(&server, &agent, &id, &["one-key"]))).await;
    let bodies: Vec<&Value> = replies
        .iter()
        .map(|reply| {
            assert_eq!(reply.status, 200, "{}", reply.text);
            &reply.body
        })
        .collect();
    assert_eq!(bodies.iter().filter(|b| b["replayed"] == false).count(), 1);
    for body in &bodies {
        assert_eq!(body["grant_id"], call["grant_id"], "{body}");
        assert_eq!(body["consumed_at"], bodies[0]["consumed_at"], "{body}");
    }
    let records = audit_records(&server).await;
    assert_eq!(count(&records, "grant.consumed", &id), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_redeems_under_many_keys_have_one_200() {
    let (server, agent) = manual_server(POLICY).await;
    let call = allowed(&server, &agent).await;
    let id = call["id"].as_str().unwrap().to_owned();
    let keys: Vec<String> = (0..RACERS).map(|n| format!("key-{n}")).collect();
    let (server_ref, agent_ref, id_ref) = (&server, &agent, &id);
    let replies =
        join_all(keys.iter().map(|key| async move {
            redeem(server_ref, agent_ref, id_ref, &[key.as_str()]).await
        }))
        .await;
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let spent = replies
        .iter()
        .filter(|r| r.status == 409 && r.problem_type() == "grant_spent")
        .count();
    assert_eq!((ok, spent), (1, RACERS - 1));
    let records = audit_records(&server).await;
    assert_eq!(count(&records, "grant.consumed", &id), 1);
}

#[tokio::test]
async fn a_bad_key_is_a_precise_422_and_consumes_nothing() {
    let (server, agent) = manual_server(POLICY).await;
    let call = allowed(&server, &agent).await;
    let id = call["id"].as_str().unwrap();
    let long = "k".repeat(256);
    for (keys, says) in [
        (vec![long.as_str()], "1 to 255 characters"),
        (vec!["two words"], "visible ASCII"),
        (vec!["a", "b"], "one Idempotency-Key"),
    ] {
        let reply = redeem(&server, &agent, id, &keys).await;
        assert_eq!(reply.status, 422, "{}", reply.text);
        assert!(
            reply.body["detail"].as_str().unwrap().contains(says),
            "{}",
            reply.text
        );
    }
    // The longest key there is works, and the grant was still there.
    let longest = "k".repeat(255);
    let reply = redeem(&server, &agent, id, &[longest.as_str()]).await;
    assert_eq!(
        (reply.status.as_u16(), &reply.body["replayed"]),
        (200, &json!(false))
    );
    let reply = redeem(&server, &agent, id, &[longest.as_str()]).await;
    assert_eq!(
        (reply.status.as_u16(), &reply.body["replayed"]),
        (200, &json!(true))
    );
}

#[tokio::test]
async fn an_outcome_is_the_agents_and_is_stored_once() {
    let (server, agent) = manual_server(POLICY).await;
    let (_, other) = server.create_agent("other").await.unwrap();
    let call = allowed(&server, &agent).await;
    let id = call["id"].as_str().unwrap();
    let ok = json!({"status": "succeeded", "detail": "read 3 lines"});
    // Before the redeem there is no execution to report on.
    let early = outcome(&server, &agent, id, ok.clone()).await;
    assert_eq!(
        (early.status.as_u16(), early.problem_type()),
        (409, "conflict"),
        "{}",
        early.text
    );
    assert_eq!(redeem(&server, &agent, id, &["k"]).await.status, 200);
    // Another agent, and people, are refused.
    assert_eq!(outcome(&server, &other, id, ok.clone()).await.status, 404);
    assert_eq!(
        outcome(&server, &server.owner_token, id, ok.clone())
            .await
            .status,
        403
    );
    let first = outcome(&server, &agent, id, ok.clone()).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.body["outcome"]["status"], "succeeded");
    assert_eq!(first.body["outcome"]["detail"], "read 3 lines");
    assert!(first.body["redeemed_at"].is_string(), "{}", first.text);
    // The same report again is answered with what is stored; another one is refused.
    let again = outcome(&server, &agent, id, ok.clone()).await;
    assert_eq!(
        (again.status.as_u16(), &again.body["outcome"]),
        (200, &first.body["outcome"])
    );
    let differs = outcome(&server, &agent, id, json!({"status": "failed"})).await;
    assert_eq!(differs.status, 409, "{}", differs.text);
    let bad = outcome(&server, &agent, id, json!({"status": "maybe"})).await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    let records = audit_records(&server).await;
    assert_eq!(count(&records, "call.outcome", id), 1);
}

/// A policy whose outcomes are due a minute after the redeem.
fn quick_policy() -> String {
    POLICY.replacen(
        "deadline = \"1h\"",
        "deadline = \"1h\"\noutcome_timeout = \"1m\"",
        1,
    )
}

async fn until_ambiguous(server: &TestServer, agent: &str, id: &str) -> Value {
    let start = Instant::now();
    loop {
        let call = server
            .client
            .get(&format!("/v1/calls/{id}"), agent)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        if call["ambiguous_at"].is_string() {
            return call;
        }
        assert!(start.elapsed() < PATIENCE, "never marked ambiguous: {call}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn an_unreported_call_turns_ambiguous_and_a_person_reconciles_it() {
    let (server, agent) = manual_server(&quick_policy()).await;
    let (_, viewer) = server.create_user("vera", Role::Viewer).await.unwrap();
    let (call, approval) = ask(&server, &agent, "eve@elsewhere.test").await;
    let id = call["id"].as_str().unwrap();
    assert_eq!(
        decide(&server, &server.owner_token, &approval, "approve")
            .await
            .status,
        200
    );
    assert_eq!(redeem(&server, &agent, id, &["k"]).await.status, 200);
    // A reported call never turns ambiguous: this one is the control.
    let reported = allowed(&server, &agent).await;
    let reported_id = reported["id"].as_str().unwrap();
    assert_eq!(redeem(&server, &agent, reported_id, &[]).await.status, 200);
    assert_eq!(
        outcome(&server, &agent, reported_id, json!({"status": "succeeded"}))
            .await
            .status,
        200
    );

    server.advance(Duration::from_secs(61)).unwrap();
    let marked = until_ambiguous(&server, &agent, id).await;
    assert!(marked["outcome"].is_null(), "{marked}");
    let listed = server
        .client
        .get("/v1/calls/ambiguous", &viewer)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id]);
    let records = audit_records(&server).await;
    assert_eq!(count(&records, "call.ambiguous", id), 1);
    assert_eq!(count(&records, "call.ambiguous", reported_id), 0);

    // The inbox shows it, with the way to settle it.
    let inbox = inbox_page(&server).await;
    assert!(inbox.contains("Ambiguous calls"), "{inbox}");
    assert!(inbox.contains(&format!("/calls/{id}/reconcile")), "{inbox}");

    // Asked again blindly it is not: the identical call is denied until reconciled.
    let blocked = server
        .submit(
            &agent,
            "email.send",
            json!({"to": "eve@elsewhere.test", "body": "hello"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(blocked["status"], "denied", "{blocked}");
    assert!(
        blocked["reason"].as_str().unwrap().contains(id),
        "{blocked}"
    );

    // A viewer cannot reconcile; an approver can, once.
    let path = format!("/v1/calls/{id}/reconcile");
    let body = json!({"resolution": "did_not_run", "reason": "no mail was sent"});
    let refused = server.client.post(&path, &viewer, &body).await.unwrap();
    assert_eq!(refused.status, 403, "{}", refused.text);
    let settled = server
        .client
        .post(&path, &server.owner_token, &body)
        .await
        .unwrap();
    assert_eq!(settled.status, 200, "{}", settled.text);
    assert_eq!(settled.body["reconciliation"]["resolution"], "did_not_run");
    let again = server
        .client
        .post(&path, &server.owner_token, &body)
        .await
        .unwrap();
    assert_eq!(again.status, 409, "{}", again.text);
    // The old grant stays spent; the agent's next identical call is asked afresh.
    let spent = redeem(&server, &agent, id, &["k2"]).await;
    assert_eq!(spent.problem_type(), "grant_spent", "{}", spent.text);
    let fresh = server
        .submit(
            &agent,
            "email.send",
            json!({"to": "eve@elsewhere.test", "body": "hello"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(fresh["status"], "pending", "{fresh}");
    assert_ne!(fresh["approval_id"], call["approval_id"]);
    let records = audit_records(&server).await;
    assert_eq!(count(&records, "call.reconciled", id), 1);
}

/// The inbox page as the owner sees it, signed in with a cookie.
async fn inbox_page(server: &TestServer) -> String {
    crate::support::page_as(server, &server.owner_token, "/").await
}

/// A Claude Code hook payload of `event` for one tool use.
fn claude(event: &str, tool_use_id: &str, response: Option<Value>) -> Value {
    let mut payload = json!({
        "session_id": "9f1c2d3e", "cwd": "/srv", "hook_event_name": event,
        "tool_name": "Read", "tool_input": {"file_path": "/srv/a"}, "tool_use_id": tool_use_id,
    });
    if let Some(response) = response {
        payload["tool_response"] = response;
    }
    payload
}

async fn hook(server: &TestServer, agent: &str, path: &str, body: &Value) -> Reply {
    server.client.post(path, agent, body).await.unwrap()
}

#[tokio::test]
async fn hooks_replay_a_retried_tool_use_and_report_its_outcome() {
    let (server, agent) = manual_server(POLICY).await;
    let before = hook(
        &server,
        &agent,
        "/v1/hooks/claude-code",
        &claude("PreToolUse", "toolu_1", None),
    )
    .await;
    assert_eq!(
        before.body["hookSpecificOutput"]["permissionDecision"], "allow",
        "{}",
        before.text
    );
    // The same tool use again (its answer was lost): allowed for the same grant, and no
    // second call is made.
    let retried = hook(
        &server,
        &agent,
        "/v1/hooks/claude-code",
        &claude("PreToolUse", "toolu_1", None),
    )
    .await;
    assert_eq!(
        retried.body["hookSpecificOutput"]["permissionDecision"], "allow",
        "{}",
        retried.text
    );
    assert!(retried.text.contains("replayed"), "{}", retried.text);
    let records = audit_records(&server).await;
    let allowed: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "call.allowed")
        .collect();
    assert_eq!(allowed.len(), 1, "one call for one tool use");
    let id = allowed[0]["subject"].as_str().unwrap();
    assert_eq!(count(&records, "grant.consumed", id), 1);

    let after = hook(
        &server,
        &agent,
        "/v1/hooks/claude-code",
        &claude("PostToolUse", "toolu_1", Some(json!({"interrupted": true}))),
    )
    .await;
    assert_eq!(after.status, 200);
    assert_eq!(after.body, json!({}));
    assert_eq!(after.headers["airlock-outcome"], "recorded");
    let call = server
        .client
        .get(&format!("/v1/calls/{id}"), &agent)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(call["outcome"]["status"], "failed", "{call}");
    assert_eq!(call["outcome"]["detail"], "interrupted", "{call}");
    // A tool use airlock never redeemed: nothing to record.
    let stray = hook(
        &server,
        &agent,
        "/v1/hooks/claude-code",
        &claude("PostToolUse", "toolu_9", None),
    )
    .await;
    assert_eq!(stray.headers["airlock-outcome"], "unmatched");

    // Gemini CLI gives no tool-use id: the report goes to the same call by its arguments.
    let gemini = json!({"session_id": "g1", "cwd": "/srv", "tool_name": "read_file",
        "tool_input": {"absolute_path": "/srv/b"}});
    let mut before = gemini.clone();
    before["hook_event_name"] = "BeforeTool".into();
    let allowed = hook(&server, &agent, "/v1/hooks/gemini", &before).await;
    assert_eq!(allowed.body["decision"], "allow", "{}", allowed.text);
    let mut after = gemini;
    after["hook_event_name"] = "AfterTool".into();
    after["tool_response"] = json!({"llmContent": "b", "error": null});
    let reported = hook(&server, &agent, "/v1/hooks/gemini", &after).await;
    assert_eq!(
        reported.headers["airlock-outcome"], "recorded",
        "{}",
        reported.text
    );
    let records = audit_records(&server).await;
    assert_eq!(
        records
            .iter()
            .filter(|r| r["kind"] == "call.outcome")
            .count(),
        2
    );
}
