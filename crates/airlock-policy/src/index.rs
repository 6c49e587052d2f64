//! The rule index: which rules can possibly apply to a tool name.
//!
//! Rules whose `tool` is an exact name sit in a hash map; rules with a glob are compiled once
//! into one [`GlobSet`]; `*` rules apply to everything. Evaluation asks the index for the
//! candidate rules of one tool and looks at nothing else, so its cost grows with the rules
//! that *can* match the tool, not with the size of the policy. The candidates of a tool name
//! are computed once and memoised (tool names repeat: an agent has a handful of tools), so
//! even a policy of ten thousand glob rules costs one hash lookup per call.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// The most tool names whose candidates are memoised; past it, candidates are computed
/// each time (arbitrary tool names from a hostile caller cannot grow memory without bound).
const MEMO_CAPACITY: usize = 4096;

/// Where each rule's tool pattern was filed.
#[derive(Debug, Default)]
pub struct RuleIndex {
    exact: HashMap<String, Vec<usize>>,
    globs: GlobSet,
    /// For glob number `i` in `globs`, the rule it belongs to.
    glob_rules: Vec<usize>,
    match_all: Vec<usize>,
    memo: RwLock<HashMap<Box<str>, Arc<[usize]>>>,
}

impl Clone for RuleIndex {
    fn clone(&self) -> Self {
        RuleIndex {
            exact: self.exact.clone(),
            globs: self.globs.clone(),
            glob_rules: self.glob_rules.clone(),
            match_all: self.match_all.clone(),
            memo: RwLock::default(),
        }
    }
}

/// Compiles a tool-name glob. `*` crosses every character, dots included: tool names are
/// flat (`fs.read`, `mcp__github__create_issue`), not paths.
pub fn compile_tool_glob(pattern: &str) -> Result<Glob, String> {
    if pattern.is_empty() {
        return Err("tool pattern is empty".into());
    }
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map_err(|e| e.kind().to_string())
}

fn is_literal(pattern: &str) -> bool {
    !pattern.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

impl RuleIndex {
    /// Builds the index from each rule's tool pattern, in rule order. Patterns must already
    /// have passed [`compile_tool_glob`].
    pub fn build<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Result<RuleIndex, String> {
        let mut index = RuleIndex::default();
        let mut builder = GlobSetBuilder::new();
        for (rule, pattern) in patterns.into_iter().enumerate() {
            if pattern == "*" || pattern == "**" {
                index.match_all.push(rule);
            } else if is_literal(pattern) {
                index
                    .exact
                    .entry(pattern.to_owned())
                    .or_default()
                    .push(rule);
            } else {
                builder.add(compile_tool_glob(pattern)?);
                index.glob_rules.push(rule);
            }
        }
        index.globs = builder.build().map_err(|e| e.to_string())?;
        Ok(index)
    }

    /// The rules that may apply to `tool`, in rule (file) order.
    pub fn candidates(&self, tool: &str) -> Arc<[usize]> {
        if let Some(found) = self
            .memo
            .read()
            .ok()
            .and_then(|memo| memo.get(tool).cloned())
        {
            return found;
        }
        let computed: Arc<[usize]> = self.compute(tool).into();
        if let Ok(mut memo) = self.memo.write() {
            if memo.len() < MEMO_CAPACITY {
                memo.insert(tool.into(), computed.clone());
            }
        }
        computed
    }

    /// The rules of `tool` and, for an MCP tool whose name repeats its server's name, of
    /// the name without it ([`without_server_prefix`]): both spellings name one tool.
    fn compute(&self, tool: &str) -> Vec<usize> {
        let mut rules: Vec<usize> = self.match_all.clone();
        let plain = without_server_prefix(tool);
        for name in std::iter::once(tool).chain(plain.as_deref()) {
            if let Some(exact) = self.exact.get(name) {
                rules.extend_from_slice(exact);
            }
            if !self.glob_rules.is_empty() {
                for glob in self.globs.matches(name) {
                    if let Some(rule) = self.glob_rules.get(glob) {
                        rules.push(*rule);
                    }
                }
            }
        }
        rules.sort_unstable();
        rules.dedup();
        rules
    }
}

/// An MCP tool's name without its server's name in front: many servers repeat it in every
/// tool (`slack_get_channel_history` on the `slack` server, `n8n_get_workflow` on
/// `n8n-mcp`), which hides the verb rules are written for. `None` for any other name. The
/// server's name is compared without an `mcp`/`server` affix, in any case, `-` and `_`
/// alike; something must follow the separator.
pub fn without_server_prefix(tool: &str) -> Option<String> {
    let (server, name) = tool.strip_prefix("mcp__")?.split_once("__")?;
    let fold = |text: &str| text.to_ascii_lowercase().replace('-', "_");
    let mut stem = fold(server);
    for affix in ["mcp_server", "server", "mcp"] {
        if let Some(rest) = stem
            .strip_suffix(affix)
            .and_then(|rest| rest.strip_suffix('_'))
        {
            stem = rest.to_owned();
        }
        if let Some(rest) = stem
            .strip_prefix(affix)
            .and_then(|rest| rest.strip_prefix('_'))
        {
            stem = rest.to_owned();
        }
    }
    if stem.is_empty() {
        return None;
    }
    let folded = fold(name);
    let after = folded.strip_prefix(stem.as_str())?.strip_prefix('_')?;
    if after.is_empty() {
        return None;
    }
    // Folding keeps byte lengths (ASCII case, `-` for `_`), so `after` ends `name` too.
    let verb = name.get(name.len() - after.len()..)?;
    Some(format!("mcp__{server}__{verb}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn candidates_come_from_exact_names_globs_and_star_in_rule_order() {
        let patterns = [
            "fs.*",
            "email.send",
            "*",
            "mcp__github__*",
            "email.send",
            "shell.exec",
        ];
        let index = RuleIndex::build(patterns).unwrap();
        let check = |tool: &str, expected: &[usize]| {
            assert_eq!(&*index.candidates(tool), expected, "tool {tool}");
            // Memoised answers are the same answers.
            assert_eq!(&*index.candidates(tool), expected, "tool {tool} (memo)");
        };
        check("email.send", &[1, 2, 4]);
        check("fs.read", &[0, 2]);
        check("fs.", &[0, 2]);
        check("fsxread", &[2]);
        check("mcp__github__create_issue", &[2, 3]);
        check("shell.exec", &[2, 5]);
        check("unknown", &[2]);
        check("", &[2]);
    }

    #[test]
    fn dots_are_ordinary_characters_in_tool_globs() {
        let index = RuleIndex::build(["a*z", "a?c"]).unwrap();
        assert_eq!(&*index.candidates("a.b.z"), &[0]);
        assert_eq!(&*index.candidates("a.c"), &[1]);
        assert_eq!(&*index.candidates("a/c"), &[1]);
    }

    #[test]
    fn the_memo_is_bounded() {
        let index = RuleIndex::build(["t*"]).unwrap();
        for i in 0..MEMO_CAPACITY + 10 {
            assert_eq!(&*index.candidates(&format!("t{i}")), &[0]);
        }
        assert_eq!(index.memo.read().unwrap().len(), MEMO_CAPACITY);
        assert_eq!(&*index.candidates("x"), &[] as &[usize]);
    }

    #[test]
    fn an_mcp_tool_repeating_its_servers_name_is_also_matched_without_it() {
        assert_eq!(
            without_server_prefix("mcp__slack__slack_get_channel_history").as_deref(),
            Some("mcp__slack__get_channel_history")
        );
        assert_eq!(
            without_server_prefix("mcp__n8n-mcp__n8n_list_workflows").as_deref(),
            Some("mcp__n8n-mcp__list_workflows")
        );
        assert_eq!(
            without_server_prefix("mcp__mcp-server-linear__Linear-getIssue").as_deref(),
            Some("mcp__mcp-server-linear__getIssue")
        );
        for other in [
            "mcp__github__get_issue",
            "mcp__slack__slack",
            "mcp__slack__slack_",
            "mcp__slack__slackbot_post",
            "fs.read",
            "mcp__slack",
        ] {
            assert_eq!(without_server_prefix(other), None, "{other}");
        }
        let index = RuleIndex::build(["mcp__*__get_*", "mcp__slack__slack_*", "fs.read"]).unwrap();
        assert_eq!(&*index.candidates("mcp__slack__slack_get_user"), &[0, 1]);
        assert_eq!(&*index.candidates("mcp__slack__slack_post_message"), &[1]);
        assert_eq!(&*index.candidates("mcp__github__get_issue"), &[0]);
    }

    #[test]
    fn bad_globs_are_refused() {
        assert!(compile_tool_glob("fs.[").is_err());
        assert!(compile_tool_glob("").is_err());
        assert!(RuleIndex::build(["{a,"]).is_err());
    }
}
