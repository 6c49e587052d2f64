//! What an agent's after-the-fact hook (`PostToolUse`, `PostToolUseFailure`, `AfterTool`)
//! says about a call that ran, and the idempotency key that ties a hook's events for one
//! tool use together (DESIGN.md §11.8).
//!
//! The agents report a tool's result, not a verdict on it, and each in its own shape:
//! - Claude Code `PostToolUse` (a tool that succeeded): `tool_response` is the tool's own
//!   result object (`Bash`: `{stdout, stderr, interrupted}`).
//! - Claude Code `PostToolUseFailure` (a tool that failed): no `tool_response`, but
//!   `error` (the failure as text) and `is_interrupt`.
//! - Codex `PostToolUse`: for a shell call (`Bash`), `tool_response` is the command's
//!   output as one string, with no exit status; for others, the tool's result.
//! - Gemini CLI `AfterTool`: `tool_response: {llmContent, returnDisplay, error?}`.
//!
//! So a call *failed* only on an explicit sign of failure (`PostToolUseFailure`,
//! `success: false`, `is_error`, `interrupted`, a non-empty `error`, a non-zero exit code);
//! otherwise it *succeeded* in the only sense that matters to exactly-once: it ran. A
//! report that shows the call ran but not how it ended (Codex's shell output) is recorded
//! as having run, with a detail that says its exit status is unknown: never as a success
//! it does not show.

use crate::payload::HookCall;
use serde_json::Value;

/// The longest key built from an agent's tool-use id (the server accepts 255).
const MAX_KEY: usize = 255;

/// The longest failure detail kept from a tool's response.
const MAX_DETAIL: usize = 500;

/// An agent's report on one tool call that ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    pub succeeded: bool,
    /// Why it failed, from the response, when it did.
    pub detail: Option<String>,
}

/// How many lines of a shell output may be its header.
const MAX_HEADER_LINES: usize = 6;

/// Said of a call whose report shows that it ran but not how it ended.
pub const EXIT_UNKNOWN: &str = "it ran; the agent reported its output but no exit status";

/// Reads the outcome from an after-the-fact payload.
pub fn reported(payload: &Value) -> Reported {
    if payload.get("hook_event_name").and_then(Value::as_str) == Some("PostToolUseFailure") {
        let error = payload
            .get("error")
            .and_then(Value::as_str)
            .filter(|error| !error.trim().is_empty());
        let interrupted = payload.get("is_interrupt").and_then(Value::as_bool) == Some(true);
        let detail = match (error, interrupted) {
            (Some(error), true) => format!("interrupted: {error}"),
            (Some(error), false) => error.to_owned(),
            (None, true) => "interrupted".to_owned(),
            (None, false) => "the tool reported a failure".to_owned(),
        };
        return Reported {
            succeeded: false,
            detail: Some(detail.chars().take(MAX_DETAIL).collect()),
        };
    }
    let response = payload.get("tool_response").unwrap_or(&Value::Null);
    if let Value::String(output) = response {
        return from_output(output);
    }
    let flag = |name: &str| response.get(name).and_then(Value::as_bool);
    let exit_code = ["exit_code", "exitCode"]
        .iter()
        .find_map(|name| response.get(*name).and_then(Value::as_i64));
    let error = match response.get("error") {
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.clone()),
        Some(Value::Object(object)) => Some(
            object
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| Value::Object(object.clone()).to_string(), str::to_owned),
        ),
        _ => None,
    };
    let failed = flag("success") == Some(false)
        || flag("is_error") == Some(true)
        || flag("isError") == Some(true)
        || flag("interrupted") == Some(true)
        || exit_code.is_some_and(|code| code != 0)
        || error.is_some();
    let detail = failed.then(|| {
        let text = error.unwrap_or_else(|| match exit_code {
            Some(code) if code != 0 => format!("exit code {code}"),
            _ if flag("interrupted") == Some(true) => "interrupted".to_owned(),
            _ => "the tool reported a failure".to_owned(),
        });
        text.chars().take(MAX_DETAIL).collect()
    });
    Reported {
        succeeded: !failed,
        detail,
    }
}

/// A report that is the command's output alone (Codex's shell calls): it ran; how it
/// ended shows only when the output opens with the header Codex writes for the model
/// (`Exit code: N`, or `Process exited with code N`, before an `Output:` line). The
/// command's own output below it is never read as its status.
fn from_output(output: &str) -> Reported {
    let code = output
        .lines()
        .take(MAX_HEADER_LINES)
        .take_while(|line| line.trim() != "Output:")
        .find_map(|line| {
            let line = line.trim();
            line.strip_prefix("Exit code:")
                .or_else(|| line.strip_prefix("Process exited with code"))
        })
        .and_then(|rest| rest.trim().parse::<i64>().ok());
    match code {
        Some(0) => Reported {
            succeeded: true,
            detail: None,
        },
        Some(code) => Reported {
            succeeded: false,
            detail: Some(format!("exit code {code}")),
        },
        None => Reported {
            succeeded: true,
            detail: Some(EXIT_UNKNOWN.to_owned()),
        },
    }
}

/// The idempotency key of a hook's tool call: `<agent>:<tool_use_id>`, the same for the
/// before event, a retry of it, and the after event. `None` when the agent gives no id
/// (Gemini CLI) or the id would not make a valid key.
pub fn tool_use_key(call: &HookCall) -> Option<String> {
    let id = call.tool_use_id.as_deref()?;
    let key = format!("{}:{id}", call.agent.name());
    (key.len() <= MAX_KEY && key.chars().all(|c| c.is_ascii_graphic())).then_some(key)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::Agent;
    use serde_json::json;

    #[test]
    fn only_an_explicit_sign_of_failure_is_a_failure() {
        let ok = reported(&json!({"tool_response": {"stdout": "done", "interrupted": false}}));
        assert_eq!(
            ok,
            Reported {
                succeeded: true,
                detail: None
            }
        );
        assert!(reported(&json!({})).succeeded);
        let interrupted = reported(&json!({"tool_response": {"interrupted": true}}));
        assert_eq!(interrupted.detail.as_deref(), Some("interrupted"));
        let exit = reported(&json!({"tool_response": {"exit_code": 2}}));
        assert_eq!(exit.detail.as_deref(), Some("exit code 2"));
        let gemini = reported(
            &json!({"tool_response": {"llmContent": "", "error": {"message": "no such file"}}}),
        );
        assert_eq!(gemini.detail.as_deref(), Some("no such file"));
        assert!(!reported(&json!({"tool_response": {"success": false}})).succeeded);
        assert!(reported(&json!({"tool_response": {"error": null, "llmContent": "x"}})).succeeded);
        let long = "x".repeat(2000);
        let truncated = reported(&json!({"tool_response": {"error": long}}));
        assert_eq!(truncated.detail.unwrap().len(), MAX_DETAIL);
    }

    #[test]
    fn claude_codes_failure_event_is_a_failure_with_its_error() {
        let failed = reported(&json!({"hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash", "tool_input": {"command": "ls x"},
            "error": "Exit code 1", "is_interrupt": false}));
        assert_eq!(
            failed,
            Reported {
                succeeded: false,
                detail: Some("Exit code 1".into())
            }
        );
        let interrupted = reported(&json!({"hook_event_name": "PostToolUseFailure",
            "error": "", "is_interrupt": true}));
        assert_eq!(interrupted.detail.as_deref(), Some("interrupted"));
        assert!(!interrupted.succeeded);
    }

    #[test]
    fn codex_shell_output_is_a_run_of_unknown_exit_unless_it_says_how_it_ended() {
        // Codex 0.169's `Bash` PostToolUse: the output as one string, no exit status.
        let unknown = reported(&json!({"hook_event_name": "PostToolUse",
            "tool_response": "total 0\nls: cannot access 'x': No such file or directory\n"}));
        assert!(unknown.succeeded);
        assert_eq!(unknown.detail.as_deref(), Some(EXIT_UNKNOWN));
        let failed = reported(
            &json!({"tool_response": "Exit code: 2\nWall time: 0.1 seconds\nOutput:\nboom"}),
        );
        assert_eq!(failed.detail.as_deref(), Some("exit code 2"));
        assert!(!failed.succeeded);
        let exited = reported(
            &json!({"tool_response": "Chunk ID: 1\nProcess exited with code 0\nOutput:\nok"}),
        );
        // What the command itself printed is not its status.
        let printed = reported(&json!({"tool_response": "Output:\nExit code: 1"}));
        assert_eq!(printed.detail.as_deref(), Some(EXIT_UNKNOWN));
        assert_eq!(
            exited,
            Reported {
                succeeded: true,
                detail: None
            }
        );
    }

    #[test]
    fn the_key_follows_the_tool_use_id() {
        let payload = json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": "ls"}, "tool_use_id": "toolu_01"});
        let call = Agent::ClaudeCode.read(payload).unwrap();
        assert_eq!(tool_use_key(&call).as_deref(), Some("claude-code:toolu_01"));
        let gemini = Agent::Gemini
            .read(json!({"hook_event_name": "AfterTool", "tool_name": "x", "tool_input": {}}))
            .unwrap();
        assert_eq!(tool_use_key(&gemini), None);
        let spaced = Agent::Codex
            .read(json!({"tool_name": "x", "tool_input": {}, "tool_use_id": "a b"}))
            .unwrap();
        assert_eq!(tool_use_key(&spaced), None);
    }
}
