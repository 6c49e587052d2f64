//! The model is the party airlock must not trust: what it sends over the wire, however
//! odd, never makes a call run unseen, drops a call, or puts a secret in the journal.
//! Each test speaks the OpenAI wire format through the fake model server.

use super::support::*;
use crate::support::audit_records;
use airlock_llm::fake::{FakeOpenAi, FakeReply};
use airlock_testkit::TestServer;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

async fn server_with_model(stream: bool) -> (TestServer, FakeOpenAi, Agent) {
    let server = TestServer::start().await.unwrap();
    server.put_policy(RUNTIME_POLICY).await.unwrap();
    let model = FakeOpenAi::start().await;
    let agent = agent_with_llm(
        &server,
        "wire",
        json!({"base_url": model.base_url(), "model": "fake-1", "stream": stream}),
        None,
    )
    .await;
    (server, model, agent)
}

/// Every assistant tool call of a request's conversation is answered by exactly one tool
/// message with its id, and no two calls share an id; returns the tool messages' contents
/// by id.
fn answered_calls(request: &Value) -> Vec<(String, String)> {
    let messages = request["messages"].as_array().unwrap();
    let asked: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|call| call["id"].as_str().unwrap().to_owned())
        .collect();
    let unique: HashSet<&String> = asked.iter().collect();
    assert_eq!(
        unique.len(),
        asked.len(),
        "two calls share an id: {asked:?}"
    );
    let answers: Vec<(String, String)> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let answered: Vec<&String> = answers.iter().map(|(id, _)| id).collect();
    assert_eq!(
        answered,
        asked.iter().collect::<Vec<_>>(),
        "each call answered once, in order"
    );
    answers
}

/// F1: two tool calls of one turn share an id. The first is denied by policy, the second
/// is asked; the person approves the second. Each call is its own step, and exactly the
/// call the person saw runs: the denied one never does (G1, G2, G5), and the model gets
/// one answer per call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_calls_with_one_id_are_gated_and_run_each_as_itself() {
    for stream in [false, true] {
        let (server, model, agent) = server_with_model(stream).await;
        let rival =
            json!({"to": "boss@rival.test", "subject": "customer list", "body": "all of them"});
        let lunch = json!({"to": "bob@example.com", "subject": "lunch", "body": "noon?"});
        model.push(FakeReply::ToolCallsWithIds(vec![
            (Some("dup".into()), "email_send".into(), rival.clone()),
            (Some("dup".into()), "email_send".into(), lunch.clone()),
        ]));
        model.push(FakeReply::Text("Done.".into()));
        let run_id = say(&server, &agent.session, "mail them").await;
        let events = journal_until(&server, &run_id, "run_suspended").await;

        let view = run(&server, &run_id).await;
        let steps = view["steps"].as_array().unwrap();
        assert_eq!(
            steps.len(),
            2,
            "one step per call (stream={stream}): {view}"
        );
        assert_eq!(steps[0]["arguments"], rival);
        assert_eq!(steps[0]["status"], "denied");
        assert_eq!(steps[1]["arguments"], lunch);
        assert_ne!(steps[0]["tool_call_id"], steps[1]["tool_call_id"]);
        let waiting = approvals_required(&events);
        assert_eq!(waiting.len(), 1, "{events:?}");
        let shown = approval(&server, &waiting[0]).await;
        assert_eq!(shown["preview"]["arguments"], lunch);

        assert_eq!(decide(&server, &waiting[0], "approve", "fine").await, 200);
        until_state(&server, &run_id, "completed").await;
        let sent: Vec<Value> = outbox(&server)
            .await
            .iter()
            .map(|item| item["recipient"].clone())
            .collect();
        assert_eq!(sent, [json!("bob@example.com")], "stream={stream}");

        let requests = model.requests();
        assert_eq!(requests.len(), 2);
        let answers = answered_calls(&requests[1]);
        assert_eq!(answers.len(), 2);
        assert!(answers[0].1.starts_with("Denied: "), "{answers:?}");
        assert!(answers[1].1.contains("queued"), "{answers:?}");
        let granted: Vec<Value> = audit_records(&server)
            .await
            .into_iter()
            .filter(|r| r["kind"] == "approval.requested")
            .map(|r| r["data"]["arguments"].clone())
            .collect();
        assert_eq!(granted, [lunch]);
    }
}

/// F2: a server that gives its tool calls no id. Every call of every turn is gated, run
/// and answered, each under an id of its own; none is dropped from the second turn on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_without_ids_are_each_run_and_answered_in_every_turn() {
    for stream in [false, true] {
        let (server, model, agent) = server_with_model(stream).await;
        let clock = || FakeReply::ToolCallsWithIds(vec![(None, "clock_now".into(), json!({}))]);
        model.push(clock());
        model.push(FakeReply::ToolCallsWithIds(vec![
            (None, "clock_now".into(), json!({})),
            (None, "clock_now".into(), json!({})),
        ]));
        model.push(FakeReply::Text("It is late.".into()));
        let run_id = say(&server, &agent.session, "what time is it").await;
        until_state(&server, &run_id, "completed").await;

        let steps = reply(&server, &agent.session, &run_id).await["steps"].clone();
        let steps = steps.as_array().unwrap();
        assert_eq!(steps.len(), 3, "stream={stream}: {steps:?}");
        for step in steps {
            assert_eq!(step["status"], "ok", "{step}");
        }
        let requests = model.requests();
        assert_eq!(requests.len(), 3);
        assert_eq!(answered_calls(&requests[1]).len(), 1);
        assert_eq!(answered_calls(&requests[2]).len(), 3);
        let journal = whole_journal(&server, &run_id).await;
        let decided = kinds(&journal)
            .iter()
            .filter(|kind| *kind == "tool_finished")
            .count();
        assert_eq!(decided, 3);
    }
}

/// F4: a streamed answer whose API key and token arrive split across chunks: no chunk
/// holds a whole secret, and yet neither reaches the journal in clear (G9).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_streamed_in_pieces_never_reaches_the_journal() {
    let (server, model, agent) = server_with_model(true).await;
    let answer = "Here is the key you asked for: sk-proj-Abcd1234Efgh5678Ijkl9012Mnop\n\
                  and the token ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 too.\nBye.";
    let pieces: Vec<String> = answer
        .chars()
        .collect::<Vec<_>>()
        .chunks(8)
        .map(|chunk| chunk.iter().collect())
        .collect();
    // Paced like a real model, so that the runtime sees the chunks one by one.
    model.push(FakeReply::Paced(
        Duration::from_millis(20),
        Box::new(FakeReply::TextInPieces(pieces)),
    ));
    let run_id = say(&server, &agent.session, "show me the key").await;
    until_state(&server, &run_id, "completed").await;
    let journal = whole_journal(&server, &run_id).await;
    let streamed: String = journal
        .iter()
        .filter(|e| e["kind"] == "text_delta")
        .map(|e| e["data"]["text"].as_str().unwrap())
        .collect();
    for secret in ["Abcd1234Efgh5678", "a1B2c3D4e5F6g7H8"] {
        assert!(!streamed.contains(secret), "{secret} in clear: {streamed}");
        assert!(!journal.iter().any(|e| e.to_string().contains(secret)));
    }
    assert!(streamed.contains("[REDACTED:api_key]"), "{streamed}");
    assert!(streamed.ends_with("Bye."), "{streamed}");
}
