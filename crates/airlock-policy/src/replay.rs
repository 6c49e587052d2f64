//! Replaying recorded calls under a candidate policy (DESIGN.md §11.5): each call is
//! evaluated with [`Policy::evaluate`], the one engine, and set beside the decision it got
//! when it was recorded.
//!
//! The [`Replay`] takes calls one at a time and keeps only counts and a bounded list of
//! changed calls, so a million recorded calls replay in flat memory; where the calls come
//! from (a calls file, an audit export, the store) is its callers' business.

use crate::evaluate::{Call, Prepared};
use crate::load::Policy;
use airlock_protocol::{ChangedCall, DecidedBy, Decision, ReplayReport, Transition, Verdict};
use std::collections::BTreeMap;

/// One recorded call and the decision it got.
#[derive(Debug, Clone, Copy)]
pub struct Recorded<'a> {
    /// The call as the policy sees it, with the standing rules live when it was recorded.
    pub call: Call<'a>,
    /// The call id, or `line N` of a calls file.
    pub id: &'a str,
    /// When it was recorded (RFC 3339), when known.
    pub at: Option<&'a str>,
    pub before: Decision,
    /// The rule (or standing rule) the recorded decision cited.
    pub rule_before: Option<&'a str>,
    /// The call already prepared (see [`Prepared`]) when another policy judged it first.
    pub prepared: Option<&'a Prepared>,
}

/// The running tally of a replay.
#[derive(Debug)]
pub struct Replay {
    report: ReplayReport,
    transitions: BTreeMap<(Decision, Decision), u64>,
    /// Changed calls toward allow, and the others, each in recorded order, each bounded.
    loosened: Vec<ChangedCall>,
    tightened: Vec<ChangedCall>,
}

impl Replay {
    /// A replay of the candidate `policy` (its digest names it in the report).
    pub fn new(policy: &Policy) -> Replay {
        Replay {
            report: ReplayReport {
                digest: policy.digest().to_owned(),
                ..ReplayReport::default()
            },
            transitions: BTreeMap::new(),
            loosened: Vec::new(),
            tightened: Vec::new(),
        }
    }

    /// Evaluates one recorded call under `policy` and counts it; returns the new verdict.
    pub fn push(&mut self, policy: &Policy, recorded: &Recorded) -> Verdict {
        let verdict = match recorded.prepared {
            Some(prepared) => policy.evaluate_prepared(&recorded.call, prepared),
            None => policy.evaluate(&recorded.call),
        };
        self.count(recorded, &verdict);
        verdict
    }

    /// Counts a call whose candidate verdict is already known.
    pub fn count(&mut self, recorded: &Recorded, verdict: &Verdict) {
        let report = &mut self.report;
        report.calls += 1;
        report.before.add(recorded.before);
        report.after.add(verdict.decision);
        if recorded.before == verdict.decision {
            return;
        }
        report.changed += 1;
        let toward_allow = verdict.decision < recorded.before;
        *self
            .transitions
            .entry((recorded.before, verdict.decision))
            .or_default() += 1;
        let list = if toward_allow {
            report.toward_allow += 1;
            &mut self.loosened
        } else {
            &mut self.tightened
        };
        if list.len() < ReplayReport::LISTED {
            list.push(ChangedCall {
                id: recorded.id.to_owned(),
                at: recorded.at.map(str::to_owned),
                tool: recorded.call.tool.to_owned(),
                from: recorded.before,
                to: verdict.decision,
                rule_before: recorded.rule_before.map(str::to_owned),
                rule_after: cited(verdict),
                reason: verdict.reason.clone(),
                toward_allow,
            });
        }
    }

    /// Adds the tally of `later`, a replay of the calls recorded after this one's (so a
    /// history cut into consecutive parts, replayed side by side and merged in order,
    /// gives exactly the report of one replay of the whole).
    pub fn merge(&mut self, later: Replay) {
        let (report, more) = (&mut self.report, later.report);
        report.calls += more.calls;
        report.changed += more.changed;
        report.toward_allow += more.toward_allow;
        for (counts, added) in [
            (&mut report.before, more.before),
            (&mut report.after, more.after),
        ] {
            counts.allow += added.allow;
            counts.ask += added.ask;
            counts.deny += added.deny;
        }
        for (transition, count) in later.transitions {
            *self.transitions.entry(transition).or_default() += count;
        }
        for (list, more) in [
            (&mut self.loosened, later.loosened),
            (&mut self.tightened, later.tightened),
        ] {
            let room = ReplayReport::LISTED.saturating_sub(list.len());
            list.extend(more.into_iter().take(room));
        }
    }

    /// The report: transitions toward allow first, then by count (ties in decision order),
    /// so the same calls always give the same report.
    pub fn finish(self) -> ReplayReport {
        let mut report = self.report;
        let mut transitions: Vec<Transition> = self
            .transitions
            .into_iter()
            .map(|((from, to), count)| Transition {
                from,
                to,
                count,
                toward_allow: to < from,
            })
            .collect();
        transitions.sort_by(|a, b| {
            b.toward_allow
                .cmp(&a.toward_allow)
                .then(b.count.cmp(&a.count))
                .then(a.from.cmp(&b.from))
                .then(a.to.cmp(&b.to))
        });
        report.transitions = transitions;
        let mut changes = self.loosened;
        changes.extend(self.tightened);
        changes.truncate(ReplayReport::LISTED);
        report.truncated = report.changed > changes.len() as u64;
        report.changes = changes;
        report.prompts_per_100_before = report.before.prompts_per_100();
        report.prompts_per_100_after = report.after.prompts_per_100();
        report
    }
}

/// The rule a verdict cites: the standing rule when one allowed it, else the policy rule.
fn cited(verdict: &Verdict) -> Option<String> {
    if verdict.decided_by == DecidedBy::StandingRule {
        verdict.standing_rule.clone()
    } else {
        verdict.rule.clone()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::evaluate::StandingRule;
    use crate::LoadOptions;
    use serde_json::json;

    const CANDIDATE: &str = r#"
version = 1
default = "ask"

[tools."email.send"]
risk = "external"
target = "to"

[[rules]]
name = "mail-internal"
tool = "email.send"
decision = "allow"
when = { to = { glob = "*@acme.test" } }

[[rules]]
name = "no-fetch"
tool = "http.fetch"
decision = "deny"
"#;

    #[test]
    fn counts_transitions_loosening_first_and_is_deterministic() {
        let policy = Policy::load(CANDIDATE, &LoadOptions::default()).unwrap();
        let internal = json!({"to": "ana@acme.test"});
        let external = json!({"to": "eve@evil.test"});
        let fetch = json!({"url": "https://example.test"});
        let standing = [StandingRule {
            id: "rule_1".into(),
            tool: "email.send".into(),
            target: "eve@evil.test".into(),
        }];
        let mut with_standing = Call::new("email.send", &external);
        with_standing.standing = &standing;
        let calls = [
            // ask → allow by the new rule
            (Call::new("email.send", &internal), Decision::Ask),
            // allow → deny
            (Call::new("http.fetch", &fetch), Decision::Allow),
            // unchanged: ask
            (Call::new("email.send", &external), Decision::Ask),
            // ask → allow through the standing rule live at the time
            (with_standing, Decision::Ask),
        ];
        let run = || {
            let mut replay = Replay::new(&policy);
            for (n, (call, before)) in calls.iter().enumerate() {
                let id = format!("line {}", n + 1);
                replay.push(
                    &policy,
                    &Recorded {
                        call: *call,
                        id: &id,
                        at: None,
                        before: *before,
                        rule_before: None,
                        prepared: None,
                    },
                );
            }
            replay.finish()
        };
        let report = run();
        assert_eq!(report, run());
        assert_eq!(report.calls, 4);
        assert_eq!(report.changed, 3);
        assert_eq!(report.toward_allow, 2);
        assert_eq!(report.before.ask, 3);
        assert_eq!(report.after.ask, 1);
        assert_eq!(report.prompts_per_100_before, 75.0);
        assert_eq!(report.prompts_per_100_after, 25.0);
        assert_eq!(report.transitions[0].from, Decision::Ask);
        assert_eq!(report.transitions[0].to, Decision::Allow);
        assert_eq!(report.transitions[0].count, 2);
        assert_eq!(report.transitions[1].to, Decision::Deny);
        let ids: Vec<&str> = report.changes.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["line 1", "line 4", "line 2"]);
        assert_eq!(
            report.changes[0].rule_after.as_deref(),
            Some("mail-internal")
        );
        assert_eq!(report.changes[1].rule_after.as_deref(), Some("rule_1"));
        assert!(!report.truncated);
    }

    #[test]
    fn a_history_replayed_in_parts_and_merged_in_order_gives_the_same_report() {
        let policy = Policy::load(CANDIDATE, &LoadOptions::default()).unwrap();
        let internal = json!({"to": "ana@acme.test"});
        let external = json!({"to": "eve@evil.test"});
        let fetch = json!({"url": "https://example.test"});
        let calls: Vec<(Call, Decision, String)> = (0..2 * ReplayReport::LISTED + 7)
            .map(|n| {
                let (call, before) = match n % 3 {
                    0 => (Call::new("email.send", &internal), Decision::Ask),
                    1 => (Call::new("http.fetch", &fetch), Decision::Allow),
                    _ => (Call::new("email.send", &external), Decision::Deny),
                };
                (call, before, format!("line {}", n + 1))
            })
            .collect();
        let push = |replay: &mut Replay, part: &[(Call, Decision, String)]| {
            for (call, before, id) in part {
                replay.push(
                    &policy,
                    &Recorded {
                        call: *call,
                        id,
                        at: None,
                        before: *before,
                        rule_before: None,
                        prepared: None,
                    },
                );
            }
        };
        let mut whole = Replay::new(&policy);
        push(&mut whole, &calls);
        let whole = whole.finish();
        for cuts in [vec![1], vec![500, 1000], vec![3, 4, 1500]] {
            let mut merged = Replay::new(&policy);
            let mut start = 0;
            for end in cuts.into_iter().chain([calls.len()]) {
                let mut part = Replay::new(&policy);
                push(&mut part, &calls[start..end]);
                merged.merge(part);
                start = end;
            }
            assert_eq!(merged.finish(), whole);
        }
        assert!(whole.truncated);
        assert_eq!(whole.changes.len(), ReplayReport::LISTED);
    }

    #[test]
    fn lists_at_most_the_bound_loosening_first() {
        let policy = Policy::load(CANDIDATE, &LoadOptions::default()).unwrap();
        let internal = json!({"to": "ana@acme.test"});
        let fetch = json!({"url": "https://example.test"});
        let mut replay = Replay::new(&policy);
        // One tightening first, then more loosenings than a report lists.
        let recorded = |call, before| Recorded {
            call,
            id: "c",
            at: None,
            before,
            rule_before: None,
            prepared: None,
        };
        replay.push(
            &policy,
            &recorded(Call::new("http.fetch", &fetch), Decision::Allow),
        );
        for _ in 0..=ReplayReport::LISTED {
            replay.push(
                &policy,
                &recorded(Call::new("email.send", &internal), Decision::Ask),
            );
        }
        let report = replay.finish();
        assert_eq!(report.changed, ReplayReport::LISTED as u64 + 2);
        assert_eq!(report.changes.len(), ReplayReport::LISTED);
        assert!(report.truncated);
        assert!(report.changes.iter().all(|change| change.toward_allow));
    }
}
