//! A verdict in each agent's own output shape, for the event that asked.
//!
//! - Claude Code `PreToolUse`: `{"hookSpecificOutput": {"hookEventName": "PreToolUse",
//!   "permissionDecision": "allow"|"deny", "permissionDecisionReason": …}}`; its
//!   `PreSkillShellCommand` the same with `"hookEventName": "PreSkillShellCommand"` (Claude
//!   Code drops an output that names another event than the one it asked), and never
//!   `updatedInput`, which that event does not apply ("any value keeps the command from
//!   running"): an edited allow is a deny there, as for the other agents.
//! - Codex `PermissionRequest`: `{"hookSpecificOutput": {"hookEventName":
//!   "PermissionRequest", "decision": {"behavior": "allow"|"deny", "message"?: …}}}` — its
//!   output schema has no top-level `decision`, and an output it cannot read falls back to
//!   its own prompt.
//! - Codex `PreToolUse`: Codex honours only a deny there (an allow would need
//!   `updatedInput`, an `ask` fails open), so an allowed call gets **no output** and a
//!   denied one Claude Code's deny form, which Codex's schema shares.
//! - Gemini CLI `BeforeTool`: `{"decision": "allow"|"deny", "reason": …}`.
//! - After-the-fact events (`PostToolUse`, `PostToolUseFailure`, `AfterTool`) decide
//!   nothing: no output.

use crate::payload::{Agent, HookEvent};
use serde_json::{json, Value};

/// What airlock says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The call may run (its grant was redeemed); `reason` is for the transcript.
    Allow { reason: String },
    /// The call must not run; `reason` is what the model reads.
    Deny { reason: String },
    /// The call may run (its grant was redeemed) with the tool input a person edited it
    /// to (DESIGN.md §11.6): Claude Code's `updatedInput`. An agent that cannot replace
    /// the input is answered a deny, never an allow of the unedited call.
    AllowEdited { reason: String, input: Value },
}

impl Verdict {
    pub fn is_allow(&self) -> bool {
        matches!(self, Verdict::Allow { .. } | Verdict::AllowEdited { .. })
    }

    pub fn reason(&self) -> &str {
        match self {
            Verdict::Allow { reason }
            | Verdict::Deny { reason }
            | Verdict::AllowEdited { reason, .. } => reason,
        }
    }
}

/// The JSON the agent reads on stdout (or in the http hook's body); `None` means print
/// nothing, which is how Codex's `PreToolUse` lets a call through.
pub fn render(agent: Agent, event: HookEvent, verdict: &Verdict) -> Option<Value> {
    let allow = verdict.is_allow();
    let word = if allow { "allow" } else { "deny" };
    let reason = verdict.reason();
    match (agent, event, verdict) {
        (_, event, _) if !event.is_before() => None,
        (Agent::ClaudeCode, HookEvent::PreToolUse, Verdict::AllowEdited { input, .. }) => {
            Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "permissionDecisionReason": reason,
                    "updatedInput": input,
                }
            }))
        }
        // Fail closed: an agent that would run its own input must not be told "allow".
        (_, _, Verdict::AllowEdited { .. }) => render(
            agent,
            event,
            &Verdict::Deny {
                reason: reason.to_owned(),
            },
        ),
        (Agent::Codex, HookEvent::PermissionRequest, _) if allow => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"},
            }
        })),
        (Agent::Codex, HookEvent::PermissionRequest, _) => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }
        })),
        (Agent::Codex, HookEvent::PreToolUse, _) if allow => None,
        (Agent::ClaudeCode | Agent::Codex, _, _) => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": event.name(),
                "permissionDecision": word,
                "permissionDecisionReason": reason,
            }
        })),
        (Agent::Gemini, _, _) => Some(json!({"decision": word, "reason": reason})),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn allow() -> Verdict {
        Verdict::Allow {
            reason: "fine".into(),
        }
    }

    fn deny() -> Verdict {
        Verdict::Deny {
            reason: "no".into(),
        }
    }

    #[test]
    fn each_agent_and_event_gets_its_own_shape() {
        assert_eq!(
            render(Agent::ClaudeCode, HookEvent::PreToolUse, &deny()).unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": "no"}})
        );
        assert_eq!(
            render(Agent::ClaudeCode, HookEvent::PreToolUse, &allow()).unwrap()
                ["hookSpecificOutput"]["permissionDecision"],
            "allow"
        );
        assert_eq!(
            render(Agent::Codex, HookEvent::PermissionRequest, &allow()).unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"}}})
        );
        assert_eq!(
            render(Agent::Codex, HookEvent::PermissionRequest, &deny()).unwrap()
                ["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": "no"})
        );
        assert_eq!(render(Agent::Codex, HookEvent::PreToolUse, &allow()), None);
        assert_eq!(
            render(Agent::Codex, HookEvent::PreToolUse, &deny()).unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": "no"}})
        );
        assert_eq!(
            render(Agent::Gemini, HookEvent::BeforeTool, &allow()).unwrap(),
            json!({"decision": "allow", "reason": "fine"})
        );
        assert_eq!(
            render(Agent::Gemini, HookEvent::BeforeTool, &deny()).unwrap(),
            json!({"decision": "deny", "reason": "no"})
        );
        assert_eq!(render(Agent::Gemini, HookEvent::AfterTool, &deny()), None);
        assert_eq!(
            render(Agent::ClaudeCode, HookEvent::PostToolUse, &deny()),
            None
        );
        assert_eq!(
            render(Agent::ClaudeCode, HookEvent::PostToolUseFailure, &deny()),
            None
        );
    }

    #[test]
    fn a_skills_shell_line_is_answered_under_its_own_event_name() {
        assert_eq!(
            render(Agent::ClaudeCode, HookEvent::PreSkillShellCommand, &deny()).unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "PreSkillShellCommand",
                "permissionDecision": "deny", "permissionDecisionReason": "no"}})
        );
        assert_eq!(
            render(Agent::ClaudeCode, HookEvent::PreSkillShellCommand, &allow()).unwrap()
                ["hookSpecificOutput"]["permissionDecision"],
            "allow"
        );
        // `updatedInput` is never applied there: it would only keep the command from
        // running, so an edit is a plain deny.
        let edited = Verdict::AllowEdited {
            reason: "edited".into(),
            input: json!({"command": "ls"}),
        };
        let answer = render(Agent::ClaudeCode, HookEvent::PreSkillShellCommand, &edited).unwrap();
        assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
        assert!(answer["hookSpecificOutput"].get("updatedInput").is_none());
    }

    #[test]
    fn an_edited_allow_is_updated_input_for_claude_code_and_a_deny_elsewhere() {
        let edited = Verdict::AllowEdited {
            reason: "edited".into(),
            input: json!({"command": "git push"}),
        };
        let claude = render(Agent::ClaudeCode, HookEvent::PreToolUse, &edited).unwrap();
        assert_eq!(claude["hookSpecificOutput"]["permissionDecision"], "allow");
        assert_eq!(
            claude["hookSpecificOutput"]["updatedInput"],
            json!({"command": "git push"})
        );
        assert_eq!(
            render(Agent::Codex, HookEvent::PreToolUse, &edited).unwrap()["hookSpecificOutput"]
                ["permissionDecision"],
            "deny"
        );
        assert_eq!(
            render(Agent::Codex, HookEvent::PermissionRequest, &edited).unwrap()
                ["hookSpecificOutput"]["decision"]["behavior"],
            "deny"
        );
        assert_eq!(
            render(Agent::Gemini, HookEvent::BeforeTool, &edited).unwrap()["decision"],
            "deny"
        );
    }
}
