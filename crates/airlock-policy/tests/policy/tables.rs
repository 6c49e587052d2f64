//! Runs every `tests/data/<name>.policy.toml` against its `<name>.cases.toml`.

use airlock_policy::cases::{parse_cases, run_cases};
use airlock_policy::{LoadOptions, Policy};
use std::path::PathBuf;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Loads one table and returns (cases run, failure lines).
fn run_table(name: &str) -> (usize, Vec<String>) {
    let dir = data_dir();
    let policy_file = dir.join(format!("{name}.policy.toml"));
    let cases_file = dir.join(format!("{name}.cases.toml"));
    let policy = Policy::load(
        &std::fs::read_to_string(&policy_file).unwrap(),
        &LoadOptions {
            file_name: policy_file.display().to_string(),
            ..LoadOptions::default()
        },
    )
    .unwrap_or_else(|errors| panic!("{errors}"));
    let cases = parse_cases(
        &std::fs::read_to_string(&cases_file).unwrap(),
        &cases_file.display().to_string(),
    )
    .unwrap_or_else(|errors| panic!("{errors}"));
    let results = run_cases(&policy, cases);
    let failures = results
        .iter()
        .filter_map(|result| {
            result.failure.as_ref().map(|why| {
                format!(
                    "{name}.cases.toml:{} {}: {why}",
                    result.case.line, result.case.name
                )
            })
        })
        .collect();
    (results.len(), failures)
}

fn check(name: &str, at_least: usize) {
    let (count, failures) = run_table(name);
    assert!(
        failures.is_empty(),
        "{} of {count} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(count >= at_least, "{name}: only {count} cases ran");
}

#[test]
fn values_eq_in_present_and_dotted_paths() {
    check("values", 40);
}

#[test]
fn text_glob_and_regex() {
    check("text", 35);
}

#[test]
fn shell_prefix_and_compound_commands() {
    check("shell", 70);
}

#[test]
fn paths_and_domains() {
    check("paths", 60);
}

#[test]
fn precedence_agents_modes_standing_and_secrets() {
    check("decisions", 45);
}

#[test]
fn secrets_redact_mode_keeps_asking() {
    check("redact", 2);
}

/// Every data file is run by one of the tests above, and there are hundreds of cases.
#[test]
fn every_table_is_run_and_the_tables_are_large() {
    let known = ["values", "text", "shell", "paths", "decisions", "redact"];
    let mut total = 0;
    for entry in std::fs::read_dir(data_dir()).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let Some(name) = file.strip_suffix(".cases.toml") else {
            continue;
        };
        assert!(known.contains(&name), "tests/data/{file} is run by no test");
        total += run_table(name).0;
    }
    assert!(total >= 250, "only {total} table cases");
}
