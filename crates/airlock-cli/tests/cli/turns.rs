//! `airlock approvals approve --run RUN_ID` and `reject --run`: every pending approval of
//! one run decided at once (DESIGN.md §11.6), against a real `airlock serve` whose
//! scripted agent asks for three emails in one turn.

use crate::support::{eventually, stderr, stdout, Server};
use serde_json::{json, Value};
use std::time::Duration;

/// Every call is asked.
const POLICY: &str = r#"version = 1
default = "ask"

[tools."email.send"]
risk = "external"
target = "to"
summary = "Send email to {to}"
"#;

/// One turn with three emails, then a closing text.
const SCENARIOS: &str = r##"
[[scenario]]
marker = "#three"
[[scenario.turn]]
events = [
  { type = "tool_use", name = "email.send", arguments = { to = "ann@acme.test", subject = "Hi", body = "1" } },
  { type = "tool_use", name = "email.send", arguments = { to = "ben@acme.test", subject = "Hi", body = "2" } },
  { type = "tool_use", name = "email.send", arguments = { to = "cy@acme.test", subject = "Hi", body = "3" } },
]
[[scenario.turn]]
events = [{ type = "text", text = "done" }]
"##;

fn http(server: &Server, method: &str, path: &str, body: Option<&Value>) -> Value {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let url = format!("{}{path}", server.url);
    let auth = format!("Bearer {}", server.owner_token());
    let response = match (method, body) {
        ("GET", _) => agent.get(&url).header("Authorization", &auth).call(),
        (_, Some(body)) => agent
            .post(&url)
            .header("Authorization", &auth)
            .send_json(body),
        (_, None) => agent.post(&url).header("Authorization", &auth).send_empty(),
    };
    response
        .unwrap()
        .into_body()
        .read_json()
        .unwrap_or(Value::Null)
}

/// Starts a run of the scripted agent and waits until its three approvals are pending.
fn parked_run(server: &Server, agent_id: &str) -> String {
    let session = http(
        server,
        "POST",
        "/v1/sessions",
        Some(&json!({"agent_id": agent_id})),
    );
    let session_id = session["id"].as_str().unwrap();
    let started = http(
        server,
        "POST",
        &format!("/v1/sessions/{session_id}/messages"),
        Some(&json!({"text": "#three"})),
    );
    let run = started["run_id"].as_str().unwrap().to_owned();
    eventually(Duration::from_secs(20), "three pending approvals", || {
        pending_of(server, &run) == 3
    });
    run
}

fn pending_of(server: &Server, run: &str) -> usize {
    let page = http(
        server,
        "GET",
        &format!("/v1/approvals?status=pending&run_id={run}"),
        None,
    );
    page["items"].as_array().map_or(0, Vec::len)
}

#[test]
fn approve_and_reject_decide_a_whole_run_at_once() {
    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let scenarios = work.path().join("three.scenarios.toml");
    std::fs::write(&scenarios, SCENARIOS).unwrap();
    let server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
    let created = http(
        &server,
        "POST",
        "/v1/agents",
        Some(&json!({
            "name": "writer",
            "system_prompt": "test",
            "llm": {"base_url": format!("scripted:{}", scenarios.display()), "model": "script"},
        })),
    );
    let agent_id = created["agent"]["id"].as_str().unwrap().to_owned();
    let agent_token = created["token"].as_str().unwrap().to_owned();

    // approve --run: all three at once; the run then finishes and sends three emails.
    let run = parked_run(&server, &agent_id);
    let output = server.client(&["approvals", "approve", "--run", &run, "--reason", "fine"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(text.matches("approved").count(), 3, "{text}");
    for to in ["ann@acme.test", "ben@acme.test", "cy@acme.test"] {
        assert!(text.contains(&format!("Send email to {to}")), "{text}");
    }
    eventually(Duration::from_secs(20), "the run completes", || {
        http(&server, "GET", &format!("/v1/runs/{run}"), None)["state"] == "completed"
    });
    let outbox = http(&server, "GET", "/v1/outbox", None);
    assert_eq!(outbox["items"].as_array().unwrap().len(), 3, "{outbox}");
    let approved = http(&server, "GET", "/v1/approvals?status=approved", None);
    assert!(approved["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["decision_reason"] == "fine"));

    // Nothing left to decide in that run: a refusal, exit 1.
    let output = server.client(&["approvals", "approve", "--run", &run]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("has no pending approval"),
        "{}",
        stderr(&output)
    );
    // A run that does not exist is a usage error, as any unknown id (404): exit 2.
    let output = server.client(&["approvals", "reject", "--run", "run_nobody_has_this"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no such run"),
        "{}",
        stderr(&output)
    );
    // --run does not go with an edit or a remembered rule: usage, exit 2.
    for extra in [&["--args", "{}"][..], &["--remember", "agent"][..]] {
        let mut args = vec!["approvals", "approve", "--run", &run];
        args.extend_from_slice(extra);
        let output = server.client(&args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{extra:?}: {}",
            stderr(&output)
        );
    }

    // reject --run --json: the batch's results, all rejected; nothing is sent.
    let second = parked_run(&server, &agent_id);
    // Agents never decide: exit 1, and nothing changes.
    let output = server.client_as(&agent_token, &["approvals", "reject", "--run", &second]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(pending_of(&server, &second), 3);
    let output = server.client(&["approvals", "reject", "--run", &second, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let answer: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{answer}");
    assert!(
        results.iter().all(|r| r["status"] == "rejected"),
        "{answer}"
    );
    eventually(Duration::from_secs(20), "the second run completes", || {
        http(&server, "GET", &format!("/v1/runs/{second}"), None)["state"] == "completed"
    });
    let outbox = http(&server, "GET", "/v1/outbox", None);
    assert_eq!(outbox["items"].as_array().unwrap().len(), 3, "{outbox}");
}
