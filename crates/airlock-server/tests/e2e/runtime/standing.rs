//! DESIGN.md §10 behaviour 14: standing rules, each point as a test, through the runtime
//! and the HTTP API.

use super::support::*;
use crate::support::audit_records;
use airlock_testkit::TestServer;
use serde_json::{json, Value};
use std::time::Duration;

/// Mail to two people in one turn.
const TWO_RECIPIENTS: &str = r##"
[[scenario]]
marker = "#bob-and-carol"
[[scenario.turn]]
events = [
  { type = "tool_use", name = "email.send", arguments = { to = "bob@example.com", subject = "s", body = "b" } },
  { type = "tool_use", name = "email.send", arguments = { to = "carol@example.com", subject = "s", body = "b" } },
]
[[scenario.turn]]
events = [{ type = "text", text = "Mailed." }]

[[scenario]]
marker = "#bob"
[[scenario.turn]]
events = [{ type = "tool_use", name = "email.send", arguments = { to = "bob@example.com", subject = "s", body = "b" } }]
[[scenario.turn]]
events = [{ type = "text", text = "Mailed Bob." }]
"##;

async fn mailer(server: &TestServer, name: &str, mode: Option<&str>) -> Agent {
    let file = server.data_dir().join(format!("{name}.toml"));
    std::fs::write(&file, TWO_RECIPIENTS).unwrap();
    agent_with_llm(
        server,
        name,
        json!({"base_url": format!("scripted:{}", file.display()), "model": "script"}),
        mode,
    )
    .await
}

async fn add_rule(server: &TestServer, token: &str, body: Value) -> (u16, Value) {
    let reply = server.client.post("/v1/rules", token, &body).await.unwrap();
    (reply.status.as_u16(), reply.body)
}

/// Runs `text` in a new session of the agent; returns the run id and its steps once the
/// run has suspended or completed.
async fn run_once(server: &TestServer, agent: &Agent, text: &str) -> (String, String) {
    let session = new_session(server, &agent.id).await;
    let run_id = say(server, &session, text).await;
    (session, run_id)
}

/// `tool target` entries: adding twice gives the same rule, an empty target is refused,
/// revoking is immediate; only the exact target is allowed (`bob` ≠ `carol`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b14_rules_dedupe_refuse_empty_targets_match_exactly_and_revoke() {
    let server = runtime_server().await;
    let agent = mailer(&server, "mailer", None).await;
    let rule = json!({"tool": "email.send", "target": "bob@example.com", "scope": "agent", "scope_id": agent.id});
    let (status, first) = add_rule(&server, &server.owner_token, rule.clone()).await;
    assert_eq!(status, 201, "{first}");
    let (status, again) = add_rule(&server, &server.owner_token, rule.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(again["id"], first["id"], "add dedupes");
    let mut empty = rule.clone();
    empty["target"] = json!("  ");
    assert_eq!(add_rule(&server, &server.owner_token, empty).await.0, 422);

    let (_, run_id) = run_once(&server, &agent, "#bob-and-carol").await;
    let events = journal_until(&server, &run_id, "run_suspended").await;
    // Bob is allowed by the rule (no approval), Carol is asked: exact target only.
    let approvals = approvals_required(&events);
    assert_eq!(approvals.len(), 1, "{events:#?}");
    assert_eq!(
        approval(&server, &approvals[0]).await["standing_target"],
        "carol@example.com"
    );
    let finished = events
        .iter()
        .find(|e| e["kind"] == "tool_finished")
        .expect("bob's email ran");
    assert_eq!(finished["data"]["standing_rule"], first["id"]);
    assert_eq!(finished["data"]["status"], "ok");

    // Every auto-allow is audited citing the rule.
    let allowed: Vec<Value> = audit_records(&server)
        .await
        .into_iter()
        .filter(|r| r["kind"] == "call.allowed")
        .collect();
    assert_eq!(allowed.len(), 1);
    assert_eq!(allowed[0]["data"]["standing_rule"], first["id"]);
    assert_eq!(allowed[0]["data"]["decided_by"], "standing_rule");

    // Revoked: the next evaluation asks again.
    server
        .client
        .delete(
            &format!("/v1/rules/{}", first["id"].as_str().unwrap()),
            &server.owner_token,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let (_, run_id) = run_once(&server, &agent, "#bob").await;
    let events = journal_until(&server, &run_id, "run_suspended").await;
    assert_eq!(approvals_required(&events).len(), 1);
}

/// `exec` tools and tools without a target are never eligible; agents cannot mint rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b14_exec_and_targetless_tools_are_never_eligible_and_agents_cannot_mint() {
    let server = runtime_server().await;
    let agent = mailer(&server, "mailer", None).await;
    for (tool, target) in [
        ("shell.exec", "ls"),
        ("clock.now", "x"),
        ("task.create", "x"),
        ("mcp__github__create_issue", "repo"),
    ] {
        let (status, body) = add_rule(
            &server,
            &server.owner_token,
            json!({"tool": tool, "target": target, "scope": "agent", "scope_id": agent.id}),
        )
        .await;
        assert_eq!(status, 422, "{tool}: {body}");
        assert!(
            body["detail"].as_str().unwrap().contains("not eligible"),
            "{body}"
        );
    }
    let (status, _) = add_rule(
        &server,
        &agent.token,
        json!({"tool": "email.send", "target": "bob@example.com", "scope": "agent", "scope_id": agent.id}),
    )
    .await;
    assert_eq!(status, 403, "an agent minted a rule");
    // Nor through a task it creates: tasks from agents carry no permissions.
    let reply = server
        .client
        .post(
            "/v1/tasks",
            &agent.token,
            &json!({"title": "t", "instructions": "i", "agent": agent.id, "cron": "0 * * * *",
                    "permissions": [{"tool": "email.send", "target": "bob@example.com", "access": "external"}]}),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 403);
    let rules = server
        .client
        .get("/v1/rules", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert!(rules["items"].as_array().unwrap().is_empty(), "{rules}");
}

/// The agent-facing `task.create` tool has no `permissions` field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b14_the_task_tool_of_agents_has_no_permissions() {
    let server = runtime_server().await;
    server
        .put_policy(&format!(
            "{RUNTIME_POLICY}\n[[rules]]\ntool = \"task.create\"\ndecision = \"allow\"\n"
        ))
        .await
        .unwrap();
    let file = server.data_dir().join("planner.toml");
    std::fs::write(
        &file,
        r##"
[[scenario]]
marker = "#plan"
[[scenario.turn]]
events = [
  { type = "tool_use", name = "task.create", arguments = { title = "sneaky", instructions = "x", cron = "0 3 * * *", permissions = [{ tool = "email.send", target = "bob@example.com", access = "external" }] } },
  { type = "tool_use", name = "task.create", arguments = { title = "nightly", instructions = "#bob", cron = "0 3 * * *", timezone = "Europe/Paris" } },
]
[[scenario.turn]]
events = [{ type = "text", text = "Planned." }]
"##,
    )
    .unwrap();
    let agent = agent_with_llm(
        &server,
        "planner",
        json!({"base_url": format!("scripted:{}", file.display()), "model": "script"}),
        None,
    )
    .await;
    let run_id = say(&server, &agent.session, "#plan").await;
    until_state(&server, &run_id, "completed").await;
    let steps = reply(&server, &agent.session, &run_id).await["steps"].clone();
    assert_eq!(steps[0]["status"], "error", "{steps}");
    assert!(steps[0]["output"]["error"]
        .as_str()
        .unwrap()
        .contains("permissions"));
    assert_eq!(steps[1]["status"], "ok", "{steps}");
    let tasks = server
        .client
        .get("/v1/tasks", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let tasks = tasks["items"].as_array().unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["title"], "nightly");
    assert_eq!(tasks[0]["created_by"], format!("agent:{}", agent.id));
    assert!(tasks[0]["next_run_at"].is_string());
    let rules = server
        .client
        .get("/v1/rules", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert!(rules["items"].as_array().unwrap().is_empty());
}

/// `read_only` mode ignores standing rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b14_read_only_mode_ignores_standing_rules() {
    let server = runtime_server().await;
    let agent = mailer(&server, "reader", Some("read_only")).await;
    let (status, _) = add_rule(
        &server,
        &server.owner_token,
        json!({"tool": "email.send", "target": "bob@example.com", "scope": "agent", "scope_id": agent.id}),
    )
    .await;
    assert_eq!(status, 201);
    let (session, run_id) = run_once(&server, &agent, "#bob").await;
    until_state(&server, &run_id, "completed").await;
    let step = reply(&server, &session, &run_id).await["steps"][0].clone();
    assert_eq!(step["status"], "denied", "{step}");
    assert!(step["output"].as_str().unwrap().contains("read_only"));
    assert!(outbox(&server).await.is_empty());
}

/// A time-limited rule stops allowing mid-session once it expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b14_a_time_limited_rule_expires_mid_session() {
    let server = runtime_server().await;
    let agent = mailer(&server, "mailer", None).await;
    let (status, _) = add_rule(
        &server,
        &server.owner_token,
        json!({"tool": "email.send", "target": "bob@example.com", "scope": "session",
               "scope_id": agent.session, "expires_in": "30m"}),
    )
    .await;
    assert_eq!(status, 201);
    let run_id = say(&server, &agent.session, "#bob").await;
    until_state(&server, &run_id, "completed").await;
    assert_eq!(outbox(&server).await.len(), 1, "allowed while live");

    server.advance(Duration::from_secs(31 * 60)).unwrap();
    let run_id = say(&server, &agent.session, "#bob").await;
    let events = journal_until(&server, &run_id, "run_suspended").await;
    assert_eq!(approvals_required(&events).len(), 1, "asked once expired");
}

/// A revoke racing evaluations: every call decided before the revoke may cite the rule,
/// every call submitted after the revoke returned is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b14_revoke_racing_evaluations_is_immediate_afterwards() {
    let server = TestServer::start().await.unwrap();
    server
        .put_policy(
            "version = 1\ndefault = \"ask\"\n[tools.\"email.send\"]\nrisk = \"external\"\ntarget = \"to\"\n",
        )
        .await
        .unwrap();
    let (agent_id, agent) = server.create_agent("racer").await.unwrap();
    let (_, rule) = add_rule(
        &server,
        &server.owner_token,
        json!({"tool": "email.send", "target": "bob@example.com", "scope": "agent", "scope_id": agent_id}),
    )
    .await;
    let rule_id = rule["id"].as_str().unwrap().to_owned();
    let submit = || async {
        server
            .submit(&agent, "email.send", json!({"to": "bob@example.com"}))
            .await
            .unwrap()
            .expect_status(201)
            .unwrap()
    };
    let racing = futures::future::join_all((0..30).map(|_| submit()));
    let revoke = async {
        server
            .client
            .delete(&format!("/v1/rules/{rule_id}"), &server.owner_token)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap()
    };
    let (calls, _) = tokio::join!(racing, revoke);
    for call in &calls {
        match call["status"].as_str().unwrap() {
            "allowed" => assert_eq!(call["rule"], rule_id.as_str(), "{call}"),
            "pending" => {}
            other => panic!("unexpected {other}: {call}"),
        }
    }
    for _ in 0..5 {
        assert_eq!(submit().await["status"], "pending");
    }
}

/// The "fewer prompts" report counts prompts per tool and target and suggests the rules
/// people kept approving (never one they rejected), without creating any.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_insights_count_and_suggest_without_minting() {
    let server = TestServer::start().await.unwrap();
    server
        .put_policy(
            "version = 1\ndefault = \"ask\"\n[tools.\"email.send\"]\nrisk = \"external\"\ntarget = \"to\"\n",
        )
        .await
        .unwrap();
    let (agent_id, agent) = server.create_agent("asker").await.unwrap();
    let decisions = [
        ("bob@example.com", "approve"),
        ("bob@example.com", "approve"),
        ("bob@example.com", "approve"),
        ("carol@example.com", "approve"),
        ("carol@example.com", "reject"),
        ("dan@example.com", "approve"),
    ];
    for (to, decision) in decisions {
        let call = server
            .submit(&agent, "email.send", json!({ "to": to }))
            .await
            .unwrap()
            .expect_status(201)
            .unwrap();
        let approval_id = call["approval_id"].as_str().unwrap();
        assert_eq!(decide(&server, approval_id, decision, "r").await, 200);
    }
    let report = server
        .client
        .get("/v1/insights/prompts", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let items = report["items"].as_array().unwrap();
    assert_eq!(items[0]["target"], "bob@example.com");
    assert_eq!(items[0]["asked"], 3);
    assert_eq!(items[0]["approved"], 3);
    let carol = items
        .iter()
        .find(|i| i["target"] == "carol@example.com")
        .unwrap();
    assert_eq!(
        (carol["approved"].as_u64(), carol["rejected"].as_u64()),
        (Some(1), Some(1))
    );
    let suggestions = report["suggestions"].as_array().unwrap();
    assert_eq!(suggestions.len(), 1, "{report}");
    assert_eq!(suggestions[0]["target"], "bob@example.com");
    assert_eq!(suggestions[0]["scope"], "agent");
    assert_eq!(suggestions[0]["scope_id"], agent_id.as_str());
    assert_eq!(suggestions[0]["would_remove"], 3);
    let rules = server
        .client
        .get("/v1/rules", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert!(rules["items"].as_array().unwrap().is_empty());
    // Agents do not read it.
    let refused = server
        .client
        .get("/v1/insights/prompts", &agent)
        .await
        .unwrap();
    assert_eq!(refused.status, 403);
}
