//! Approve with edits (DESIGN.md §11.6): a person changes a call's arguments while
//! approving it, and the grant binds to exactly the edited call.
//!
//! The edit is checked before anything is written: it must be a JSON object, hold no
//! secret (airlock never stores one, so it could not run one a person typed, and a
//! `[REDACTED:…]` placeholder cannot be turned back into the secret it hid), and the
//! policy in force must not deny it. What the policy says otherwise (ask, allow) does
//! not matter: a person is approving it now. The binding digest over the edited call is
//! taken like the asked call's, with the same approval, agent, session, tool and policy.

use crate::{Gate, GateError};
use airlock_policy::digest::{binding_digest, Binding};
use airlock_policy::{secrets, Call as PolicyCall, Decision};
use airlock_protocol::Approval;
use airlock_store::Edit;
use serde_json::{json, Map, Value};

/// The placeholder redaction leaves where a secret was (`[REDACTED:<kind>]`).
const REDACTED: &str = "[REDACTED:";

impl Gate {
    /// Checks a person's edit of `approval`'s arguments and binds it; with it, the asked
    /// (redacted) arguments. `None` when the edit is the asked arguments themselves:
    /// nothing to change.
    pub(crate) async fn checked_edit(
        &self,
        workspace: &str,
        approval: &Approval,
        arguments: &Value,
    ) -> Result<Option<(Edit, Value)>, GateError> {
        if !arguments.is_object() {
            return Err(GateError::Invalid(
                "arguments (the edited call) must be a JSON object".into(),
            ));
        }
        let call = self
            .store()
            .get_call(workspace, &approval.call_id)
            .await?
            .ok_or(GateError::NotFound("call"))?;
        // The asked arguments sent back unchanged are no edit (placeholders and all).
        if call.arguments == *arguments {
            return Ok(None);
        }
        if holds_placeholder(arguments) {
            return Err(GateError::Invalid(
                "the edited arguments hold a `[REDACTED:…]` placeholder: airlock never kept \
                 the secret it hides, so the call cannot be edited; reject it and let the \
                 agent ask again"
                    .into(),
            ));
        }
        if secrets::redact(arguments) != *arguments {
            return Err(GateError::Invalid(
                "the edited arguments hold secret material; airlock never stores a secret, \
                 so it cannot run one written into an edit"
                    .into(),
            ));
        }
        let agent = self
            .store()
            .get_agent(workspace, &approval.agent_id)
            .await?
            .ok_or(GateError::NotFound("agent"))?;
        let session = match &approval.session_id {
            Some(id) => self.store().get_session(workspace, id).await?,
            None => None,
        };
        // The edit is judged under the policy the approval was made under, which must
        // still be in force: the store refuses the decision otherwise, and judging it
        // under another one would be judging a different question.
        let in_force = self
            .loaded_policy(workspace)
            .map(|loaded| loaded.info.digest.clone())
            .unwrap_or_default();
        if in_force != approval.policy_digest {
            return Err(GateError::StalePolicy);
        }
        let standing = self
            .standing_in_scope(workspace, &agent.id, session.as_ref(), self.now())
            .await?;
        let verdict = self.evaluate(
            workspace,
            &PolicyCall {
                tool: &approval.tool,
                arguments,
                agent: Some(&agent.name),
                mode: session
                    .as_ref()
                    .and_then(|session| session.mode)
                    .unwrap_or(agent.mode),
                standing: &standing,
                // What a tool provider declared is not stored; it only ever sets a risk
                // or a preview for a tool the policy does not list, never a decision.
                declared: None,
                native_tool: call.native_tool.as_deref(),
                cwd: call.cwd.as_deref(),
                project: call.project.as_deref(),
                // The home folder is not stored: a rule anchored at `{home}` cannot allow
                // the edit, which only makes the check stricter.
                home: None,
            },
        );
        if verdict.decision == Decision::Deny {
            return Err(GateError::EditDenied(
                verdict
                    .reason
                    .unwrap_or_else(|| "the policy denies the edited call".into()),
            ));
        }
        let edit = Edit {
            binding_digest: binding_digest(&Binding {
                approval: &approval.id,
                workspace,
                agent: &approval.agent_id,
                session: approval.session_id.as_deref(),
                tool: &approval.tool,
                arguments,
                policy: &approval.policy_digest,
            }),
            arguments: arguments.clone(),
        };
        Ok(Some((edit, call.arguments)))
    }
}

/// The audit record's account of an edit: both argument objects, both digests, and the
/// top-level keys that changed, so a reader sees what the person changed without diffing.
pub(crate) fn edit_data(approval: &Approval, original: &Value, edit: &Edit) -> Value {
    json!({
        "original_binding_digest": approval.binding_digest,
        "edited_binding_digest": edit.binding_digest,
        "original_arguments": original,
        "arguments": edit.arguments,
        "changed": changed_keys(original, &edit.arguments),
    })
}

/// The top-level keys whose values differ between two argument objects, sorted.
pub fn changed_keys(original: &Value, edited: &Value) -> Vec<String> {
    let empty = Map::new();
    let before = original.as_object().unwrap_or(&empty);
    let after = edited.as_object().unwrap_or(&empty);
    let mut keys: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|key| before.get(*key) != after.get(*key))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

fn holds_placeholder(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains(REDACTED),
        Value::Array(items) => items.iter().any(holds_placeholder),
        Value::Object(members) => members
            .iter()
            .any(|(key, member)| key.contains(REDACTED) || holds_placeholder(member)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_keys_names_added_removed_and_changed_keys() {
        let before = json!({"to": "a@x.test", "subject": "hi", "cc": "c@x.test"});
        let after = json!({"to": "b@x.test", "subject": "hi", "bcc": "d@x.test"});
        assert_eq!(changed_keys(&before, &after), ["bcc", "cc", "to"]);
        assert!(changed_keys(&before, &before).is_empty());
    }

    #[test]
    fn a_placeholder_is_found_at_any_depth() {
        assert!(holds_placeholder(
            &json!({"env": [{"TOKEN": "[REDACTED:github_token]"}]})
        ));
        assert!(!holds_placeholder(&json!({"command": "ls [REDACT"})));
    }
}
