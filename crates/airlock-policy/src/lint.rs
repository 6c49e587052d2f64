//! `airlock policy lint` (DESIGN.md §11.5): rules that can never decide anything because a
//! stricter rule matches wherever they do, rules whose `examples` show only one side, and,
//! given recorded calls, rules that never matched any of them.
//!
//! Shadowing is judged conservatively, so a warning is always true: rule B is shadowed by
//! a stricter rule A only when A covers B's tool, A's agent and native-tool filters admit
//! everything B's do, and every `when` entry of A is written identically in B. Then A
//! matches every call B matches, and the strictest decision wins whatever the file order.

use crate::evaluate::Call;
use crate::index::compile_tool_glob;
use crate::load::{CompiledRule, Policy};
use serde::Serialize;

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// `rule` never decides: `by`, stricter, matches wherever it does.
    Shadowed { rule: String, by: String },
    /// `rule` has examples only of calls it matches (`missing = "not_match"`) or only of
    /// calls it does not (`missing = "match"`).
    OneSidedExamples { rule: String, missing: String },
    /// `rule` matched none of the `calls` recorded calls.
    NeverMatched { rule: String, calls: u64 },
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::Shadowed { rule, by } => write!(
                f,
                "rule `{rule}` is shadowed by the stricter rule `{by}`: it can never decide a call"
            ),
            Finding::OneSidedExamples { rule, missing } => write!(
                f,
                "rule `{rule}` has examples on one side only: add `{missing}` examples"
            ),
            Finding::NeverMatched { rule, calls } => {
                write!(
                    f,
                    "rule `{rule}` matched none of the {calls} recorded calls"
                )
            }
        }
    }
}

/// Counts which rules match recorded calls.
#[derive(Debug)]
pub struct MatchTally {
    matched: Vec<bool>,
    calls: u64,
}

impl MatchTally {
    pub fn new(policy: &Policy) -> MatchTally {
        MatchTally {
            matched: vec![false; policy.rules().len()],
            calls: 0,
        }
    }

    pub fn push(&mut self, policy: &Policy, call: &Call) {
        self.calls += 1;
        for index in policy.matching_rules(call) {
            if let Some(flag) = self.matched.get_mut(index) {
                *flag = true;
            }
        }
    }
}

impl Policy {
    /// The findings that need no history, in rule order; with `history`, also the rules
    /// that matched none of its calls.
    pub fn lint(&self, history: Option<&MatchTally>) -> Vec<Finding> {
        let mut findings = Vec::new();
        for (index, rule) in self.rules.iter().enumerate() {
            if let Some(by) = self
                .rules
                .iter()
                .enumerate()
                .find(|&(other, stricter)| other != index && shadows(stricter, rule))
            {
                findings.push(Finding::Shadowed {
                    rule: rule.label.clone(),
                    by: by.1.label.clone(),
                });
            }
            match rule.examples {
                (0, 0) => {}
                (_, 0) => findings.push(Finding::OneSidedExamples {
                    rule: rule.label.clone(),
                    missing: "not_match".into(),
                }),
                (0, _) => findings.push(Finding::OneSidedExamples {
                    rule: rule.label.clone(),
                    missing: "match".into(),
                }),
                _ => {}
            }
            if let Some(tally) = history {
                if !tally.matched.get(index).copied().unwrap_or(true) {
                    findings.push(Finding::NeverMatched {
                        rule: rule.label.clone(),
                        calls: tally.calls,
                    });
                }
            }
        }
        findings
    }
}

/// Whether `stricter` matches every call `rule` matches and decides more strictly.
fn shadows(stricter: &CompiledRule, rule: &CompiledRule) -> bool {
    if stricter.decision <= rule.decision {
        return false;
    }
    let covers_tool = stricter.tool == rule.tool
        || (!rule.tool.contains(['*', '?', '[', ']', '{', '}', '\\'])
            && compile_tool_glob(&stricter.tool)
                .is_ok_and(|glob| glob.compile_matcher().is_match(&rule.tool)));
    let covers_agents = match (&stricter.agents, &rule.agents) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(theirs), Some(ours)) => ours.is_subset(theirs),
    };
    let covers_native = match (&stricter.native_tool, &rule.native_tool) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(theirs), Some(ours)) => theirs.glob().glob() == ours.glob().glob(),
    };
    covers_tool
        && covers_agents
        && covers_native
        && stricter
            .when_text
            .iter()
            .all(|entry| rule.when_text.contains(entry))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::LoadOptions;
    use serde_json::json;

    const POLICY: &str = r#"
version = 1
default = "ask"

[[rules]]
name = "shell-ok"
tool = "shell.exec"
decision = "allow"
when = { command = { prefix = ["ls"] }, cwd = { eq = "/p" } }
examples = { match = [{ command = "ls", cwd = "/p" }] }

[[rules]]
name = "shell-ask"
tool = "shell.*"
decision = "ask"
when = { cwd = { eq = "/p" } }

[[rules]]
name = "mail"
tool = "email.send"
decision = "deny"
when = { to = { glob = "*@evil.test" } }
examples = { match = [{ to = "a@evil.test" }], not_match = [{ to = "a@acme.test" }] }
"#;

    #[test]
    fn finds_shadowed_one_sided_and_never_matched_rules() {
        let policy = Policy::load(POLICY, &LoadOptions::default()).unwrap();
        let arguments = json!({"to": "x@evil.test"});
        let mut tally = MatchTally::new(&policy);
        tally.push(&policy, &Call::new("email.send", &arguments));
        let findings = policy.lint(Some(&tally));
        assert_eq!(
            findings,
            vec![
                Finding::Shadowed {
                    rule: "shell-ok".into(),
                    by: "shell-ask".into()
                },
                Finding::OneSidedExamples {
                    rule: "shell-ok".into(),
                    missing: "not_match".into()
                },
                Finding::NeverMatched {
                    rule: "shell-ok".into(),
                    calls: 1
                },
                Finding::NeverMatched {
                    rule: "shell-ask".into(),
                    calls: 1
                },
            ]
        );
        assert!(policy.lint(None).len() == 2);
    }
}
