//! Approve with edits (DESIGN.md §11.6) over HTTP: the grant executes exactly the edited
//! arguments, once; an edit the policy denies is `409 edit_denied` and writes nothing; a
//! decision that does not name the call as it stands is refused; both digests and the
//! change are in the audit chain, which verifies. Runs on SQLite, and on PostgreSQL with
//! `AIRLOCK_TEST_BACKEND=postgres`.

use crate::support::{ask, audit_records, server};
use airlock_testkit::{Reply, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

async fn approve_with(server: &TestServer, approval: &Value, body: Value) -> Reply {
    let id = approval["id"].as_str().unwrap();
    let mut body = body;
    body["decision"] = "approve".into();
    if body.get("binding_digest").is_none() {
        body["binding_digest"] = approval["binding_digest"].clone();
    }
    server
        .client
        .post(
            &format!("/v1/approvals/{id}/decision"),
            &server.owner_token,
            &body,
        )
        .await
        .unwrap()
}

async fn redeem(server: &TestServer, agent: &str, call_id: &str, key: &str) -> Reply {
    let request = server
        .client
        .request(
            Method::POST,
            &format!("/v1/calls/{call_id}/redeem"),
            Some(agent),
        )
        .header("Idempotency-Key", key);
    server.client.send(request).await.unwrap()
}

async fn get(server: &TestServer, path: &str) -> Value {
    server
        .client
        .get(path, &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()
}

#[tokio::test]
async fn the_grant_of_an_edited_approval_runs_exactly_the_edited_arguments_once() {
    let (server, agent) = server().await;
    let (call, approval) = ask(&server, &agent, "bob@acme.test").await;
    let edited = json!({"to": "carol@acme.test", "body": "hello, checked"});

    let decided = approve_with(&server, &approval, json!({"arguments": edited}))
        .await
        .expect_status(200)
        .unwrap();
    assert_eq!(decided["status"], "approved");
    let edited_digest = decided["edited_binding_digest"].as_str().unwrap();
    assert_eq!(edited_digest.len(), 64);
    assert_ne!(edited_digest, approval["binding_digest"].as_str().unwrap());
    // The approval still shows what was asked; the call shows what runs.
    assert_eq!(decided["preview"], approval["preview"]);

    let call_id = call["id"].as_str().unwrap();
    let stored = get(&server, &format!("/v1/calls/{call_id}")).await;
    assert_eq!(stored["status"], "approved");
    assert_eq!(stored["arguments"], edited);
    assert_eq!(stored["original_arguments"], call["arguments"]);

    let redeemed = redeem(&server, &agent, call_id, "key-1")
        .await
        .expect_status(200)
        .unwrap();
    assert_eq!(redeemed["arguments"], edited, "{redeemed}");
    assert_eq!(redeemed["replayed"], false);
    // A retry under the same key is the same answer, arguments included; any other key
    // is a second execution, refused.
    let replayed = redeem(&server, &agent, call_id, "key-1")
        .await
        .expect_status(200)
        .unwrap();
    assert_eq!(replayed["replayed"], true);
    assert_eq!(replayed["arguments"], edited);
    let again = redeem(&server, &agent, call_id, "key-2").await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert_eq!(again.problem_type(), "grant_spent");
}

#[tokio::test]
async fn an_unedited_grant_answers_no_arguments() {
    let (server, agent) = server().await;
    let (call, approval) = ask(&server, &agent, "bob@acme.test").await;
    // The asked arguments sent back unchanged are no edit.
    let decided = approve_with(
        &server,
        &approval,
        json!({"arguments": call["arguments"].clone()}),
    )
    .await
    .expect_status(200)
    .unwrap();
    assert!(decided.get("edited_binding_digest").is_none(), "{decided}");
    let call_id = call["id"].as_str().unwrap();
    let redeemed = redeem(&server, &agent, call_id, "key-1")
        .await
        .expect_status(200)
        .unwrap();
    assert!(redeemed.get("arguments").is_none(), "{redeemed}");
    let stored = get(&server, &format!("/v1/calls/{call_id}")).await;
    assert!(stored.get("original_arguments").is_none(), "{stored}");
}

#[tokio::test]
async fn an_edit_the_policy_denies_is_409_edit_denied_and_writes_nothing() {
    let (server, agent) = server().await;
    let call = server
        .submit(&agent, "shell.exec", json!({"command": "ls /srv"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "pending", "{call}");
    let approval_id = call["approval_id"].as_str().unwrap();
    let approval = get(&server, &format!("/v1/approvals/{approval_id}")).await;
    let audit_before = audit_records(&server).await;

    let refused = approve_with(
        &server,
        &approval,
        json!({"arguments": {"command": "rm -rf /srv"}}),
    )
    .await;
    assert_eq!(refused.status, 409, "{}", refused.text);
    assert_eq!(refused.problem_type(), "edit_denied");
    assert!(
        refused.text.contains("destructive command"),
        "{}",
        refused.text
    );

    assert_eq!(audit_records(&server).await, audit_before);
    assert_eq!(
        get(&server, &format!("/v1/approvals/{approval_id}")).await,
        approval
    );
    let call_id = call["id"].as_str().unwrap();
    assert_eq!(get(&server, &format!("/v1/calls/{call_id}")).await, call);
    // The approval is still open to a good decision.
    approve_with(
        &server,
        &approval,
        json!({"arguments": {"command": "ls -l /srv"}}),
    )
    .await
    .expect_status(200)
    .unwrap();
}

#[tokio::test]
async fn a_decision_that_does_not_name_the_call_as_it_stands_is_refused() {
    let (server, agent) = server().await;
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let edited = json!({"to": "carol@acme.test", "body": "hello"});
    let decided = approve_with(&server, &approval, json!({"arguments": edited}))
        .await
        .expect_status(200)
        .unwrap();
    let audit_before = audit_records(&server).await;
    // The asked call's digest, after the edit: refused, nothing written.
    for verdict in ["approve", "reject"] {
        let id = approval["id"].as_str().unwrap();
        let reply = server
            .client
            .post(
                &format!("/v1/approvals/{id}/decision"),
                &server.owner_token,
                &json!({"decision": verdict, "binding_digest": approval["binding_digest"]}),
            )
            .await
            .unwrap();
        assert_eq!(reply.status, 409, "{}", reply.text);
    }
    assert_eq!(audit_records(&server).await, audit_before);
    assert_eq!(
        get(
            &server,
            &format!("/v1/approvals/{}", approval["id"].as_str().unwrap())
        )
        .await,
        decided
    );

    // Before any edit, a digest over other arguments is not the approval's: refused.
    let (_, second) = ask(&server, &agent, "dave@acme.test").await;
    let reply = approve_with(
        &server,
        &second,
        json!({"binding_digest": decided["edited_binding_digest"].clone()}),
    )
    .await;
    assert_eq!(reply.status, 409, "{}", reply.text);
    assert_eq!(reply.problem_type(), "binding_mismatch");
}

#[tokio::test]
async fn the_audit_record_holds_both_digests_and_the_change_and_the_chain_verifies() {
    let (server, agent) = server().await;
    let (call, approval) = ask(&server, &agent, "bob@acme.test").await;
    let edited = json!({"to": "carol@acme.test", "body": "hello"});
    let decided = approve_with(&server, &approval, json!({"arguments": edited}))
        .await
        .expect_status(200)
        .unwrap();

    let records = audit_records(&server).await;
    let approved = records
        .iter()
        .find(|r| r["kind"] == "approval.approved" && r["subject"] == approval["id"])
        .unwrap();
    let data = &approved["data"];
    assert_eq!(data["binding_digest"], approval["binding_digest"]);
    assert_eq!(
        data["edited_binding_digest"],
        decided["edited_binding_digest"]
    );
    let edit = &data["edit"];
    assert_eq!(edit["original_binding_digest"], approval["binding_digest"]);
    assert_eq!(
        edit["edited_binding_digest"],
        decided["edited_binding_digest"]
    );
    assert_eq!(edit["original_arguments"], call["arguments"]);
    assert_eq!(edit["arguments"], edited);
    assert_eq!(edit["changed"], json!(["to"]));

    let report = get(&server, "/v1/audit/verify").await;
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["records"], records.len());
}

#[tokio::test]
async fn edits_that_cannot_be_run_exactly_are_422_and_write_nothing() {
    let (server, agent) = server().await;
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let audit_before = audit_records(&server).await;
    let key = crate::support::unique_api_key();
    let id = approval["id"].as_str().unwrap();
    let digest = approval["binding_digest"].clone();
    for (body, says) in [
        (
            json!({"decision": "approve", "binding_digest": digest, "arguments": ["not", "an", "object"]}),
            "JSON object",
        ),
        (
            json!({"decision": "reject", "binding_digest": digest, "arguments": {"to": "carol@acme.test"}}),
            "only go with approve",
        ),
        (
            json!({"decision": "approve", "binding_digest": digest, "arguments": {"to": "carol@acme.test", "body": key}}),
            "secret",
        ),
        (
            json!({"decision": "approve", "binding_digest": digest, "arguments": {"to": "carol@acme.test", "body": "[REDACTED:openai_key]"}}),
            "placeholder",
        ),
        (
            json!({"decision": "approve", "binding_digest": digest, "arguments": {"to": "carol@acme.test"}, "remember": {"scope": "agent"}}),
            "remember",
        ),
    ] {
        let reply = server
            .client
            .post(
                &format!("/v1/approvals/{id}/decision"),
                &server.owner_token,
                &body,
            )
            .await
            .unwrap();
        assert_eq!(reply.status, 422, "{body}: {}", reply.text);
        assert!(reply.text.contains(says), "{says}: {}", reply.text);
    }
    assert_eq!(audit_records(&server).await, audit_before);
    assert_eq!(get(&server, &format!("/v1/approvals/{id}")).await, approval);
}

/// Posts a hook payload of `agent` (`claude-code`, `gemini`) with no wait for a person.
async fn hook_now(server: &TestServer, token: &str, agent: &str, body: &Value) -> Value {
    let reply = server
        .client
        .post(&format!("/v1/hooks/{agent}?wait_s=0"), token, body)
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body
}

async fn approve_the_only_pending(server: &TestServer, arguments: Value) -> Value {
    let page = get(server, "/v1/approvals?status=pending").await;
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{page}");
    approve_with(server, &items[0], json!({"arguments": arguments}))
        .await
        .expect_status(200)
        .unwrap()
}

#[tokio::test]
async fn claude_code_runs_an_edited_call_through_updated_input_once() {
    let (server, agent) = server().await;
    let payload = json!({
        "session_id": "cc-edit",
        "cwd": "/home/ana/shop",
        "hook_event_name": "PreToolUse",
        "tool_name": "email.send",
        "tool_input": {"to": "bob@acme.test", "body": "figures"},
    });
    let first = hook_now(&server, &agent, "claude-code", &payload).await;
    assert_eq!(first["hookSpecificOutput"]["permissionDecision"], "deny");
    let decided =
        approve_the_only_pending(&server, json!({"to": "carol@acme.test", "body": "figures"}))
            .await;

    // The agent's retry is answered with the edited input, its grant spent once.
    let answer = hook_now(&server, &agent, "claude-code", &payload).await;
    let inner = &answer["hookSpecificOutput"];
    assert_eq!(inner["permissionDecision"], "allow", "{answer}");
    assert_eq!(
        inner["updatedInput"],
        json!({"to": "carol@acme.test", "body": "figures"})
    );
    assert!(inner["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("edited"));
    let call = get(
        &server,
        &format!("/v1/calls/{}", decided["call_id"].as_str().unwrap()),
    )
    .await;
    assert!(call["redeemed_at"].is_string(), "{call}");
    let again = hook_now(&server, &agent, "claude-code", &payload).await;
    assert_eq!(again["hookSpecificOutput"]["permissionDecision"], "deny");
}

#[tokio::test]
async fn gemini_is_told_to_run_the_edited_call_which_then_runs_once_with_that_approval() {
    let (server, agent) = server().await;
    let payload = |to: &str| {
        json!({
            "session_id": "g-edit",
            "cwd": "/home/ana/shop",
            "hook_event_name": "BeforeTool",
            "tool_name": "email.send",
            "tool_input": {"to": to, "body": "figures"},
        })
    };
    let first = hook_now(&server, &agent, "gemini", &payload("bob@acme.test")).await;
    assert_eq!(first["decision"], "deny");
    let decided =
        approve_the_only_pending(&server, json!({"to": "carol@acme.test", "body": "figures"}))
            .await;
    let call_path = format!("/v1/calls/{}", decided["call_id"].as_str().unwrap());

    // The asked call is not run: the model reads what to run instead, and nothing is spent.
    let told = hook_now(&server, &agent, "gemini", &payload("bob@acme.test")).await;
    assert_eq!(told["decision"], "deny", "{told}");
    let reason = told["reason"].as_str().unwrap();
    assert!(reason.contains("carol@acme.test"), "{reason}");
    assert!(reason.contains("without a new question"), "{reason}");
    assert!(get(&server, &call_path).await.get("redeemed_at").is_none());

    // The edited call runs once under the same approval.
    let ran = hook_now(&server, &agent, "gemini", &payload("carol@acme.test")).await;
    assert_eq!(ran["decision"], "allow", "{ran}");
    assert!(get(&server, &call_path).await["redeemed_at"].is_string());
    let all = get(&server, "/v1/approvals").await;
    assert_eq!(all["items"].as_array().unwrap().len(), 1, "{all}");
}
