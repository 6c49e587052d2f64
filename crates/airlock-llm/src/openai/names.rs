//! Tool names on the wire. OpenAI accepts only `^[a-zA-Z0-9_-]{1,64}$`, airlock tools are
//! named `email.send` or `mcp__github__create_issue`; each request gets its own two-way map.
//!
//! Architecture invariant: the map lives for one request only and never leaves this
//! module's callers in `openai`; everything above sees airlock names.

use std::collections::{HashMap, HashSet};

use crate::{ChatMessage, ChatRequest};

/// OpenAI's limit on the length of a function name.
const MAX_WIRE_NAME_LEN: usize = 64;

/// The per-request map between airlock names and wire names.
#[derive(Debug, Default)]
pub(crate) struct ToolNames {
    wire_by_airlock: HashMap<String, String>,
    airlock_by_wire: HashMap<String, String>,
}

impl ToolNames {
    /// Names every tool the request mentions: the offered tools, then the tool calls in the
    /// history (a tool may have been called earlier and withdrawn since).
    pub(crate) fn for_request(request: &ChatRequest) -> ToolNames {
        let mut airlock_names: Vec<&str> = Vec::new();
        let mut seen = HashSet::new();
        let offered = request.tools.iter().map(|tool| tool.name.as_str());
        let called = request.messages.iter().flat_map(|message| match message {
            ChatMessage::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(|call| call.name.as_str()).collect()
            }
            _ => Vec::new(),
        });
        for name in offered.chain(called) {
            if seen.insert(name) {
                airlock_names.push(name);
            }
        }

        let mut names = ToolNames::default();
        // Valid names are kept as they are first, so an encoded name never takes a name
        // the model could legitimately mean as itself.
        let (valid, invalid): (Vec<&str>, Vec<&str>) = airlock_names
            .into_iter()
            .partition(|name| is_valid_wire_name(name));
        for name in valid {
            names.insert(name, name.to_owned());
        }
        for name in invalid {
            let wire = names.unique(&sanitize(name));
            names.insert(name, wire);
        }
        names
    }

    /// The wire name of an airlock name the request mentions.
    pub(crate) fn to_wire<'a>(&'a self, airlock_name: &'a str) -> &'a str {
        self.wire_by_airlock
            .get(airlock_name)
            .map_or(airlock_name, String::as_str)
    }

    /// The airlock name of a name the model sent; an unknown name passes through unchanged.
    pub(crate) fn to_airlock(&self, wire_name: &str) -> String {
        self.airlock_by_wire
            .get(wire_name)
            .map_or(wire_name, String::as_str)
            .to_owned()
    }

    fn insert(&mut self, airlock_name: &str, wire_name: String) {
        self.airlock_by_wire
            .insert(wire_name.clone(), airlock_name.to_owned());
        self.wire_by_airlock
            .insert(airlock_name.to_owned(), wire_name);
    }

    /// `candidate`, or `candidate_2`, `candidate_3`… whichever is still free.
    fn unique(&self, candidate: &str) -> String {
        if !self.airlock_by_wire.contains_key(candidate) {
            return candidate.to_owned();
        }
        (2..)
            .map(|n| {
                let suffix = format!("_{n}");
                // INVARIANT: `candidate` is ASCII (sanitised), so byte slicing is safe.
                let keep = candidate.len().min(MAX_WIRE_NAME_LEN - suffix.len());
                format!("{}{suffix}", &candidate[..keep])
            })
            .find(|name| !self.airlock_by_wire.contains_key(name))
            .unwrap_or_default()
    }
}

fn is_valid_wire_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_WIRE_NAME_LEN
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// Every character OpenAI refuses becomes `_`; the result is cut to 64 characters.
fn sanitize(name: &str) -> String {
    let mut wire: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_WIRE_NAME_LEN)
        .collect();
    if wire.is_empty() {
        wire.push_str("tool");
    }
    wire
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{ToolCall, ToolDef};

    fn tool(name: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({}),
        }
    }

    #[test]
    fn names_are_encoded_uniquely_and_decoded_back() {
        let long = "x.".repeat(40);
        let request = ChatRequest {
            tools: vec![
                tool("email.send"),
                tool("email_send"),
                tool("fs.read"),
                tool(&long),
            ],
            messages: vec![ChatMessage::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "c".into(),
                    name: "shell.run".into(),
                    arguments: "{}".into(),
                }],
            }],
        };
        let names = ToolNames::for_request(&request);
        assert_eq!(names.to_wire("email_send"), "email_send");
        assert_eq!(names.to_wire("email.send"), "email_send_2");
        assert_eq!(names.to_wire("fs.read"), "fs_read");
        assert_eq!(names.to_wire("shell.run"), "shell_run");
        assert_eq!(names.to_wire(&long).len(), 64);
        assert!(is_valid_wire_name(names.to_wire(&long)));
        for name in [
            "email.send",
            "email_send",
            "fs.read",
            "shell.run",
            long.as_str(),
        ] {
            assert_eq!(names.to_airlock(names.to_wire(name)), name);
        }
        assert_eq!(names.to_airlock("made_up"), "made_up");
        assert_eq!(
            names.to_wire("mcp__github__create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(sanitize("é.ü"), "___");
    }
}
