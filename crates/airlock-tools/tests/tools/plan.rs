//! The catalogue and `Builtins::plan`: schemas, risks, targets, previews, validation.

use airlock_tools::{Builtins, OutboxEffect, Plan, Risk};
use serde_json::{json, Map, Value};

#[test]
fn the_catalogue_lists_each_tool_with_its_risk_target_and_previews() {
    let table: Vec<_> = Builtins::specs()
        .into_iter()
        .map(|spec| (spec.name, spec.risk, spec.target, spec.summary, spec.body))
        .collect();
    let owned = |text: &str| Some(text.to_string());
    assert_eq!(
        table,
        vec![
            (
                "clock.now".to_string(),
                Risk::Read,
                None,
                owned("Read the clock"),
                None
            ),
            (
                "email.send".to_string(),
                Risk::External,
                owned("to"),
                owned("Send email to {to}"),
                owned("{body}")
            ),
            (
                "http.fetch".to_string(),
                Risk::Read,
                owned("url"),
                owned("Fetch {url}"),
                None
            ),
            (
                "fs.read".to_string(),
                Risk::Read,
                owned("path"),
                owned("Read {path}"),
                None
            ),
            (
                "fs.write".to_string(),
                Risk::Write,
                owned("path"),
                owned("Write {path}"),
                owned("{content}")
            ),
            (
                "shell.exec".to_string(),
                Risk::Exec,
                None,
                owned("Run a shell command"),
                owned("{command}")
            ),
        ]
    );
    assert_eq!(
        Builtins::spec("fs.write"),
        Builtins::specs().into_iter().nth(4)
    );
    assert_eq!(Builtins::spec("fs.delete"), None);
}

/// The arguments each tool is called with in the schema tests: valid values by name.
fn valid_value(argument: &str) -> Value {
    match argument {
        "to" => json!("bob@example.com"),
        "url" => json!("https://example.com/"),
        "command" => json!("true"),
        _ => json!("x"),
    }
}

#[test]
fn every_schema_is_a_closed_object_whose_required_arguments_plan_enforces() {
    for spec in Builtins::specs() {
        let name = &spec.name;
        let schema = &spec.parameters;
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        let properties = schema["properties"].as_object().unwrap();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|value| value.as_str().unwrap())
            .collect();
        let mut listed: Vec<&str> = properties.keys().map(String::as_str).collect();
        let mut sorted_required = required.clone();
        listed.sort_unstable();
        sorted_required.sort_unstable();
        assert_eq!(
            listed, sorted_required,
            "{name}: every argument is required"
        );
        if let Some(target) = &spec.target {
            assert!(
                properties.contains_key(target),
                "{name}: target {target} is no argument"
            );
        }
        for template in spec.summary.iter().chain(&spec.body) {
            for placeholder in template.split('{').skip(1) {
                let argument = placeholder.split('}').next().unwrap();
                assert!(
                    properties.contains_key(argument),
                    "{name}: {{{argument}}} is no argument"
                );
            }
        }

        let complete: Map<String, Value> = required
            .iter()
            .map(|argument| (argument.to_string(), valid_value(argument)))
            .collect();
        assert!(
            Builtins::plan(name, &Value::Object(complete.clone())).is_ok(),
            "{name}"
        );
        for argument in &required {
            let mut without = complete.clone();
            without.remove(*argument);
            let error = Builtins::plan(name, &Value::Object(without)).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("{name}: missing required argument `{argument}`")
            );
            let mut mistyped = complete.clone();
            mistyped.insert(argument.to_string(), json!(["a"]));
            let error = Builtins::plan(name, &Value::Object(mistyped)).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("{name}: argument `{argument}` must be a string, got an array")
            );
        }
        let mut extra = complete.clone();
        extra.insert("extra".to_string(), json!("x"));
        let error = Builtins::plan(name, &Value::Object(extra)).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(&format!("{name}: unknown argument `extra`")),
            "{error}"
        );
    }
}

#[test]
fn email_send_plans_an_outbox_effect_with_the_exact_payload() {
    let arguments =
        json!({"to": "bob@example.com", "subject": "Q3 numbers", "body": "See attached.\nAlice"});
    let plan = Builtins::plan("email.send", &arguments).unwrap();
    assert_eq!(
        plan,
        Plan::Outbox(OutboxEffect {
            kind: "email".to_string(),
            recipient: "bob@example.com".to_string(),
            payload: json!({"to": "bob@example.com", "subject": "Q3 numbers", "body": "See attached.\nAlice"}),
        })
    );
}

#[test]
fn email_send_refuses_bad_arguments_precisely() {
    let cases = [
        (json!({"subject": "s", "body": "b"}), "email.send: missing required argument `to`"),
        (
            json!({"to": "bob@example.com", "subject": "s", "body": "b", "cc": "eve@example.com"}),
            "email.send: unknown argument `cc` (the tool takes `body`, `subject`, `to`)",
        ),
        (json!({"to": "bob@example.com", "subject": 7, "body": "b"}), "email.send: argument `subject` must be a string, got a number"),
        (json!({"to": ["bob@example.com"], "subject": "s", "body": "b"}), "email.send: argument `to` must be a string, got an array"),
        (
            json!({"to": "bob@example.com, eve@example.com", "subject": "s", "body": "b"}),
            "email.send: argument `to` must be one email address such as alice@example.com, got \"bob@example.com, eve@example.com\"",
        ),
        (json!("bob@example.com"), "email.send: arguments must be a JSON object, got a string"),
    ];
    for (arguments, expected) in cases {
        let error = Builtins::plan("email.send", &arguments).unwrap_err();
        assert_eq!(error.to_string(), expected, "{arguments}");
    }
}

#[test]
fn only_email_send_is_an_outbox_effect_and_it_is_never_executed() {
    for (tool, arguments) in [
        ("clock.now", json!({})),
        ("fs.read", json!({"path": "a.txt"})),
        ("shell.exec", json!({"command": "true"})),
        ("http.fetch", json!({"url": "http://127.0.0.1/"})),
    ] {
        assert_eq!(
            Builtins::plan(tool, &arguments).unwrap(),
            Plan::Run,
            "{tool}"
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let output = runtime.block_on(super::run(
        "email.send",
        json!({"to": "bob@example.com", "subject": "s", "body": "b"}),
        &super::context(workspace.path()),
    ));
    assert_eq!(
        super::error_of(&output),
        "email.send takes effect through the outbox and is never executed directly"
    );
}

#[tokio::test]
async fn execute_reports_bad_arguments_and_unknown_tools_as_failed_outputs() {
    let workspace = tempfile::tempdir().unwrap();
    let context = super::context(workspace.path());
    let output = super::run("fs.read", json!({"file": "a"}), &context).await;
    assert_eq!(
        super::error_of(&output),
        "fs.read: unknown argument `file` (the tool takes `path`)"
    );
    let output = super::run("rm.rf", json!({}), &context).await;
    assert_eq!(super::error_of(&output), "unknown tool `rm.rf`");
}

#[tokio::test]
async fn clock_now_returns_the_current_utc_time_in_rfc_3339() {
    let workspace = tempfile::tempdir().unwrap();
    let before = jiff::Timestamp::now();
    let output = super::run("clock.now", json!({}), &super::context(workspace.path())).await;
    assert!(output.ok, "{output:?}");
    let now = output.output["now"].as_str().unwrap();
    assert!(now.ends_with('Z'), "{now}");
    let parsed: jiff::Timestamp = now.parse().unwrap();
    let skew = parsed.duration_since(before).as_secs_f64();
    assert!(
        (-1.0..=5.0).contains(&skew),
        "{now} is {skew} s from {before}"
    );
}

/// The runtime moves executions onto other tasks: the future must be `Send`.
#[test]
fn execute_is_send() {
    fn assert_send<T: Send>(_: T) {}
    let workspace = tempfile::tempdir().unwrap();
    let context = super::context(workspace.path());
    let arguments = json!({});
    assert_send(Builtins::execute("clock.now", &arguments, &context));
}
