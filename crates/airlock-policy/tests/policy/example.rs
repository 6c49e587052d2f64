//! The shipped starter policy loads, and its cases pass.

use airlock_policy::cases::{parse_cases, run_cases};
use airlock_policy::{LoadOptions, Policy};
use std::path::PathBuf;

#[test]
fn the_example_policy_loads_and_its_cases_pass() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let policy = Policy::load(
        &std::fs::read_to_string(root.join("policy.toml")).unwrap(),
        &LoadOptions::default(),
    )
    .unwrap_or_else(|errors| panic!("{errors}"));
    let cases = parse_cases(
        &std::fs::read_to_string(root.join("policy.cases.toml")).unwrap(),
        "policy.cases.toml",
    )
    .unwrap();
    assert!(cases.len() >= 20);
    let failures: Vec<String> = run_cases(&policy, cases)
        .into_iter()
        .filter_map(|r| r.failure.map(|why| format!("{}: {why}", r.case.name)))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
