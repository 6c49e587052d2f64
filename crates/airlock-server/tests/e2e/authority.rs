//! Who may do what (G6): agents never decide, mint rules or change policy; viewers never
//! decide; another workspace's objects are 404. Every refusal changes nothing.

use crate::support::{ask, audit_records, decide, server, POLICY};
use airlock_protocol::Role;
use serde_json::json;

#[tokio::test]
async fn agent_tokens_cannot_decide_mint_rules_or_change_policy() {
    let (server, agent) = server().await;
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let before = audit_records(&server).await;

    let reply = decide(&server, &agent, &approval, "approve").await;
    assert_eq!(reply.status, 403, "{}", reply.text);
    assert_eq!(reply.problem_type(), "forbidden");

    let agents = server
        .client
        .get("/v1/agents", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let rule = json!({"tool": "email.send", "target": "bob@acme.test", "scope": "agent", "scope_id": agents["items"][0]["id"]});
    let reply = server
        .client
        .post("/v1/rules", &agent, &rule)
        .await
        .unwrap();
    assert_eq!(reply.status, 403, "{}", reply.text);

    let reply = server
        .client
        .put_text("/v1/policy", &agent, "version = 1\ndefault = \"allow\"\n")
        .await
        .unwrap();
    assert_eq!(reply.status, 403, "{}", reply.text);
    let reply = server.client.get("/v1/approvals", &agent).await.unwrap();
    assert_eq!(reply.status, 403, "{}", reply.text);

    assert_eq!(audit_records(&server).await, before);
    let policy = server
        .client
        .get("/v1/policy", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(policy["source"], POLICY);
}

#[tokio::test]
async fn viewers_cannot_decide_and_approvers_can() {
    let (server, agent) = server().await;
    let (_, viewer) = server.create_user("vera", Role::Viewer).await.unwrap();
    let (_, approver) = server.create_user("arno", Role::Approver).await.unwrap();
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;

    // A viewer reads the inbox but cannot act on it.
    server
        .client
        .get("/v1/approvals", &viewer)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let reply = decide(&server, &viewer, &approval, "approve").await;
    assert_eq!(reply.status, 403, "{}", reply.text);
    assert_eq!(reply.problem_type(), "forbidden");

    let decided = decide(&server, &approver, &approval, "reject")
        .await
        .expect_status(200)
        .unwrap();
    assert_eq!(decided["status"], "rejected");
}

#[tokio::test]
async fn another_workspaces_approval_is_404() {
    let (server, agent) = server().await;
    let (call, approval) = ask(&server, &agent, "bob@acme.test").await;
    let stranger = server.second_workspace("elsewhere").await.unwrap();
    let (_, stranger_agent) = server.create_agent_as(&stranger, "spy").await.unwrap();

    let id = approval["id"].as_str().unwrap();
    let reply = server
        .client
        .get(&format!("/v1/approvals/{id}"), &stranger)
        .await
        .unwrap();
    assert_eq!(reply.status, 404, "{}", reply.text);
    let reply = decide(&server, &stranger, &approval, "approve").await;
    assert_eq!(reply.status, 404, "{}", reply.text);
    assert_eq!(reply.problem_type(), "not_found");
    let listed = server
        .client
        .get("/v1/approvals", &stranger)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(listed["items"], json!([]));
    let call_path = format!("/v1/calls/{}", call["id"].as_str().unwrap());
    let reply = server
        .client
        .get(&call_path, &stranger_agent)
        .await
        .unwrap();
    assert_eq!(reply.status, 404);

    let mine = server
        .client
        .get(&format!("/v1/approvals/{id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(mine["status"], "pending");
}

#[tokio::test]
async fn only_agents_submit_calls_and_each_sees_only_its_own() {
    let (server, agent) = server().await;
    let reply = server
        .submit(&server.owner_token, "fs.read", json!({"path": "a"}))
        .await
        .unwrap();
    assert_eq!(reply.status, 403, "{}", reply.text);

    let (call, _) = ask(&server, &agent, "bob@acme.test").await;
    let (_, other_agent) = server.create_agent("other").await.unwrap();
    let path = format!("/v1/calls/{}", call["id"].as_str().unwrap());
    let reply = server.client.get(&path, &other_agent).await.unwrap();
    assert_eq!(reply.status, 404, "{}", reply.text);
    // Users of the workspace may read it.
    server
        .client
        .get(&path, &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
}
