//! Changing a policy safely (DESIGN.md §11.5), on both backends: `PUT /v1/policy?dry_run=true`
//! replays the recorded calls under a candidate with the standing rules live at each
//! call's time and saves nothing; every endpoint refuses a query parameter it does not
//! know; `GET /v1/insights` learns a rule from repeated approvals of exec calls.

use crate::support::{ask, decide, manual_server, POLICY};
use airlock_protocol::{Decision, ReplayReport};
use serde_json::{json, Value};
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

async fn dry_run(server: &airlock_testkit::TestServer, query: &str, source: &str) -> ReplayReport {
    let answer = server
        .client
        .put_text(
            &format!("/v1/policy?dry_run=true{query}"),
            &server.owner_token,
            source,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    serde_json::from_value(answer).unwrap()
}

async fn submit(
    server: &airlock_testkit::TestServer,
    agent: &str,
    tool: &str,
    args: Value,
) -> Value {
    server
        .submit(agent, tool, args)
        .await
        .unwrap()
        .expect_status(201)
        .unwrap()
}

/// The owner decides the approval `id` as its page shows it (its binding digest).
async fn decide_by_id(server: &airlock_testkit::TestServer, id: &str, decision: &str) {
    let approval = server
        .client
        .get(&format!("/v1/approvals/{id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    decide(server, &server.owner_token, &approval, decision)
        .await
        .expect_status(200)
        .unwrap();
}

#[tokio::test]
async fn a_dry_run_replays_under_the_standing_rules_live_at_each_call_and_saves_nothing() {
    let (server, agent) = manual_server(POLICY).await;
    let agents = server
        .client
        .get("/v1/agents", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let agent_id = agents["items"][0]["id"].as_str().unwrap().to_owned();
    let mail = || json!({"to": "bob@acme.test", "body": "hello"});

    // 1: asked, no standing rule yet.
    let first = submit(&server, &agent, "email.send", mail()).await;
    assert_eq!(first["status"], "pending");
    server.advance(HOUR).unwrap();
    // 2: a standing rule for bob, then a call it allows.
    let rule = server
        .client
        .post(
            "/v1/rules",
            &server.owner_token,
            &json!({"tool": "email.send", "target": "bob@acme.test", "scope": "agent", "scope_id": agent_id}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    server.advance(HOUR).unwrap();
    let second = submit(&server, &agent, "email.send", mail()).await;
    assert_eq!(second["status"], "allowed", "{second}");
    // 3: the rule revoked, the same call is asked again.
    server
        .client
        .delete(
            &format!("/v1/rules/{}", rule["id"].as_str().unwrap()),
            &server.owner_token,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    server.advance(HOUR).unwrap();
    let third = submit(&server, &agent, "email.send", mail()).await;
    assert_eq!(third["status"], "pending");
    // 4, 5: a read (allowed) and a destructive command (denied).
    submit(&server, &agent, "fs.read", json!({"path": "/p/a"})).await;
    let denied = submit(
        &server,
        &agent,
        "shell.exec",
        json!({"command": "rm -rf /"}),
    )
    .await;
    assert_eq!(denied["status"], "denied");
    let before = server
        .client
        .get("/v1/policy", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();

    // The same policy changes nothing: the standing rule counts for the second call only.
    let same = dry_run(&server, "", POLICY).await;
    assert_eq!(same.calls, 5, "{same:?}");
    assert_eq!(same.changed, 0, "{same:?}");
    assert_eq!(same.before.ask, 2);
    assert_eq!(same.prompts_per_100_before, 40.0);

    // Reads now asked: one tightening. Were the rule applied at every time (or never),
    // the mail calls would move too.
    let tighter = POLICY.replace(
        "name = \"reads-are-fine\"\ntool = \"fs.read\"\ndecision = \"allow\"",
        "name = \"reads-are-asked\"\ntool = \"fs.read\"\ndecision = \"ask\"",
    );
    let report = dry_run(&server, "&since=7d", &tighter).await;
    assert_eq!(report.changed, 1, "{report:?}");
    assert_eq!(report.toward_allow, 0);
    assert_eq!(report.changes[0].tool, "fs.read");
    assert_eq!(report.changes[0].to, Decision::Ask);
    assert_eq!(
        report.changes[0].rule_after.as_deref(),
        Some("reads-are-asked")
    );
    assert_eq!(report.prompts_per_100_after, 60.0);

    // Loosening: the destructive-shell deny gone. Changes toward allow come first.
    let looser = format!(
        "{}\n[[rules]]\nname = \"reads-are-asked\"\ntool = \"fs.read\"\ndecision = \"ask\"\n",
        POLICY.replace(
            "decision = \"deny\"\nreason = \"destructive command\"",
            "decision = \"ask\"\nreason = \"destructive command\""
        )
    );
    let report = dry_run(&server, "", &looser).await;
    assert_eq!(report.toward_allow, 1, "{report:?}");
    assert!(report.changes[0].toward_allow);
    assert_eq!(report.changes[0].id, denied["id"].as_str().unwrap());
    assert_eq!(report.transitions[0].from, Decision::Deny);
    assert_eq!(report.transitions[0].to, Decision::Ask);

    // A window that holds none of the calls.
    server.advance(HOUR).unwrap();
    let empty = dry_run(&server, "&since=30m", &looser).await;
    assert_eq!(empty.calls, 0, "{empty:?}");

    // Nothing was saved by any of it.
    let after = server
        .client
        .get("/v1/policy", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(before["version"], after["version"]);
    assert_eq!(before["digest"], after["digest"]);
}

#[tokio::test]
async fn a_candidate_that_does_not_load_or_a_wrong_query_gets_422_and_saves_nothing() {
    let (server, _agent) = manual_server(POLICY).await;
    let before = server
        .client
        .get("/v1/policy", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let broken = "version = 1\ndefault = \"sometimes\"\n";
    let reply = server
        .client
        .put_text("/v1/policy?dry_run=true", &server.owner_token, broken)
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert!(
        reply.body.to_string().contains("2:"),
        "a position: {}",
        reply.body
    );

    for (path, name) in [
        ("/v1/policy?dry_runn=true", "dry_runn"),
        ("/v1/policy?since=7d", "since"),
    ] {
        let reply = server
            .client
            .put_text(path, &server.owner_token, POLICY)
            .await
            .unwrap();
        assert_eq!(reply.status, 422, "{path}: {:?}", reply.body);
        assert!(
            reply.body["detail"].as_str().unwrap().contains(name),
            "{:?}",
            reply.body
        );
    }
    let reply = server
        .client
        .put_text(
            "/v1/policy?dry_run=true&since=soon",
            &server.owner_token,
            POLICY,
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    // Routes with no query struct refuse too, naming the parameter.
    for path in [
        "/v1/policy?verbose=1",
        "/v1/agents?page=2",
        "/v1/approvals?bogus=1",
    ] {
        let reply = server.client.get(path, &server.owner_token).await.unwrap();
        assert_eq!(reply.status, 422, "{path}: {:?}", reply.body);
        let name = path.split('?').nth(1).unwrap().split('=').next().unwrap();
        assert!(
            reply.body["detail"].as_str().unwrap().contains(name),
            "{path}: {:?}",
            reply.body
        );
    }
    // A parameter the route declares still works.
    server
        .client
        .get("/v1/approvals?limit=5", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let policy = server
        .client
        .get("/v1/policy", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(
        policy["version"], before["version"],
        "nothing was saved: {policy}"
    );
}

#[tokio::test]
async fn insights_learn_an_exec_rule_from_repeated_approvals_and_drop_one_that_would_flip_a_rejection(
) {
    let (server, agent) = manual_server(POLICY).await;
    let mut decide_all = Vec::new();
    for command in [
        "cargo test",
        "cargo test -p a",
        "cargo test -p b",
        "make deploy",
        "make deploy",
        "make deploy",
    ] {
        let call = submit(&server, &agent, "shell.exec", json!({"command": command})).await;
        assert_eq!(call["status"], "pending", "{call}");
        decide_all.push((command, call["approval_id"].as_str().unwrap().to_owned()));
    }
    let mut rejected_once = false;
    for (command, id) in &decide_all {
        // One `make deploy` is rejected: no rule may be learned for it.
        let decision = if command.starts_with("make") && !rejected_once {
            rejected_once = true;
            "reject"
        } else {
            "approve"
        };
        decide_by_id(&server, id, decision).await;
    }
    let learned = server
        .client
        .get("/v1/insights", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let rules = learned["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1, "{learned}");
    assert_eq!(rules[0]["prefix"], "cargo test");
    assert_eq!(rules[0]["approved"], 3);
    assert_eq!(rules[0]["replay"]["toward_allow"], 3, "{learned}");
    assert!(rules[0]["rule"]
        .as_str()
        .unwrap()
        .contains("prefix = [\"cargo test\"]"));
    // Six exec decisions, one a rejection: not rubber-stamping.
    assert_eq!(learned["rubber_stamping"], json!([]));

    // Ten mails approved, every one at once (the clock does not move): rubber-stamping.
    for n in 0..10 {
        let (_, approval) = ask(&server, &agent, &format!("p{n}@acme.test")).await;
        decide(&server, &server.owner_token, &approval, "approve")
            .await
            .expect_status(200)
            .unwrap();
    }
    let learned = server
        .client
        .get("/v1/insights", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let flagged = learned["rubber_stamping"].as_array().unwrap();
    assert_eq!(flagged.len(), 1, "{learned}");
    assert_eq!(flagged[0]["tool"], "email.send");
    assert_eq!(flagged[0]["approved"], 10);
    assert_eq!(flagged[0]["median_decision_seconds"], 0.0);
}

/// A policy that asks about every shell command and every file write.
const ASKING: &str = r#"
version = 1
default = "ask"
deadline = "1h"

[tools."shell.exec"]
risk = "exec"

[tools."fs.write"]
risk = "write"
target = "path"
summary = "Write {path}"
"#;

#[tokio::test]
async fn insights_learn_class_and_folder_patterns_and_never_a_class_that_needs_a_person() {
    let (server, agent) = manual_server(ASKING).await;
    let project = tempfile::tempdir().unwrap();
    let cwd = project.path().to_str().unwrap().to_owned();
    let mut asked = Vec::new();
    let calls = [
        // Compound build commands: not one plain command, so no prefix; their classes are
        // build + read_only, and they change nothing outside the project.
        (
            "shell.exec",
            json!({"command": "cargo build 2>&1 | tail -n 5"}),
        ),
        (
            "shell.exec",
            json!({"command": "cargo build -p a 2>&1 | tail -n 20"}),
        ),
        (
            "shell.exec",
            json!({"command": "cargo build --release 2>&1 | head -n 3"}),
        ),
        // Pushes are vcs_remote: approved as often, but never learned.
        (
            "shell.exec",
            json!({"command": "git add -A && git push origin main"}),
        ),
        (
            "shell.exec",
            json!({"command": "git commit -am x && git push origin dev"}),
        ),
        ("shell.exec", json!({"command": "git add . && git push"})),
        // Writes in one folder of the project.
        (
            "fs.write",
            json!({"path": format!("{cwd}/docs/a.md"), "content": "a"}),
        ),
        (
            "fs.write",
            json!({"path": format!("{cwd}/docs/b.md"), "content": "b"}),
        ),
        ("fs.write", json!({"path": "docs/c.md", "content": "c"})),
    ];
    for (tool, arguments) in calls {
        let call = server
            .client
            .post(
                "/v1/calls",
                &agent,
                &json!({"tool": tool, "arguments": arguments, "cwd": cwd}),
            )
            .await
            .unwrap()
            .expect_status(201)
            .unwrap();
        assert_eq!(call["status"], "pending", "{call}");
        asked.push(call["approval_id"].as_str().unwrap().to_owned());
    }
    for id in &asked {
        decide_by_id(&server, id, "approve").await;
    }
    let learned = server
        .client
        .get("/v1/insights", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let rules = learned["rules"].as_array().unwrap();
    let find = |kind: &str| {
        rules
            .iter()
            .find(|rule| rule["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} rule: {learned}"))
    };
    let class = find("class");
    assert_eq!(class["tool"], "shell.exec");
    assert_eq!(
        class["pattern"], "build + read_only in {project}",
        "{learned}"
    );
    assert_eq!(class["approved"], 3);
    assert_eq!(class["replay"]["toward_allow"], 3, "{learned}");
    assert!(class.get("prefix").is_none(), "{class}");
    assert!(class["rule"]
        .as_str()
        .unwrap()
        .contains(r#"class = ["build", "read_only"], paths = ["{project}/**"]"#));
    let folder = find("path");
    assert_eq!(folder["tool"], "fs.write");
    assert_eq!(folder["pattern"], "{project}/docs/**", "{learned}");
    assert_eq!(folder["approved"], 3);
    assert_eq!(folder["replay"]["toward_allow"], 3, "{learned}");
    // Nothing was learned for the pushes, however often approved.
    assert!(
        rules.iter().all(
            |rule| !rule["rule"].as_str().unwrap().contains("vcs_remote")
                && !rule["pattern"].as_str().unwrap().contains("git")
        ),
        "{learned}"
    );
    assert_eq!(rules.len(), 2, "{learned}");
}
