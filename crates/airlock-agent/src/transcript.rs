//! The session's conversation in the model's terms (`ChatMessage`s), as each model turn
//! reads it.
//!
//! INVARIANT: every tool call of an assistant message is answered by exactly one tool
//! message, right after that assistant message, as the OpenAI API requires (it refuses a
//! conversation with an unanswered call). The answer is the stored one wherever it was
//! stored (a tool that was still running when its run was cancelled answers after the
//! next user message); a call of a run that ended before the call was settled (cancelled
//! while a person was asked, failed) has none, and is answered with what airlock knows.

use airlock_llm::{ChatMessage, ToolCall};
use airlock_protocol::Message;
use serde_json::Value;
use std::collections::HashMap;

/// What the model reads for a call whose run ended before the call was settled.
const NOT_SETTLED: &str =
    "{\"error\": \"no result: the run ended (cancelled or failed) before this call was settled\"}";

/// The conversation of `messages` (the session's, oldest first) after the agent's prompt.
pub(crate) fn transcript(system_prompt: Option<&str>, messages: &[Message]) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(prompt) = system_prompt.filter(|p| !p.trim().is_empty()) {
        out.push(ChatMessage::System {
            content: prompt.to_owned(),
        });
    }
    // Each call's stored answer, the first one stored (a second would be refused too).
    let mut answers: HashMap<&str, &str> = HashMap::new();
    for message in messages.iter().filter(|m| m.role == "tool") {
        if let Some(id) = message.tool_call_id.as_deref() {
            answers
                .entry(id)
                .or_insert(message.text.as_deref().unwrap_or_default());
        }
    }
    for message in messages {
        match message.role.as_str() {
            "user" => out.push(ChatMessage::User {
                content: message.text.clone().unwrap_or_default(),
            }),
            "assistant" => {
                let tool_calls: Vec<ToolCall> = message
                    .tool_calls
                    .iter()
                    .map(|call| ToolCall {
                        id: call["id"].as_str().unwrap_or_default().to_owned(),
                        name: call["tool"].as_str().unwrap_or_default().to_owned(),
                        arguments: match &call["arguments"] {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        },
                    })
                    .collect();
                let answered: Vec<ChatMessage> = tool_calls
                    .iter()
                    .map(|call| ChatMessage::Tool {
                        tool_call_id: call.id.clone(),
                        content: answers
                            .remove(call.id.as_str())
                            .unwrap_or(NOT_SETTLED)
                            .to_owned(),
                    })
                    .collect();
                out.push(ChatMessage::Assistant {
                    content: message.text.clone(),
                    tool_calls,
                });
                out.extend(answered);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;
    use serde_json::json;

    fn message(role: &str, text: Option<&str>, calls: &[&str], answers: Option<&str>) -> Message {
        Message {
            id: "msg".into(),
            session_id: "ses".into(),
            run_id: "run".into(),
            role: role.into(),
            text: text.map(str::to_owned),
            tool_calls: calls
                .iter()
                .map(|id| json!({"id": id, "tool": "clock.now", "arguments": {}}))
                .collect(),
            tool_call_id: answers.map(str::to_owned),
            steps: Vec::new(),
            created_at: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    fn roles_and_ids(chat: &[ChatMessage]) -> Vec<String> {
        chat.iter()
            .map(|m| match m {
                ChatMessage::System { .. } => "system".to_owned(),
                ChatMessage::User { .. } => "user".to_owned(),
                ChatMessage::Assistant { tool_calls, .. } => format!(
                    "assistant{:?}",
                    tool_calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>()
                ),
                ChatMessage::Tool { tool_call_id, .. } => format!("tool:{tool_call_id}"),
            })
            .collect()
    }

    #[test]
    fn every_call_is_answered_once_right_after_it() {
        let messages = [
            message("user", Some("mail them"), &[], None),
            // A run cancelled while a person was asked about `b`.
            message("assistant", None, &["a", "b"], None),
            message("tool", Some("ok"), &[], Some("a")),
            message("user", Some("and now?"), &[], None),
            // A run cancelled while `c` ran: its result came after the next message.
            message("assistant", None, &["c"], None),
            message("user", Some("still there?"), &[], None),
            message("tool", Some("c ran"), &[], Some("c")),
            message("tool", Some("twice"), &[], Some("c")),
            message("assistant", Some("done"), &[], None),
        ];
        let chat = transcript(Some("be brief"), &messages);
        assert_eq!(
            roles_and_ids(&chat),
            [
                "system",
                "user",
                "assistant[\"a\", \"b\"]",
                "tool:a",
                "tool:b",
                "user",
                "assistant[\"c\"]",
                "tool:c",
                "user",
                "assistant[]",
            ]
        );
        let content = |at: usize| match &chat[at] {
            ChatMessage::Tool { content, .. } => content.clone(),
            other => panic!("{other:?}"),
        };
        assert!(content(4).contains("no result"), "{}", content(4));
        assert_eq!(content(7), "c ran");
    }
}
