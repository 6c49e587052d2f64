//! Policy evaluation cost at 10 / 100 / 1,000 / 10,000 rules (DESIGN.md §9).
//!
//! Run: `cargo bench -p airlock-bench --bench policy_eval`. Every call is checked against
//! its expected decision before timing starts, so the figures are for correct answers.

#![allow(clippy::expect_used, clippy::panic)]

use airlock_bench::corpus::{no_match_call, policy_text, traffic, TrafficCall};
use airlock_policy::{Call, LoadOptions, Policy};

const SIZES: [usize; 4] = [10, 100, 1_000, 10_000];

fn main() {
    divan::main();
}

fn load(rules: usize) -> Policy {
    Policy::load(&policy_text(rules), &LoadOptions::default()).expect("corpus policy loads")
}

fn checked(policy: &Policy, calls: Vec<TrafficCall>) -> Vec<TrafficCall> {
    for call in &calls {
        let verdict = policy.evaluate(&Call::new(&call.tool, &call.arguments));
        assert_eq!(
            verdict.decision, call.expected,
            "{} {}",
            call.tool, call.arguments
        );
    }
    calls
}

/// Mixed traffic: 70% allow, 20% ask, 10% deny; one call per iteration.
#[divan::bench(args = SIZES)]
fn mixed_traffic(bencher: divan::Bencher, rules: usize) {
    let policy = load(rules);
    let calls = checked(&policy, traffic(rules, 1_000));
    let mut next = 0;
    bencher.bench_local(|| {
        let call = &calls[next % calls.len()];
        next += 1;
        policy.evaluate(&Call::new(divan::black_box(&call.tool), &call.arguments))
    });
}

/// The worst case: the tool is selected by a rule whose argument does not match.
#[divan::bench(args = SIZES)]
fn no_match(bencher: divan::Bencher, rules: usize) {
    let policy = load(rules);
    let calls = checked(&policy, vec![no_match_call(rules)]);
    let call = &calls[0];
    bencher
        .bench_local(|| policy.evaluate(&Call::new(divan::black_box(&call.tool), &call.arguments)));
}

/// The baseline run beside the others: a policy with no rules, so only the fixed cost of a
/// call is measured (secret scan, catalogue lookup, building the verdict).
#[divan::bench]
fn baseline_no_rules(bencher: divan::Bencher) {
    let policy = load(0);
    let call = airlock_bench::corpus::call_for_rule(0);
    bencher
        .bench_local(|| policy.evaluate(&Call::new(divan::black_box(&call.tool), &call.arguments)));
}
