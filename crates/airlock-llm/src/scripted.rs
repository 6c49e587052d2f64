//! [`ScriptedProvider`]: a model that replays TOML scenarios, for `airlock serve --demo`
//! and for tests of the agent runtime that need no HTTP.
//!
//! ```toml
//! [[scenario]]
//! marker = "#email"          # chosen when the latest user message contains this string
//! [[scenario.turn]]
//! events = [
//!   { type = "text", text = "I will send the report." },
//!   { type = "tool_use", name = "email.send", arguments = { to = "bob@example.com" } },
//! ]
//! [[scenario.turn]]
//! events = [{ type = "text", text = "Done: the email is queued." }]
//! ```
//!
//! Turn selection is stateless, because a run may resume in another process: the last
//! user message picks the scenario (the first, in file order, whose marker it contains;
//! an empty marker matches everything), and the number of assistant messages after it
//! picks the turn.

use std::path::Path;

use serde::Deserialize;

use crate::{ChatMessage, ChatRequest, Completion, LlmError, Provider, ToolCall};

/// The text of a turn asked for after the scenario's last one.
pub const NO_MORE_TURNS: &str = "(the scripted scenario has no more turns)";

/// Scenarios loaded from TOML.
#[derive(Debug, Clone)]
pub struct ScriptedProvider {
    scenarios: Vec<Scenario>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    #[serde(default)]
    scenario: Vec<Scenario>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    marker: String,
    #[serde(default)]
    turn: Vec<Turn>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Turn {
    events: Vec<Event>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Event {
    Text {
        text: String,
    },
    ToolUse {
        name: String,
        #[serde(default = "empty_object")]
        arguments: serde_json::Value,
    },
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

impl ScriptedProvider {
    /// Parses scenarios from TOML text; unknown keys, a scenario without turns and a
    /// nameless tool are errors.
    pub fn from_toml(text: &str) -> Result<ScriptedProvider, LlmError> {
        // The position and the parser's message, never the offending line itself: the file
        // named by an agent's `base_url` may be any file the server can read, and the error
        // reaches the run, which more people read than may edit agents.
        let file: ScenarioFile = toml::from_str(text).map_err(|error| {
            let at = error.span().map_or_else(String::new, |span| {
                let line = text
                    .get(..span.start)
                    .unwrap_or_default()
                    .matches('\n')
                    .count()
                    + 1;
                format!(" at line {line}")
            });
            LlmError::Config(format!(
                "invalid scripted scenarios{at}: {}",
                error.message().trim()
            ))
        })?;
        if file.scenario.is_empty() {
            return Err(LlmError::Config(
                "the scripted scenarios define no [[scenario]]".into(),
            ));
        }
        for scenario in &file.scenario {
            let marker = &scenario.marker;
            if scenario.turn.is_empty() {
                return Err(LlmError::Config(format!(
                    "scripted scenario `{marker}` has no [[scenario.turn]]"
                )));
            }
            let nameless = scenario.turn.iter().flat_map(|turn| &turn.events).any(
                |event| matches!(event, Event::ToolUse { name, .. } if name.trim().is_empty()),
            );
            if nameless {
                return Err(LlmError::Config(format!(
                    "scripted scenario `{marker}` has a tool_use with an empty name"
                )));
            }
        }
        Ok(ScriptedProvider {
            scenarios: file.scenario,
        })
    }

    /// Reads and parses a scenario file; errors name the file.
    pub fn load(path: &Path) -> Result<ScriptedProvider, LlmError> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            LlmError::Config(format!(
                "cannot read scripted scenarios {}: {error}",
                path.display()
            ))
        })?;
        ScriptedProvider::from_toml(&text).map_err(|error| match error {
            LlmError::Config(message) => LlmError::Config(format!("{}: {message}", path.display())),
            other => other,
        })
    }

    /// The completion for `request`, by the rules in the module documentation.
    fn answer(&self, request: &ChatRequest) -> Completion {
        let last_user = request
            .messages
            .iter()
            .rposition(|message| matches!(message, ChatMessage::User { .. }));
        let (user_text, turn_index) = match last_user {
            Some(position) => {
                let text = match &request.messages[position] {
                    ChatMessage::User { content } => content.as_str(),
                    _ => "",
                };
                let assistants = request.messages[position + 1..]
                    .iter()
                    .filter(|message| matches!(message, ChatMessage::Assistant { .. }))
                    .count();
                (text, assistants)
            }
            None => ("", 0),
        };
        let Some(scenario) = self
            .scenarios
            .iter()
            .find(|scenario| user_text.contains(&scenario.marker))
        else {
            let markers: Vec<&str> = self
                .scenarios
                .iter()
                .map(|scenario| scenario.marker.as_str())
                .collect();
            return text_completion(format!(
                "(no scripted scenario matches this message; markers: {})",
                markers.join(", ")
            ));
        };
        let Some(turn) = scenario.turn.get(turn_index) else {
            return text_completion(NO_MORE_TURNS.to_owned());
        };

        let mut texts = Vec::new();
        let mut tool_calls = Vec::new();
        for event in &turn.events {
            match event {
                Event::Text { text } => texts.push(text.as_str()),
                Event::ToolUse { name, arguments } => tool_calls.push(ToolCall {
                    id: format!("call_{turn_index}_{}", tool_calls.len()),
                    name: name.clone(),
                    arguments: arguments.to_string(),
                }),
            }
        }
        let finish_reason = if tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        Completion {
            text: (!texts.is_empty()).then(|| texts.join("\n")),
            tool_calls,
            finish_reason: Some(finish_reason.to_owned()),
        }
    }
}

fn text_completion(text: String) -> Completion {
    Completion {
        text: Some(text),
        tool_calls: Vec::new(),
        finish_reason: Some("stop".into()),
    }
}

#[async_trait::async_trait]
impl Provider for ScriptedProvider {
    async fn complete(
        &self,
        request: &ChatRequest,
        on_delta: &(dyn for<'a> Fn(&'a str) + Send + Sync),
    ) -> Result<Completion, LlmError> {
        let completion = self.answer(request);
        if let Some(text) = &completion.text {
            for fragment in word_fragments(text) {
                on_delta(fragment);
            }
        }
        Ok(completion)
    }
}

/// Splits text into fragments that each start at a word (with the whitespace before it),
/// so the fragments joined are the text, as with a streaming model.
pub(crate) fn word_fragments(text: &str) -> impl Iterator<Item = &str> {
    let mut starts: Vec<usize> = text
        .char_indices()
        .zip(text.chars().skip(1))
        .filter(|((_, current), next)| !current.is_whitespace() && next.is_whitespace())
        .map(|((index, current), _)| index + current.len_utf8())
        .collect();
    starts.insert(0, 0);
    starts.push(text.len());
    starts.dedup();
    let windows: Vec<(usize, usize)> = starts.windows(2).map(|pair| (pair[0], pair[1])).collect();
    windows
        .into_iter()
        .map(move |(start, end)| &text[start..end])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn fragments_join_to_the_text() {
        for text in [
            "I will send the report.",
            "  two  spaces ",
            "one",
            "",
            "é ü\nnext",
        ] {
            let fragments: Vec<&str> = word_fragments(text).collect();
            assert_eq!(fragments.concat(), text);
        }
        let fragments: Vec<&str> = word_fragments("I will send").collect();
        assert_eq!(fragments, ["I", " will", " send"]);
    }
}
