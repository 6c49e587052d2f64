//! Stage three: one call → one [`Verdict`], exactly as DESIGN.md §4.2 orders it.
//!
//! 1. Scan the arguments for secret material.
//! 2. Among the candidate rules (from the index) whose agent filter and `when` match, take
//!    the strictest decision; the first rule in file order with that decision is cited.
//!    No rule matched → the policy's `default`.
//! 3. A standing rule for (tool, target) in scope turns `ask` into `allow` when the tool's
//!    risk is `write` or `external` and no matching ask rule says `standing = false`.
//! 4. The mode tightens: `read_only` denies every risk but `read`; `unattended` turns `ask`
//!    into `deny`.
//! 5. `ask` + secret material + `secrets = "deny"` → deny, naming the kind.
//!
//! Steps 3 and 4 are swapped relative to the list in DESIGN.md §4.2 on purpose: a standing
//! rule is a person's answer given in advance, so an unattended agent may use it (that is
//! what it is for at night), while `read_only` ignores standing rules as §4.4 says. A deny
//! can never be loosened by either step (G5).
//!
//! Evaluation never returns an error and never panics out: a panic inside is caught and
//! becomes a deny naming the trouble (fail closed, G4).

use crate::context::Context;
use crate::document::SecretsMode;
use crate::load::{CompiledRule, CompiledTool, Policy};
use crate::rule_key::ConditionKey;
use crate::secrets;
use airlock_protocol::{DecidedBy, Decision, Mode, Risk, SecretFinding, Verdict};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A live standing rule in the call's scope (session, agent or task), as the gate knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandingRule {
    pub id: String,
    pub tool: String,
    pub target: String,
}

/// One call as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub tool: &'a str,
    pub arguments: &'a Value,
    /// The agent's name, for rules with an `agents` filter.
    pub agent: Option<&'a str>,
    pub mode: Mode,
    /// Standing rules that are live and in the call's scope.
    pub standing: &'a [StandingRule],
    /// What the tool's provider declares about it (risk, target, preview), used when the
    /// policy's catalogue does not list the tool. Only trusted providers may declare: the
    /// built-in runtime's own tools, never an agent's say-so.
    pub declared: Option<&'a CompiledTool>,
    /// The agent's own name for the tool (`Bash`, `Read`, `run_shell_command`), when the
    /// call was translated from an agent's hook payload; rules narrow on it with
    /// `native_tool = "Bash"`.
    pub native_tool: Option<&'a str>,
    /// The absolute working directory of the call; relative paths resolve against it.
    pub cwd: Option<&'a str>,
    /// The root of the git work tree holding `cwd`, else `cwd`: the `{project}` anchor.
    pub project: Option<&'a str>,
    /// The agent user's home directory: the `{home}` anchor and `~`.
    pub home: Option<&'a str>,
}

impl<'a> Call<'a> {
    /// Where the call happens, as its matchers see it: its place, the folder its `cwd`
    /// argument names (what it runs in), and its shell, which the agent's tool names (not
    /// its arguments, which the agent writes).
    ///
    /// PowerShell is the shell of Claude Code's `PowerShell` tool anywhere, and of Codex's
    /// `shell_command` on Windows, which runs its line in the user's PowerShell.
    pub(crate) fn context(&self) -> Context {
        let context = Context::new(self.cwd, self.project, self.home)
            .running_in(self.arguments)
            .entering(self.arguments)
            .writing_in(self.arguments);
        let powershell = match self.native_tool {
            Some("PowerShell") => true,
            Some("shell_command") => context.on_windows(),
            _ => false,
        };
        context.in_powershell(powershell)
    }

    /// A call with no agent, mode `ask` and no standing rules.
    pub fn new(tool: &'a str, arguments: &'a Value) -> Call<'a> {
        Call {
            tool,
            arguments,
            agent: None,
            mode: Mode::Ask,
            standing: &[],
            declared: None,
            native_tool: None,
            cwd: None,
            project: None,
            home: None,
        }
    }
}

/// The outcome of step 2.
struct RuleOutcome<'p> {
    decision: Decision,
    cited: Option<&'p CompiledRule>,
    /// Whether a matching ask rule forbids standing rules.
    standing_forbidden: bool,
    /// The two-person rule of the matching ask rules: the largest `approvals`, and the
    /// `approvers` of the first that names any.
    approvals: u32,
    approvers: Option<&'p [String]>,
}

/// What judging a call computes whatever the policy: the secrets in its arguments, its
/// place (with the classification of its command line, per class table), and whether each
/// rule's conditions held, by [`ConditionKey`]. A replay that judges each call under a
/// baseline and a candidate prepares it once for both: the rules the two policies share
/// are tested once.
#[derive(Debug)]
pub struct Prepared {
    secrets: Vec<SecretFinding>,
    context: Context,
    /// The arguments it was prepared for (their address): the tested conditions are
    /// trusted only for those; `None` when it judges under one policy only, which needs
    /// no memory of them.
    arguments: Option<usize>,
    /// Each tested key's answer, in the order tested, and where the next lookup starts:
    /// a second policy that shares the first's rules tests them in the same order, so each
    /// lookup finds its key at once (a rule the first did not have costs one pass).
    tested: RefCell<Vec<(ConditionKey, bool)>>,
    next: Cell<usize>,
}

impl Prepared {
    /// Prepares `call`; use it only with that call.
    pub fn new(call: &Call) -> Prepared {
        Prepared {
            arguments: Some(std::ptr::from_ref(call.arguments) as usize),
            ..Prepared::once(call)
        }
    }

    /// Prepares `call` for one evaluation: nothing is remembered for another policy.
    fn once(call: &Call) -> Prepared {
        Prepared {
            secrets: secrets::scan(call.arguments),
            context: call.context(),
            arguments: None,
            tested: RefCell::new(Vec::new()),
            next: Cell::new(0),
        }
    }

    /// Whether `rule`'s conditions hold for `arguments`: remembered by the rule's key, so
    /// a rule of another policy with the same key is answered without testing again.
    fn conditions_hold(&self, rule: &CompiledRule, arguments: &Value) -> bool {
        let key = rule
            .condition_key
            .filter(|_| self.arguments == Some(std::ptr::from_ref(arguments) as usize));
        let Some(key) = key else {
            return rule.conditions_hold(arguments, &self.context);
        };
        let known = {
            let tested = self.tested.borrow();
            let start = self.next.get().min(tested.len());
            let (before, after) = tested.split_at(start);
            after
                .iter()
                .chain(before)
                .position(|(tested, _)| *tested == key)
                .map(|offset| (start + offset) % tested.len())
                .map(|index| {
                    self.next.set(index + 1);
                    tested[index].1
                })
        };
        known.unwrap_or_else(|| {
            let held = rule.conditions_hold(arguments, &self.context);
            self.tested.borrow_mut().push((key, held));
            held
        })
    }
}

impl Policy {
    /// Decides one call. Always returns a verdict.
    pub fn evaluate(&self, call: &Call) -> Verdict {
        self.guarded(|| self.evaluate_inner(call, &Prepared::once(call)))
    }

    /// [`Policy::evaluate`] with the policy-free work already done for this call.
    pub fn evaluate_prepared(&self, call: &Call, prepared: &Prepared) -> Verdict {
        self.guarded(|| self.evaluate_inner(call, prepared))
    }

    /// Runs an evaluation, turning a panic inside into a deny (fail closed, G4).
    fn guarded(&self, evaluate: impl FnOnce() -> Verdict) -> Verdict {
        match catch_unwind(AssertUnwindSafe(evaluate)) {
            Ok(verdict) => verdict,
            Err(_) => Verdict {
                decision: Decision::Deny,
                decided_by: DecidedBy::System,
                rule: None,
                reason: Some("internal error while evaluating the policy".into()),
                risk: Risk::Exec,
                target: None,
                standing_rule: None,
                secrets: Vec::new(),
                deadline_seconds: None,
                approvals: None,
                approvers: Vec::new(),
            },
        }
    }

    fn evaluate_inner(&self, call: &Call, prepared: &Prepared) -> Verdict {
        let found = prepared.secrets.clone();
        let tool = self.tool_or_declared(call.tool, call.declared);
        let risk = tool.map_or(Risk::Exec, |tool| tool.risk);
        let target = tool
            .and_then(|tool| tool.target.as_deref())
            .and_then(|name| target_value(call.arguments, name));

        let outcome = self.match_rules(call, prepared);
        let mut verdict = Verdict {
            decision: outcome.decision,
            decided_by: if outcome.cited.is_some() {
                DecidedBy::Rule
            } else {
                DecidedBy::PolicyDefault
            },
            rule: outcome.cited.map(|rule| rule.label.clone()),
            reason: match outcome.cited {
                Some(rule) => rule.reason.clone().or_else(|| {
                    (rule.decision == Decision::Deny)
                        .then(|| format!("denied by policy rule `{}`", rule.label))
                }),
                None => Some(format!(
                    "no rule matched; the policy's default is {}",
                    self.default
                )),
            },
            risk,
            target,
            standing_rule: None,
            secrets: found,
            deadline_seconds: None,
            approvals: None,
            approvers: Vec::new(),
        };

        // Step 3: standing rules, never for exec (or read, which needs none), never in
        // read_only, never where a matching ask rule says `standing = false`.
        if verdict.decision == Decision::Ask
            && call.mode != Mode::ReadOnly
            && matches!(risk, Risk::Write | Risk::External)
            && !outcome.standing_forbidden
        {
            if let Some(target) = &verdict.target {
                if let Some(standing) = call
                    .standing
                    .iter()
                    .find(|rule| rule.tool == call.tool && &rule.target == target)
                {
                    verdict.decision = Decision::Allow;
                    verdict.decided_by = DecidedBy::StandingRule;
                    verdict.standing_rule = Some(standing.id.clone());
                    verdict.reason = Some(format!(
                        "allowed by standing rule {} for {} {}",
                        standing.id, standing.tool, standing.target
                    ));
                }
            }
        }

        // Step 4: the mode may tighten, never loosen.
        match call.mode {
            Mode::ReadOnly if risk != Risk::Read && verdict.decision != Decision::Deny => {
                tighten(
                    &mut verdict,
                    DecidedBy::Mode,
                    format!(
                        "the agent is in read_only mode and `{}` has risk {risk}",
                        call.tool
                    ),
                );
            }
            Mode::Unattended if verdict.decision == Decision::Ask => {
                tighten(
                    &mut verdict,
                    DecidedBy::Mode,
                    "the call needs a person's approval but the agent runs unattended".into(),
                );
            }
            _ => {}
        }

        // Step 5: a person cannot approve what they cannot be shown exactly.
        if verdict.decision == Decision::Ask
            && !verdict.secrets.is_empty()
            && self.secrets == SecretsMode::Deny
        {
            let reason = format!(
                "cannot be approved exactly: the arguments hold secret material ({})",
                describe_secrets(&verdict.secrets)
            );
            tighten(&mut verdict, DecidedBy::Secrets, reason);
        }

        if verdict.decision == Decision::Ask {
            let deadline = outcome
                .cited
                .filter(|rule| rule.decision == Decision::Ask)
                .and_then(|rule| rule.deadline)
                .unwrap_or(self.deadline);
            verdict.deadline_seconds = Some(deadline.as_secs());
            verdict.approvals = (outcome.approvals > 1).then_some(outcome.approvals);
            verdict.approvers = outcome
                .approvers
                .map(<[String]>::to_vec)
                .unwrap_or_default();
        }
        verdict
    }

    /// Step 2: the strictest matching rule, first in file order on a tie.
    fn match_rules(&self, call: &Call, prepared: &Prepared) -> RuleOutcome<'_> {
        let mut outcome = RuleOutcome {
            decision: self.default,
            cited: None,
            standing_forbidden: false,
            approvals: 1,
            approvers: None,
        };
        for &position in self.index.candidates(call.tool).iter() {
            let Some(rule) = self.rules.get(position) else {
                continue;
            };
            if let Some(agents) = &rule.agents {
                if !call.agent.is_some_and(|agent| agents.contains(agent)) {
                    continue;
                }
            }
            if !rule.native_tool_admits(call.native_tool) {
                continue;
            }
            if !prepared.conditions_hold(rule, call.arguments) {
                continue;
            }
            if rule.decision == Decision::Ask {
                // A standing rule was made by one person: it never stands in for two, nor
                // for a decider the rule names.
                let two_person = rule.approvals > 1 || !rule.approvers.is_empty();
                if !rule.standing || two_person {
                    outcome.standing_forbidden = true;
                }
                outcome.approvals = outcome.approvals.max(rule.approvals);
                if outcome.approvers.is_none() && !rule.approvers.is_empty() {
                    outcome.approvers = Some(rule.approvers.as_slice());
                }
            }
            let stricter = match outcome.cited {
                None => true,
                Some(cited) => rule.decision > cited.decision,
            };
            if stricter {
                outcome.decision = rule.decision;
                outcome.cited = Some(rule);
            }
            // INVARIANT: candidates come in file order, so the first deny is the cited one
            // and nothing later can change the outcome.
            if rule.decision == Decision::Deny {
                break;
            }
        }
        outcome
    }
}

fn tighten(verdict: &mut Verdict, by: DecidedBy, reason: String) {
    verdict.decision = Decision::Deny;
    verdict.decided_by = by;
    verdict.reason = Some(reason);
    verdict.standing_rule = None;
}

/// The target argument's value as text; only scalars name a target.
fn target_value(arguments: &Value, name: &str) -> Option<String> {
    let segments: Vec<String> = name.split('.').map(str::to_owned).collect();
    match crate::condition::lookup(arguments, &segments)? {
        Value::String(text) if !text.is_empty() => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

fn describe_secrets(found: &[SecretFinding]) -> String {
    let mut parts: Vec<String> = found
        .iter()
        .map(|finding| {
            if finding.path.is_empty() {
                finding.kind.clone()
            } else {
                format!("{} in `{}`", finding.kind, finding.path)
            }
        })
        .collect();
    parts.dedup();
    parts.join(", ")
}
