//! Stage one: TOML text → the policy's syntax tree, with source spans.
//!
//! These serde types mirror DESIGN.md §4 key for key. Every struct denies unknown fields, so
//! a typo such as `decison` is a load error at its position rather than a silently ignored
//! key. Values that later checks must point at are wrapped in [`Spanned`] so that errors can
//! name `file:line:column`. Nothing here is validated beyond its type; [`crate::load`] does
//! the rest.

use airlock_protocol::{Decision, Risk};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use toml::Spanned;

/// The whole policy file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    /// Language version; only `1` exists.
    pub version: Spanned<i64>,
    /// Decision when no rule matches.
    #[serde(default)]
    pub default: Option<Spanned<Decision>>,
    /// Default time a person has to decide, in humantime (`90s`, `15m`, `24h`, `7d`).
    #[serde(default)]
    pub deadline: Option<Spanned<String>>,
    /// How long after a redeem the agent has to report the call's outcome before the call
    /// is marked ambiguous (DESIGN.md §11.8), in humantime; `10m` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome_timeout: Option<Spanned<String>>,
    /// What happens to an asked call that holds secret material.
    #[serde(default)]
    pub secrets: Option<Spanned<SecretsMode>>,
    /// The tool catalogue, keyed by exact tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, Spanned<ToolEntry>>,
    /// The rules, in file order (the order decides which rule is cited on a tie).
    #[serde(default)]
    pub rules: Vec<Spanned<RuleEntry>>,
    /// Additions to the command classification, by class: `[commands.read_only] add =
    /// ["jq"]`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub commands: BTreeMap<Spanned<String>, Spanned<CommandsEntry>>,
}

/// One `[commands.<class>]` table.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CommandsEntry {
    /// Command patterns (`jq`, `my-tool check`) that belong to the class.
    pub add: Vec<Spanned<String>>,
}

/// `secrets = "deny" | "redact"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretsMode {
    /// An asked call holding secrets is denied: a person cannot see it exactly.
    #[default]
    Deny,
    /// An asked call holding secrets is shown with the secrets redacted.
    Redact,
}

/// One `[tools."name"]` catalogue entry.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToolEntry {
    /// Risk class; a listed tool without one is `exec`, like an unlisted tool.
    #[serde(default)]
    pub risk: Option<Spanned<Risk>>,
    /// The argument that names the call's target (standing rules bind to its value).
    #[serde(default)]
    pub target: Option<Spanned<String>>,
    /// Preview line template.
    #[serde(default)]
    pub summary: Option<Spanned<String>>,
    /// Longer preview text template.
    #[serde(default)]
    pub body: Option<Spanned<String>>,
}

/// One `[[rules]]` entry.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuleEntry {
    #[serde(default)]
    pub name: Option<Spanned<String>>,
    /// Glob over tool names.
    pub tool: Spanned<String>,
    /// Glob over the agent's own name for the tool (`Bash`, `run_shell_command`); a call
    /// without one never matches a rule that has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_tool: Option<Spanned<String>>,
    pub decision: Spanned<Decision>,
    #[serde(default)]
    pub reason: Option<String>,
    /// Only these agents (by name); absent means every agent.
    #[serde(default)]
    pub agents: Option<Spanned<Vec<String>>>,
    /// Argument path (dotted) → one matcher; all must hold.
    #[serde(default)]
    pub when: BTreeMap<String, Spanned<MatcherEntry>>,
    /// Time a person has to decide calls this rule asks about.
    #[serde(default)]
    pub deadline: Option<Spanned<String>>,
    /// `false` keeps standing rules from turning this rule's `ask` into `allow`.
    #[serde(default)]
    pub standing: Option<Spanned<bool>>,
    /// The two-person rule: how many distinct people must approve a call this rule asks
    /// about (default 1). Left out of the digest's text when absent, so policies without it
    /// keep their digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<Spanned<i64>>,
    /// Who may decide calls this rule asks about: roles (that role and above) or
    /// `user:<name>`; absent means every approver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<Spanned<Vec<String>>>,
    /// Argument sets that must (and must not) satisfy `when`, checked at load.
    #[serde(default)]
    pub examples: Option<Spanned<Examples>>,
}

/// `examples = { match = [...], not_match = [...] }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Examples {
    #[serde(rename = "match", default)]
    pub matching: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    pub not_match: Vec<Spanned<toml::Table>>,
}

/// One matcher table, such as `{ prefix = ["rm -rf", "mkfs"] }`. Exactly one key must be
/// set; [`crate::load`] checks that.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MatcherEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eq: Option<toml::Value>,
    #[serde(rename = "in", default, skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<toml::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<OneOrMany>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<OneOrMany>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<OneOrMany>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<OneOrMany>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<OneOrMany>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present: Option<bool>,
    /// Whether the value holds secret material (the scan of DESIGN.md §4.2 step 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<bool>,
    /// Whether an address carries data from this machine (`matcher/local_data.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<bool>,
    /// Whether the value is SQL that only reads and names no secret material (`true`), or
    /// anything else: SQL that writes, runs or reads secrets, or text that is not SQL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql_reads: Option<bool>,
    /// Command classes (DESIGN.md §11.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<OneOrMany>,
    /// The command classes a written file would run later by itself (a git hook, a CI
    /// step, a build recipe), on the argument naming the file (`path`, `paths`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plants: Option<OneOrMany>,
    /// As `plants`, counting only the files that run with no one running them: git hooks,
    /// hook managers' configuration, package lifecycle scripts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<OneOrMany>,
    /// With `class`, `plants` or `hooks` only: where the files a command changes must lie (allow),
    /// or lie for the rule to match (deny, ask).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<OneOrMany>,
}

/// A string or a list of strings (`glob = "*.md"` or `glob = ["*.md", "*.txt"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct OneOrMany(pub Vec<String>);

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OneOrManyVisitor;
        impl<'de> Visitor<'de> for OneOrManyVisitor {
            type Value = OneOrMany;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<OneOrMany, E> {
                Ok(OneOrMany(vec![text.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OneOrMany, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    items.push(item);
                }
                Ok(OneOrMany(items))
            }
        }
        deserializer.deserialize_any(OneOrManyVisitor)
    }
}

/// Parses the text. The error carries toml's message and byte span.
pub fn parse(source: &str) -> Result<Document, toml::de::Error> {
    toml::from_str(source)
}
