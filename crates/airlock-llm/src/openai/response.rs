//! A non-streaming answer: one JSON object, `choices[0].message` holds the turn.
//!
//! Parsing is lenient where servers differ harmlessly (a missing tool call id, arguments
//! sent as an object, content as an array of text parts) and strict where the turn would
//! be unusable (no choices, a tool call without a function name).

use serde::Deserialize;
use serde_json::Value;

use super::names::ToolNames;
use crate::{Completion, LlmError, ToolCall};

#[derive(Deserialize)]
struct ResponseBody {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Value,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

/// A tool call as servers send it, every part optional so the checks can name what is
/// missing.
#[derive(Deserialize)]
pub(crate) struct WireCall {
    #[serde(default)]
    pub(crate) index: Option<usize>,
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<WireFunction>,
}

#[derive(Deserialize)]
pub(crate) struct WireFunction {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) arguments: Option<Value>,
}

/// Parses a whole `/chat/completions` response body.
pub(crate) fn parse(body: &[u8], names: &ToolNames) -> Result<Completion, LlmError> {
    let response: ResponseBody = serde_json::from_slice(body).map_err(|error| {
        // A body that stops in the middle of its JSON was cut (a close-delimited body ends
        // with the connection): worth another try, unlike a body that is not JSON at all.
        if error.is_eof() {
            LlmError::Transport(format!("the response ended before its end: {error}"))
        } else {
            LlmError::Malformed(format!("the response is not valid JSON: {error}"))
        }
    })?;
    if let Some(error) = response.error {
        return Err(LlmError::Malformed(format!(
            "the response is an error: {error}"
        )));
    }
    let Some(choice) = response
        .choices
        .and_then(|choices| choices.into_iter().next())
    else {
        return Err(LlmError::Malformed("the response has no choices".into()));
    };
    let Some(message) = choice.message else {
        return Err(LlmError::Malformed(
            "the first choice has no message".into(),
        ));
    };
    let text = content_text(&message.content)?;
    let tool_calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(position, call)| {
            let function = call.function.unwrap_or(WireFunction {
                name: None,
                arguments: None,
            });
            let arguments = arguments_text(function.arguments);
            finish_call(position, call.id, function.name, arguments, names)
        })
        .collect::<Result<_, _>>()?;
    Ok(Completion {
        text,
        tool_calls,
        finish_reason: choice.finish_reason,
    })
}

/// A message's `content`: a string, null, or (some servers) an array of text parts.
fn content_text(content: &Value) -> Result<Option<String>, LlmError> {
    match content {
        Value::Null => Ok(None),
        Value::String(text) => Ok(Some(text.clone())),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect();
            Ok(Some(text))
        }
        other => Err(LlmError::Malformed(format!(
            "the message content is neither text nor null: {other}"
        ))),
    }
}

/// Arguments are JSON text on the wire; a server that sends the object itself gets it
/// re-serialised, a missing value becomes the empty text.
pub(crate) fn arguments_text(arguments: Option<Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text,
        Some(other) => other.to_string(),
    }
}

/// Checks one assembled tool call and maps its name back to the airlock name. A missing id
/// stays empty (some local servers omit it, and the turn is still usable): the runtime
/// gives every call of a turn an id of its own when the model's is missing or taken, so
/// nothing here makes one up that could collide with another turn's.
pub(crate) fn finish_call(
    position: usize,
    id: Option<String>,
    name: Option<String>,
    arguments: String,
    names: &ToolNames,
) -> Result<ToolCall, LlmError> {
    let name = name
        .filter(|name| !name.is_empty())
        .ok_or_else(|| LlmError::Malformed(format!("tool call {position} has no function name")))?;
    let id = id.unwrap_or_default();
    Ok(ToolCall {
        id,
        name: names.to_airlock(&name),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse_text(body: &str) -> Result<Completion, LlmError> {
        parse(body.as_bytes(), &ToolNames::default())
    }

    #[test]
    fn malformed_bodies_are_named_precisely() {
        let error = |body| parse_text(body).unwrap_err().to_string();
        assert!(error("not json").contains("not valid JSON"));
        let cut = parse_text(r#"{"choices": [{"message"#).unwrap_err();
        assert!(matches!(cut, LlmError::Transport(_)), "{cut:?}");
        assert!(error(r#"{"choices": []}"#).contains("no choices"));
        assert!(error(r#"{"id": "x"}"#).contains("no choices"));
        assert!(error(r#"{"choices": [{"index": 0}]}"#).contains("no message"));
        assert!(error(r#"{"error": {"message": "overloaded"}}"#).contains("overloaded"));
        let nameless = r#"{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"arguments":"{}"}}]}}]}"#;
        assert!(error(nameless).contains("tool call 0 has no function name"));
    }

    #[test]
    fn lenient_where_servers_differ() {
        let body = r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],
            "tool_calls":[{"function":{"name":"f","arguments":{"x":1}}}]},"finish_reason":"tool_calls"}]}"#;
        let completion = parse_text(body).unwrap();
        assert_eq!(completion.text.as_deref(), Some("ab"));
        assert_eq!(completion.tool_calls[0].id, "", "no id is made up");
        assert_eq!(completion.tool_calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(completion.finish_reason.as_deref(), Some("tool_calls"));
    }
}
