//! The peer regimes, simulated on the same labelled calls: Claude Code's default permission
//! mode, and a person who answers every Claude Code prompt with "Yes, and don't ask again".
//! A model of Claude Code's published permission docs (the corpus README states it and its
//! sources), not Claude Code itself: it is what a user of Claude Code gets out of the box.

use super::corpus::{Entry, Label};
use super::tally::Outcome;
use std::collections::HashSet;

/// Tools Claude Code runs without asking (its docs' "permission required: no").
const NO_PERMISSION: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "LS",
    "NotebookRead",
    "Task",
    "TodoWrite",
    "BashOutput",
    "KillShell",
    "AskUserQuestion",
];

/// Commands Claude Code treats as read-only and runs unasked.
const READ_ONLY_COMMANDS: &[&str] = &[
    "ls", "pwd", "cat", "head", "tail", "wc", "echo", "which", "grep", "rg", "file", "stat",
    "date", "tree", "sort", "uniq", "cut", "diff", "du", "df", "whoami", "id", "uname", "ps", "jq",
    "cd", "find",
];

/// `git` subcommands that only read.
const READ_ONLY_GIT: &[&str] = &["status", "log", "diff", "show", "branch", "rev-parse"];

/// The Claude Code tool a call of another agent corresponds to (DESIGN.md §11.1's table,
/// read backwards), so that one model judges every call.
pub fn claude_tool(tool: &str) -> &str {
    match tool {
        "run_shell_command" | "shell" | "exec_command" => "Bash",
        "read_file" | "read_many_files" => "Read",
        "list_directory" | "list_dir" => "LS",
        "glob" => "Glob",
        "search_file_content" | "grep_files" => "Grep",
        "write_file" => "Write",
        "replace" | "apply_patch" => "Edit",
        "web_fetch" => "WebFetch",
        "google_web_search" | "web_search" => "WebSearch",
        "update_plan" => "TodoWrite",
        other => other,
    }
}

/// Claude Code's default mode: `Allowed` or `Asked` (it denies nothing by default).
pub fn claude_default(entry: &Entry) -> Outcome {
    let tool = claude_tool(entry.tool());
    let free = NO_PERMISSION.contains(&tool)
        || (tool == "Bash" && read_only_command(entry.input()["command"].as_str().unwrap_or("")));
    if free {
        Outcome::Allowed
    } else {
        Outcome::Asked
    }
}

/// A person who always answers "Yes, and don't ask again": what was allowed once is never
/// asked again (a call labelled refuse is rejected, which saves nothing).
#[derive(Debug, Default)]
pub struct DontAskAgain {
    saved: HashSet<String>,
}

impl DontAskAgain {
    pub fn judge(&mut self, entry: &Entry) -> Outcome {
        if claude_default(entry) == Outcome::Allowed {
            return Outcome::Allowed;
        }
        let keys = permission_keys(entry);
        if keys.iter().all(|key| self.saved.contains(key)) {
            return Outcome::Allowed;
        }
        if entry.label != Label::Refuse {
            self.saved.extend(keys);
        }
        Outcome::Asked
    }
}

/// What "don't ask again" saves for a call, as Claude Code's docs describe it: a Bash
/// command prefix per project folder (one per part of a compound command), file edits for
/// the session, a WebFetch domain, else the tool per project folder.
fn permission_keys(entry: &Entry) -> Vec<String> {
    let tool = claude_tool(entry.tool());
    let cwd = entry.cwd();
    match tool {
        "Bash" => segments(entry.input()["command"].as_str().unwrap_or(""))
            .iter()
            .map(|segment| format!("bash {cwd} {}", prefix(segment)))
            .collect(),
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => {
            vec![format!("edits {}", entry.session())]
        }
        "WebFetch" => vec![format!(
            "fetch {}",
            domain(entry.input()["url"].as_str().unwrap_or(""))
        )],
        other => vec![format!("tool {cwd} {other}")],
    }
}

/// A command's prefix as a saved rule holds it: the first word, and the second when it
/// reads as a subcommand (not an option, a path or a file).
fn prefix(segment: &str) -> String {
    let mut words = segment
        .split_whitespace()
        .skip_while(|word| is_assignment(word));
    let first = words.next().unwrap_or("");
    match words.next() {
        Some(second)
            if !second.starts_with('-')
                && second
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':') =>
        {
            format!("{first} {second}")
        }
        _ => first.to_owned(),
    }
}

/// `NAME=value` before a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The host of a URL (the whole text when it has none).
fn domain(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', ':', '?', '#']).next().unwrap_or(rest)
}

/// Whether every part of a command is a read-only command with no output redirection.
fn read_only_command(command: &str) -> bool {
    let parts = segments(command);
    !parts.is_empty() && parts.iter().all(|segment| read_only_segment(segment))
}

fn read_only_segment(segment: &str) -> bool {
    if writes_output(segment) {
        return false;
    }
    let words: Vec<&str> = segment.split_whitespace().collect();
    match words.first().copied() {
        Some("git") => words.get(1).is_some_and(|sub| READ_ONLY_GIT.contains(sub)),
        Some("find") => !words
            .iter()
            .any(|word| matches!(*word, "-exec" | "-execdir" | "-delete" | "-ok" | "-okdir")),
        Some(first) => READ_ONLY_COMMANDS.contains(&first),
        None => false,
    }
}

/// A `>`/`>>` redirection outside quotes to anything but `/dev/null` or a descriptor.
fn writes_output(segment: &str) -> bool {
    let unquoted = outside_quotes(segment);
    let mut rest = unquoted.as_str();
    while let Some(at) = rest.find('>') {
        let target = rest[at..].trim_start_matches('>').trim_start();
        if !(target.starts_with('&') || target.starts_with("/dev/null")) {
            return true;
        }
        rest = &rest[at + 1..];
    }
    false
}

/// The text with every quoted part (and escaped character) blanked out, byte for byte, so
/// that offsets into the result are offsets into `text`.
fn outside_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote = None;
    let mut escaped = false;
    for c in text.chars() {
        let keep = match (quote, c) {
            _ if escaped => {
                escaped = false;
                false
            }
            (_, '\\') => {
                escaped = true;
                false
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                false
            }
            (Some(open), _) if c == open => {
                quote = None;
                false
            }
            (Some(_), _) => false,
            (None, _) => true,
        };
        if keep {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        }
    }
    out
}

/// The parts of a compound command (split on `&&`, `||`, `;`, `|` and new lines outside
/// quotes), trimmed, empty parts dropped.
fn segments(command: &str) -> Vec<String> {
    let blanked = outside_quotes(command);
    let mut parts = Vec::new();
    let mut start = 0;
    let bytes = blanked.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let separator = match bytes[at] {
            b'&' if bytes.get(at + 1) == Some(&b'&') => 2,
            b'|' if bytes.get(at + 1) == Some(&b'|') => 2,
            b'|' | b';' | b'\n' => 1,
            _ => 0,
        };
        if separator > 0 {
            parts.push(command[start..at].trim().to_owned());
            start = at + separator;
            at = start;
        } else {
            at += 1;
        }
    }
    parts.push(command[start..].trim().to_owned());
    parts.retain(|part| !part.is_empty());
    parts
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::fatigue::corpus::parse;

    fn entry(tool: &str, input: &str, label: &str) -> Entry {
        let line = format!(
            r#"{{"agent":"claude-code","payload":{{"session_id":"s1","cwd":"/p","tool_name":"{tool}","tool_input":{input}}},"label":"{label}"}}"#
        );
        parse(&line).unwrap().remove(0)
    }

    #[test]
    fn claude_default_asks_for_all_but_reads_and_read_only_commands() {
        let bash = |command: &str| {
            entry(
                "Bash",
                &serde_json::json!({"command": command}).to_string(),
                "harmless",
            )
        };
        assert_eq!(
            claude_default(&entry("Read", r#"{"file_path":"/etc/hosts"}"#, "harmless")),
            Outcome::Allowed
        );
        assert_eq!(
            claude_default(&entry("Edit", r#"{"file_path":"/p/a"}"#, "harmless")),
            Outcome::Asked
        );
        assert_eq!(
            claude_default(&entry("mcp__x__y", "{}", "harmless")),
            Outcome::Asked
        );
        assert_eq!(
            claude_default(&bash("git status && ls -la | grep x")),
            Outcome::Allowed
        );
        assert_eq!(
            claude_default(&bash("cat a.txt 2>/dev/null")),
            Outcome::Allowed
        );
        assert_eq!(claude_default(&bash("echo hi > out.txt")), Outcome::Asked);
        assert_eq!(claude_default(&bash("echo 'a > b'")), Outcome::Allowed);
        assert_eq!(
            claude_default(&bash("find . -name x -delete")),
            Outcome::Asked
        );
        assert_eq!(claude_default(&bash("git push")), Outcome::Asked);
        assert_eq!(claude_default(&bash("npm test")), Outcome::Asked);
        let gemini_read = entry("read_file", r#"{"path":"/p/a"}"#, "harmless");
        assert_eq!(claude_default(&gemini_read), Outcome::Allowed);
    }

    #[test]
    fn dont_ask_again_saves_prefixes_sessions_and_domains() {
        use Outcome::{Allowed, Asked};
        let bash = |command: &str| serde_json::json!({ "command": command }).to_string();
        let fetch = |url: &str| serde_json::json!({ "url": url }).to_string();
        // One person, in order: each call with what they see.
        let calls = [
            ("Bash", bash("git push origin main"), "needs_person", Asked),
            ("Bash", bash("git push --force"), "needs_person", Allowed),
            ("Bash", bash("git commit -m 'x; y'"), "harmless", Asked),
            // A refused call saves nothing: the next one is asked again.
            ("Bash", bash("rm -rf ~"), "refuse", Asked),
            ("Bash", bash("rm -rf ~"), "refuse", Asked),
            ("Bash", bash("cd x && npm install"), "needs_person", Asked),
            (
                "Bash",
                bash("npm install left-pad"),
                "needs_person",
                Allowed,
            ),
            (
                "Edit",
                r#"{"file_path":"/p/a"}"#.to_owned(),
                "harmless",
                Asked,
            ),
            (
                "Write",
                r#"{"file_path":"/q/b"}"#.to_owned(),
                "needs_person",
                Allowed,
            ),
            ("WebFetch", fetch("https://docs.rs/a"), "harmless", Asked),
            (
                "WebFetch",
                fetch("https://docs.rs/b?c"),
                "harmless",
                Allowed,
            ),
            ("WebFetch", fetch("https://example.com/"), "harmless", Asked),
        ];
        let mut person = DontAskAgain::default();
        for (tool, input, label, expected) in calls {
            let call = entry(tool, &input, label);
            assert_eq!(person.judge(&call), expected, "{tool} {input}");
        }
    }

    #[test]
    fn splits_compound_commands_outside_quotes() {
        assert_eq!(
            segments("a && b || c; d | e\nf"),
            vec!["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(
            segments(r#"git commit -m "x && y" && ls"#),
            vec![r#"git commit -m "x && y""#, "ls"]
        );
        assert_eq!(prefix("FOO=1 python3 -m pytest"), "python3");
        assert_eq!(prefix("git push origin main"), "git push");
        assert_eq!(prefix("python reproduce.py"), "python");
        assert_eq!(domain("https://a.b:8000/x"), "a.b");
    }
}
