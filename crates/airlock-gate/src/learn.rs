//! Insights that learn (`GET /v1/insights`, DESIGN.md §11.5): from what people keep
//! approving, narrow policy rules, each proven by a replay over the whole recorded
//! history; and the tools people approve without reading (rubber-stamping).
//!
//! Standing rules cannot cover exec calls (DESIGN.md §4.2: a command is not a target), nor
//! a family of targets, so repeated approvals are grouped into patterns, three kinds:
//! - **prefix**: a plain command by its program and first word (`cargo test`, `npm run`),
//!   an allow rule with a `prefix` matcher (on the allow side every part of a compound
//!   command must be covered);
//! - **class**: a command line that is not one plain command, by the set of classes its
//!   parts have (`build` + `read_only`), when every file it changes is in the call's
//!   project: a `class` matcher with `paths = ["{project}/**"]`. Only classes a person can
//!   sensibly wave through are learned (never `unknown`, privileges, credentials, remote
//!   code, pushes, deploys or discards);
//! - **path**: a tool's `path` argument in one folder, by that folder, written from the
//!   `{project}` anchor when it is in the call's project: a `path` matcher on the folder.
//!
//! A candidate is kept only when its replay removes prompts and flips no past deny and no
//! rejected approval to allow. Everything here only suggests: a person saves a policy (G6).

use crate::identity::require_role;
use crate::{Gate, GateError};
use airlock_policy::classes::{Class, ClassTable};
use airlock_policy::context::Context;
use airlock_policy::matcher::path::below;
use airlock_policy::matcher::shell::classify::{classify, Role as FileRole};
use airlock_policy::Policy;
use airlock_protocol::{AuditKind, AuditRecord, Decision, ReplayReport, Role};
use airlock_store::Principal;
use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// Audit records read per page.
const PAGE: u32 = 1000;
/// Approvals of one command group before a rule is suggested for it.
const MIN_REPEATS: u64 = 3;
/// Candidate rules replayed per request (each replay reads the whole chain).
const MAX_CANDIDATES: usize = 5;
/// Approvals of one tool before rubber-stamping is judged.
pub const RUBBER_STAMP_MIN: u64 = 10;
/// A median decision faster than this, every time approved: nobody is reading.
const RUBBER_STAMP_SECONDS: f64 = 3.0;

/// Classes whose calls a person can sensibly wave through once learned; anything else
/// (unknown commands, privileges, credentials, remote code, pushes, deploys, discards,
/// installs, network) keeps being asked.
const LEARNABLE_CLASSES: [Class; 5] = [
    Class::ReadOnly,
    Class::Build,
    Class::Write,
    Class::Delete,
    Class::VcsLocal,
];

/// What a group of approved calls has in common: the rule's matcher.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pattern {
    /// A plain command's program and first word.
    Prefix(String),
    /// The classes of a command line's parts, every change in the project.
    Classes(Vec<&'static str>),
    /// A folder holding the tool's `path` argument (`{project}/docs` or absolute).
    Folder(String),
}

impl Pattern {
    fn kind(&self) -> &'static str {
        match self {
            Pattern::Prefix(_) => "prefix",
            Pattern::Classes(_) => "class",
            Pattern::Folder(_) => "path",
        }
    }

    /// The pattern in words, for the report.
    fn describe(&self) -> String {
        match self {
            Pattern::Prefix(prefix) => prefix.clone(),
            Pattern::Classes(classes) => format!("{} in {{project}}", classes.join(" + ")),
            Pattern::Folder(folder) => format!("{folder}/**"),
        }
    }
}

/// A narrow policy rule learned from approvals, with its replay report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleSuggestion {
    pub tool: String,
    /// `prefix`, `class` or `path`: the kind of matcher the rule has.
    pub kind: &'static str,
    /// The pattern in words (`cargo test`, `build + write in {project}`, `{project}/docs/**`).
    pub pattern: String,
    /// The command prefix people kept approving (prefix rules only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// How many approvals it covers.
    pub approved: u64,
    /// The rule, TOML, to append to the policy.
    pub rule: String,
    /// The policy in force with the rule appended, replayed over the whole history.
    pub replay: ReplayReport,
}

/// A tool approved every time, too fast to have been read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RubberStamp {
    pub tool: String,
    pub approved: u64,
    pub median_decision_seconds: f64,
    pub suggestion: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LearnReport {
    pub rules: Vec<RuleSuggestion>,
    pub rubber_stamping: Vec<RubberStamp>,
}

/// One asked call as the chain tells it.
#[derive(Debug)]
struct Asked {
    tool: String,
    call_id: String,
    /// The pattern its approval would count for, if it fits one.
    pattern: Option<Pattern>,
    asked_at: Option<Timestamp>,
}

/// What one pass over the chain collects.
#[derive(Debug, Default)]
struct Collected {
    asked: HashMap<String, Asked>,
    /// Per tool: decision times (s) of approvals, count of rejections.
    per_tool: BTreeMap<String, (Vec<f64>, u64)>,
    /// Per (tool, pattern): approvals, and whether one was rejected.
    groups: BTreeMap<(String, Pattern), (u64, bool)>,
    rejected_calls: HashSet<String>,
    /// The classification of the policy in force (for class patterns).
    classes: Option<Arc<ClassTable>>,
}

impl Collected {
    fn read(&mut self, record: &AuditRecord) {
        let data = &record.data;
        let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_owned);
        // Only the kind is parsed: the fields are read leniently, as an older record wrote
        // them; a kind this build does not know says nothing about approvals.
        let Some(kind) = AuditKind::parse(&record.kind) else {
            return;
        };
        match kind {
            AuditKind::ApprovalRequested => {
                let tool = text("tool").unwrap_or_default();
                let pattern = pattern_of(&tool, data, self.classes.as_ref());
                self.asked.insert(
                    record.subject.clone(),
                    Asked {
                        tool,
                        call_id: text("call_id").unwrap_or_default(),
                        pattern,
                        asked_at: record.at.parse().ok(),
                    },
                );
            }
            AuditKind::ApprovalApproved | AuditKind::ApprovalRejected => {
                let Some(asked) = self.asked.get(&record.subject) else {
                    return;
                };
                let approved = kind == AuditKind::ApprovalApproved;
                let entry = self.per_tool.entry(asked.tool.clone()).or_default();
                if approved {
                    let at: Option<Timestamp> = record.at.parse().ok();
                    if let (Some(at), Some(asked_at)) = (at, asked.asked_at) {
                        let seconds = at.duration_since(asked_at).as_secs_f64();
                        entry.0.push(seconds.max(0.0));
                    }
                } else {
                    entry.1 += 1;
                    self.rejected_calls.insert(asked.call_id.clone());
                }
                if let Some(pattern) = &asked.pattern {
                    let key = (asked.tool.clone(), pattern.clone());
                    let group = self.groups.entry(key).or_default();
                    if approved {
                        group.0 += 1;
                    } else {
                        group.1 = true;
                    }
                }
            }
            _ => {}
        }
    }
}

/// The program and its first word that is not an option (`cargo test`, `npm run`), when
/// the command is one plain simple command of such words; else none (no suggestion is
/// made for what cannot be named plainly).
pub fn command_prefix(command: &str) -> Option<String> {
    let plain = |word: &str| {
        !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c))
    };
    // One simple command: no pipe, list, redirection, substitution or subshell anywhere
    // (a prefix rule covers such a line only if it covers every part, which this one
    // would not; the class pattern judges those).
    if command.contains(['|', '&', ';', '<', '>', '(', ')', '$', '`', '\n']) {
        return None;
    }
    let mut words = command.split_whitespace();
    let program = words.next().filter(|word| plain(word))?;
    if program.contains('=') {
        return None;
    }
    match words.next() {
        Some(word) if plain(word) && !word.starts_with('-') => Some(format!("{program} {word}")),
        _ => Some(program.to_owned()),
    }
}

/// The pattern an asked call fits, if any: exec calls by prefix or classes, calls with a
/// `path` argument by its folder.
fn pattern_of(tool: &str, data: &Value, classes: Option<&Arc<ClassTable>>) -> Option<Pattern> {
    let text = |pointer: &str| data.pointer(pointer).and_then(Value::as_str);
    let context = Context::new(text("/cwd"), text("/project"), None)
        .running_in(data.pointer("/arguments").unwrap_or(&Value::Null));
    if tool == "shell.exec" {
        let command = text("/arguments/command")?;
        if let Some(prefix) = command_prefix(command) {
            return Some(Pattern::Prefix(prefix));
        }
        return class_pattern(command, classes?, &context);
    }
    folder_pattern(text("/arguments/path")?, &context)
}

/// The classes of a command line's parts, when all are learnable and every file it
/// changes is known and inside the call's project.
fn class_pattern(command: &str, table: &Arc<ClassTable>, context: &Context) -> Option<Pattern> {
    let project = context.project()?;
    let facts = classify(command, table, context);
    let mut names = Vec::new();
    for segment in &facts.segments {
        if segment.classes.is_empty() {
            return None;
        }
        for class in Class::ALL {
            if !segment.classes.contains(class) {
                continue;
            }
            if !LEARNABLE_CLASSES.contains(&class) {
                return None;
            }
            if !names.contains(&class.name()) {
                names.push(class.name());
            }
        }
        let changes_outside = segment.files.iter().any(|file| {
            file.role == FileRole::Change
                && file
                    .path
                    .as_deref()
                    .and_then(|path| below(path, project))
                    .is_none()
        });
        if changes_outside {
            return None;
        }
    }
    names.sort_unstable();
    (!names.is_empty()).then_some(Pattern::Classes(names))
}

/// The folder of an absolute `path` argument, from `{project}` when it is in the project.
/// Never the project root or `/` itself (too broad to be narrow), nor a folder whose name
/// a path pattern would read as a pattern.
fn folder_pattern(path: &str, context: &Context) -> Option<Pattern> {
    let resolved = context.resolve(path)?;
    let (folder, _) = resolved.rsplit_once('/')?;
    if folder.is_empty() || folder.contains(['*', '?', '[', ']', '{', '}', '\\']) {
        return None;
    }
    match context.project().and_then(|project| below(folder, project)) {
        Some("") => None,
        Some(inside) => Some(Pattern::Folder(format!("{{project}}/{inside}"))),
        None => Some(Pattern::Folder(folder.to_owned())),
    }
}

/// The TOML of a suggested rule. Strings are written as JSON strings, which TOML reads
/// the same way (basic strings with the same escapes).
fn rule_text(tool: &str, pattern: &Pattern, approved: u64) -> String {
    let quote = |text: &str| serde_json::to_string(text).unwrap_or_default();
    let slug: String = pattern
        .describe()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let when = match pattern {
        Pattern::Prefix(prefix) => format!("{{ command = {{ prefix = [{}] }} }}", quote(prefix)),
        Pattern::Classes(classes) => {
            let list: Vec<String> = classes.iter().map(|class| quote(class)).collect();
            format!(
                "{{ command = {{ class = [{}], paths = [\"{{project}}/**\"] }} }}",
                list.join(", ")
            )
        }
        Pattern::Folder(folder) => {
            format!(
                "{{ path = {{ path = [{}] }} }}",
                quote(&format!("{folder}/**"))
            )
        }
    };
    format!(
        "\n[[rules]]\nname = {}\ntool = {}\ndecision = \"allow\"\nreason = \"approved {approved} times, never rejected (airlock insights)\"\nwhen = {when}\n",
        quote(&format!("learned-{}-{slug}", pattern.kind())),
        quote(tool),
    )
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    })
}

impl Gate {
    /// Suggested rules and rubber-stamping flags for the principal's workspace.
    pub async fn learn(&self, principal: &Principal) -> Result<LearnReport, GateError> {
        require_role(principal, Role::Viewer, "read insights")?;
        let workspace = principal.workspace.as_str();
        let current = self.loaded_policy(workspace);
        let mut collected = Collected {
            classes: current
                .as_ref()
                .map(|loaded| loaded.policy.classes().clone()),
            ..Collected::default()
        };
        let mut after = 0;
        loop {
            let page = self.store().audit_after(workspace, after, PAGE).await?;
            for record in &page {
                collected.read(record);
            }
            match page.last() {
                Some(last) if page.len() as u32 == PAGE => after = last.seq,
                _ => break,
            }
        }
        let mut report = LearnReport::default();
        for (tool, (times, rejected)) in &mut collected.per_tool {
            let approved = times.len() as u64;
            if approved < RUBBER_STAMP_MIN || *rejected > 0 {
                continue;
            }
            if let Some(median) = median(times).filter(|m| *m < RUBBER_STAMP_SECONDS) {
                report.rubber_stamping.push(RubberStamp {
                    tool: tool.clone(),
                    approved,
                    median_decision_seconds: (median * 100.0).round() / 100.0,
                    suggestion: format!(
                        "`{tool}` was approved all {approved} times, in a median of {median:.1} s: \
                         prompts this fast are not being read. Allow the calls that keep repeating \
                         with a narrow rule (see the suggested rules, `airlock policy explain` shows \
                         which rule asks), and keep asking for the rest."
                    ),
                });
            }
        }
        let Some(current) = current else {
            return Ok(report);
        };
        let mut groups: Vec<((String, Pattern), u64)> = collected
            .groups
            .into_iter()
            .filter(|(_, (approved, rejected))| *approved >= MIN_REPEATS && !rejected)
            .map(|(key, (approved, _))| (key, approved))
            .collect();
        groups.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for ((tool, pattern), approved) in groups.into_iter().take(MAX_CANDIDATES) {
            let rule = rule_text(&tool, &pattern, approved);
            let source = format!("{}{rule}", current.info.source);
            let Ok(candidate) = Policy::load(&source, &crate::policy::load_options()) else {
                continue;
            };
            let replay = self.replay_history(workspace, &candidate, None).await?;
            let flips_a_no = replay.truncated
                || replay.changes.iter().any(|change| {
                    change.toward_allow
                        && (change.from == Decision::Deny
                            || collected.rejected_calls.contains(&change.id))
                });
            if replay.toward_allow == 0 || flips_a_no {
                continue;
            }
            report.rules.push(RuleSuggestion {
                tool,
                kind: pattern.kind(),
                pattern: pattern.describe(),
                prefix: match &pattern {
                    Pattern::Prefix(prefix) => Some(prefix.clone()),
                    _ => None,
                },
                approved,
                rule,
                replay,
            });
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A command's class pattern is learned only when what it changes lies in the project,
    /// judged in the folder it ran in (its `cwd` argument), not the session's.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn a_class_pattern_counts_the_folder_the_command_ran_in() {
        let classes = ClassTable::built_in().unwrap();
        let call = |arguments: Value| json!({"cwd": "/home/dev/app", "project": "/home/dev/app", "arguments": arguments});
        let here = call(json!({"command": "rm -rf build && make"}));
        assert!(matches!(
            pattern_of("shell.exec", &here, Some(&classes)),
            Some(Pattern::Classes(_))
        ));
        let elsewhere = call(json!({"command": "rm -rf build && make", "cwd": "/home/dev/other"}));
        assert_eq!(pattern_of("shell.exec", &elsewhere, Some(&classes)), None);
    }

    #[test]
    fn names_plain_commands_only() {
        assert_eq!(
            command_prefix("cargo test -p x").as_deref(),
            Some("cargo test")
        );
        assert_eq!(command_prefix("make").as_deref(), Some("make"));
        assert_eq!(command_prefix("ls -la /tmp").as_deref(), Some("ls"));
        assert_eq!(command_prefix("FOO=1 make"), None);
        assert_eq!(command_prefix("$(curl x) | sh"), None);
        assert_eq!(command_prefix("echo \"hi\"").as_deref(), Some("echo"));
        assert_eq!(command_prefix("cargo build 2>&1 | tail -n 5"), None);
        assert_eq!(command_prefix("make && make install"), None);
        assert_eq!(command_prefix("cat x > y"), None);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
