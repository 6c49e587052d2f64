//! What the runtime keeps of one model turn before anything of it runs or is journalled:
//! an id of its own for every tool call ([`tool_call_ids`]), and the streamed text held
//! back until it can be redacted whole ([`StreamedText`]).
//!
//! INVARIANT: within a session, every tool call has an id no other tool call has. A step,
//! the exact arguments a leg keeps, the tool message the model reads and the journal's
//! `tool_call` all go by that id, so one call can never stand in for another: the call
//! that runs is the call that was gated and shown. The model's own id is kept when it is
//! present and unused; a missing id, or one the model used twice (a buggy or
//! prompt-injected model), is replaced, and the model reads the replacement back in its
//! own turn, so each of its calls gets its own answer.

use airlock_gate::ids::new_id;
use airlock_llm::ToolCall;
use airlock_policy::secrets;
use airlock_protocol::Message;
use std::collections::HashSet;

/// The id each of `calls` goes by, in order, with the model's own id when it was replaced
/// (`Some("")`: the model gave none). `conversation` is the session's, before this turn.
pub(crate) fn tool_call_ids(
    calls: &[ToolCall],
    conversation: &[Message],
) -> Vec<(String, Option<String>)> {
    let mut taken: HashSet<String> = HashSet::new();
    for message in conversation {
        taken.extend(message.tool_call_id.iter().cloned());
        taken.extend(
            message
                .tool_calls
                .iter()
                .filter_map(|call| call.get("id").and_then(|id| id.as_str()))
                .map(str::to_owned),
        );
    }
    calls
        .iter()
        .map(|call| {
            if !call.id.trim().is_empty() && taken.insert(call.id.clone()) {
                return (call.id.clone(), None);
            }
            let fresh = loop {
                let fresh = new_id("tool");
                if taken.insert(fresh.clone()) {
                    break fresh;
                }
            };
            (fresh, Some(call.id.clone()))
        })
        .collect()
}

/// Streamed model text on its way to the journal (G9). Secrets are found by patterns over
/// whole text, and a fragment may end in the middle of one (`sk-proj-Ab` + `cd12…`), so
/// text is journalled a line at a time, each batch of complete lines redacted together:
/// no secret pattern spans a line break except a PEM private key, whose lines are held
/// back until its END line (or the end of the answer). The rest of the answer is
/// journalled, redacted, when it ends.
#[derive(Default)]
pub(crate) struct StreamedText {
    /// Text received and not journalled yet.
    pending: String,
}

impl StreamedText {
    /// Takes a fragment; returns what can be journalled now, redacted.
    pub(crate) fn push(&mut self, fragment: &str) -> Option<String> {
        self.pending.push_str(fragment);
        let cut = self.pending.rfind('\n')? + 1;
        let complete = &self.pending[..cut];
        if let Some(begin) = complete.rfind("-----BEGIN") {
            if !complete[begin..].contains("-----END") {
                return None;
            }
        }
        let ready = secrets::redact_text(complete);
        self.pending.drain(..cut);
        Some(ready)
    }

    /// The end of the answer: everything still held back, redacted.
    pub(crate) fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        (!rest.is_empty()).then(|| secrets::redact_text(&rest))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "clock.now".into(),
            arguments: "{}".into(),
        }
    }

    fn earlier_turn(ids: &[&str]) -> Message {
        Message {
            id: "msg_1".into(),
            session_id: "ses_1".into(),
            run_id: "run_1".into(),
            role: "assistant".into(),
            text: None,
            tool_calls: ids
                .iter()
                .map(|id| json!({"id": id, "tool": "clock.now"}))
                .collect(),
            tool_call_id: None,
            steps: Vec::new(),
            created_at: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    #[test]
    fn unique_model_ids_are_kept() {
        let ids = tool_call_ids(&[call("a"), call("b")], &[earlier_turn(&["c"])]);
        assert_eq!(ids, [("a".to_owned(), None), ("b".to_owned(), None)]);
    }

    #[test]
    fn duplicate_missing_and_reused_ids_are_replaced() {
        let calls = [call("dup"), call("dup"), call(""), call("old")];
        let ids = tool_call_ids(&calls, &[earlier_turn(&["old"])]);
        assert_eq!(ids[0], ("dup".to_owned(), None));
        assert_eq!(ids[1].1.as_deref(), Some("dup"));
        assert_eq!(ids[2].1.as_deref(), Some(""));
        assert_eq!(ids[3].1.as_deref(), Some("old"));
        let distinct: HashSet<&str> = ids.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(distinct.len(), 4, "{ids:?}");
        assert!(!distinct.contains("old"));
    }

    /// Joins what a stream of fragments journals.
    fn journalled(fragments: &[&str]) -> (Vec<String>, String) {
        let mut text = StreamedText::default();
        let mut deltas: Vec<String> = fragments.iter().filter_map(|f| text.push(f)).collect();
        deltas.extend(text.finish());
        let joined = deltas.concat();
        (deltas, joined)
    }

    #[test]
    fn a_secret_split_across_fragments_is_redacted() {
        let key = "sk-proj-Abcd1234Efgh5678Ijkl9012Mnop";
        let answer = format!(
            "Here is the key: {key}\nand the token ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\nbye"
        );
        let pieces: Vec<String> = answer
            .chars()
            .collect::<Vec<_>>()
            .chunks(8)
            .map(|chunk| chunk.iter().collect())
            .collect();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let (deltas, joined) = journalled(&pieces);
        assert!(!joined.contains("Abcd1234"), "{joined}");
        assert!(!joined.contains("a1B2c3D4"), "{joined}");
        assert!(joined.contains("[REDACTED:api_key]"), "{joined}");
        assert!(joined.ends_with("bye"), "{joined}");
        assert!(deltas.len() >= 2, "journalled as lines arrive: {deltas:?}");
    }

    #[test]
    fn a_private_key_is_held_back_until_its_end() {
        let (_, joined) = journalled(&[
            "key:\n-----BEGIN PRIVATE KEY-----\n",
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n",
            "bKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n",
            "done\n",
        ]);
        assert!(!joined.contains("MIIEvQ"), "{joined}");
        assert!(!joined.contains("bKcwgg"), "{joined}");
        assert!(joined.ends_with("done\n"), "{joined}");
    }

    #[test]
    fn text_without_secrets_arrives_unchanged() {
        let (_, joined) = journalled(&["Hello", " there,\nthis ", "streams.\n", "End"]);
        assert_eq!(joined, "Hello there,\nthis streams.\nEnd");
    }
}
