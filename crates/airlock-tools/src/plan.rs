//! Planning a call: validate its arguments against the tool's schema and say how the call
//! takes effect.
//!
//! The runtime plans a call before it executes anything. An effect that leaves the system
//! (`email.send`) is never executed here: it becomes an [`OutboxEffect`], a database row
//! the runtime writes in the same transaction that consumes the call's grant, so the effect
//! exists exactly once or not at all. Everything else is [`Plan::Run`].

use serde_json::{json, Map, Value};

use crate::catalogue::ToolSpec;
use crate::{email, Builtins, ToolError};

/// An effect that is a database write (the outbox), made by the runtime in the same
/// transaction that consumes the grant, and delivered afterwards by the outbox worker.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEffect {
    /// What kind of effect: `"email"`.
    pub kind: String,
    /// Who receives it: the email address.
    pub recipient: String,
    /// What is delivered: `{to, subject, body}` for an email.
    pub payload: Value,
}

/// How a tool takes effect.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Write this effect to the outbox; never call [`Builtins::execute`].
    Outbox(OutboxEffect),
    /// Call [`Builtins::execute`].
    Run,
}

impl Builtins {
    /// Validates arguments against the tool (unknown tool, missing/extra/mistyped argument
    /// → `Err` with a precise message) and says how it takes effect: `email.send` →
    /// [`Plan::Outbox`], others → [`Plan::Run`].
    pub fn plan(name: &str, arguments: &Value) -> Result<Plan, ToolError> {
        let spec = Builtins::spec(name).ok_or_else(|| ToolError::UnknownTool {
            name: name.to_string(),
        })?;
        let arguments = check_schema(&spec, arguments)?;
        // INVARIANT: after `check_schema` every argument of a built-in tool is present and a
        // string (every built-in argument is a required string, see `catalogue`).
        let text = |argument: &str| arguments.get(argument).and_then(Value::as_str);
        let invalid = |argument: &str, reason: String| ToolError::InvalidArgument {
            tool: name.to_string(),
            argument: argument.to_string(),
            reason,
        };
        match name {
            "email.send" => {
                let to = text("to").unwrap_or_default();
                let subject = text("subject").unwrap_or_default();
                let body = text("body").unwrap_or_default();
                email::check_address(to).map_err(|reason| invalid("to", reason))?;
                Ok(Plan::Outbox(OutboxEffect {
                    kind: "email".to_string(),
                    recipient: to.to_string(),
                    payload: json!({"to": to, "subject": subject, "body": body}),
                }))
            }
            "http.fetch" => {
                crate::http::parse_url(text("url").unwrap_or_default())
                    .map_err(|reason| invalid("url", reason))?;
                Ok(Plan::Run)
            }
            "fs.read" | "fs.write" => {
                let path = text("path").unwrap_or_default();
                if path.is_empty() {
                    return Err(invalid("path", "must not be empty".to_string()));
                }
                if path.contains('\0') {
                    return Err(invalid("path", "must not contain a NUL byte".to_string()));
                }
                Ok(Plan::Run)
            }
            "shell.exec" => {
                if text("command").unwrap_or_default().trim().is_empty() {
                    return Err(invalid("command", "must not be empty".to_string()));
                }
                Ok(Plan::Run)
            }
            _ => Ok(Plan::Run),
        }
    }
}

/// Checks `arguments` against the spec's JSON Schema (the subset the catalogue uses: an
/// object of typed properties, some required, nothing else allowed) and returns the object.
fn check_schema<'a>(
    spec: &ToolSpec,
    arguments: &'a Value,
) -> Result<&'a Map<String, Value>, ToolError> {
    let tool = || spec.name.clone();
    let Some(object) = arguments.as_object() else {
        return Err(ToolError::ArgumentsNotObject {
            tool: tool(),
            found: json_type(arguments),
        });
    };
    let empty = Map::new();
    let properties = spec.parameters["properties"].as_object().unwrap_or(&empty);
    for argument in object.keys() {
        if !properties.contains_key(argument) {
            let expected = if properties.is_empty() {
                "no arguments".to_string()
            } else {
                // Sorted, whatever order the map keeps, so the message is stable.
                let mut names: Vec<String> =
                    properties.keys().map(|name| format!("`{name}`")).collect();
                names.sort_unstable();
                names.join(", ")
            };
            return Err(ToolError::UnknownArgument {
                tool: tool(),
                argument: argument.clone(),
                expected,
            });
        }
    }
    let required = spec.parameters["required"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for argument in required.iter().filter_map(Value::as_str) {
        if !object.contains_key(argument) {
            return Err(ToolError::MissingArgument {
                tool: tool(),
                argument: argument.to_string(),
            });
        }
    }
    for (argument, value) in object {
        let expected = properties[argument]["type"].as_str().unwrap_or_default();
        let matches = match expected {
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            // A property without a type accepts anything.
            _ => true,
        };
        if !matches {
            return Err(ToolError::WrongType {
                tool: tool(),
                argument: argument.clone(),
                expected: article(expected),
                found: json_type(value),
            });
        }
    }
    Ok(object)
}

/// The JSON type of `value`, with its article, for messages.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A schema type name with its article, for messages.
fn article(schema_type: &str) -> &'static str {
    match schema_type {
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "a boolean",
        "array" => "an array",
        _ => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case: (tool, arguments, expected error message).
    #[track_caller]
    fn check_errors(cases: &[(&str, Value, &str)]) {
        let failures: Vec<String> = cases
            .iter()
            .filter_map(
                |(tool, arguments, expected)| match Builtins::plan(tool, arguments) {
                    Err(error) if error.to_string() == *expected => None,
                    other => Some(format!(
                        "{tool} {arguments}: expected {expected:?}, got {other:?}"
                    )),
                },
            )
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn argument_errors_name_the_tool_and_the_argument() {
        check_errors(&[
            ("nope.tool", json!({}), "unknown tool `nope.tool`"),
            (
                "clock.now",
                json!([]),
                "clock.now: arguments must be a JSON object, got an array",
            ),
            (
                "clock.now",
                json!({"tz": "UTC"}),
                "clock.now: unknown argument `tz` (the tool takes no arguments)",
            ),
            (
                "fs.read",
                json!({"path": 3}),
                "fs.read: argument `path` must be a string, got a number",
            ),
            (
                "fs.read",
                json!({"path": null}),
                "fs.read: argument `path` must be a string, got null",
            ),
            (
                "fs.read",
                json!({"path": ""}),
                "fs.read: argument `path` must not be empty",
            ),
            (
                "fs.write",
                json!({"path": "a"}),
                "fs.write: missing required argument `content`",
            ),
            (
                "shell.exec",
                json!({"command": "  "}),
                "shell.exec: argument `command` must not be empty",
            ),
            (
                "http.fetch",
                json!({"url": "ftp://example.com/x"}),
                "http.fetch: argument `url` has scheme `ftp`: only http and https can be fetched",
            ),
            (
                "http.fetch",
                json!({"url": "not a url"}),
                "http.fetch: argument `url` is not a URL: relative URL without a base",
            ),
        ]);
    }

    #[test]
    fn only_email_send_goes_to_the_outbox() {
        for spec in Builtins::specs() {
            let arguments: Map<String, Value> = spec.parameters["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|name| {
                    let value = match name {
                        "to" => "bob@example.com",
                        "url" => "https://example.com/",
                        _ => "x",
                    };
                    (name.to_string(), json!(value))
                })
                .collect();
            let plan = Builtins::plan(&spec.name, &Value::Object(arguments));
            let outbox = matches!(plan, Ok(Plan::Outbox(_)));
            assert!(plan.is_ok(), "{}: {plan:?}", spec.name);
            assert_eq!(outbox, spec.name == "email.send", "{}", spec.name);
        }
    }
}
