//! What the runtime's tests share: a policy for the built-in tools, a scripted agent with
//! a session, and the steps of a run (post a message, follow its journal, decide).

use crate::support::{SseEvent, SseReader, PATIENCE};
use airlock_testkit::TestServer;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Mail asks, the clock and reads are allowed, one address is prohibited, everything else
/// is asked.
pub const RUNTIME_POLICY: &str = r#"
version = 1
default = "ask"
deadline = "1h"
secrets = "deny"

[[rules]]
name = "clock-is-fine"
tool = "clock.now"
decision = "allow"

[[rules]]
name = "mail-needs-a-person"
tool = "email.send"
decision = "ask"

[[rules]]
name = "never-mail-rivals"
tool = "email.send"
decision = "deny"
reason = "mail to rivals is prohibited"
when = { to = { glob = "*@rival.test" } }
"#;

/// Scenarios keyed by markers in the user's message.
pub const SCENARIOS: &str = r##"
[[scenario]]
marker = "#email"
[[scenario.turn]]
events = [
  { type = "text", text = "Sending the report." },
  { type = "tool_use", name = "email.send", arguments = { to = "bob@example.com", subject = "Report", body = "Hi Bob, the report." } },
]
[[scenario.turn]]
events = [{ type = "text", text = "Carrying on after the email step." }]

[[scenario]]
marker = "#two-emails"
[[scenario.turn]]
events = [
  { type = "tool_use", name = "email.send", arguments = { to = "ann@example.com", subject = "One", body = "first" } },
  { type = "tool_use", name = "email.send", arguments = { to = "cid@example.com", subject = "Two", body = "second" } },
]
[[scenario.turn]]
events = [{ type = "text", text = "Both handled." }]

[[scenario]]
marker = "#rival"
[[scenario.turn]]
events = [{ type = "tool_use", name = "email.send", arguments = { to = "boss@rival.test", subject = "Hi", body = "secret plans" } }]
[[scenario.turn]]
events = [{ type = "text", text = "Understood, I will not mail them." }]

[[scenario]]
marker = "#time"
[[scenario.turn]]
events = [{ type = "tool_use", name = "clock.now", arguments = {} }]
[[scenario.turn]]
events = [{ type = "text", text = "It is late." }]
"##;

/// A scripted agent with a session, on a server under [`RUNTIME_POLICY`].
pub struct Agent {
    pub id: String,
    pub token: String,
    pub session: String,
}

/// Creates a scripted agent (its scenarios in the server's data folder) and a session.
pub async fn scripted_agent(server: &TestServer, name: &str) -> Agent {
    let scenarios = server.data_dir().join(format!("{name}.scenarios.toml"));
    std::fs::write(&scenarios, SCENARIOS).unwrap();
    let llm = json!({"base_url": format!("scripted:{}", scenarios.display()), "model": "script"});
    agent_with_llm(server, name, llm, None).await
}

/// Creates an agent with these `llm` settings (and mode) and a session for it.
pub async fn agent_with_llm(
    server: &TestServer,
    name: &str,
    llm: Value,
    mode: Option<&str>,
) -> Agent {
    let mut body = json!({"name": name, "llm": llm, "system_prompt": "You are a test agent."});
    if let Some(mode) = mode {
        body["mode"] = json!(mode);
    }
    let (id, token) = create_agent(server, &body).await;
    let session = new_session(server, &id).await;
    Agent { id, token, session }
}

/// Creates an agent from a `POST /v1/agents` body: its id and token.
pub async fn create_agent(server: &TestServer, body: &Value) -> (String, String) {
    let created = server
        .client
        .post("/v1/agents", &server.owner_token, body)
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    (
        created["agent"]["id"].as_str().unwrap().to_owned(),
        created["token"].as_str().unwrap().to_owned(),
    )
}

/// A scripted agent named `name` working in `<data>/<name>-workspace`, `scenarios` (TOML)
/// its script: the folder and a new session of it.
pub async fn workspace_agent(
    server: &TestServer,
    name: &str,
    scenarios: &str,
) -> (std::path::PathBuf, String) {
    let file = server.data_dir().join(format!("{name}.toml"));
    std::fs::write(&file, scenarios).unwrap();
    let workspace = server.data_dir().join(format!("{name}-workspace"));
    let body = json!({
        "name": name,
        "workspace_dir": workspace.display().to_string(),
        "llm": {"base_url": format!("scripted:{}", file.display()), "model": "script"},
    });
    let (id, _) = create_agent(server, &body).await;
    (workspace, new_session(server, &id).await)
}

pub async fn new_session(server: &TestServer, agent_id: &str) -> String {
    server
        .client
        .post(
            "/v1/sessions",
            &server.owner_token,
            &json!({"agent_id": agent_id, "title": "test"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A server on a manual clock under [`RUNTIME_POLICY`].
pub async fn runtime_server() -> TestServer {
    let server = TestServer::start_manual().await.unwrap();
    server.put_policy(RUNTIME_POLICY).await.unwrap();
    server
}

/// Posts a message as the owner; returns the run id.
pub async fn say(server: &TestServer, session: &str, text: &str) -> String {
    server
        .client
        .post(
            &format!("/v1/sessions/{session}/messages"),
            &server.owner_token,
            &json!({ "text": text }),
        )
        .await
        .unwrap()
        .expect_status(202)
        .unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub async fn run(server: &TestServer, run_id: &str) -> Value {
    server
        .client
        .get(&format!("/v1/runs/{run_id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()
}

/// Waits (bounded) until the run is in `state`; returns it.
pub async fn until_state(server: &TestServer, run_id: &str, state: &str) -> Value {
    let start = Instant::now();
    loop {
        let run = run(server, run_id).await;
        if run["state"] == state {
            return run;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the run never reached {state}: {run}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads the run's journal from the start until an event of `kind` arrives; returns
/// every event read, as JSON.
pub async fn journal_until(server: &TestServer, run_id: &str, kind: &str) -> Vec<Value> {
    let mut reader = SseReader::open_path(
        server,
        &server.owner_token,
        &format!("/v1/runs/{run_id}/events?after=0"),
        None,
    )
    .await;
    let mut events = Vec::new();
    loop {
        let event: SseEvent = reader.next().await;
        let value: Value = serde_json::from_str(&event.data).unwrap();
        assert_eq!(event.id.as_deref(), Some(value["seq"].to_string().as_str()));
        let done = value["kind"] == kind;
        events.push(value);
        if done {
            return events;
        }
    }
}

/// The whole journal of an ended run (the stream ends after its last event).
pub async fn whole_journal(server: &TestServer, run_id: &str) -> Vec<Value> {
    let mut reader = SseReader::open_path(
        server,
        &server.owner_token,
        &format!("/v1/runs/{run_id}/events"),
        None,
    )
    .await;
    reader
        .read_to_end()
        .await
        .into_iter()
        .map(|event| serde_json::from_str(&event.data).unwrap())
        .collect()
}

pub fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|event| event["kind"].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts `seq` runs 1..n with no gap.
pub fn assert_continuous(events: &[Value]) {
    for (position, event) in events.iter().enumerate() {
        assert_eq!(
            event["seq"].as_u64().unwrap(),
            position as u64 + 1,
            "gap in {events:#?}"
        );
    }
}

pub async fn approval(server: &TestServer, approval_id: &str) -> Value {
    server
        .client
        .get(&format!("/v1/approvals/{approval_id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()
}

pub async fn pending_approvals(server: &TestServer) -> Vec<Value> {
    server
        .client
        .get("/v1/approvals?status=pending", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()["items"]
        .as_array()
        .unwrap()
        .clone()
}

pub async fn outbox(server: &TestServer) -> Vec<Value> {
    server
        .client
        .get("/v1/outbox", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()["items"]
        .as_array()
        .unwrap()
        .clone()
}

pub async fn messages(server: &TestServer, session: &str) -> Vec<Value> {
    server
        .client
        .get(
            &format!("/v1/sessions/{session}/messages"),
            &server.owner_token,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()["items"]
        .as_array()
        .unwrap()
        .clone()
}

/// The final reply of a run: the last assistant message carrying the run's id.
pub async fn reply(server: &TestServer, session: &str, run_id: &str) -> Value {
    messages(server, session)
        .await
        .into_iter()
        .rev()
        .find(|m| m["role"] == "assistant" && m["run_id"] == run_id)
        .unwrap_or_else(|| panic!("run {run_id} has no reply"))
}

/// Decides an approval as the owner with its own digest (and a reason).
pub async fn decide(server: &TestServer, approval_id: &str, decision: &str, reason: &str) -> u16 {
    let approval = approval(server, approval_id).await;
    server
        .client
        .post(
            &format!("/v1/approvals/{approval_id}/decision"),
            &server.owner_token,
            &json!({"decision": decision, "binding_digest": approval["binding_digest"], "reason": reason}),
        )
        .await
        .unwrap()
        .status
        .as_u16()
}

/// The approval ids a suspended run waits for, from its journal.
pub fn approvals_required(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == "approval_required")
        .map(|e| e["data"]["approval_id"].as_str().unwrap().to_owned())
        .collect()
}
