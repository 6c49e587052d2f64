//! Every kind of load error: the message, and the line and column it points at.

use airlock_policy::{LoadOptions, Policy};
use std::collections::HashMap;

/// Loads `source` and asserts that one error is at `line:column` and contains `needle`.
fn check(source: &str, line: usize, column: usize, needle: &str) {
    check_with(source, &LoadOptions::default(), line, column, needle);
}

fn check_with(source: &str, options: &LoadOptions, line: usize, column: usize, needle: &str) {
    let errors = match Policy::load(source, options) {
        Ok(_) => panic!("policy loaded but should not:\n{source}"),
        Err(errors) => errors,
    };
    assert!(
        errors
            .0
            .iter()
            .any(|e| e.line == line && e.column == column && e.message.contains(needle)),
        "expected an error at {line}:{column} containing {needle:?}, got:\n{errors}"
    );
}

const HEAD: &str = "version = 1\n";

#[test]
fn toml_syntax_error() {
    check("version = 1\nrules = [\n", 2, 10, "unclosed array");
    check("version = = 1\n", 1, 11, "extra `=`");
}

#[test]
fn missing_version_and_wrong_version() {
    check("default = \"ask\"\n", 1, 1, "missing field `version`");
    check(
        "version = 2\n",
        1,
        11,
        "unsupported policy version 2, expected 1",
    );
}

#[test]
fn unknown_top_level_key() {
    check(
        "version = 1\ndefualt = \"ask\"\n",
        2,
        1,
        "unknown field `defualt`",
    );
}

#[test]
fn unknown_rule_key() {
    let text = format!("{HEAD}[[rules]]\ntool = \"x\"\ndecison = \"allow\"\n");
    check(&text, 4, 1, "unknown field `decison`");
}

#[test]
fn unknown_tool_key() {
    let text = format!("{HEAD}[tools.\"a\"]\nrisky = \"read\"\n");
    check(&text, 3, 1, "unknown field `risky`");
}

#[test]
fn unknown_matcher() {
    let text = format!("{HEAD}[[rules]]\ntool = \"x\"\ndecision = \"allow\"\nwhen = {{ to = {{ globb = \"*\" }} }}\n");
    check(&text, 5, 17, "unknown field `globb`");
}

#[test]
fn plants_and_hooks_only_restrict() {
    for matcher in ["plants", "hooks"] {
        let text = format!(
            "{HEAD}[[rules]]\ntool = \"fs.write\"\ndecision = \"allow\"\nwhen = {{ path = {{ {matcher} = [\"build\"] }} }}\n"
        );
        check(&text, 5, 17, "are for deny and ask rules");
        let asked = text.replace("\"allow\"", "\"ask\"");
        assert!(
            Policy::load(&asked, &LoadOptions::default()).is_ok(),
            "{matcher} on an ask rule loads"
        );
    }
    let text = format!(
        "{HEAD}[[rules]]\ntool = \"fs.write\"\ndecision = \"deny\"\nwhen = {{ path = {{ paths = [\"/x\"] }} }}\n"
    );
    check(
        &text,
        5,
        17,
        "`paths` goes with `class`, `plants` or `hooks`",
    );
}

#[test]
fn any_argument_only_restricts() {
    let text = format!(
        "{HEAD}[[rules]]\ntool = \"mcp__*\"\ndecision = \"allow\"\nwhen = {{ \"*\" = {{ path = [\"{{project}}/**\"] }} }}\n"
    );
    check(&text, 5, 16, "is for deny and ask rules");
    let denied = text.replace("\"allow\"", "\"deny\"");
    assert!(
        Policy::load(&denied, &LoadOptions::default()).is_ok(),
        "\"*\" on a deny rule loads"
    );
}

#[test]
fn bad_enum_values() {
    check(
        "version = 1\ndefault = \"maybe\"\n",
        2,
        11,
        "unknown variant `maybe`",
    );
    check(
        "version = 1\nsecrets = \"hide\"\n",
        2,
        11,
        "unknown variant `hide`",
    );
    let rule = format!("{HEAD}[[rules]]\ntool = \"x\"\ndecision = \"permit\"\n");
    check(&rule, 4, 12, "unknown variant `permit`");
    let tool = format!("{HEAD}[tools.\"a\"]\nrisk = \"dangerous\"\n");
    check(&tool, 3, 8, "unknown variant `dangerous`");
}

#[test]
fn wrong_types() {
    let text = format!("{HEAD}[[rules]]\ntool = 5\ndecision = \"allow\"\n");
    check(&text, 3, 8, "invalid type");
    let agents =
        format!("{HEAD}[[rules]]\ntool = \"x\"\ndecision = \"allow\"\nagents = \"scout\"\n");
    check(&agents, 5, 10, "invalid type");
}

#[test]
fn missing_rule_keys() {
    let text = format!("{HEAD}[[rules]]\ndecision = \"allow\"\n");
    check(&text, 2, 1, "missing field `tool`");
}

#[test]
fn bad_durations() {
    check(
        "version = 1\ndeadline = \"soon\"\n",
        2,
        12,
        "bad `deadline` `soon`",
    );
    check(
        "version = 1\ndeadline = \"0s\"\n",
        2,
        12,
        "must be longer than zero",
    );
    let text =
        format!("{HEAD}[[rules]]\ntool = \"x\"\ndecision = \"ask\"\ndeadline = \"3 fortnights\"\n");
    check(&text, 5, 12, "bad `deadline`");
}

/// A duration past 100 years is refused where it is written: a deadline in year 9999 and
/// beyond made every read of the approval fail (audit C, H2).
#[test]
fn durations_longer_than_a_hundred_years() {
    for (key, value) in [
        ("deadline", "100000000000d"),
        ("deadline", "36526d"),
        ("outcome_timeout", "2932000d"),
    ] {
        check(
            &format!("version = 1\n{key} = \"{value}\"\n"),
            2,
            key.len() + 4,
            "too long: at most 36525d (100 years)",
        );
    }
    let text =
        format!("{HEAD}[[rules]]\ntool = \"x\"\ndecision = \"ask\"\ndeadline = \"2932000d\"\n");
    check(&text, 5, 12, "`deadline` `2932000d` is too long");
    // The bound itself loads.
    let longest = "version = 1\ndeadline = \"36525d\"\noutcome_timeout = \"36525d\"\n";
    assert!(Policy::load(longest, &LoadOptions::default()).is_ok());
}

#[test]
fn bad_tool_glob() {
    let text = format!("{HEAD}[[rules]]\ntool = \"fs.[\"\ndecision = \"allow\"\n");
    check(&text, 3, 8, "bad tool glob `fs.[`");
}

#[test]
fn bad_glob_regex_prefix_path_domain() {
    let cases = [
        ("{ glob = \"[a-\" }", "bad glob `[a-`"),
        ("{ regex = \"(unclosed\" }", "bad regex `(unclosed`"),
        ("{ prefix = \"\" }", "bad prefix ``"),
        ("{ prefix = \"echo 'unclosed\" }", "bad prefix"),
        ("{ path = \"\" }", "bad path"),
        ("{ domain = \"https://acme.test\" }", "bad domain"),
        ("{ domain = \"a*b.test\" }", "bad domain"),
        ("{ glob = [] }", "`glob` needs at least one pattern"),
        ("{ in = [] }", "`in` needs at least one value"),
        ("{}", "empty matcher"),
        ("{ eq = 1, present = true }", "exactly one of"),
    ];
    for (matcher, needle) in cases {
        let text = format!("{HEAD}[[rules]]\nname = \"r\"\ntool = \"x\"\ndecision = \"allow\"\nwhen = {{ arg = {matcher} }}\n");
        check(&text, 6, 16, needle);
        check(&text, 6, 16, "rule `r`: `when.arg`");
    }
}

#[test]
fn bad_argument_path() {
    let text = format!("{HEAD}[[rules]]\ntool = \"x\"\ndecision = \"allow\"\nwhen = {{ \"a..b\" = {{ eq = 1 }} }}\n");
    check(&text, 5, 19, "empty segment");
}

#[test]
fn empty_agents_and_names() {
    let agents = format!("{HEAD}[[rules]]\ntool = \"x\"\ndecision = \"allow\"\nagents = []\n");
    check(&agents, 5, 10, "`agents` is empty");
    let name = format!("{HEAD}[[rules]]\nname = \" \"\ntool = \"x\"\ndecision = \"allow\"\n");
    check(&name, 3, 8, "rule name is empty");
}

#[test]
fn duplicate_rule_names() {
    let text = format!("{HEAD}[[rules]]\nname = \"a\"\ntool = \"x\"\ndecision = \"allow\"\n\n[[rules]]\nname = \"a\"\ntool = \"y\"\ndecision = \"deny\"\n");
    check(&text, 8, 8, "duplicate rule name `a`");
}

#[test]
fn standing_on_a_rule_that_does_not_ask() {
    let text = format!("{HEAD}[[rules]]\ntool = \"x\"\ndecision = \"deny\"\nstanding = false\n");
    check(
        &text,
        5,
        12,
        "`standing` only applies to rules whose decision is ask",
    );
}

#[test]
fn empty_target() {
    let text = format!("{HEAD}[tools.\"a\"]\ntarget = \"\"\n");
    check(&text, 3, 10, "target is empty");
}

#[test]
fn bad_templates_point_inside_the_string() {
    let unclosed = format!("{HEAD}[tools.\"a\"]\nsummary = \"Send to {{to\"\n");
    check(&unclosed, 3, 20, "bad template");
    let empty = format!("{HEAD}[tools.\"a\"]\nbody = \"x {{}} y\"\n");
    check(&empty, 3, 11, "bad template");
}

#[test]
fn target_and_placeholders_against_a_known_schema() {
    let options = LoadOptions {
        file_name: "p.toml".into(),
        tool_schemas: HashMap::from([(
            "email.send".to_owned(),
            vec!["to".to_owned(), "subject".to_owned(), "body".to_owned()],
        )]),
    };
    let target = format!("{HEAD}[tools.\"email.send\"]\ntarget = \"recipient\"\n");
    check_with(
        &target,
        &options,
        3,
        10,
        "target `recipient` names no argument of tool `email.send`",
    );
    let placeholder =
        format!("{HEAD}[tools.\"email.send\"]\nsummary = \"Send to {{recipient}}\"\n");
    check_with(
        &placeholder,
        &options,
        3,
        11,
        "placeholder `{recipient}` names no argument",
    );
    let fine = format!("{HEAD}[tools.\"email.send\"]\ntarget = \"to\"\nsummary = \"Send to {{to}}: {{subject}}\"\n");
    assert!(Policy::load(&fine, &options).is_ok());
}

#[test]
fn examples_that_do_not_behave_as_stated() {
    let text = format!(
        "{HEAD}[[rules]]\nname = \"mail\"\ntool = \"email.send\"\ndecision = \"allow\"\nwhen = {{ to = {{ glob = \"*@acme.test\" }} }}\nexamples = {{ match = [{{ to = \"a@acme.test\" }}, {{ to = \"a@evil.test\" }}], not_match = [{{ to = \"b@acme.test\" }}] }}\n"
    );
    check(&text, 7, 47, "rule `mail`: example match[1] does not match");
    check(&text, 7, 85, "rule `mail`: example not_match[0] matches");
}

#[test]
fn every_error_is_reported_at_once_in_text_order() {
    let text = format!(
        "{HEAD}deadline = \"never\"\n[[rules]]\ntool = \"[\"\ndecision = \"allow\"\n[[rules]]\ntool = \"x\"\ndecision = \"allow\"\nwhen = {{ a = {{ regex = \"(\" }} }}\n"
    );
    let errors = Policy::load(&text, &LoadOptions::default()).unwrap_err();
    let positions: Vec<(usize, usize)> = errors.0.iter().map(|e| (e.line, e.column)).collect();
    assert_eq!(positions, vec![(2, 12), (4, 8), (9, 14)], "{errors}");
}

#[test]
fn messages_name_the_file() {
    let options = LoadOptions {
        file_name: "team/policy.toml".into(),
        ..LoadOptions::default()
    };
    let errors = Policy::load("version = 3\n", &options).unwrap_err();
    assert_eq!(
        errors.to_string(),
        "team/policy.toml:1:11: unsupported policy version 3, expected 1"
    );
}
