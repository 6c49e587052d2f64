//! Hundreds of concurrent requests on the same objects (DESIGN.md G1, G3, G8): one
//! approval decided two ways at once, one grant redeemed at once, decisions racing
//! redeems, and submissions and dry-run evaluations while the policy is replaced under
//! them. Exactly one winner, every loser a precise refusal, nothing half-written, the
//! audit chain intact, and every test bounded by a timeout so a deadlock fails instead
//! of hanging. On SQLite by default and on PostgreSQL with
//! `AIRLOCK_TEST_BACKEND=postgres` (scripts/test.sh runs both).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

use airlock_testkit::{Reply, TestServer};
use futures::future::join_all;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

const TASKS: usize = 200;

/// Fails the test instead of hanging when something deadlocks.
async fn bounded<T>(what: &str, work: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(90), work)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within 90 s: a deadlock?"))
}

const POLICY: &str = r#"
version = 1
default = "ask"

[tools."email.send"]
risk = "external"
target = "to"

[[rules]]
name = "clock"
tool = "clock.now"
decision = "allow"
"#;

async fn server() -> (TestServer, String) {
    let server = TestServer::start().await.unwrap();
    server.put_policy(POLICY).await.unwrap();
    let (_, agent) = server.create_agent("racer").await.unwrap();
    (server, agent)
}

async fn audit(server: &TestServer) -> Vec<Value> {
    let mut records = Vec::new();
    let mut after = 0;
    loop {
        let page = server
            .client
            .get(
                &format!("/v1/audit?after={after}&limit=1000"),
                &server.owner_token,
            )
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        let items = page["items"].as_array().unwrap().clone();
        let Some(last) = items.last() else {
            return records;
        };
        after = last["seq"].as_u64().unwrap();
        records.extend(items);
    }
}

async fn assert_audit_verifies(server: &TestServer) {
    let verify = server
        .client
        .get("/v1/audit/verify", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(verify["ok"], true, "{verify}");
}

fn count(records: &[Value], kind: &str, subject: &str) -> usize {
    records
        .iter()
        .filter(|r| r["kind"] == kind && r["subject"] == subject)
        .count()
}

/// Tallies answers by `status type`.
fn tally(replies: &[Reply]) -> BTreeMap<String, usize> {
    let mut tally = BTreeMap::new();
    for reply in replies {
        let key = format!("{} {}", reply.status.as_u16(), reply.problem_type());
        *tally.entry(key.trim().to_owned()).or_insert(0) += 1;
    }
    tally
}

async fn ask(server: &TestServer, agent: &str) -> (Value, Value) {
    let call = server
        .submit(
            agent,
            "email.send",
            json!({"to": "eve@elsewhere.test", "body": "hi"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "pending", "{call}");
    let approval = server
        .client
        .get(
            &format!("/v1/approvals/{}", call["approval_id"].as_str().unwrap()),
            &server.owner_token,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    (call, approval)
}

/// 200 deciders, half approving and half rejecting, one approval: one 200, 199
/// `409 already_decided`, one decision record, and the approval says what the winner said.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_decisions_two_ways_have_one_winner() {
    let (server, agent) = server().await;
    let (_, approval) = ask(&server, &agent).await;
    let id = approval["id"].as_str().unwrap().to_owned();
    let replies = bounded(
        "200 decisions",
        join_all((0..TASKS).map(|i| {
            let (client, token, id) = (
                server.client.clone(),
                server.owner_token.clone(),
                id.clone(),
            );
            let body = json!({
                "decision": if i % 2 == 0 { "approve" } else { "reject" },
                "binding_digest": approval["binding_digest"],
            });
            async move {
                client
                    .post(&format!("/v1/approvals/{id}/decision"), &token, &body)
                    .await
                    .unwrap()
            }
        })),
    )
    .await;
    let tally = tally(&replies);
    assert_eq!(tally.get("200"), Some(&1), "{tally:?}");
    assert_eq!(
        tally.get("409 already_decided"),
        Some(&(TASKS - 1)),
        "{tally:?}"
    );
    let winner = replies.iter().find(|r| r.status == 200).unwrap();
    let now = server
        .client
        .get(&format!("/v1/approvals/{id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(now["status"], winner.body["status"], "{now}");
    let records = audit(&server).await;
    assert_eq!(
        count(&records, "approval.approved", &id) + count(&records, "approval.rejected", &id),
        1
    );
    assert_audit_verifies(&server).await;
}

/// 200 redeems of one allowed call's grant: one 200, 199 `409 grant_spent`, one
/// `grant.consumed` record (G1).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_redeems_of_one_grant_have_one_winner() {
    let (server, agent) = server().await;
    let call = server
        .submit(&agent, "clock.now", json!({}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "allowed", "{call}");
    let id = call["id"].as_str().unwrap().to_owned();
    let replies = bounded(
        "200 redeems",
        join_all((0..TASKS).map(|_| {
            let (client, agent, id) = (server.client.clone(), agent.clone(), id.clone());
            async move {
                client
                    .post_empty(&format!("/v1/calls/{id}/redeem"), &agent)
                    .await
                    .unwrap()
            }
        })),
    )
    .await;
    let tally = tally(&replies);
    assert_eq!(tally.get("200"), Some(&1), "{tally:?}");
    assert_eq!(
        tally.get("409 grant_spent"),
        Some(&(TASKS - 1)),
        "{tally:?}"
    );
    let grant = call["grant_id"].as_str().unwrap();
    assert_eq!(count(&audit(&server).await, "grant.consumed", grant), 1);
    assert_audit_verifies(&server).await;
}

/// Redeems racing the decision that creates the grant: a redeem before the decision is
/// `403 forbidden` (no grant yet), after it exactly one redeem wins and the rest are
/// `409 grant_spent`; a rejection leaves nothing to redeem.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redeems_racing_the_decision_consume_at_most_once() {
    let (server, agent) = server().await;
    for verdict in ["approve", "reject"] {
        let (call, approval) = ask(&server, &agent).await;
        let (call_id, id) = (
            call["id"].as_str().unwrap().to_owned(),
            approval["id"].as_str().unwrap().to_owned(),
        );
        let decide = {
            let (client, token, id) = (
                server.client.clone(),
                server.owner_token.clone(),
                id.clone(),
            );
            let body = json!({"decision": verdict, "binding_digest": approval["binding_digest"]});
            tokio::spawn(async move {
                client
                    .post(&format!("/v1/approvals/{id}/decision"), &token, &body)
                    .await
                    .unwrap()
            })
        };
        let replies = bounded(
            "redeems racing a decision",
            join_all((0..TASKS / 2).map(|i| {
                let (client, agent, call_id) =
                    (server.client.clone(), agent.clone(), call_id.clone());
                async move {
                    // Spread over the decision's commit.
                    tokio::time::sleep(Duration::from_millis((i % 20) as u64 * 2)).await;
                    client
                        .post_empty(&format!("/v1/calls/{call_id}/redeem"), &agent)
                        .await
                        .unwrap()
                }
            })),
        )
        .await;
        assert_eq!(decide.await.unwrap().status, 200);
        let tally = tally(&replies);
        for key in tally.keys() {
            assert!(
                ["200", "403 forbidden", "409 grant_spent"].contains(&key.as_str()),
                "{tally:?}"
            );
        }
        let records = audit(&server).await;
        let consumed = records
            .iter()
            .filter(|r| r["kind"] == "grant.consumed" && r["data"]["call_id"] == call_id.as_str())
            .count();
        if verdict == "approve" {
            // Whoever came after the commit: one of them won, unless all came before.
            let late = server
                .client
                .post_empty(&format!("/v1/calls/{call_id}/redeem"), &agent)
                .await
                .unwrap();
            let won = tally.get("200").copied().unwrap_or(0) + usize::from(late.status == 200);
            assert_eq!(won, 1, "{tally:?} then {}", late.status);
            assert_eq!(consumed + usize::from(late.status == 200), 1);
        } else {
            assert_eq!(tally.get("200"), None, "{tally:?}");
            assert_eq!(consumed, 0);
        }
    }
    assert_audit_verifies(&server).await;
}

const ALLOW_MAIL: &str = r#"
version = 1
default = "ask"

[tools."email.send"]
risk = "external"
target = "to"

[[rules]]
name = "mail-allowed"
tool = "email.send"
decision = "allow"
"#;

/// 200 submissions and 200 dry-run evaluations while the policy flips between "ask" and
/// "allow" for the same tool 20 times: every answer is one of the two policies' verdicts,
/// no approval is left pending under a policy no longer in force, and no request fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn submissions_while_the_policy_changes_follow_the_policy_in_force() {
    let (server, agent) = server().await;
    let arguments = json!({"to": "eve@elsewhere.test", "body": "hi"});
    let flips = {
        let (client, token) = (server.client.clone(), server.owner_token.clone());
        async move {
            let mut replies = Vec::new();
            for i in 0..20 {
                let source = if i % 2 == 0 { ALLOW_MAIL } else { POLICY };
                replies.push(client.put_text("/v1/policy", &token, source).await.unwrap());
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            replies
        }
    };
    let submits = join_all((0..TASKS).map(|_| {
        let (client, agent, arguments) = (server.client.clone(), agent.clone(), arguments.clone());
        async move {
            client
                .post(
                    "/v1/calls",
                    &agent,
                    &json!({"tool": "email.send", "arguments": arguments}),
                )
                .await
                .unwrap()
        }
    }));
    let evaluations = join_all((0..TASKS).map(|_| {
        let (client, token, arguments) = (
            server.client.clone(),
            server.owner_token.clone(),
            arguments.clone(),
        );
        async move {
            client
                .post(
                    "/v1/policy/evaluate",
                    &token,
                    &json!({"tool": "email.send", "arguments": arguments}),
                )
                .await
                .unwrap()
        }
    }));
    let (flips, submits, evaluations) = bounded("submissions under policy changes", async {
        tokio::join!(flips, submits, evaluations)
    })
    .await;
    for reply in &flips {
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    for reply in &evaluations {
        assert_eq!(reply.status, 200, "{}", reply.text);
        let decision = reply.body["decision"].as_str().unwrap();
        assert!(["allow", "ask"].contains(&decision), "{}", reply.text);
    }
    let mut statuses = BTreeMap::new();
    for reply in &submits {
        assert_eq!(reply.status, 201, "{}", reply.text);
        let status = reply.body["status"].as_str().unwrap().to_owned();
        match status.as_str() {
            "allowed" => assert_eq!(reply.body["rule"], "mail-allowed", "{}", reply.text),
            "pending" => assert!(reply.body["approval_id"].is_string(), "{}", reply.text),
            other => panic!("unexpected status {other}: {}", reply.text),
        }
        *statuses.entry(status).or_insert(0) += 1;
    }

    // Nothing pending under a replaced policy: those were cancelled as stale.
    let policy = server
        .client
        .get("/v1/policy", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let pending = server
        .client
        .get(
            "/v1/approvals?status=pending&limit=1000",
            &server.owner_token,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    for approval in pending["items"].as_array().unwrap() {
        assert_eq!(
            approval["policy_digest"], policy["digest"],
            "stranded under a replaced policy: {approval}"
        );
    }
    // Every call recorded is in the audit log exactly once, as what its answer said.
    let records = audit(&server).await;
    for reply in &submits {
        let (kind, subject) = match reply.body["status"].as_str().unwrap() {
            "allowed" => ("call.allowed", reply.body["id"].as_str().unwrap()),
            _ => (
                "approval.requested",
                reply.body["approval_id"].as_str().unwrap(),
            ),
        };
        assert_eq!(count(&records, kind, subject), 1, "{kind} {subject}");
    }
    assert_audit_verifies(&server).await;
    println!("submissions under 20 policy changes: {statuses:?}");
}
