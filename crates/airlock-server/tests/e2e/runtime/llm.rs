//! The real OpenAI-compatible client path against a local fake model server (it records
//! every request): DESIGN.md §10 behaviour 13, streaming, retries, malformed output and
//! timeouts as the runtime sees them.

use super::support::*;
use crate::support::audit_records;
use airlock_gate::audit::verify_export;
use airlock_llm::fake::{FakeOpenAi, FakeReply};
use airlock_testkit::TestServer;
use serde_json::{json, Value};
use std::time::Duration;

const DENY_BY_DEFAULT: &str = r#"
version = 1
default = "deny"
"#;

async fn server_with_model(policy: &str, stream: bool) -> (TestServer, FakeOpenAi, Agent) {
    let server = TestServer::start().await.unwrap();
    server.put_policy(policy).await.unwrap();
    let model = FakeOpenAi::start().await;
    let agent = agent_with_llm(
        &server,
        "gpt",
        json!({"base_url": model.base_url(), "model": "fake-1", "stream": stream}),
        None,
    )
    .await;
    (server, model, agent)
}

/// The tool message of a request's conversation for this tool call id.
fn tool_message(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap_or_else(|| panic!("no tool message in {request}"))
}

/// Behaviour 13: the model reads a file no rule allows under `default = "deny"`; the next
/// request's tool message is `Denied: <reason>`; the audit holds the decision with tool,
/// exact arguments, outcome and no grant; the exported chain verifies with no torn tail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b13_denied_read_reaches_the_model_over_the_wire() {
    for stream in [false, true] {
        let (server, model, agent) = server_with_model(DENY_BY_DEFAULT, stream).await;
        model.push(FakeReply::ToolCalls(vec![(
            "fs_read".into(),
            json!({"path": "notes/secret-plan.txt"}),
        )]));
        model.push(FakeReply::Text("I may not read it.".into()));
        let run_id = say(&server, &agent.session, "read my plan").await;
        until_state(&server, &run_id, "completed").await;

        let requests = model.requests();
        assert_eq!(requests.len(), 2, "stream={stream}");
        assert_eq!(requests[0]["model"], "fake-1");
        let tools: Vec<&str> = requests[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(tools.contains(&"fs_read"), "{tools:?}");
        assert_eq!(requests[0]["messages"][0]["role"], "system");
        let told = tool_message(&requests[1]);
        let content = told["content"].as_str().unwrap();
        assert!(content.starts_with("Denied: "), "{content}");
        assert!(content.contains("default is deny"), "{content}");

        let denied: Vec<Value> = audit_records(&server)
            .await
            .into_iter()
            .filter(|r| r["kind"] == "call.denied")
            .collect();
        assert_eq!(denied.len(), 1);
        let data = &denied[0]["data"];
        assert_eq!(data["tool"], "fs.read");
        assert_eq!(data["arguments"], json!({"path": "notes/secret-plan.txt"}));
        assert_eq!(data["outcome"], "denied");
        assert!(data["grant_id"].is_null(), "{data}");

        let export = server
            .client
            .get("/v1/audit/export", &server.owner_token)
            .await
            .unwrap();
        assert_eq!(export.status, 200);
        let report = verify_export(&export.text);
        assert!(report.ok, "{report:?}");
        assert!(!report.torn_tail, "{report:?}");
        let reply = reply(&server, &agent.session, &run_id).await;
        assert_eq!(reply["text"], "I may not read it.");
        assert_eq!(reply["steps"][0]["status"], "denied");
    }
}

/// Streamed text reaches the journal as `text_delta` events, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_text_is_journaled_as_deltas() {
    let (server, model, agent) = server_with_model(DENY_BY_DEFAULT, true).await;
    model.push(FakeReply::Text(
        "Hello there, this streams in pieces.".into(),
    ));
    let run_id = say(&server, &agent.session, "hi").await;
    let journal = whole_journal(&server, &run_id).await;
    let text: String = journal
        .iter()
        .filter(|e| e["kind"] == "text_delta")
        .map(|e| e["data"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello there, this streams in pieces.");
    assert_eq!(kinds(&journal).last().unwrap(), "run_completed");
    assert_continuous(&journal);
}

/// A 500 is retried and the run completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_retried() {
    let (server, model, agent) = server_with_model(DENY_BY_DEFAULT, false).await;
    model.push(FakeReply::Status(500, "overloaded".into()));
    model.push(FakeReply::Text("Recovered.".into()));
    let run_id = say(&server, &agent.session, "hi").await;
    until_state(&server, &run_id, "completed").await;
    assert_eq!(model.requests().len(), 2);
    assert_eq!(
        reply(&server, &agent.session, &run_id).await["text"],
        "Recovered."
    );
}

/// Malformed model output fails the run with a clear error; nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_model_output_fails_the_run_clearly() {
    let (server, model, agent) = server_with_model(DENY_BY_DEFAULT, false).await;
    model.push(FakeReply::Raw("this is not json".into()));
    let run_id = say(&server, &agent.session, "hi").await;
    let run = until_state(&server, &run_id, "failed").await;
    let error = run["error"].as_str().unwrap();
    assert!(error.starts_with("the model failed:"), "{error}");
    let journal = whole_journal(&server, &run_id).await;
    assert_eq!(kinds(&journal).last().unwrap(), "run_failed");
}

/// A model slower than the client's timeout fails the run after the retries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_timeout_fails_the_run() {
    let (server, model, agent) = server_with_model(DENY_BY_DEFAULT, false).await;
    for _ in 0..3 {
        model.push(FakeReply::Delay(
            Duration::from_secs(5),
            Box::new(FakeReply::Text("too late".into())),
        ));
    }
    let run_id = say(&server, &agent.session, "hi").await;
    let start = std::time::Instant::now();
    let run = loop {
        let run = run(&server, &run_id).await;
        if run["state"] == "failed" {
            break run;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(run["error"].as_str().unwrap().contains("the model failed"));
}

/// A model that answers after the run's lease ran out (a slow local model): the node
/// driving the run never takes it over from itself. Its sweeper, ticking while the leg
/// waits, sees the expired lease; a second leg there would hold the same lease name as
/// the first, so no write would fence either, and both would drive the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_slower_than_the_lease_keeps_one_leg_on_the_run() {
    let server = TestServer::start_manual().await.unwrap();
    server.put_policy(DENY_BY_DEFAULT).await.unwrap();
    let model = FakeOpenAi::start().await;
    let agent = agent_with_llm(
        &server,
        "slow",
        json!({"base_url": model.base_url(), "model": "fake-1"}),
        None,
    )
    .await;
    // Well inside the test client's 2 s timeout, so no retry asks twice; longer than the
    // sweeper's 1 s tick, so it looks at least once while the lease has run out.
    model.push(FakeReply::Delay(
        Duration::from_millis(1500),
        Box::new(FakeReply::Text("done, slowly".into())),
    ));
    let run_id = say(&server, &agent.session, "take your time").await;
    let start = std::time::Instant::now();
    while model.requests().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the model was never asked"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server
        .advance(airlock_agent::LEASE + Duration::from_secs(1))
        .unwrap();
    until_state(&server, &run_id, "completed").await;

    let journal = whole_journal(&server, &run_id).await;
    let resumed = kinds(&journal)
        .iter()
        .filter(|kind| *kind == "run_resumed")
        .count();
    assert_eq!(resumed, 0, "the node claimed its own live run: {journal:?}");
    assert_eq!(model.requests().len(), 1, "the model was asked twice");
}
