//! The built-in coding-agent policy: it loads, it decides a table of realistic calls of
//! every canonical tool as a person would, and it stays in step with the classification.

use airlock_policy::cases::{parse_cases, run_cases};
use airlock_policy::classes::CLASSES_TOML;
use airlock_policy::{Call, Decision, Policy, DEFAULT_POLICY};
use serde_json::json;
use std::path::PathBuf;

#[test]
fn the_default_policy_decides_realistic_calls() {
    let policy = Policy::default_policy().unwrap_or_else(|errors| panic!("{errors}"));
    let file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/default/calls.cases.toml");
    let cases = parse_cases(&std::fs::read_to_string(&file).unwrap(), "calls.cases.toml")
        .unwrap_or_else(|errors| panic!("{errors}"));
    let results = run_cases(&policy, cases);
    let failures: Vec<String> = results
        .iter()
        .filter_map(|result| {
            result.failure.as_ref().map(|why| {
                format!(
                    "calls.cases.toml:{} {}: {why}",
                    result.case.line, result.case.name
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        results.len(),
        failures.join("\n")
    );
    assert!(results.len() >= 200, "only {} cases", results.len());
}

/// The file rules list the same credential material and start-up files as the shell
/// classification, so `cat ~/.netrc` and reading `~/.netrc` get the same answer.
#[test]
fn the_default_policy_names_the_classified_files() {
    let data: toml::Table = toml::from_str(CLASSES_TOML).unwrap();
    let files = data["files"].as_table().unwrap();
    for (list, rule) in [
        ("credentials", "credential-files"),
        ("startup", "startup-files"),
    ] {
        let rule_text = DEFAULT_POLICY
            .split("[[rules]]")
            .find(|text| text.contains(&format!("name = \"{rule}\"")))
            .unwrap();
        for glob in files[list].as_array().unwrap() {
            let glob = glob.as_str().unwrap();
            assert!(
                rule_text.contains(&format!("\"{glob}\"")),
                "rule {rule} lacks {glob}"
            );
        }
    }
}

/// A 1 MiB command is judged in bounded time and never allowed.
#[test]
fn a_huge_command_finishes_and_is_not_allowed() {
    let policy = Policy::default_policy().unwrap();
    for command in [
        "ls ".repeat(350_000),
        format!("echo '{}", "a".repeat(1 << 20)),
        "$(".repeat(200_000),
        format!("ls && {}", "x && ".repeat(200_000)),
    ] {
        let arguments = json!({ "command": command });
        let started = std::time::Instant::now();
        let verdict = policy.evaluate(&Call {
            cwd: Some("/home/dev/app"),
            project: Some("/home/dev/app"),
            home: Some("/home/dev"),
            ..Call::new("shell.exec", &arguments)
        });
        assert_ne!(verdict.decision, Decision::Allow, "{verdict:?}");
        // A generous backstop for a debug build on a shared machine; the point is that it
        // ends, not how fast.
        assert!(
            started.elapsed().as_secs() < 30,
            "took {:?}",
            started.elapsed()
        );
    }
}
