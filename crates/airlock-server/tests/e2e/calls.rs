//! The life of a call: allow (grant, redeemed once — G1), deny (final, no approval — G5),
//! ask (pending with an approval), and the long-poll that the decision wakes at once.

use crate::support::{ask, decide, server, until_waiting};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn allowed_call_carries_a_grant_that_redeems_once_then_409_grant_spent() {
    let (server, agent) = server().await;
    let call = server
        .submit(&agent, "fs.read", json!({"path": "/etc/motd"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "allowed");
    assert_eq!(call["rule"], "reads-are-fine");
    assert!(call["grant_id"].is_string());
    assert!(call["approval_id"].is_null());

    let path = format!("/v1/calls/{}/redeem", call["id"].as_str().unwrap());
    let first = server
        .client
        .post_empty(&path, &agent)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(first["grant_id"], call["grant_id"]);
    assert_eq!(first["call_id"], call["id"]);
    assert!(first["consumed_at"].is_string());

    let second = server.client.post_empty(&path, &agent).await.unwrap();
    assert_eq!(second.status, 409, "{}", second.text);
    assert_eq!(second.problem_type(), "grant_spent");
}

#[tokio::test]
async fn approved_call_redeems_once_then_409_grant_spent() {
    let (server, agent) = server().await;
    let (call, approval) = ask(&server, &agent, "bob@acme.test").await;
    decide(&server, &server.owner_token, &approval, "approve")
        .await
        .expect_status(200)
        .unwrap();
    let path = format!("/v1/calls/{}/redeem", call["id"].as_str().unwrap());
    server
        .client
        .post_empty(&path, &agent)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let again = server.client.post_empty(&path, &agent).await.unwrap();
    assert_eq!(again.status, 409);
    assert_eq!(again.problem_type(), "grant_spent");
}

#[tokio::test]
async fn denied_call_has_no_approval_no_grant_and_cannot_be_approved() {
    let (server, agent) = server().await;
    let call = server
        .submit(&agent, "shell.exec", json!({"command": "rm -rf /"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "denied");
    assert_eq!(call["rule"], "no-destructive-shell");
    assert_eq!(call["reason"], "destructive command");
    assert!(call["approval_id"].is_null() && call["grant_id"].is_null());

    let pending = server
        .client
        .get("/v1/approvals", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(
        pending["items"],
        json!([]),
        "a deny must leave nothing to approve"
    );
    let redeem = server
        .client
        .post_empty(
            &format!("/v1/calls/{}/redeem", call["id"].as_str().unwrap()),
            &agent,
        )
        .await
        .unwrap();
    assert_eq!(redeem.status, 403, "{}", redeem.text);
    // The call's id is not an approval id: there is nothing a person could approve.
    let decision = server
        .client
        .post(
            &format!("/v1/approvals/{}/decision", call["id"].as_str().unwrap()),
            &server.owner_token,
            &json!({"decision": "approve", "binding_digest": "0".repeat(64)}),
        )
        .await
        .unwrap();
    assert_eq!(decision.status, 404);
}

#[tokio::test]
async fn asked_call_is_pending_with_an_approval_that_previews_it() {
    let (server, agent) = server().await;
    let (call, approval) = ask(&server, &agent, "bob@acme.test").await;
    assert_eq!(call["rule"], "mail-needs-a-person");
    assert!(call["grant_id"].is_null());
    assert_eq!(approval["status"], "pending");
    assert_eq!(approval["call_id"], call["id"]);
    assert_eq!(
        approval["preview"]["summary"],
        "Send email to bob@acme.test"
    );
    assert_eq!(approval["preview"]["body"], "hello");
    assert_eq!(approval["binding_digest"].as_str().unwrap().len(), 64);
    let listed = server
        .client
        .get("/v1/approvals?status=pending&limit=10", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(listed["items"][0]["id"], approval["id"]);
}

#[tokio::test]
async fn long_poll_wakes_within_milliseconds_of_the_decision() {
    let (server, agent) = server().await;
    let (call, approval) = ask(&server, &agent, "bob@acme.test").await;
    let client = server.client.clone();
    let path = format!("/v1/calls/{}?wait_s=30", call["id"].as_str().unwrap());
    let waiter = tokio::spawn(async move {
        let reply = client.get(&path, &agent).await.unwrap();
        (reply, Instant::now())
    });
    until_waiting(&server, 1).await;

    let sent = Instant::now();
    decide(&server, &server.owner_token, &approval, "approve")
        .await
        .expect_status(200)
        .unwrap();
    let (reply, woke) = waiter.await.unwrap();
    let latency = woke.duration_since(sent);
    println!("decision POST sent -> long-polling caller holds the verdict: {latency:?}");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["status"], "approved");
    assert!(reply.body["grant_id"].is_string());
    // A missed wake-up would hold the caller its whole 30 s; the bound leaves room for a
    // loaded machine's stalls (a PostgreSQL commit has stalled 2 s in CI).
    assert!(latency < Duration::from_secs(10), "woke after {latency:?}");
}

#[tokio::test]
async fn submit_with_wait_returns_the_rejection_and_its_reason() {
    let (server, agent) = server().await;
    let client = server.client.clone();
    let submitter = tokio::spawn(async move {
        client
            .post(
                "/v1/calls",
                &agent,
                &json!({"tool": "email.send", "arguments": {"to": "eve@evil.test"}, "wait_s": 30}),
            )
            .await
            .unwrap()
    });
    until_waiting(&server, 1).await;
    let pending = server
        .client
        .get("/v1/approvals?status=pending", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let approval = pending["items"][0].clone();
    decide(&server, &server.owner_token, &approval, "reject")
        .await
        .expect_status(200)
        .unwrap();

    let reply = submitter.await.unwrap();
    assert_eq!(reply.status, 201);
    assert_eq!(reply.body["status"], "rejected", "{}", reply.text);
    assert!(reply.body["grant_id"].is_null());
}

#[tokio::test]
async fn long_poll_without_a_decision_returns_pending_when_wait_s_passes() {
    let (server, agent) = server().await;
    let (call, _) = ask(&server, &agent, "bob@acme.test").await;
    let started = Instant::now();
    let reply = server
        .client
        .get(
            &format!("/v1/calls/{}?wait_s=1", call["id"].as_str().unwrap()),
            &agent,
        )
        .await
        .unwrap();
    assert_eq!(reply.body["status"], "pending");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "returned early: {:?}",
        started.elapsed()
    );
}

/// MCP annotations set the risk of a tool the policy does not list: read-only (and not
/// destructive) is `read`, anything else stays `exec`; a listed tool keeps the policy's
/// risk whatever the annotations say. Seen through an agent in `read_only` mode, which
/// denies every risk but `read`.
#[tokio::test]
async fn annotations_inform_the_risk_of_unlisted_tools_only() {
    let server = airlock_testkit::TestServer::start().await.unwrap();
    server
        .put_policy("version = 1\ndefault = \"allow\"\n[tools.\"shell.exec\"]\nrisk = \"exec\"\n")
        .await
        .unwrap();
    let created = server
        .client
        .post(
            "/v1/agents",
            &server.owner_token,
            &json!({"name": "reader", "mode": "read_only"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let agent = created["token"].as_str().unwrap();
    let submit = |tool: &'static str, annotations: serde_json::Value| {
        let server = &server;
        async move {
            let mut body = json!({"tool": tool, "arguments": {}});
            if !annotations.is_null() {
                body["annotations"] = annotations;
            }
            server
                .client
                .post("/v1/calls", agent, &body)
                .await
                .unwrap()
                .expect_status(201)
                .unwrap()
        }
    };
    let cases = [
        (
            "mcp__fs__list",
            json!({"read_only_hint": true}),
            "read",
            "allowed",
        ),
        ("mcp__fs__list", serde_json::Value::Null, "exec", "denied"),
        (
            "mcp__fs__list",
            json!({"read_only_hint": false}),
            "exec",
            "denied",
        ),
        (
            "mcp__fs__wipe",
            json!({"read_only_hint": true, "destructive_hint": true}),
            "exec",
            "denied",
        ),
        (
            "shell.exec",
            json!({"read_only_hint": true}),
            "exec",
            "denied",
        ),
    ];
    for (tool, annotations, risk, status) in cases {
        let call = submit(tool, annotations.clone()).await;
        assert_eq!(call["risk"], risk, "{tool} {annotations}: {call}");
        assert_eq!(call["status"], status, "{tool} {annotations}: {call}");
    }
    let bad = server
        .client
        .post(
            "/v1/calls",
            agent,
            &json!({"tool": "x", "arguments": {}, "annotations": {"readOnly": true}}),
        )
        .await
        .unwrap();
    assert_eq!(bad.status, 422);
}

#[tokio::test]
async fn approvals_are_listed_a_page_at_a_time() {
    let (server, agent) = server().await;
    let mut ids = Vec::new();
    for to in ["a@x.test", "b@x.test", "c@x.test"] {
        let (_, approval) = ask(&server, &agent, to).await;
        ids.push(approval["id"].as_str().unwrap().to_owned());
    }
    let page = |query: String| {
        let client = server.client.clone();
        let token = server.owner_token.clone();
        async move { client.get(&query, &token).await.unwrap() }
    };
    let listed = |reply: &airlock_testkit::Reply| -> Vec<String> {
        reply.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|approval| approval["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let first = page("/v1/approvals?status=pending&limit=2".into()).await;
    assert_eq!(listed(&first), [ids[2].clone(), ids[1].clone()]);
    // The next page starts after the last item of this one.
    let next = page(format!(
        "/v1/approvals?status=pending&limit=2&before={}",
        ids[1]
    ))
    .await;
    assert_eq!(next.status, 200);
    assert_eq!(listed(&next), [ids[0].clone()]);
    let past_the_end = page(format!("/v1/approvals?before={}", ids[0])).await;
    assert!(listed(&past_the_end).is_empty());
    // A page after an approval that is not here is a 404, not an empty page.
    let unknown = page("/v1/approvals?before=apr_nope".into()).await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
}
