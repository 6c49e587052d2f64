//! Properties of evaluation over generated policies and calls (proptest).
//!
//! - Evaluation never fails inside: on arbitrary tool names and arbitrary JSON arguments it
//!   returns a verdict that is not an internal-error deny (`decided_by = system`).
//! - Deny is monotone: adding a deny rule never loosens any decision; in particular a deny
//!   stays a deny.
//! - A policy with `default = "allow"` and only allow rules allows everything.

use airlock_policy::{Call, DecidedBy, Decision, LoadOptions, Mode, Policy, StandingRule};
use proptest::prelude::*;
use serde_json::{json, Value};

const TOOLS: &[&str] = &[
    "fs.read",
    "fs.write",
    "shell.exec",
    "email.send",
    "http.request",
];
const TOOL_GLOBS: &[&str] = &["*", "fs.*", "email.send", "shell.exec", "http.*", "f?.read"];
const ARGS: &[&str] = &["path", "command", "to", "url", "n", "nested.key"];

fn quoted(text: &str) -> String {
    // JSON string syntax is valid TOML basic-string syntax.
    serde_json::to_string(text).unwrap_or_default()
}

fn matcher() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["*@acme.test", "*", "a*", "[ab]*"])
            .prop_map(|g| format!("{{ glob = {} }}", quoted(g))),
        prop::sample::select(vec!["^a", "b$", "(?i)x", "[0-9]+"])
            .prop_map(|r| format!("{{ regex = {} }}", quoted(r))),
        prop::sample::select(vec!["git status", "rm -rf", "ls", "curl"])
            .prop_map(|p| format!("{{ prefix = {} }}", quoted(p))),
        prop::sample::select(vec!["/srv/**", "~/x/*", "**/.env", "/etc/**"])
            .prop_map(|p| format!("{{ path = {} }}", quoted(p))),
        prop::sample::select(vec!["acme.test", "*.acme.test"])
            .prop_map(|d| format!("{{ domain = {} }}", quoted(d))),
        any::<i64>().prop_map(|n| format!("{{ eq = {n} }}")),
        "[a-z]{0,4}".prop_map(|s| format!("{{ in = [{}, \"a\"] }}", quoted(&s))),
        any::<bool>().prop_map(|b| format!("{{ present = {b} }}")),
    ]
}

fn rule(decisions: &'static [&'static str]) -> impl Strategy<Value = String> {
    (
        prop::sample::select(TOOL_GLOBS),
        prop::sample::select(decisions),
        prop::collection::vec((prop::sample::select(ARGS), matcher()), 0..3),
        prop::option::of(prop::sample::select(vec!["scout", "intern"])),
    )
        .prop_map(|(tool, decision, when, agent)| {
            let mut text = format!(
                "\n[[rules]]\ntool = {}\ndecision = \"{decision}\"\n",
                quoted(tool)
            );
            if let Some(agent) = agent {
                text.push_str(&format!("agents = [\"{agent}\"]\n"));
            }
            if !when.is_empty() {
                let mut seen = std::collections::BTreeMap::new();
                for (arg, matcher) in when {
                    seen.insert(arg, matcher);
                }
                let parts: Vec<String> = seen
                    .into_iter()
                    .map(|(arg, matcher)| format!("{} = {matcher}", quoted(arg)))
                    .collect();
                text.push_str(&format!("when = {{ {} }}\n", parts.join(", ")));
            }
            text
        })
}

fn header(default: &str) -> String {
    format!(
        "version = 1\ndefault = \"{default}\"\n[tools.\"fs.write\"]\nrisk = \"write\"\ntarget = \"path\"\n[tools.\"email.send\"]\nrisk = \"external\"\ntarget = \"to\"\n[tools.\"fs.read\"]\nrisk = \"read\"\n"
    )
}

fn load(text: &str) -> Policy {
    Policy::load(text, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".*".prop_map(Value::String),
        prop::sample::select(vec![
            "git status && rm -rf /",
            "echo $(ls `pwd`)",
            "'unclosed",
            "/srv/../etc/passwd",
            "~/../x",
            "http://acme.test@evil.test/",
            "http://[::1",
            "a@acme.test",
            "AKIAIOSFODNN7EXAMPLE",
            "sk-ant-abcdefghijklmnopqrstuvwxyz",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    prop::sample::select(ARGS).prop_map(str::to_owned),
                    "[a-z.]{0,6}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        json_value(),
        prop::collection::btree_map(prop::sample::select(ARGS), json_value(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
    ]
}

fn tool_name() -> impl Strategy<Value = String> {
    prop_oneof![prop::sample::select(TOOLS).prop_map(str::to_owned), ".*"]
}

fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(vec![Mode::Ask, Mode::ReadOnly, Mode::Unattended])
}

fn agent() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::of(prop::sample::select(vec!["scout", "intern", "other"]))
}

const ANY_DECISION: &[&str] = &["allow", "ask", "deny"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn evaluation_never_fails_inside(
        rules in prop::collection::vec(rule(ANY_DECISION), 0..8),
        default in prop::sample::select(ANY_DECISION),
        tool in tool_name(),
        args in arguments(),
        agent in agent(),
        mode in mode(),
        standing_target in ".*",
    ) {
        let policy = load(&format!("{}{}", header(default), rules.concat()));
        let standing = [StandingRule { id: "s1".into(), tool: tool.clone(), target: standing_target }];
        let verdict = policy.evaluate(&Call { tool: &tool, arguments: &args, agent, mode, standing: &standing, declared: None, native_tool: None, cwd: None, project: None, home: None });
        prop_assert_ne!(verdict.decided_by, DecidedBy::System, "{:?}", verdict);
        if verdict.decision == Decision::Deny {
            prop_assert!(verdict.reason.is_some(), "a deny always says why: {:?}", verdict);
        }
    }

    #[test]
    fn adding_a_deny_rule_never_loosens_a_decision(
        rules in prop::collection::vec(rule(ANY_DECISION), 0..8),
        extra in rule(&["deny"]),
        position in any::<prop::sample::Index>(),
        default in prop::sample::select(ANY_DECISION),
        tool in tool_name(),
        args in arguments(),
        agent in agent(),
        mode in mode(),
    ) {
        let before = load(&format!("{}{}", header(default), rules.concat()));
        let mut with_deny = rules.clone();
        with_deny.insert(position.index(rules.len() + 1), extra);
        let after = load(&format!("{}{}", header(default), with_deny.concat()));
        let call = Call { tool: &tool, arguments: &args, agent, mode, standing: &[], declared: None, native_tool: None, cwd: None, project: None, home: None };
        let (old, new) = (before.evaluate(&call).decision, after.evaluate(&call).decision);
        prop_assert!(new >= old, "{old} became {new}");
        if old == Decision::Deny {
            prop_assert_eq!(new, Decision::Deny);
        }
    }

    #[test]
    fn allow_only_policies_with_default_allow_allow_everything(
        rules in prop::collection::vec(rule(&["allow"]), 0..8),
        tool in tool_name(),
        args in arguments(),
        agent in agent(),
    ) {
        let policy = load(&format!("{}{}", header("allow"), rules.concat()));
        let verdict = policy.evaluate(&Call { tool: &tool, arguments: &args, agent, mode: Mode::Ask, standing: &[], declared: None, native_tool: None, cwd: None, project: None, home: None });
        prop_assert_eq!(verdict.decision, Decision::Allow, "{:?}", verdict);
    }
}
