//! The conversation as the runtime keeps it and as the OpenAI wire format spells it.
//!
//! `ChatMessage` and `ToolCall` serialise to exactly the message objects of
//! `/chat/completions` (`{"role":"assistant","content":null,"tool_calls":[{"id",
//! "type":"function","function":{"name","arguments"}}]}`), so a stored conversation can
//! be read next to a captured request. Tool names here are always airlock names
//! (`email.send`); the OpenAI client encodes them on the way out.

use serde::{Deserialize, Serialize};

/// One message of the conversation, serialised in the OpenAI wire format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    /// Instructions for the model.
    System { content: String },
    /// What the human said.
    User { content: String },
    /// A model turn: its text, its tool calls, or both.
    Assistant {
        #[serde(default)]
        content: Option<String>,
        // OpenAI rejects an empty `tool_calls` array, so an assistant message without
        // calls carries no such key at all.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, fed back to the model.
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "WireToolCall", into = "WireToolCall")]
pub struct ToolCall {
    /// The model's id for the call (empty when the server sent none); the `Tool` message
    /// answering it repeats it.
    pub id: String,
    /// The airlock tool name (`email.send`).
    pub name: String,
    /// Raw JSON text exactly as the model produced it (it may not even be valid JSON).
    pub arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// The airlock tool name (`email.send`).
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One model turn's input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolDef>,
}

/// One model turn's output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// The text the model wrote, if any.
    pub text: Option<String>,
    /// The tools the model wants called, with airlock names.
    pub tool_calls: Vec<ToolCall>,
    /// `stop`, `tool_calls`, `length`… as the server reported it.
    pub finish_reason: Option<String>,
}

/// The OpenAI spelling of a tool call: the name and arguments nest under `function`.
#[derive(Serialize, Deserialize)]
struct WireToolCall {
    id: String,
    #[serde(rename = "type", default = "function_type")]
    kind: String,
    function: WireFunction,
}

#[derive(Serialize, Deserialize)]
struct WireFunction {
    name: String,
    arguments: String,
}

fn function_type() -> String {
    "function".to_owned()
}

impl From<WireToolCall> for ToolCall {
    fn from(wire: WireToolCall) -> ToolCall {
        ToolCall {
            id: wire.id,
            name: wire.function.name,
            arguments: wire.function.arguments,
        }
    }
}

impl From<ToolCall> for WireToolCall {
    fn from(call: ToolCall) -> WireToolCall {
        WireToolCall {
            id: call.id,
            kind: function_type(),
            function: WireFunction {
                name: call.name,
                arguments: call.arguments,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn messages_use_the_openai_shapes() {
        let assistant = ChatMessage::Assistant {
            content: None,
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "email.send".into(),
                arguments: r#"{"to":"bob"}"#.into(),
            }],
        };
        let value = serde_json::to_value(&assistant).unwrap();
        assert_eq!(
            value,
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "email.send", "arguments": "{\"to\":\"bob\"}"}}]})
        );
        assert_eq!(
            serde_json::from_value::<ChatMessage>(value).unwrap(),
            assistant
        );

        let tool = ChatMessage::Tool {
            tool_call_id: "call_1".into(),
            content: "sent".into(),
        };
        assert_eq!(
            serde_json::to_value(&tool).unwrap(),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "sent"})
        );
        let text_only = ChatMessage::Assistant {
            content: Some("hi".into()),
            tool_calls: vec![],
        };
        assert_eq!(
            serde_json::to_value(&text_only).unwrap(),
            json!({"role": "assistant", "content": "hi"})
        );
        assert_eq!(
            serde_json::from_value::<ChatMessage>(json!({"role": "assistant"})).unwrap(),
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![]
            }
        );
    }
}
