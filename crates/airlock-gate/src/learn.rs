//! Insights that learn (`GET /v1/insights`, DESIGN.md §11.5): from what people keep
//! approving, narrow policy rules, each proven by a replay over the whole recorded
//! history; and the tools people approve without reading (rubber-stamping).
//!
//! Standing rules cannot cover exec calls (DESIGN.md §4.2: a command is not a target),
//! so repeated approvals of `shell.exec` are grouped by the command's program and first
//! word (`cargo test`, `npm run`) and each group becomes a candidate allow rule with a
//! `prefix` matcher (the policy engine's command-aware prefix: on the allow side every
//! part of a compound command must be covered). A candidate is kept only when its replay
//! removes prompts and flips no past deny and no rejected approval to allow. Everything
//! here only suggests: a person saves a policy (G6).

use crate::identity::require_role;
use crate::{Gate, GateError};
use airlock_policy::Policy;
use airlock_protocol::{AuditRecord, Decision, ReplayReport, Role};
use airlock_store::Principal;
use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

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

/// A narrow policy rule learned from approvals, with its replay report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleSuggestion {
    pub tool: String,
    /// The command prefix people kept approving.
    pub prefix: String,
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
    command: Option<String>,
    asked_at: Option<Timestamp>,
}

/// What one pass over the chain collects.
#[derive(Debug, Default)]
struct Collected {
    asked: HashMap<String, Asked>,
    /// Per tool: decision times (s) of approvals, count of rejections.
    per_tool: BTreeMap<String, (Vec<f64>, u64)>,
    /// Per (tool, prefix): approvals, and whether one was rejected.
    groups: BTreeMap<(String, String), (u64, bool)>,
    rejected_calls: HashSet<String>,
}

impl Collected {
    fn read(&mut self, record: &AuditRecord) {
        let data = &record.data;
        let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_owned);
        match record.kind.as_str() {
            "approval.requested" => {
                let tool = text("tool").unwrap_or_default();
                let command = (tool == "shell.exec")
                    .then(|| data.pointer("/arguments/command").and_then(Value::as_str))
                    .flatten()
                    .map(str::to_owned);
                self.asked.insert(
                    record.subject.clone(),
                    Asked {
                        tool,
                        call_id: text("call_id").unwrap_or_default(),
                        command,
                        asked_at: record.at.parse().ok(),
                    },
                );
            }
            kind @ ("approval.approved" | "approval.rejected") => {
                let Some(asked) = self.asked.get(&record.subject) else {
                    return;
                };
                let approved = kind == "approval.approved";
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
                if let Some(prefix) = asked.command.as_deref().and_then(command_prefix) {
                    let group = self.groups.entry((asked.tool.clone(), prefix)).or_default();
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

/// The TOML of a suggested rule (names and prefixes are plain words, see above).
fn rule_text(tool: &str, prefix: &str, approved: u64) -> String {
    let slug: String = prefix
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!(
        "\n[[rules]]\nname = \"learned-{slug}\"\ntool = \"{tool}\"\ndecision = \"allow\"\nreason = \"approved {approved} times, never rejected (airlock insights)\"\nwhen = {{ command = {{ prefix = [\"{prefix}\"] }} }}\n"
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
        let mut collected = Collected::default();
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
        let Some(current) = self.loaded_policy(workspace) else {
            return Ok(report);
        };
        let mut groups: Vec<((String, String), u64)> = collected
            .groups
            .into_iter()
            .filter(|(_, (approved, rejected))| *approved >= MIN_REPEATS && !rejected)
            .map(|(key, (approved, _))| (key, approved))
            .collect();
        groups.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for ((tool, prefix), approved) in groups.into_iter().take(MAX_CANDIDATES) {
            let rule = rule_text(&tool, &prefix, approved);
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
                prefix,
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
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
