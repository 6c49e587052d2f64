//! Deciding an approval: exactly as previewed (G2), once (G3), never after the deadline or
//! under a changed policy (G4). Every refusal is a 409 that writes nothing.

use crate::support::{
    ask, audit_records, decide, decide_with, manual_server, server, until_waiting, POLICY,
};
use serde_json::{json, Value};
use std::time::Duration;

fn decisions_of(records: &[Value], approval: &Value) -> usize {
    records
        .iter()
        .filter(|r| r["subject"] == approval["id"])
        .filter(|r| r["kind"] == "approval.approved" || r["kind"] == "approval.rejected")
        .count()
}

#[tokio::test]
async fn wrong_binding_digest_is_409_and_writes_nothing() {
    let (server, agent) = server().await;
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let audit_before = audit_records(&server).await;

    let reply = decide_with(
        &server,
        &server.owner_token,
        &approval,
        "approve",
        &"0".repeat(64),
    )
    .await;
    assert_eq!(reply.status, 409, "{}", reply.text);
    assert_eq!(reply.problem_type(), "binding_mismatch");

    assert_eq!(audit_records(&server).await, audit_before);
    let path = format!("/v1/approvals/{}", approval["id"].as_str().unwrap());
    let after = server
        .client
        .get(&path, &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(after, approval);
    // The right digest still decides.
    decide(&server, &server.owner_token, &approval, "approve")
        .await
        .expect_status(200)
        .unwrap();
}

#[tokio::test]
async fn second_decision_is_409_already_decided_and_writes_nothing() {
    let (server, agent) = server().await;
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let decided = decide(&server, &server.owner_token, &approval, "approve")
        .await
        .expect_status(200)
        .unwrap();
    assert_eq!(decided["status"], "approved");
    let audit_before = audit_records(&server).await;

    for verdict in ["approve", "reject"] {
        let again = decide(&server, &server.owner_token, &approval, verdict).await;
        assert_eq!(again.status, 409, "{}", again.text);
        assert_eq!(again.problem_type(), "already_decided");
    }
    assert_eq!(audit_records(&server).await, audit_before);
}

#[tokio::test]
async fn fifty_concurrent_decisions_yield_one_winner_and_one_audit_record() {
    let (server, agent) = server().await;
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let mut tasks = Vec::new();
    for i in 0..50 {
        let client = server.client.clone();
        let token = server.owner_token.clone();
        let approval = approval.clone();
        tasks.push(tokio::spawn(async move {
            let path = format!(
                "/v1/approvals/{}/decision",
                approval["id"].as_str().unwrap()
            );
            let verdict = if i % 2 == 0 { "approve" } else { "reject" };
            client
                .post(
                    &path,
                    &token,
                    &json!({"decision": verdict, "binding_digest": approval["binding_digest"]}),
                )
                .await
                .unwrap()
        }));
    }
    let mut won = 0;
    for task in tasks {
        let reply = task.await.unwrap();
        match reply.status.as_u16() {
            200 => won += 1,
            409 => assert_eq!(reply.problem_type(), "already_decided", "{}", reply.text),
            other => panic!("unexpected {other}: {}", reply.text),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(decisions_of(&audit_records(&server).await, &approval), 1);
}

#[tokio::test]
async fn decision_after_the_deadline_is_409_expired_and_the_approval_reads_expired() {
    let policy = POLICY.replace("deadline = \"1h\"", "deadline = \"1s\"");
    let (server, agent) = manual_server(&policy).await;
    let (call, approval) = ask(&server, &agent, "bob@acme.test").await;
    server.advance(Duration::from_secs(2)).unwrap();

    let reply = decide(&server, &server.owner_token, &approval, "approve").await;
    assert_eq!(reply.status, 409, "{}", reply.text);
    assert_eq!(reply.problem_type(), "expired");

    let path = format!("/v1/approvals/{}", approval["id"].as_str().unwrap());
    let after = server
        .client
        .get(&path, &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(after["status"], "expired");
    let call = server
        .client
        .get(
            &format!("/v1/calls/{}", call["id"].as_str().unwrap()),
            &agent,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(call["status"], "expired");
    assert!(call["grant_id"].is_null());
    let records = audit_records(&server).await;
    assert_eq!(decisions_of(&records, &approval), 0);
    assert_eq!(
        records
            .iter()
            .filter(|r| r["kind"] == "approval.expired")
            .count(),
        1
    );
}

#[tokio::test]
async fn policy_replaced_while_pending_makes_deciding_409_stale_and_the_waiter_sees_cancelled() {
    let (server, agent) = server().await;
    let (call, approval) = ask(&server, &agent, "bob@acme.test").await;
    let client = server.client.clone();
    let path = format!("/v1/calls/{}?wait_s=30", call["id"].as_str().unwrap());
    let waiter = tokio::spawn(async move { client.get(&path, &agent).await.unwrap() });
    until_waiting(&server, 1).await;

    server
        .put_policy(&POLICY.replace("deadline = \"1h\"", "deadline = \"2h\""))
        .await
        .unwrap();
    let woken = waiter.await.unwrap();
    assert_eq!(woken.body["status"], "cancelled", "{}", woken.text);

    let reply = decide(&server, &server.owner_token, &approval, "approve").await;
    assert_eq!(reply.status, 409, "{}", reply.text);
    assert_eq!(reply.problem_type(), "stale_policy");
    assert_eq!(decisions_of(&audit_records(&server).await, &approval), 0);
}

#[tokio::test]
async fn standing_rules_are_minted_once_deduplicated_and_revoked() {
    let (server, agent) = server().await;
    let agents = server
        .client
        .get("/v1/agents", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let agent_id = agents["items"][0]["id"].clone();
    let rule = json!({"tool": "email.send", "target": "bob@acme.test", "scope": "agent", "scope_id": agent_id});
    let first = server
        .client
        .post("/v1/rules", &server.owner_token, &rule)
        .await
        .unwrap();
    assert_eq!(first.status, 201, "{}", first.text);
    let again = server
        .client
        .post("/v1/rules", &server.owner_token, &rule)
        .await
        .unwrap();
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body["id"], first.body["id"]);

    // The rule turns the ask for exactly this target into an allow.
    let call = server
        .submit(&agent, "email.send", json!({"to": "bob@acme.test"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "allowed", "{call}");
    let other = server
        .submit(&agent, "email.send", json!({"to": "bob@acme.tes"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(other["status"], "pending");

    let id = first.body["id"].as_str().unwrap();
    let revoked = server
        .client
        .delete(&format!("/v1/rules/{id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert!(revoked["revoked_at"].is_string());
    let listed = server
        .client
        .get("/v1/rules", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    let call = server
        .submit(&agent, "email.send", json!({"to": "bob@acme.test"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "pending");
}
