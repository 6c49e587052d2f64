//! The scripted provider: scenario by marker, turn by assistant count, the edges, and
//! load errors.

use airlock_llm::{ChatMessage, ChatRequest, LlmError, ScriptedProvider, ToolCall};
use serde_json::json;

use super::harness::complete;

const SCENARIOS: &str = r##"
[[scenario]]
marker = "#email"
[[scenario.turn]]
events = [
  { type = "text", text = "I will send the report." },
  { type = "tool_use", name = "email.send", arguments = { to = "bob@example.com", subject = "Report", body = "Hi Bob" } },
]
[[scenario.turn]]
events = [{ type = "text", text = "Done: the email is queued." }]

[[scenario]]
marker = "#deploy"
[[scenario.turn]]
events = [
  { type = "tool_use", name = "shell.run", arguments = { command = "make deploy" } },
  { type = "tool_use", name = "mcp__github__create_issue" },
]
"##;

fn user(text: &str) -> ChatMessage {
    ChatMessage::User {
        content: text.into(),
    }
}

fn assistant(text: &str) -> ChatMessage {
    ChatMessage::Assistant {
        content: Some(text.into()),
        tool_calls: vec![],
    }
}

fn conversation(messages: Vec<ChatMessage>) -> ChatRequest {
    ChatRequest {
        messages,
        tools: vec![],
    }
}

#[tokio::test]
async fn the_marker_picks_the_scenario_and_the_first_turn() {
    let provider = ScriptedProvider::from_toml(SCENARIOS).unwrap();
    let request = conversation(vec![
        ChatMessage::System {
            content: "You are helpful.".into(),
        },
        user("Please mail the report #email"),
    ]);
    let (completion, deltas) = complete(&provider, &request).await;
    let completion = completion.unwrap();
    assert_eq!(completion.text.as_deref(), Some("I will send the report."));
    assert!(deltas.len() > 1, "text arrives in fragments: {deltas:?}");
    assert_eq!(deltas.concat(), "I will send the report.");
    assert_eq!(completion.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(completion.tool_calls.len(), 1);
    let call = &completion.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_0_0", "email.send")
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&call.arguments).unwrap(),
        json!({"to": "bob@example.com", "subject": "Report", "body": "Hi Bob"})
    );
}

#[tokio::test]
async fn assistant_messages_after_the_user_message_pick_the_turn() {
    let provider = ScriptedProvider::from_toml(SCENARIOS).unwrap();
    let call = ToolCall {
        id: "call_0_0".into(),
        name: "email.send".into(),
        arguments: "{}".into(),
    };
    let mut messages = vec![
        user("#email please"),
        ChatMessage::Assistant {
            content: Some("I will send the report.".into()),
            tool_calls: vec![call],
        },
        ChatMessage::Tool {
            tool_call_id: "call_0_0".into(),
            content: "sent".into(),
        },
    ];
    let (completion, _) = complete(&provider, &conversation(messages.clone())).await;
    let completion = completion.unwrap();
    assert_eq!(
        completion.text.as_deref(),
        Some("Done: the email is queued.")
    );
    assert!(completion.tool_calls.is_empty());
    assert_eq!(completion.finish_reason.as_deref(), Some("stop"));

    messages.push(assistant("Done: the email is queued."));
    let (completion, deltas) = complete(&provider, &conversation(messages.clone())).await;
    assert_eq!(
        completion.unwrap().text.as_deref(),
        Some("(the scripted scenario has no more turns)")
    );
    assert_eq!(deltas.concat(), "(the scripted scenario has no more turns)");

    // A new user message starts the count again, and its own marker decides.
    messages.push(user("now #deploy it"));
    let (completion, _) = complete(&provider, &conversation(messages)).await;
    let completion = completion.unwrap();
    assert_eq!(completion.text, None);
    let calls: Vec<(&str, &str, &str)> = completion
        .tool_calls
        .iter()
        .map(|call| {
            (
                call.id.as_str(),
                call.name.as_str(),
                call.arguments.as_str(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_0_0", "shell.run", r#"{"command":"make deploy"}"#),
            ("call_0_1", "mcp__github__create_issue", "{}"),
        ]
    );
}

#[tokio::test]
async fn the_first_scenario_in_file_order_wins() {
    let provider = ScriptedProvider::from_toml(SCENARIOS).unwrap();
    let request = conversation(vec![user("#deploy or #email?")]);
    let (completion, _) = complete(&provider, &request).await;
    assert_eq!(completion.unwrap().tool_calls[0].name, "email.send");
}

#[tokio::test]
async fn no_matching_scenario_says_so_and_lists_the_markers() {
    let provider = ScriptedProvider::from_toml(SCENARIOS).unwrap();
    let (completion, _) = complete(&provider, &conversation(vec![user("hello")])).await;
    let text = completion.unwrap().text.unwrap();
    assert!(text.contains("no scripted scenario matches"), "{text}");
    assert!(text.contains("#email, #deploy"), "{text}");
}

fn load_error(text: &str) -> String {
    match ScriptedProvider::from_toml(text) {
        Err(LlmError::Config(message)) => message,
        other => panic!("expected a Config error, got {other:?}"),
    }
}

#[test]
fn bad_scenarios_name_the_problem() {
    let unknown_key = load_error("[[scenario]]\nmarkr = \"#x\"\n");
    assert!(unknown_key.contains("markr"), "{unknown_key}");
    let unknown_event_key = load_error(
        "[[scenario]]\nmarker = \"#x\"\n[[scenario.turn]]\nevents = [{ type = \"text\", txt = \"hi\" }]\n",
    );
    assert!(unknown_event_key.contains("txt"), "{unknown_event_key}");
    let unknown_event = load_error(
        "[[scenario]]\nmarker = \"#x\"\n[[scenario.turn]]\nevents = [{ type = \"tool_call\", name = \"a\" }]\n",
    );
    assert!(unknown_event.contains("tool_call"), "{unknown_event}");
    let syntax = load_error("[[scenario]\nmarker = \"#x\"\n");
    assert!(syntax.contains("line 1"), "{syntax}");
    // Any file may be named: its lines are never quoted, only their position.
    let not_scenarios = load_error("root:x:0:0:root:/root:/bin/bash\n");
    assert!(!not_scenarios.contains("/bin/bash"), "{not_scenarios}");
    assert!(not_scenarios.contains("line 1"), "{not_scenarios}");
    let no_turns = load_error("[[scenario]]\nmarker = \"#x\"\n");
    assert!(
        no_turns.contains("`#x` has no [[scenario.turn]]"),
        "{no_turns}"
    );
    let nothing = load_error("");
    assert!(nothing.contains("no [[scenario]]"), "{nothing}");
}

#[test]
fn load_reads_a_file_and_names_it_in_errors() {
    let directory = tempfile::tempdir().unwrap();
    let good = directory.path().join("demo.toml");
    std::fs::write(&good, SCENARIOS).unwrap();
    ScriptedProvider::load(&good).unwrap();

    let bad = directory.path().join("bad.toml");
    std::fs::write(&bad, "[[scenario]]\nmarkr = 1\n").unwrap();
    let error = ScriptedProvider::load(&bad).unwrap_err().to_string();
    assert!(
        error.contains("bad.toml") && error.contains("markr"),
        "{error}"
    );

    let missing = ScriptedProvider::load(&directory.path().join("missing.toml")).unwrap_err();
    assert!(missing.to_string().contains("missing.toml"), "{missing}");
}
