//! The body of `POST /chat/completions`, built once per model turn and sent on every try.

use serde::Serialize;

use super::names::ToolNames;
use crate::{ChatMessage, ChatRequest, LlmError};

#[derive(Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<ChatMessage>,
    // Some servers reject an empty `tools` array, and none needs it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionDef<'a>,
}

#[derive(Serialize)]
struct WireFunctionDef<'a> {
    name: &'a str,
    description: &'a str,
    parameters: serde_json::Value,
}

/// The JSON body for `request`, tool names encoded with `names`.
pub(crate) fn encode(
    model: &str,
    stream: bool,
    request: &ChatRequest,
    names: &ToolNames,
) -> Result<Vec<u8>, LlmError> {
    let messages = request
        .messages
        .iter()
        .map(|message| wire_message(message, names))
        .collect();
    let tools = request
        .tools
        .iter()
        .map(|tool| WireTool {
            kind: "function",
            function: WireFunctionDef {
                name: names.to_wire(&tool.name),
                description: &tool.description,
                // OpenAI insists on an object schema; a tool without arguments still has one.
                parameters: if tool.parameters.is_null() {
                    serde_json::json!({"type": "object", "properties": {}})
                } else {
                    tool.parameters.clone()
                },
            },
        })
        .collect();
    let body = RequestBody {
        model,
        messages,
        tools,
        stream,
    };
    serde_json::to_vec(&body)
        .map_err(|error| LlmError::Config(format!("cannot encode the request as JSON: {error}")))
}

/// The message with wire tool names. An assistant message with neither text nor calls
/// gets empty text: OpenAI refuses `content: null` without `tool_calls`.
fn wire_message(message: &ChatMessage, names: &ToolNames) -> ChatMessage {
    match message {
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => ChatMessage::Assistant {
            content: match content {
                None if tool_calls.is_empty() => Some(String::new()),
                _ => content.clone(),
            },
            tool_calls: tool_calls
                .iter()
                .map(|call| crate::ToolCall {
                    name: names.to_wire(&call.name).to_owned(),
                    ..call.clone()
                })
                .collect(),
        },
        other => other.clone(),
    }
}
