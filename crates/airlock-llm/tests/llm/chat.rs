//! Successful turns: text and tool calls, streamed and not, and the wire shape of requests.

use airlock_llm::fake::{FakeOpenAi, FakeReply};
use airlock_llm::{ChatMessage, ChatRequest, ToolCall};
use serde_json::json;

use super::harness::{client, complete, email_send, request};

#[tokio::test]
async fn non_streaming_text() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::Text("Hello there, Bob.".into()));
    let (completion, deltas) = complete(&client(&fake, false), &request("hi")).await;
    let completion = completion.unwrap();
    assert_eq!(completion.text.as_deref(), Some("Hello there, Bob."));
    assert_eq!(completion.finish_reason.as_deref(), Some("stop"));
    assert!(completion.tool_calls.is_empty());
    assert_eq!(deltas, ["Hello there, Bob."], "the whole text once");
    assert_eq!(fake.requests()[0]["stream"], json!(false));
}

#[tokio::test]
async fn streaming_text_arrives_in_order() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::Text("The quick brown fox jumps.".into()));
    let (completion, deltas) = complete(&client(&fake, true), &request("hi")).await;
    let completion = completion.unwrap();
    assert_eq!(deltas, ["The", " quick", " brown", " fox", " jumps."]);
    assert_eq!(deltas.concat(), "The quick brown fox jumps.");
    assert_eq!(
        completion.text.as_deref(),
        Some("The quick brown fox jumps.")
    );
    assert_eq!(completion.finish_reason.as_deref(), Some("stop"));
    assert_eq!(fake.requests()[0]["stream"], json!(true));
}

/// The model answers with the wire name; the caller sees the airlock name.
async fn tool_calls_map_back(stream: bool) {
    let fake = FakeOpenAi::start().await;
    let arguments =
        json!({"to": "bob@example.com", "subject": "Report", "body": "Hi Bob, all done."});
    fake.push(FakeReply::ToolCallsWithText(
        "Sending it.".into(),
        vec![
            ("email_send".into(), arguments.clone()),
            ("not_offered".into(), json!({})),
        ],
    ));
    let (completion, deltas) = complete(&client(&fake, stream), &request("#email")).await;
    let completion = completion.unwrap();
    assert_eq!(completion.text.as_deref(), Some("Sending it."));
    assert_eq!(deltas.concat(), "Sending it.");
    assert_eq!(completion.finish_reason.as_deref(), Some("tool_calls"));
    let calls = &completion.tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].name, "email.send");
    assert_eq!(calls[0].id, "call_fake_1_0");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&calls[0].arguments).unwrap(),
        arguments
    );
    assert_eq!(
        calls[1].name, "not_offered",
        "unknown names pass through unchanged"
    );
    // The tool was offered under its wire name.
    assert_eq!(
        fake.requests()[0]["tools"][0]["function"]["name"],
        "email_send"
    );
}

#[tokio::test]
async fn tool_calls_not_streamed_map_back_to_airlock_names() {
    tool_calls_map_back(false).await;
}

#[tokio::test]
async fn tool_calls_streamed_in_fragments_map_back_to_airlock_names() {
    tool_calls_map_back(true).await;
}

#[tokio::test]
async fn the_request_body_has_the_openai_shapes() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::Text("ok".into()));
    let request = ChatRequest {
        messages: vec![
            ChatMessage::System {
                content: "Be brief.".into(),
            },
            ChatMessage::User {
                content: "Mail Bob".into(),
            },
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "email.send".into(),
                    arguments: r#"{"to":"bob"}"#.into(),
                }],
            },
            ChatMessage::Tool {
                tool_call_id: "call_1".into(),
                content: "Denied: no".into(),
            },
            ChatMessage::Assistant {
                content: Some("It was denied.".into()),
                tool_calls: vec![],
            },
        ],
        tools: vec![email_send()],
    };
    complete(&client(&fake, false), &request).await.0.unwrap();
    let body = &fake.requests()[0];
    assert_eq!(body["model"], "test-model");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Mail Bob"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "email_send", "arguments": "{\"to\":\"bob\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Denied: no"},
            {"role": "assistant", "content": "It was denied."},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "email_send", "description": "Send an email",
            "parameters": {"type": "object", "properties": {"to": {"type": "string"}}}}}])
    );
    let headers = &fake.headers()[0];
    assert!(headers
        .iter()
        .any(|(name, value)| name == "content-type" && value == "application/json"));
    assert!(
        !headers.iter().any(|(name, _)| name == "authorization"),
        "no api_key_env, no header"
    );
}

#[tokio::test]
async fn no_tools_means_no_tools_key() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::Text("ok".into()));
    let request = ChatRequest {
        messages: vec![ChatMessage::User {
            content: "hi".into(),
        }],
        tools: vec![],
    };
    complete(&client(&fake, false), &request).await.0.unwrap();
    assert!(fake.requests()[0].get("tools").is_none());
}

#[tokio::test]
async fn a_trailing_slash_in_the_base_url_is_tolerated() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::Text("ok".into()));
    let mut config = super::harness::config(&fake, false);
    config.base_url.push('/');
    let client = airlock_llm::OpenAiClient::new(&config, super::harness::fast_options()).unwrap();
    assert_eq!(
        complete(&client, &request("hi"))
            .await
            .0
            .unwrap()
            .text
            .as_deref(),
        Some("ok")
    );
}
