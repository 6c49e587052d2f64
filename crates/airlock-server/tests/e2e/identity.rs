//! Users, agents and sessions over HTTP: tokens are returned once and work at once,
//! names are unique (409 `conflict`), agents read only themselves, a patch changes only
//! what it names.

use crate::support::server;
use airlock_protocol::Role;
use serde_json::json;

#[tokio::test]
async fn users_and_agents_are_created_listed_read_and_patched() {
    let (server, agent) = server().await;
    let owner = &server.owner_token;
    let created = server
        .client
        .post(
            "/v1/users",
            owner,
            &json!({"name": "ada", "role": "approver"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(created["user"]["role"], "approver");
    let token = created["token"].as_str().unwrap();
    server
        .client
        .get("/v1/approvals", token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let users = server
        .client
        .get("/v1/users", owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(users["items"].as_array().unwrap().len(), 2);

    let agents = server
        .client
        .get("/v1/agents", owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let id = agents["items"][0]["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/agents/{id}");
    let patched = server
        .client
        .patch(&path, owner, &json!({"mode": "read_only"}))
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(patched["mode"], "read_only");
    assert_eq!(patched["name"], "scout");
    // The agent reads itself, and its new mode applies to its calls at once.
    let itself = server
        .client
        .get(&path, &agent)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(itself["mode"], "read_only");
    let call = server
        .submit(&agent, "email.send", json!({"to": "bob@acme.test"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "denied", "{call}");
    assert_eq!(call["decided_by"], "mode");
}

#[tokio::test]
async fn duplicate_agent_names_are_409_conflict_and_roles_are_enforced() {
    let (server, _) = server().await;
    let reply = server
        .client
        .post("/v1/agents", &server.owner_token, &json!({"name": "scout"}))
        .await
        .unwrap();
    assert_eq!(reply.status, 409, "{}", reply.text);
    assert_eq!(reply.problem_type(), "conflict");

    let (_, approver) = server.create_user("arno", Role::Approver).await.unwrap();
    let reply = server
        .client
        .post("/v1/agents", &approver, &json!({"name": "other"}))
        .await
        .unwrap();
    assert_eq!(reply.status, 403, "{}", reply.text);
    let (_, admin) = server.create_user("adele", Role::Admin).await.unwrap();
    let reply = server
        .client
        .post(
            "/v1/users",
            &admin,
            &json!({"name": "boss", "role": "owner"}),
        )
        .await
        .unwrap();
    assert_eq!(
        reply.status, 403,
        "only owners create owners: {}",
        reply.text
    );
    let reply = server
        .client
        .post(
            "/v1/users",
            &admin,
            &json!({"name": "bad name!", "role": "viewer"}),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.text);
}

#[tokio::test]
async fn sessions_belong_to_their_agent() {
    let (server, agent) = server().await;
    let session = server
        .client
        .post("/v1/sessions", &agent, &json!({}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let path = format!("/v1/sessions/{}", session["id"].as_str().unwrap());
    server
        .client
        .get(&path, &agent)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let (_, other) = server.create_agent("other").await.unwrap();
    assert_eq!(server.client.get(&path, &other).await.unwrap().status, 404);
    let reply = server
        .client
        .post(
            "/v1/calls",
            &other,
            &json!({"tool": "fs.read", "arguments": {}, "session_id": session["id"]}),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 404, "{}", reply.text);
}

/// `POST /v1/sessions` with `external_id`: 201 with a new session, then 200 with the same
/// one for the same id; another id (or another agent) gets its own session.
#[tokio::test]
async fn an_external_id_opens_a_session_once_then_finds_it() {
    let (server, agent) = server().await;
    async fn open(
        server: &airlock_testkit::TestServer,
        token: &str,
        external: &str,
    ) -> airlock_testkit::Reply {
        let body = json!({"external_id": external, "title": "Codex in /src"});
        server
            .client
            .post("/v1/sessions", token, &body)
            .await
            .unwrap()
    }
    let first = open(&server, &agent, "codex-1")
        .await
        .expect_status(201)
        .unwrap();
    assert_eq!(first["external_id"], "codex-1", "{first}");
    assert_eq!(first["title"], "Codex in /src", "{first}");
    let again = open(&server, &agent, "codex-1")
        .await
        .expect_status(200)
        .unwrap();
    assert_eq!(again["id"], first["id"], "{again}");
    let other = open(&server, &agent, "codex-2")
        .await
        .expect_status(201)
        .unwrap();
    assert_ne!(other["id"], first["id"], "{other}");
    // The external id is the agent's own: another agent's same id is another session.
    let (_, second_agent) = server.create_agent("second").await.unwrap();
    let theirs = open(&server, &second_agent, "codex-1")
        .await
        .expect_status(201)
        .unwrap();
    assert_ne!(theirs["id"], first["id"], "{theirs}");
    // With an agent id it is not an agent's own lookup: refused.
    let reply = server
        .client
        .post(
            "/v1/sessions",
            &server.owner_token,
            &json!({"external_id": "codex-1", "agent_id": first["agent_id"]}),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.text);
}

/// `GET /v1/agents/me` names the agent behind an agent token; a user token has none.
#[tokio::test]
async fn an_agent_token_learns_its_own_agent() {
    let (server, agent) = server().await;
    let me = server
        .client
        .get("/v1/agents/me", &agent)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(me["name"], "scout");
    let user = server
        .client
        .get("/v1/agents/me", &server.owner_token)
        .await
        .unwrap();
    assert_eq!(user.status, 403);
    assert_eq!(user.problem_type(), "forbidden");
}

/// F6 (G9): the settings of an agent's MCP servers and model may hold credentials (an
/// `env TOKEN=… server` command line, a URL with a password); only the roles that edit
/// agents (admin, owner) read them in clear, every other reader gets them redacted.
#[tokio::test]
async fn agent_secrets_are_shown_only_to_those_who_edit_agents() {
    let (server, _) = server().await;
    let token = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
    let created = server
        .client
        .post(
            "/v1/agents",
            &server.owner_token,
            &json!({
                "name": "github-bot",
                "llm": {"base_url": "https://bot:s3cret-pass@llm.example.test/v1", "model": "m"},
                "mcp_servers": [{"name": "github", "command": "env", "args": [
                    format!("GITHUB_PERSONAL_ACCESS_TOKEN={token}"),
                    "npx", "--api-key", "hunter2hunter2", "-y", "@modelcontextprotocol/server-github"]}],
            }),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let id = created["agent"]["id"].as_str().unwrap().to_owned();
    let agent_token = created["token"].as_str().unwrap().to_owned();
    let (_, admin) = server.create_user("alice", Role::Admin).await.unwrap();
    let (_, viewer) = server.create_user("vic", Role::Viewer).await.unwrap();
    let (_, approver) = server.create_user("apu", Role::Approver).await.unwrap();
    for (who, reader, clear) in [
        ("owner", &server.owner_token, true),
        ("admin", &admin, true),
        ("viewer", &viewer, false),
        ("approver", &approver, false),
        ("the agent", &agent_token, false),
    ] {
        let read = server
            .client
            .get(&format!("/v1/agents/{id}"), reader)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap()
            .to_string();
        for secret in [token, "hunter2hunter2", "s3cret-pass"] {
            assert_eq!(read.contains(secret), clear, "{who}: {read}");
        }
        assert!(
            read.contains("@modelcontextprotocol/server-github"),
            "{who}: {read}"
        );
        if reader != &agent_token {
            let listed = server
                .client
                .get("/v1/agents", reader)
                .await
                .unwrap()
                .expect_status(200)
                .unwrap()
                .to_string();
            assert_eq!(listed.contains(token), clear, "{who}: {listed}");
        }
    }
}
