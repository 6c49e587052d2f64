//! Stage two: syntax tree → compiled [`Policy`], with the load-time checks of DESIGN.md §4.3.
//!
//! Loading either yields a policy that can evaluate any call, or a list of [`LoadError`]s,
//! each at `file:line:column`. There is no half-loaded policy: callers keep the one in force
//! until a new one loads whole.

use crate::classes::{Class, ClassTable};
use crate::condition::{toml_to_json, Condition, Matcher};
use crate::context::Context;
use crate::document::{self, Document, RuleEntry, SecretsMode, ToolEntry};
use crate::index::{compile_tool_glob, RuleIndex};
use crate::matcher::Side;
use crate::preview::Template;
use crate::rule_key::ConditionKey;
use crate::{canonical, digest};
use airlock_protocol::{Decision, Risk, MAX_DURATION_SECONDS};
use globset::GlobMatcher;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;
use toml::Spanned;

/// The deadline when a policy names none.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(24 * 60 * 60);

/// The time an agent has to report an outcome when a policy names none (DESIGN.md §11.8).
pub const DEFAULT_OUTCOME_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// One problem found while loading a policy, at a position in its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )
    }
}

/// Every problem found in one load, in text order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LoadErrors(pub Vec<LoadError>);

impl fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

/// What the loader may know beyond the text.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The name errors are reported against (`policy.toml`).
    pub file_name: String,
    /// Argument names of tools whose schema is known (built-in and MCP tools). A `target`
    /// or `{placeholder}` naming no argument of a known schema is a load error.
    pub tool_schemas: HashMap<String, Vec<String>>,
}

/// A catalogue entry, compiled.
#[derive(Debug, Clone)]
pub struct CompiledTool {
    pub risk: Risk,
    pub target: Option<String>,
    pub summary: Option<Template>,
    pub body: Option<Template>,
}

impl CompiledTool {
    /// A tool as its provider declares it (the built-in runtime's own tools), for calls the
    /// policy's catalogue does not cover.
    pub fn declare(
        risk: Risk,
        target: Option<&str>,
        summary: Option<&str>,
        body: Option<&str>,
    ) -> Result<CompiledTool, crate::preview::TemplateError> {
        Ok(CompiledTool {
            risk,
            target: target.map(str::to_owned),
            summary: summary.map(Template::parse).transpose()?,
            body: body.map(Template::parse).transpose()?,
        })
    }
}

/// A rule, compiled.
#[derive(Debug, Clone)]
pub struct CompiledRule {
    /// Its `name`, or `rules[N]` (zero-based) when it has none.
    pub label: String,
    pub tool: String,
    /// The `native_tool` glob, when the rule narrows on the agent's own tool name.
    pub native_tool: Option<GlobMatcher>,
    pub decision: Decision,
    pub reason: Option<String>,
    pub agents: Option<HashSet<String>>,
    pub conditions: Vec<Condition>,
    pub deadline: Option<Duration>,
    /// Whether standing rules may turn this rule's `ask` into `allow`.
    pub standing: bool,
    /// The two-person rule: distinct people who must approve (1 when not set).
    pub approvals: u32,
    /// Who may decide (`approvers` as written); empty: every approver.
    pub approvers: Vec<String>,
    /// Each `when` entry as written (`path=<matcher as JSON>`), sorted: how `lint` sees
    /// that one rule's conditions are a subset of another's.
    pub when_text: Vec<String>,
    /// How many `examples` it has that must match and must not match.
    pub examples: (usize, usize),
    /// What its conditions test, alike for rules of any policy that test the same thing
    /// (see [`ConditionKey`]); `None` when it has no conditions.
    pub(crate) condition_key: Option<ConditionKey>,
}

impl CompiledRule {
    /// The way this rule's matchers lean (see [`Side`]).
    pub fn side(&self) -> Side {
        if self.decision == Decision::Allow {
            Side::Allow
        } else {
            Side::Restrict
        }
    }

    /// Whether every `when` condition holds for these arguments, in `context`.
    pub fn conditions_hold(&self, arguments: &Value, context: &Context) -> bool {
        let side = self.side();
        self.conditions
            .iter()
            .all(|condition| condition.holds(arguments, side, context))
    }

    /// Whether the rule's `native_tool` filter (if any) admits the call's native tool name.
    pub fn native_tool_admits(&self, native_tool: Option<&str>) -> bool {
        match &self.native_tool {
            None => true,
            Some(glob) => native_tool.is_some_and(|name| glob.is_match(name)),
        }
    }
}

/// A loaded policy, ready to evaluate calls. Immutable; share it behind an `Arc`.
#[derive(Debug, Clone)]
pub struct Policy {
    pub(crate) default: Decision,
    pub(crate) deadline: Duration,
    /// Not part of the digest: it decides nothing about a call, so changing it must not
    /// turn pending approvals stale.
    pub(crate) outcome_timeout: Duration,
    pub(crate) secrets: SecretsMode,
    pub(crate) tools: HashMap<String, CompiledTool>,
    pub(crate) rules: Vec<CompiledRule>,
    pub(crate) index: RuleIndex,
    pub(crate) digest: String,
    /// The command classification: the shipped table plus the policy's `[commands]`.
    pub(crate) classes: Arc<ClassTable>,
}

impl Policy {
    /// Loads a policy from its TOML text.
    pub fn load(source: &str, options: &LoadOptions) -> Result<Policy, LoadErrors> {
        let mut loader = Loader {
            source,
            file: if options.file_name.is_empty() {
                "policy.toml"
            } else {
                &options.file_name
            },
            errors: Vec::new(),
        };
        let document = match document::parse(source) {
            Ok(document) => document,
            Err(error) => {
                let span = error.span().unwrap_or(0..0);
                loader.error(span, error.message().trim_end().to_owned());
                return Err(loader.finish());
            }
        };
        let policy = loader.compile(&document, options);
        match policy {
            Some(policy) if loader.errors.is_empty() => Ok(policy),
            _ => Err(loader.finish()),
        }
    }

    /// Decision when no rule matches.
    pub fn default_decision(&self) -> Decision {
        self.default
    }

    /// Default time a person has to decide.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// How long an agent has to report a redeemed call's outcome.
    pub fn outcome_timeout(&self) -> Duration {
        self.outcome_timeout
    }

    pub fn secrets_mode(&self) -> SecretsMode {
        self.secrets
    }

    /// Hex SHA-256 of the canonical JSON of the normalised policy: the same for two texts
    /// that differ only in whitespace, comments, key order or spelled-out defaults.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The catalogue entry of a tool, when it is listed.
    pub fn tool(&self, name: &str) -> Option<&CompiledTool> {
        self.tools.get(name)
    }

    /// The catalogue entry of a tool, or else what its provider declares about it: the
    /// policy's word wins, and a tool neither lists has risk `exec`.
    pub fn tool_or_declared<'a>(
        &'a self,
        name: &str,
        declared: Option<&'a CompiledTool>,
    ) -> Option<&'a CompiledTool> {
        self.tools.get(name).or(declared)
    }

    /// The rules in file order.
    pub fn rules(&self) -> &[CompiledRule] {
        &self.rules
    }

    /// The command classification in force (the shipped one plus the policy's additions).
    pub fn classes(&self) -> &Arc<ClassTable> {
        &self.classes
    }
}

struct Loader<'a> {
    source: &'a str,
    file: &'a str,
    errors: Vec<LoadError>,
}

impl Loader<'_> {
    fn error(&mut self, span: Range<usize>, message: String) {
        let (line, column) = line_column(self.source, span.start);
        self.errors.push(LoadError {
            file: self.file.to_owned(),
            line,
            column,
            message,
        });
    }

    fn finish(mut self) -> LoadErrors {
        self.errors.sort_by_key(|error| (error.line, error.column));
        LoadErrors(self.errors)
    }

    fn compile(&mut self, document: &Document, options: &LoadOptions) -> Option<Policy> {
        if *document.version.get_ref() != 1 {
            self.error(
                document.version.span(),
                format!(
                    "unsupported policy version {}, expected 1",
                    document.version.get_ref()
                ),
            );
        }
        // A bad deadline is reported, and checking goes on so that every error shows at once.
        let deadline = match &document.deadline {
            Some(text) => self.duration(text, "deadline").unwrap_or(DEFAULT_DEADLINE),
            None => DEFAULT_DEADLINE,
        };
        let outcome_timeout = match &document.outcome_timeout {
            Some(text) => self
                .duration(text, "outcome_timeout")
                .unwrap_or(DEFAULT_OUTCOME_TIMEOUT),
            None => DEFAULT_OUTCOME_TIMEOUT,
        };
        let mut tools = HashMap::new();
        for (name, entry) in &document.tools {
            if let Some(tool) = self.compile_tool(name, entry, options) {
                tools.insert(name.clone(), tool);
            }
        }
        let classes = self.classes(document)?;
        let mut rules = Vec::new();
        let mut names: HashSet<String> = HashSet::new();
        for (position, entry) in document.rules.iter().enumerate() {
            if let Some(name) = &entry.get_ref().name {
                if !names.insert(name.get_ref().clone()) {
                    self.error(
                        name.span(),
                        format!("duplicate rule name `{}`", name.get_ref()),
                    );
                }
            }
            if let Some(rule) = self.compile_rule(position, entry, &classes) {
                rules.push(rule);
            }
        }
        if !self.errors.is_empty() {
            return None;
        }
        let index = match RuleIndex::build(rules.iter().map(|rule| rule.tool.as_str())) {
            Ok(index) => index,
            Err(message) => {
                self.error(0..0, format!("cannot index the rules: {message}"));
                return None;
            }
        };
        Some(Policy {
            default: document
                .default
                .as_ref()
                .map_or(Decision::Ask, |d| *d.get_ref()),
            deadline,
            outcome_timeout,
            secrets: document
                .secrets
                .as_ref()
                .map_or(SecretsMode::Deny, |s| *s.get_ref()),
            tools,
            rules,
            index,
            digest: digest::json_digest(&normalised(document, deadline)),
            classes,
        })
    }

    /// The shipped classification plus the policy's `[commands.<class>] add = [...]`.
    fn classes(&mut self, document: &Document) -> Option<Arc<ClassTable>> {
        let built_in = match ClassTable::built_in() {
            Ok(table) => table,
            Err(message) => {
                self.error(
                    0..0,
                    format!("the built-in command classes do not load: {message}"),
                );
                return None;
            }
        };
        if document.commands.is_empty() {
            return Some(built_in);
        }
        let mut table = (*built_in).clone();
        for (name, entry) in &document.commands {
            let Some(class) = Class::from_name(name.get_ref()) else {
                self.error(
                    name.span(),
                    format!(
                        "unknown class `{}` in [commands]; the classes are {}",
                        name.get_ref(),
                        Class::names()
                    ),
                );
                continue;
            };
            if class == Class::Unknown {
                self.error(
                    name.span(),
                    "[commands.unknown]: a command is unknown by not being listed; nothing can be added to it".into(),
                );
                continue;
            }
            for command in &entry.get_ref().add {
                if let Err(message) = table.add(class, command.get_ref()) {
                    self.error(
                        command.span(),
                        format!("[commands.{}]: {message}", name.get_ref()),
                    );
                }
            }
        }
        Some(Arc::new(table))
    }

    fn duration(&mut self, text: &Spanned<String>, key: &str) -> Option<Duration> {
        match humantime::parse_duration(text.get_ref()) {
            Ok(duration) if duration.is_zero() => {
                self.error(text.span(), format!("`{key}` must be longer than zero"));
                None
            }
            Ok(duration) if duration > Duration::from_secs(MAX_DURATION_SECONDS) => {
                self.error(
                    text.span(),
                    format!(
                        "`{key}` `{}` is too long: at most 36525d (100 years)",
                        text.get_ref()
                    ),
                );
                None
            }
            Ok(duration) => Some(duration),
            Err(error) => {
                self.error(
                    text.span(),
                    format!(
                        "bad `{key}` `{}`: {error}; write a duration such as 90s, 15m, 24h or 7d",
                        text.get_ref()
                    ),
                );
                None
            }
        }
    }

    fn compile_tool(
        &mut self,
        name: &str,
        entry: &Spanned<ToolEntry>,
        options: &LoadOptions,
    ) -> Option<CompiledTool> {
        let schema = options.tool_schemas.get(name);
        let tool = entry.get_ref();
        if let (Some(target), Some(schema)) = (&tool.target, schema) {
            if !schema.iter().any(|arg| arg == target.get_ref()) {
                self.error(
                    target.span(),
                    format!(
                        "target `{}` names no argument of tool `{name}` (its arguments: {})",
                        target.get_ref(),
                        schema.join(", ")
                    ),
                );
            }
        }
        if let Some(target) = &tool.target {
            if target.get_ref().is_empty() {
                self.error(target.span(), "target is empty".into());
            }
        }
        let summary = self.template(name, tool.summary.as_ref(), schema);
        let body = self.template(name, tool.body.as_ref(), schema);
        Some(CompiledTool {
            risk: tool.risk.as_ref().map_or(Risk::Exec, |r| *r.get_ref()),
            target: tool.target.as_ref().map(|t| t.get_ref().clone()),
            summary: summary?,
            body: body?,
        })
    }

    /// Compiles a preview template. `Some(None)` when there is none, `None` on error.
    fn template(
        &mut self,
        tool: &str,
        text: Option<&Spanned<String>>,
        schema: Option<&Vec<String>>,
    ) -> Option<Option<Template>> {
        let Some(text) = text else {
            return Some(None);
        };
        // The span covers the quotes; template offsets count from the first character.
        let start = text.span().start;
        let quote = if self.source[start..].starts_with("\"\"\"")
            || self.source[start..].starts_with("'''")
        {
            3
        } else {
            1
        };
        match Template::parse(text.get_ref()) {
            Ok(template) => {
                if let Some(schema) = schema {
                    for name in template.placeholders() {
                        let first = name.split('.').next().unwrap_or(name);
                        if !schema.iter().any(|arg| arg == first) {
                            self.error(
                                text.span(),
                                format!(
                                    "placeholder `{{{name}}}` names no argument of tool `{tool}` (its arguments: {})",
                                    schema.join(", ")
                                ),
                            );
                        }
                    }
                }
                Some(Some(template))
            }
            Err(error) => {
                let at = start + quote + error.offset;
                self.error(at..at, format!("bad template: {}", error.message));
                None
            }
        }
    }

    fn compile_rule(
        &mut self,
        position: usize,
        entry: &Spanned<RuleEntry>,
        classes: &Arc<ClassTable>,
    ) -> Option<CompiledRule> {
        let rule = entry.get_ref();
        let label = match &rule.name {
            Some(name) if name.get_ref().trim().is_empty() => {
                self.error(name.span(), "rule name is empty".into());
                return None;
            }
            Some(name) => name.get_ref().clone(),
            None => format!("rules[{position}]"),
        };
        let mut ok = true;
        if let Err(message) = compile_tool_glob(rule.tool.get_ref()) {
            self.error(
                rule.tool.span(),
                format!(
                    "rule `{label}`: bad tool glob `{}`: {message}",
                    rule.tool.get_ref()
                ),
            );
            ok = false;
        }
        let agents = match &rule.agents {
            Some(agents) if agents.get_ref().is_empty() => {
                self.error(
                    agents.span(),
                    format!("rule `{label}`: `agents` is empty; leave it out to apply the rule to every agent"),
                );
                ok = false;
                None
            }
            Some(agents) => Some(agents.get_ref().iter().cloned().collect()),
            None => None,
        };
        let native_tool = match &rule.native_tool {
            None => None,
            Some(pattern) => match compile_tool_glob(pattern.get_ref()) {
                Ok(glob) => Some(glob.compile_matcher()),
                Err(message) => {
                    self.error(
                        pattern.span(),
                        format!(
                            "rule `{label}`: bad native_tool glob `{}`: {message}",
                            pattern.get_ref()
                        ),
                    );
                    ok = false;
                    None
                }
            },
        };
        let decision = *rule.decision.get_ref();
        let mut conditions = Vec::new();
        for (path, matcher) in &rule.when {
            match Matcher::compile(matcher.get_ref(), classes)
                .and_then(|compiled| Condition::new(path, compiled))
            {
                Ok(condition) => {
                    if matches!(condition.matcher, Matcher::Plants(_) | Matcher::Hooks(_))
                        && decision == Decision::Allow
                    {
                        self.error(
                            matcher.span(),
                            format!("rule `{label}`: `when.{path}`: `plants` and `hooks` are for deny and ask rules: what a file runs later can show a danger, never prove its absence"),
                        );
                        ok = false;
                    }
                    if path == "*" && decision == Decision::Allow {
                        self.error(
                            matcher.span(),
                            format!("rule `{label}`: `when.\"*\"` (any argument) is for deny and ask rules: one argument that matches says nothing of the others"),
                        );
                        ok = false;
                    }
                    if let Matcher::Class(class) = &condition.matcher {
                        if decision == Decision::Allow && class.classes().contains(Class::Unknown) {
                            self.error(
                                matcher.span(),
                                format!("rule `{label}`: `when.{path}`: an allow rule cannot name class `unknown`: a command nobody can read is never allowed"),
                            );
                            ok = false;
                        }
                    }
                    conditions.push(condition);
                }
                Err(message) => {
                    self.error(
                        matcher.span(),
                        format!("rule `{label}`: `when.{path}`: {message}"),
                    );
                    ok = false;
                }
            }
        }
        let deadline = match &rule.deadline {
            Some(text) => {
                let parsed = self.duration(text, "deadline");
                ok &= parsed.is_some();
                parsed
            }
            None => None,
        };
        if let Some(standing) = &rule.standing {
            if decision != Decision::Ask {
                self.error(
                    standing.span(),
                    format!(
                        "rule `{label}`: `standing` only applies to rules whose decision is ask"
                    ),
                );
                ok = false;
            }
        }
        let (approvals, approvers) = self.two_person_rule(rule, &label, decision);
        ok &= approvals > 0;
        if !ok {
            return None;
        }
        // Each entry as written; a key only when every entry could be written out.
        let written: Option<Vec<String>> = rule
            .when
            .iter()
            .map(|(path, entry)| {
                serde_json::to_string(entry.get_ref())
                    .ok()
                    .map(|json| format!("{path}={json}"))
            })
            .collect();
        let mut compiled = CompiledRule {
            label,
            tool: rule.tool.get_ref().clone(),
            native_tool,
            decision,
            reason: rule.reason.clone(),
            agents,
            conditions,
            deadline,
            standing: rule.standing.as_ref().is_none_or(|s| *s.get_ref()),
            approvals,
            approvers,
            when_text: rule
                .when
                .iter()
                .map(|(path, entry)| {
                    format!(
                        "{path}={}",
                        serde_json::to_string(entry.get_ref()).unwrap_or_default()
                    )
                })
                .collect(),
            examples: rule.examples.as_ref().map_or((0, 0), |examples| {
                let examples = examples.get_ref();
                (examples.matching.len(), examples.not_match.len())
            }),
            condition_key: None,
        };
        compiled.condition_key = written
            .as_deref()
            .and_then(|entries| ConditionKey::new(compiled.side(), entries, classes));
        if let Some(examples) = &rule.examples {
            self.check_examples(&compiled, examples.get_ref());
        }
        Some(compiled)
    }

    /// A rule's `approvals` and `approvers` (see `approvers.rs`): `(0, _)` when they are
    /// wrong, each problem reported at its key.
    fn two_person_rule(
        &mut self,
        rule: &RuleEntry,
        label: &str,
        decision: Decision,
    ) -> (u32, Vec<String>) {
        let spans = [
            ("approvals", rule.approvals.as_ref().map(Spanned::span)),
            ("approvers", rule.approvers.as_ref().map(Spanned::span)),
        ];
        let mut ok = true;
        for (key, span) in spans.clone() {
            if let (Some(span), true) = (span, decision != Decision::Ask) {
                self.error(
                    span,
                    format!("rule `{label}`: `{key}` only applies to rules whose decision is ask"),
                );
                ok = false;
            }
        }
        let checked = crate::approvers::check(
            rule.approvals.as_ref().map(|n| *n.get_ref()),
            rule.approvers
                .as_ref()
                .map(|list| list.get_ref().as_slice()),
        );
        match checked {
            Ok(pair) if ok => pair,
            Ok(_) => (0, Vec::new()),
            Err(problems) => {
                for (key, message) in problems {
                    let span = spans
                        .iter()
                        .find(|(name, _)| *name == key)
                        .and_then(|(_, span)| span.clone())
                        .unwrap_or(0..0);
                    self.error(span, format!("rule `{label}`: {message}"));
                }
                (0, Vec::new())
            }
        }
    }

    /// Each example must behave as stated against the rule's `when`.
    fn check_examples(&mut self, rule: &CompiledRule, examples: &document::Examples) {
        let sets = [
            (&examples.matching, true, "match"),
            (&examples.not_match, false, "not_match"),
        ];
        for (list, expected, key) in sets {
            for (i, example) in list.iter().enumerate() {
                let arguments = toml_to_json(&toml::Value::Table(example.get_ref().clone()));
                if rule.conditions_hold(&arguments, &Context::unknown()) != expected {
                    let verb = if expected {
                        "does not match"
                    } else {
                        "matches"
                    };
                    self.error(
                        example.span(),
                        format!(
                            "rule `{}`: example {key}[{i}] {verb} the rule's `when`: {}",
                            rule.label,
                            canonical::to_canonical_string(&arguments)
                        ),
                    );
                }
            }
        }
    }
}

/// The policy as canonical data: defaults spelled out, the deadline in seconds, so that
/// equivalent texts share a digest. The syntax tree is plain data, so serialising it cannot
/// fail; `null` stands in if it ever did, which still yields a stable digest.
fn normalised(document: &Document, deadline: Duration) -> Value {
    let mut value = json!({
        "version": document.version.get_ref(),
        "default": document.default.as_ref().map_or(Decision::Ask, |d| *d.get_ref()),
        "deadline_seconds": deadline.as_secs(),
        "secrets": document.secrets.as_ref().map_or(SecretsMode::Deny, |s| *s.get_ref()),
        "tools": serde_json::to_value(&document.tools).unwrap_or(Value::Null),
        "rules": serde_json::to_value(&document.rules).unwrap_or(Value::Null),
    });
    // Only a policy that extends the classification says so, so that every policy written
    // before classes existed keeps its digest.
    if !document.commands.is_empty() {
        if let Value::Object(members) = &mut value {
            let commands: serde_json::Map<String, Value> = document
                .commands
                .iter()
                .map(|(name, entry)| {
                    let add: Vec<Value> = entry
                        .get_ref()
                        .add
                        .iter()
                        .map(|command| Value::String(command.get_ref().clone()))
                        .collect();
                    (name.get_ref().clone(), json!({ "add": add }))
                })
                .collect();
            members.insert("commands".into(), Value::Object(commands));
        }
    }
    value
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}
