//! The hook payloads of each coding agent: what each sends on stdin and what it expects
//! back on stdout. Pure: text in, values out, no I/O.
//!
//! - Claude Code `PreToolUse`: in `{session_id, transcript_path, cwd, permission_mode,
//!   hook_event_name, tool_name, tool_input}`; out `{"hookSpecificOutput": {"hookEventName":
//!   "PreToolUse", "permissionDecision": "allow"|"deny", "permissionDecisionReason": …}}`.
//! - Codex `PermissionRequest`: in `{session_id, turn_id, transcript_path, cwd,
//!   hook_event_name, model, permission_mode, tool_name, tool_input}`; out
//!   `{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior":
//!   "allow"|"deny", "message": …}}}` — Codex's output schema allows no top-level
//!   `decision`, and an output it cannot read falls back to its own prompt, so the
//!   decision goes where the schema puts it.
//! - Gemini CLI `BeforeTool`: in `{session_id, transcript_path, cwd, hook_event_name,
//!   timestamp, tool_name, tool_input}`; out `{"decision": "allow"|"deny", "reason": …}`.
//!
//! All three agents read exit code 2 as "blocked, the reason is on stderr", which is how
//! the caller reports anything it could not decide.
//!
//! Fields other than the tool are ignored, and unknown fields are accepted: the agents add
//! fields with their releases, and a strict reader would deny every call after an upgrade.

use clap::ValueEnum;
use serde::Deserialize;
use serde_json::{json, Value};

/// The agents `airlock hook` speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    /// Claude Code `PreToolUse` hooks.
    ClaudeCode,
    /// Codex `PermissionRequest` hooks.
    Codex,
    /// Gemini CLI `BeforeTool` hooks.
    Gemini,
}

/// The call a hook payload asks about.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// As the agent names it (`Bash`, `mcp__srv__tool`, `run_shell_command`…).
    pub tool: String,
    pub arguments: Value,
    /// The agent's own session id, when it gives one: its calls share one airlock
    /// session.
    pub session_id: Option<String>,
    pub cwd: Option<String>,
}

/// The parts of every agent's payload that matter here.
#[derive(Debug, Deserialize)]
struct Payload {
    tool_name: Option<String>,
    tool_input: Option<Value>,
    /// Accepted in place of `tool_input` (older or third-party emitters of these shapes).
    #[serde(alias = "tool_args")]
    arguments: Option<Value>,
    hook_event_name: Option<String>,
    session_id: Option<String>,
    cwd: Option<String>,
}

impl Agent {
    /// The hook event this agent's payload must come from, when it names one.
    pub fn event(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "PreToolUse",
            Agent::Codex => "PermissionRequest",
            Agent::Gemini => "BeforeTool",
        }
    }

    /// The agent's name for people.
    pub fn display_name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Gemini => "Gemini CLI",
        }
    }

    /// Reads the call out of the hook's stdin; any doubt is an error (a block).
    pub fn parse(self, text: &str) -> Result<ToolCall, String> {
        let payload: Payload = serde_json::from_str(text).map_err(|error| {
            format!("the hook input on stdin is not the expected JSON: {error}")
        })?;
        if let Some(event) = payload.hook_event_name.as_deref() {
            if event != self.event() {
                return Err(format!(
                    "`airlock hook {}` gates {} hooks, but stdin holds a {event} hook",
                    self.name(),
                    self.event()
                ));
            }
        }
        let tool = payload
            .tool_name
            .filter(|tool| !tool.trim().is_empty())
            .ok_or("the hook input has no `tool_name`")?;
        let arguments = match payload.tool_input.or(payload.arguments) {
            // Judging a call without its arguments would judge a different call.
            None | Some(Value::Null) => return Err("the hook input has no `tool_input`".into()),
            Some(Value::Object(arguments)) => Value::Object(arguments),
            Some(_) => return Err("the hook input's `tool_input` is not a JSON object".into()),
        };
        Ok(ToolCall {
            tool,
            arguments,
            session_id: payload.session_id.filter(|id| !id.trim().is_empty()),
            cwd: payload.cwd,
        })
    }

    /// What the agent reads on stdout for a verdict.
    pub fn render(self, allow: bool, reason: &str) -> Value {
        let word = if allow { "allow" } else { "deny" };
        match self {
            Agent::ClaudeCode => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": word,
                "permissionDecisionReason": reason,
            }}),
            // `message` is documented for denials; an allow carries none.
            Agent::Codex if allow => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"},
            }}),
            Agent::Codex => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }}),
            Agent::Gemini => json!({"decision": word, "reason": reason}),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_reads_its_documented_payload() {
        let claude = r#"{"session_id":"s","transcript_path":"/t","cwd":"/w","permission_mode":"default",
            "hook_event_name":"PreToolUse","tool_name":"mcp__github__create_issue","tool_input":{"title":"x"}}"#;
        let call = Agent::ClaudeCode.parse(claude).unwrap();
        assert_eq!(call.tool, "mcp__github__create_issue");
        assert_eq!(call.arguments, json!({"title": "x"}));

        let codex = r#"{"session_id":"s","turn_id":"t","cwd":"/w","hook_event_name":"PermissionRequest",
            "model":"gpt-5","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"ls"},"new_field":1}"#;
        assert_eq!(Agent::Codex.parse(codex).unwrap().tool, "Bash");

        let gemini = r#"{"session_id":"s","cwd":"/w","hook_event_name":"BeforeTool","timestamp":"2026-01-01T00:00:00Z",
            "tool_name":"run_shell_command","tool_input":{"command":"ls"}}"#;
        assert_eq!(
            Agent::Gemini.parse(gemini).unwrap().tool,
            "run_shell_command"
        );
    }

    #[test]
    fn doubtful_payloads_are_errors() {
        let agent = Agent::ClaudeCode;
        for (text, says) in [
            ("", "not the expected JSON"),
            ("[1]", "not the expected JSON"),
            (r#"{"tool_input":{}}"#, "no `tool_name`"),
            (r#"{"tool_name":" ","tool_input":{}}"#, "no `tool_name`"),
            (r#"{"tool_name":"Bash"}"#, "no `tool_input`"),
            (
                r#"{"tool_name":"Bash","tool_input":"ls"}"#,
                "not a JSON object",
            ),
            (
                r#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}"#,
                "PostToolUse",
            ),
        ] {
            let error = agent.parse(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
        // A Claude Code payload sent to the Codex adapter is refused, not guessed at.
        let claude = r#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}"#;
        assert!(Agent::Codex.parse(claude).is_err());
    }

    #[test]
    fn outputs_follow_each_agent_schema() {
        assert_eq!(
            Agent::ClaudeCode.render(false, "no"),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": "no"}})
        );
        assert_eq!(
            Agent::Codex.render(true, "fine"),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"}}})
        );
        assert_eq!(
            Agent::Codex.render(false, "no")["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": "no"})
        );
        assert_eq!(
            Agent::Gemini.render(true, "fine"),
            json!({"decision": "allow", "reason": "fine"})
        );
    }
}
