//! A person's edit of a call (DESIGN.md §11.6), carried back into the agent's own tool
//! input: airlock shows and edits the canonical call (`shell.exec {command}`), the agent
//! runs its native one (`Bash {command, description}`).
//!
//! Each changed canonical argument is written to the one native field that held its asked
//! value (its own name first). The result is then translated again, and it is only used
//! when that gives exactly the edited canonical call: an edit that cannot be expressed
//! in the agent's input (a new argument, a patch, a value several fields share) is `None`,
//! and the hook denies with what to run instead rather than run a guess.

use crate::payload::HookCall;
use crate::translate::canonical;
use serde_json::Value;

/// The native tool input that runs `edited` where the agent asked for `asked` (both
/// canonical arguments of `call`), or `None` when no such input can be made exactly.
pub fn native_input(call: &HookCall, asked: &Value, edited: &Value) -> Option<Value> {
    let (asked_map, edited_map) = (asked.as_object()?, edited.as_object()?);
    let mut input = call.input.as_object()?.clone();
    for (key, now) in edited_map {
        let before = asked_map.get(key)?;
        if before == now {
            continue;
        }
        let field = if input.get(key) == Some(before) {
            key.clone()
        } else {
            let mut holding = input
                .iter()
                .filter(|(_, value)| *value == before)
                .map(|(name, _)| name.clone());
            let only = holding.next()?;
            if holding.next().is_some() {
                return None;
            }
            only
        };
        input.insert(field, now.clone());
    }
    // A removed argument has no native counterpart to remove with certainty.
    if asked_map.keys().any(|key| !edited_map.contains_key(key)) {
        return None;
    }
    let input = Value::Object(input);
    let again = HookCall {
        input: input.clone(),
        ..call.clone()
    };
    let translated = canonical(&again).ok()?;
    (translated.arguments == *edited).then_some(input)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::payload::{Agent, HookEvent};
    use serde_json::json;

    fn call(agent: Agent, tool: &str, input: Value) -> HookCall {
        HookCall {
            agent,
            event: HookEvent::PreToolUse,
            native_tool: tool.into(),
            input,
            session_id: None,
            cwd: Some("/home/ana/demo".into()),
            transcript_path: None,
            tool_use_id: None,
            turn_id: None,
            mcp_context: None,
        }
    }

    #[test]
    fn an_edited_command_goes_back_into_the_native_field() {
        let bash = call(
            Agent::ClaudeCode,
            "Bash",
            json!({"command": "git push --force", "description": "push"}),
        );
        let asked = canonical(&bash).unwrap().arguments;
        let mut edited = asked.clone();
        edited["command"] = "git push".into();
        assert_eq!(
            native_input(&bash, &asked, &edited).unwrap(),
            json!({"command": "git push", "description": "push"})
        );
    }

    #[test]
    fn a_renamed_field_is_found_by_its_asked_value() {
        let read = call(
            Agent::ClaudeCode,
            "Read",
            json!({"file_path": "/home/ana/demo/a.txt"}),
        );
        let asked = canonical(&read).unwrap().arguments;
        let mut edited = asked.clone();
        edited["path"] = "/home/ana/demo/b.txt".into();
        assert_eq!(
            native_input(&read, &asked, &edited).unwrap(),
            json!({"file_path": "/home/ana/demo/b.txt"})
        );
    }

    #[test]
    fn an_edit_the_native_input_cannot_carry_is_none() {
        let bash = call(Agent::ClaudeCode, "Bash", json!({"command": "ls"}));
        let asked = canonical(&bash).unwrap().arguments;
        // A new argument, and a removed one.
        let mut added = asked.clone();
        added["timeout"] = 5.into();
        assert_eq!(native_input(&bash, &asked, &added), None);
        let mut removed = asked.clone();
        removed.as_object_mut().unwrap().remove("command");
        assert_eq!(native_input(&bash, &asked, &removed), None);
    }
}
