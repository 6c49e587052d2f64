//! A fatigue corpus file (`crates/airlock-bench/corpus/*.jsonl`): one labelled tool call a
//! line, in the agent's own hook payload shape. The corpus README says how it was made and
//! labelled; this only reads it, and refuses a file it cannot read whole.

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// Which agent made the call: it picks the hook endpoint the payload is posted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Agent {
    #[serde(rename = "claude-code")]
    ClaudeCode,
    #[serde(rename = "codex")]
    Codex,
    #[serde(rename = "gemini")]
    Gemini,
}

impl Agent {
    /// The airlock hook endpoint of this agent (DESIGN.md §11.1).
    pub fn endpoint(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "/v1/hooks/claude-code",
            Agent::Codex => "/v1/hooks/codex",
            Agent::Gemini => "/v1/hooks/gemini",
        }
    }
}

/// The rubric's verdict on a call (issue 16), written before any replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Harmless,
    NeedsPerson,
    Refuse,
}

/// One line of a corpus file.
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    pub agent: Agent,
    /// The hook payload, posted as is.
    pub payload: Value,
    pub label: Label,
    /// Where the call was recorded (kept for the reader; the replay does not need it).
    #[allow(dead_code)]
    #[serde(default)]
    pub source: Value,
}

impl Entry {
    /// The payload's `tool_name` (empty when missing: such a call is judged as unknown).
    pub fn tool(&self) -> &str {
        self.payload["tool_name"].as_str().unwrap_or_default()
    }

    /// The payload's `tool_input`.
    pub fn input(&self) -> &Value {
        &self.payload["tool_input"]
    }

    /// The payload's `session_id` (empty when missing).
    pub fn session(&self) -> &str {
        self.payload["session_id"].as_str().unwrap_or_default()
    }

    /// The payload's `cwd` (empty when missing).
    pub fn cwd(&self) -> &str {
        self.payload["cwd"].as_str().unwrap_or_default()
    }
}

/// Reads a corpus file; a line that is not a labelled call fails the whole file, with its
/// line number (a measurement on part of a corpus would be a wrong measurement).
pub fn load(path: &Path) -> anyhow::Result<Vec<Entry>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the corpus {}", path.display()))?;
    parse(&text).with_context(|| format!("the corpus {}", path.display()))
}

/// The entries of a corpus text (blank lines are skipped).
pub fn parse(text: &str) -> anyhow::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: Entry = serde_json::from_str(line)
            .with_context(|| format!("line {}: not a labelled call", number + 1))?;
        if !entry.payload.is_object() || entry.tool().is_empty() {
            bail!("line {}: the payload has no tool_name", number + 1);
        }
        entries.push(entry);
    }
    if entries.is_empty() {
        bail!("no calls in it");
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_lines_and_rejects_a_bad_one_with_its_number() {
        let good = r#"{"agent":"claude-code","payload":{"tool_name":"Read","tool_input":{"file_path":"/p/a"}},"label":"harmless","why":"read"}"#;
        let entries = parse(&format!("{good}\n\n{good}\n")).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].label, Label::Harmless);
        assert_eq!(entries[0].agent.endpoint(), "/v1/hooks/claude-code");

        let bad_label = good.replace("harmless", "fine");
        let error = parse(&format!("{good}\n{bad_label}")).unwrap_err();
        assert!(format!("{error:#}").contains("line 2"), "{error:#}");
        let no_tool = r#"{"agent":"gemini","payload":{"tool_input":{}},"label":"refuse"}"#;
        assert!(parse(no_tool).is_err());
        assert!(parse("\n").is_err());
    }

    /// Every committed corpus file loads whole (a line a helper wrote with a lone UTF-16
    /// surrogate escape once made a file unreadable for the replay).
    #[test]
    fn every_committed_corpus_file_loads() {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        let mut files = 0;
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path
                .extension()
                .is_some_and(|extension| extension == "jsonl")
            {
                let entries = load(&path)
                    .map_err(|error| format!("{}: {error:#}", path.display()))
                    .unwrap();
                assert!(!entries.is_empty(), "{}", path.display());
                files += 1;
            }
        }
        assert!(
            files >= 40,
            "only {files} corpus files found in {}",
            folder.display()
        );
    }
}
