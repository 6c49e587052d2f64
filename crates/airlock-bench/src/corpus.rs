//! A generated policy corpus: N rules, each a tool glob plus one argument matcher, and call
//! traffic against it (70% allow, 20% ask, 10% deny, plus a no-match worst case).
//!
//! Rule `i` governs the tools `svc<i>.*` and matches calls whose `resource` argument is under
//! `res<i>/`. Its decision is fixed by `i % 10`: 0..=6 allow, 7..=8 ask, 9 deny, so the
//! traffic mix follows from picking rules uniformly.

use airlock_policy::Decision;
use serde_json::{json, Value};
use std::fmt::Write;

/// The decision rule `i` carries.
pub fn rule_decision(i: usize) -> Decision {
    match i % 10 {
        0..=6 => Decision::Allow,
        7 | 8 => Decision::Ask,
        _ => Decision::Deny,
    }
}

/// The policy text with `rules` rules and `default = "deny"`.
pub fn policy_text(rules: usize) -> String {
    let mut text = String::from("version = 1\ndefault = \"deny\"\n");
    for i in 0..rules {
        let _ = write!(
            text,
            "\n[[rules]]\nname = \"r{i}\"\ntool = \"svc{i}.*\"\ndecision = \"{}\"\nwhen = {{ resource = {{ glob = \"res{i}/*\" }} }}\n",
            rule_decision(i)
        );
    }
    text
}

/// One call of the traffic: tool, arguments and the decision it must get.
#[derive(Debug, Clone)]
pub struct TrafficCall {
    pub tool: String,
    pub arguments: Value,
    pub expected: Decision,
}

/// A call that rule `i` decides.
pub fn call_for_rule(i: usize) -> TrafficCall {
    TrafficCall {
        tool: format!("svc{i}.op"),
        arguments: json!({ "resource": format!("res{i}/item") }),
        expected: rule_decision(i),
    }
}

/// The worst case: a tool that a rule's glob selects but whose argument matches nothing, so
/// the default applies.
pub fn no_match_call(rules: usize) -> TrafficCall {
    let i = rules / 2;
    TrafficCall {
        tool: format!("svc{i}.op"),
        arguments: json!({ "resource": "elsewhere/item" }),
        expected: Decision::Deny,
    }
}

/// `count` calls spread over the rules with the 70/20/10 mix.
pub fn traffic(rules: usize, count: usize) -> Vec<TrafficCall> {
    // A fixed stride visits rules in a scattered but repeatable order.
    (0..count)
        .map(|n| call_for_rule((n * 7919) % rules.max(1)))
        .collect()
}

/// `count` requests for the oracle check: the mixed traffic plus the cases where the
/// engines could plausibly disagree. Of every ten requests, eight are ordinary calls
/// decided by a rule, one pairs rule `i`'s tool with rule `i + 1`'s resource (the tool glob
/// matches, the argument does not: the default applies), and one names a tool no rule
/// selects. The no-match worst case comes first.
pub fn oracle_traffic(rules: usize, count: usize) -> Vec<TrafficCall> {
    let mut calls = vec![no_match_call(rules)];
    calls.extend((1..count).map(|n| {
        let i = (n * 7919) % rules.max(1);
        match n % 10 {
            8 if rules > 1 => TrafficCall {
                tool: format!("svc{i}.op"),
                arguments: json!({ "resource": format!("res{}/item", (i + 1) % rules) }),
                expected: Decision::Deny,
            },
            9 => TrafficCall {
                tool: format!("other{i}.op"),
                arguments: json!({ "resource": format!("res{i}/item") }),
                expected: Decision::Deny,
            },
            _ => call_for_rule(i),
        }
    }));
    calls
}
