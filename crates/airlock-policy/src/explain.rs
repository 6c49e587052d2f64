//! Why a call gets its verdict (`airlock policy explain`, DESIGN.md §11.5): every candidate
//! rule of the tool, matched or not, and for a miss the first thing that failed (the agent
//! filter, the native tool, or the `when` key and the value it saw); then the standing-rule,
//! mode and secrets steps.
//!
//! The verdict itself always comes from [`Policy::evaluate`], never from this module: an
//! explanation that computed its own decision could disagree with the engine. This module
//! only reads the same compiled rules to say which of them held.

use crate::condition::lookup;
use crate::context::Context;
use crate::document::SecretsMode;
use crate::evaluate::Call;
use crate::load::{CompiledRule, Policy};
use airlock_protocol::{DecidedBy, Decision, Mode, Risk, Verdict};
use serde::Serialize;
use serde_json::Value;

/// One candidate rule and whether it matched the call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleTrace {
    /// Its position among the policy's rules (zero-based, file order).
    pub index: usize,
    pub rule: String,
    pub tool: String,
    pub decision: Decision,
    pub matched: bool,
    /// For a miss: what did not hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<Miss>,
}

/// The first part of a rule that did not hold for the call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "on", rename_all = "snake_case")]
pub enum Miss {
    /// The rule names agents and the call's agent is not one of them.
    Agents { agent: Option<String> },
    /// The rule narrows on the agent's own tool name and the call's does not fit.
    NativeTool { native_tool: Option<String> },
    /// A `when` condition failed: its key and the value the call has there (absent: null).
    When { key: String, value: Value },
}

/// One of the steps after the rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Whether the step changed the decision.
    pub applied: bool,
    pub detail: String,
}

/// The whole explanation of one call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub tool: String,
    pub risk: Risk,
    /// Every rule whose `tool` covers the call's tool, in file order.
    pub candidates: Vec<RuleTrace>,
    /// The decision of the rules alone (step 2), and the rule it cites (none: the default).
    pub rules_decision: Decision,
    pub cited: Option<String>,
    pub standing: Step,
    pub mode: Step,
    pub secrets: Step,
    /// What the engine decides: `Policy::evaluate` on the same call.
    pub verdict: Verdict,
}

impl Policy {
    /// Explains the verdict `evaluate` gives this call.
    pub fn explain(&self, call: &Call) -> Explanation {
        let verdict = self.evaluate(call);
        let context = call.context();
        let mut candidates = Vec::new();
        let mut cited: Option<&CompiledRule> = None;
        let mut standing_forbidden = false;
        for &index in self.index.candidates(call.tool).iter() {
            let Some(rule) = self.rules.get(index) else {
                continue;
            };
            let failed = first_miss(rule, call, &context);
            let matched = failed.is_none();
            if matched {
                if rule.decision == Decision::Ask && !rule.standing {
                    standing_forbidden = true;
                }
                if cited.is_none_or(|c| rule.decision > c.decision) {
                    cited = Some(rule);
                }
            }
            candidates.push(RuleTrace {
                index,
                rule: rule.label.clone(),
                tool: rule.tool.clone(),
                decision: rule.decision,
                matched,
                failed,
            });
        }
        let rules_decision = cited.map_or(self.default, |rule| rule.decision);
        let standing = self.standing_step(call, &verdict, rules_decision, standing_forbidden);
        let mode = mode_step(call.mode, &verdict);
        let secrets = self.secrets_step(&verdict);
        Explanation {
            tool: call.tool.to_owned(),
            risk: verdict.risk,
            candidates,
            rules_decision,
            cited: cited.map(|rule| rule.label.clone()),
            standing,
            mode,
            secrets,
            verdict,
        }
    }

    /// The positions of the rules that match the call (its agent filter, native tool and
    /// every `when`), whatever the decision: what `lint` counts as "matched in history".
    pub fn matching_rules(&self, call: &Call) -> Vec<usize> {
        let context = call.context();
        self.index
            .candidates(call.tool)
            .iter()
            .copied()
            .filter(|&index| {
                self.rules
                    .get(index)
                    .is_some_and(|rule| first_miss(rule, call, &context).is_none())
            })
            .collect()
    }

    fn standing_step(
        &self,
        call: &Call,
        verdict: &Verdict,
        rules_decision: Decision,
        standing_forbidden: bool,
    ) -> Step {
        if verdict.decided_by == DecidedBy::StandingRule {
            return Step {
                applied: true,
                detail: verdict.reason.clone().unwrap_or_default(),
            };
        }
        let detail = if rules_decision != Decision::Ask {
            format!("not consulted: the rules decide {rules_decision}, and standing rules only turn ask into allow")
        } else if call.mode == Mode::ReadOnly {
            "not consulted: the agent is in read_only mode".to_owned()
        } else if !matches!(verdict.risk, Risk::Write | Risk::External) {
            format!(
                "not consulted: `{}` has risk {}; standing rules cover write and external tools only",
                call.tool, verdict.risk
            )
        } else if standing_forbidden {
            "not consulted: a matching ask rule says `standing = false`".to_owned()
        } else if verdict.target.is_none() {
            "not consulted: the call names no target a standing rule could bind to".to_owned()
        } else {
            format!(
                "none of the {} live standing rules covers {} {}",
                call.standing.len(),
                call.tool,
                verdict.target.as_deref().unwrap_or_default()
            )
        };
        Step {
            applied: false,
            detail,
        }
    }

    fn secrets_step(&self, verdict: &Verdict) -> Step {
        if verdict.decided_by == DecidedBy::Secrets {
            return Step {
                applied: true,
                detail: verdict.reason.clone().unwrap_or_default(),
            };
        }
        let detail = if verdict.secrets.is_empty() {
            "no secret material in the arguments".to_owned()
        } else {
            let kinds: Vec<&str> = verdict.secrets.iter().map(|s| s.kind.as_str()).collect();
            match self.secrets {
                SecretsMode::Deny => format!(
                    "secret material found ({}), but the call is not asked, so nothing changes",
                    kinds.join(", ")
                ),
                SecretsMode::Redact => format!(
                    "secret material found ({}); the policy's `secrets` setting lets a person see it redacted",
                    kinds.join(", ")
                ),
            }
        };
        Step {
            applied: false,
            detail,
        }
    }
}

fn mode_step(mode: Mode, verdict: &Verdict) -> Step {
    if verdict.decided_by == DecidedBy::Mode {
        return Step {
            applied: true,
            detail: verdict.reason.clone().unwrap_or_default(),
        };
    }
    Step {
        applied: false,
        detail: format!("mode {mode} does not change the decision"),
    }
}

/// The first part of `rule` that does not hold for `call`, in the order `evaluate` checks.
fn first_miss(rule: &CompiledRule, call: &Call, context: &Context) -> Option<Miss> {
    if let Some(agents) = &rule.agents {
        if !call.agent.is_some_and(|agent| agents.contains(agent)) {
            return Some(Miss::Agents {
                agent: call.agent.map(str::to_owned),
            });
        }
    }
    if !rule.native_tool_admits(call.native_tool) {
        return Some(Miss::NativeTool {
            native_tool: call.native_tool.map(str::to_owned),
        });
    }
    let side = rule.side();
    rule.conditions
        .iter()
        .find(|condition| !condition.holds(call.arguments, side, context))
        .map(|condition| {
            let segments: Vec<String> = condition.path.split('.').map(str::to_owned).collect();
            Miss::When {
                key: condition.path.clone(),
                value: lookup(call.arguments, &segments)
                    .cloned()
                    .unwrap_or(Value::Null),
            }
        })
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
name = "mail-internal"
tool = "email.send"
decision = "allow"
when = { to = { glob = "*@acme.test" } }

[[rules]]
name = "mail-bob"
tool = "email.send"
decision = "deny"
agents = ["bob"]

[[rules]]
name = "other"
tool = "http.fetch"
decision = "deny"
"#;

    #[test]
    fn lists_every_candidate_and_the_when_key_that_failed() {
        let policy = Policy::load(POLICY, &LoadOptions::default()).unwrap();
        let arguments = json!({"to": "eve@evil.test"});
        let explained = policy.explain(&Call::new("email.send", &arguments));
        assert_eq!(explained.candidates.len(), 2, "{explained:?}");
        let first = &explained.candidates[0];
        assert!(!first.matched);
        assert_eq!(
            first.failed,
            Some(Miss::When {
                key: "to".into(),
                value: json!("eve@evil.test")
            })
        );
        assert_eq!(
            explained.candidates[1].failed,
            Some(Miss::Agents { agent: None })
        );
        assert_eq!(explained.rules_decision, Decision::Ask);
        assert_eq!(explained.verdict.decision, Decision::Ask);
        assert_eq!(explained.cited, None);
        assert!(!explained.standing.applied);

        let arguments = json!({"to": "ana@acme.test"});
        let mut call = Call::new("email.send", &arguments);
        call.agent = Some("bob");
        let explained = policy.explain(&call);
        assert!(explained.candidates.iter().all(|rule| rule.matched));
        assert_eq!(explained.cited.as_deref(), Some("mail-bob"));
        assert_eq!(explained.verdict.decision, Decision::Deny);
        assert_eq!(policy.matching_rules(&call), vec![0, 1]);
    }

    #[test]
    fn reports_the_mode_step_that_tightened() {
        let policy = Policy::load(POLICY, &LoadOptions::default()).unwrap();
        let arguments = json!({"to": "eve@evil.test"});
        let mut call = Call::new("email.send", &arguments);
        call.mode = Mode::Unattended;
        let explained = policy.explain(&call);
        assert!(explained.mode.applied, "{explained:?}");
        assert_eq!(explained.verdict.decision, Decision::Deny);
    }
}
