//! One call prepared once and judged under several policies (as a replay judges it under
//! a baseline and a candidate) gets exactly the verdict each policy gives it alone: what
//! the preparation shares (the secrets scan, the place, the command's classification) never
//! carries one policy's view into another's.

use airlock_policy::{Call, LoadOptions, Policy, Prepared, Verdict, DEFAULT_POLICY};
use serde_json::{json, Value};
use std::path::PathBuf;

const CWD: &str = "/home/dev/app";
const HOME: &str = "/home/dev";

fn load(text: &str) -> Policy {
    Policy::load(text, &LoadOptions::default()).unwrap()
}

fn shell_call(arguments: &Value) -> Call<'_> {
    Call {
        cwd: Some(CWD),
        project: Some(CWD),
        home: Some(HOME),
        ..Call::new("shell.exec", arguments)
    }
}

/// Judges `call` prepared once under each policy in turn, twice round, and compares every
/// verdict with the policy's own fresh evaluation.
fn same_as_alone(policies: &[&Policy], call: &Call) -> Result<(), String> {
    let prepared = Prepared::new(call);
    for round in 0..2 {
        for (n, policy) in policies.iter().enumerate() {
            let shared: Verdict = policy.evaluate_prepared(call, &prepared);
            let alone: Verdict = policy.evaluate(call);
            if shared != alone {
                return Err(format!(
                    "round {round}, policy {n}, {}: prepared {shared:?} but alone {alone:?}",
                    call.arguments
                ));
            }
        }
    }
    Ok(())
}

/// A policy whose `[commands]` adds a program gets its own classification of a command,
/// even when another policy classified the same command first with the built-in table.
#[test]
fn each_policy_classifies_with_its_own_table() {
    let built_in = load(DEFAULT_POLICY);
    let extended = load(&format!(
        "{DEFAULT_POLICY}\n[commands.read_only]\nadd = [\"frobnicate\"]\n"
    ));
    let arguments = json!({"command": "frobnicate src/main.rs"});
    let call = shell_call(&arguments);
    assert_eq!(
        built_in.evaluate(&call).decision,
        airlock_policy::Decision::Ask,
        "an unknown program is asked under the built-in table"
    );
    assert_eq!(
        extended.evaluate(&call).decision,
        airlock_policy::Decision::Allow,
        "the added read-only program is allowed in the project"
    );
    same_as_alone(&[&built_in, &extended], &call).unwrap();
    same_as_alone(&[&extended, &built_in], &call).unwrap();
}

/// Two argv arrays of the same length in one call are two commands: the second is never
/// judged by the first's classification (a command built from an array is a temporary
/// whose address a later one may reuse).
#[test]
fn two_argv_commands_of_one_length_are_judged_apart() {
    let policy = load(
        r#"
version = 1
default = "ask"
[[rules]]
name = "allow-listing"
tool = "batch.run"
decision = "allow"
when = { first = { class = ["read_only"], paths = ["{project}/**"] } }
[[rules]]
name = "deny-deleting"
tool = "batch.run"
decision = "deny"
when = { second = { class = ["delete"] } }
"#,
    );
    let arguments = json!({"first": ["ls", "-la"], "second": ["rm", "-rf"]});
    let call = Call {
        cwd: Some(CWD),
        project: Some(CWD),
        home: Some(HOME),
        ..Call::new("batch.run", &arguments)
    };
    let verdict = policy.evaluate(&call);
    assert_eq!(
        verdict.decision,
        airlock_policy::Decision::Deny,
        "{verdict:?}"
    );
    same_as_alone(&[&policy], &call).unwrap();
}

/// Every command of the classification table, under the built-in policy and a candidate
/// that differs in its rules and its table, prepared once: the same verdicts as alone.
#[test]
fn the_classification_table_judged_under_two_policies() {
    let built_in = load(DEFAULT_POLICY);
    let candidate = load(&format!(
        "{DEFAULT_POLICY}\n[commands.build]\nadd = [\"frobnicate\"]\n\n\
         [[rules]]\nname = \"no-git\"\ntool = \"shell.exec\"\ndecision = \"deny\"\n\
         when = {{ command = {{ prefix = [\"git push\"] }} }}\n"
    ));
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/classes.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for line in text.lines() {
        let Some((_, command)) = line.split_once('|') else {
            continue;
        };
        if line.trim_start().starts_with('#') {
            continue;
        }
        count += 1;
        let arguments = json!({"command": command.trim()});
        let call = shell_call(&arguments);
        if let Err(failure) = same_as_alone(&[&built_in, &candidate], &call) {
            failures.push(failure);
        }
    }
    assert!(count >= 300, "only {count} commands");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same `when` in an allow rule of one policy and a deny rule of another tests
/// different things (every segment within the classes, against any segment in them): the
/// second policy's rule is tested, not answered with the first's result.
#[test]
fn one_condition_on_two_sides_is_tested_on_each() {
    let rule = |decision: &str| {
        format!(
            "version = 1\ndefault = \"ask\"\n[[rules]]\nname = \"r\"\ntool = \"shell.exec\"\n\
             decision = \"{decision}\"\nwhen = {{ command = {{ class = [\"read_only\"] }} }}\n"
        )
    };
    let allowing = load(&rule("allow"));
    let denying = load(&rule("deny"));
    let arguments = json!({"command": "ls && rm -rf build"});
    let call = shell_call(&arguments);
    assert_eq!(
        allowing.evaluate(&call).decision,
        airlock_policy::Decision::Ask
    );
    assert_eq!(
        denying.evaluate(&call).decision,
        airlock_policy::Decision::Deny
    );
    same_as_alone(&[&allowing, &denying], &call).unwrap();
    same_as_alone(&[&denying, &allowing], &call).unwrap();
}

/// A prepared call judged with other arguments (a misuse) is judged on those arguments:
/// what it remembers of its own call is not carried over.
#[test]
fn a_preparation_remembers_only_for_its_own_arguments() {
    let policy = load(DEFAULT_POLICY);
    let listing = json!({"command": "ls"});
    let deleting = json!({"command": "rm -rf /"});
    let prepared = Prepared::new(&shell_call(&listing));
    let first = policy.evaluate_prepared(&shell_call(&listing), &prepared);
    let other = policy.evaluate_prepared(&shell_call(&deleting), &prepared);
    assert_eq!(first.decision, airlock_policy::Decision::Allow);
    assert_eq!(
        other.decision,
        policy.evaluate(&shell_call(&deleting)).decision
    );
    assert_ne!(other.decision, airlock_policy::Decision::Allow);
}

/// Rules two policies share in a different order, and rules only one of them has: each
/// policy gets its own verdict for calls that match one rule, the other, both or none.
#[test]
fn shared_rules_in_another_order_are_answered_by_their_own_key() {
    let rules = [
        "[[rules]]\nname = \"a\"\ntool = \"shell.exec\"\ndecision = \"deny\"\n\
         when = { command = { prefix = [\"git push\"] } }\n",
        "[[rules]]\nname = \"b\"\ntool = \"shell.exec\"\ndecision = \"allow\"\n\
         when = { command = { class = [\"read_only\"], paths = [\"{project}/**\"] } }\n",
        "[[rules]]\nname = \"c\"\ntool = \"shell.exec\"\ndecision = \"ask\"\n\
         when = { command = { prefix = [\"git\"] } }\n",
        "[[rules]]\nname = \"d\"\ntool = \"shell.exec\"\ndecision = \"deny\"\n\
         when = { command = { class = [\"delete\"] } }\n",
    ];
    let policy = |order: &[usize]| {
        let mut text = String::from("version = 1\ndefault = \"ask\"\n");
        for &index in order {
            text.push_str(rules[index]);
        }
        load(&text)
    };
    let forward = policy(&[0, 1, 2, 3]);
    let backward = policy(&[3, 2, 1, 0]);
    let partial = policy(&[2, 1]);
    for command in [
        "git push origin main",
        "git status",
        "ls -la",
        "rm -rf build",
        "ls && git push",
        "cat README.md | grep x",
        "make",
    ] {
        let arguments = json!({ "command": command });
        let call = shell_call(&arguments);
        same_as_alone(&[&forward, &backward, &partial], &call).unwrap();
        same_as_alone(&[&partial, &forward, &backward], &call).unwrap();
    }
}
