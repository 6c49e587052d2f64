//! `airlock rules`, `airlock tasks` and `airlock insights` against a real
//! `airlock serve --demo`: the agent `demo` (token in data/demo-agent.token), the built-in
//! `assistant` on a scripted model, and a policy that asks for mail to outside addresses.

use crate::support::{eventually, stderr, stdout, Server};
use serde_json::Value;
use std::process::Output;
use std::time::Duration;

const OUTSIDE_MAIL: &str = r#"{"to":"bob@elsewhere.test","subject":"Hi","body":"Hello Bob"}"#;

fn demo_server(work: &std::path::Path) -> Server {
    Server::start(work, &["--demo"])
}

fn demo_agent_token(server: &Server) -> String {
    std::fs::read_to_string(server.data_dir.join("demo-agent.token"))
        .unwrap()
        .trim()
        .to_owned()
}

/// The id of the agent named `name`.
fn agent_id(server: &Server, name: &str) -> String {
    let page = json_of(&server.client(&["agents", "list", "--json"]));
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|agent| agent["name"] == name)
        .unwrap_or_else(|| panic!("no agent {name}: {page}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Asserts exit 0 and parses stdout as JSON.
fn json_of(output: &Output) -> Value {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
    serde_json::from_str(&stdout(output))
        .unwrap_or_else(|error| panic!("{error}: {}", stdout(output)))
}

fn exits(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}

#[test]
fn standing_rules_are_added_once_listed_and_revoked() {
    let work = tempfile::tempdir().unwrap();
    let server = demo_server(work.path());
    let demo = agent_id(&server, "demo");
    let agent_token = demo_agent_token(&server);
    let output = server.client(&["rules", "list"]);
    exits(&output, 0);
    assert!(
        stdout(&output).contains("no live standing rules"),
        "{}",
        stdout(&output)
    );

    // Added: the rule is printed; adding it again says it already existed, same id.
    let add = [
        "rules",
        "add",
        "email.send",
        "bob@elsewhere.test",
        "--scope",
        "agent",
        "--scope-id",
        &demo,
    ];
    let output = server.client(&add);
    exits(&output, 0);
    let shown = stdout(&output);
    let rule = shown
        .lines()
        .find_map(|line| line.strip_prefix("rule"))
        .map(|id| id.trim().to_owned())
        .unwrap();
    assert!(rule.starts_with("rule_"), "{shown}");
    assert!(shown.contains("bob@elsewhere.test"), "{shown}");
    assert!(shown.contains(&format!("agent {demo}")), "{shown}");
    assert!(!stderr(&output).contains("already"), "{}", stderr(&output));
    let output = server.client(&add);
    exits(&output, 0);
    assert!(stdout(&output).contains(&rule), "{}", stdout(&output));
    assert!(
        stderr(&output).contains(&format!("an identical live rule already existed: {rule}")),
        "{}",
        stderr(&output)
    );

    // A time-limited one, as JSON.
    let timed = json_of(&server.client(&[
        "rules",
        "add",
        "email.send",
        "carol@elsewhere.test",
        "--scope",
        "agent",
        "--scope-id",
        &demo,
        "--expires-in",
        "30m",
        "--json",
    ]));
    assert_eq!(timed["target"], "carol@elsewhere.test");
    assert!(timed["expires_at"].is_string(), "{timed}");

    // Refusals exit 1 with the server's reason; a bad duration is a usage error.
    let output = server.client(&[
        "rules",
        "add",
        "shell.exec",
        "ls",
        "--scope",
        "agent",
        "--scope-id",
        &demo,
    ]);
    exits(&output, 1);
    assert!(
        stderr(&output).contains("`shell.exec` is not eligible"),
        "{}",
        stderr(&output)
    );
    let output = server.client(&[
        "rules",
        "add",
        "email.send",
        " ",
        "--scope",
        "agent",
        "--scope-id",
        &demo,
    ]);
    exits(&output, 1);
    assert!(
        stderr(&output).contains("target is empty"),
        "{}",
        stderr(&output)
    );
    let output = server.client_as(&agent_token, &add);
    exits(&output, 1);
    let mut expires = add.to_vec();
    expires.extend(["--expires-in", "whenever"]);
    let output = server.client(&expires);
    exits(&output, 2);
    assert!(
        stderr(&output).contains("--expires-in"),
        "{}",
        stderr(&output)
    );

    // The rule lets the agent's mail to Bob through without asking.
    let output = server.client_as(
        &agent_token,
        &["call", "email.send", "--args", OUTSIDE_MAIL],
    );
    exits(&output, 0);
    assert!(stdout(&output).contains("allowed"), "{}", stdout(&output));
    let listing = stdout(&server.client(&["rules", "list"]));
    assert!(listing.starts_with("ID "), "{listing}");
    assert!(listing.contains(&rule), "{listing}");
    assert!(listing.contains("live"), "{listing}");
    let page = json_of(&server.client(&["rules", "list", "--json"]));
    assert_eq!(page["items"].as_array().unwrap().len(), 2, "{page}");

    // Revoked: gone from the live list, still in --all, and the mail is asked again.
    let output = server.client(&["rules", "revoke", &rule]);
    exits(&output, 0);
    assert!(
        stdout(&output).contains(&format!("revoked {rule}")),
        "{}",
        stdout(&output)
    );
    let listing = stdout(&server.client(&["rules", "list"]));
    assert!(!listing.contains(&rule), "{listing}");
    let listing = stdout(&server.client(&["rules", "list", "--all"]));
    assert!(listing.contains(&rule), "{listing}");
    assert!(listing.contains("revoked"), "{listing}");
    let page = json_of(&server.client(&["rules", "list", "--all", "--json"]));
    let revoked = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["id"] == rule.as_str())
        .unwrap();
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    let output = server.client_as(
        &agent_token,
        &["call", "email.send", "--args", OUTSIDE_MAIL],
    );
    exits(&output, 1);
    assert!(stdout(&output).contains("pending"), "{}", stdout(&output));

    // There is no live rule of that id left to revoke (404: exit 2).
    let output = server.client(&["rules", "revoke", &rule]);
    exits(&output, 2);
    let output = server.client(&["rules", "revoke", "rule_nope"]);
    exits(&output, 2);
}

#[test]
fn scheduled_tasks_are_created_with_permissions_run_and_revoked() {
    let work = tempfile::tempdir().unwrap();
    let server = demo_server(work.path());
    let output = server.client(&["tasks", "list"]);
    exits(&output, 0);
    assert!(stdout(&output).contains("no tasks"), "{}", stdout(&output));

    // A malformed permission is a usage error before any request (nothing listens here).
    let output = crate::support::command(work.path())
        .args([
            "tasks",
            "create",
            "--title",
            "x",
            "--agent",
            "assistant",
            "--cron",
            "0 3 * * *",
            "--instructions",
            "x",
            "--permission",
            "email.send:bob@elsewhere.test",
            "--url",
            "http://127.0.0.1:9",
        ])
        .output()
        .unwrap();
    exits(&output, 2);
    assert!(
        stderr(&output).contains("--permission") && stderr(&output).contains("TOOL=TARGET:ACCESS"),
        "{}",
        stderr(&output)
    );
    assert!(
        !stderr(&output).contains("cannot reach"),
        "{}",
        stderr(&output)
    );

    // One valid grant becomes a task rule; the others are reported as dropped, on stderr.
    let output = server.client(&[
        "tasks",
        "create",
        "--title",
        "Report for Bob",
        "--agent",
        "assistant",
        "--cron",
        "0 3 * * *",
        "--timezone",
        "Europe/Paris",
        "--instructions",
        "email Bob the report",
        "--permission",
        "email.send=carol@elsewhere.test:external",
        "--permission",
        "shell.exec=ls:exec",
        "--permission",
        "email.send=dave@elsewhere.test:write",
        "--permission",
        "clock.now=noon:write",
    ]);
    exits(&output, 0);
    let shown = stdout(&output);
    let task = shown
        .lines()
        .find_map(|line| line.strip_prefix("task "))
        .map(|id| id.trim().to_owned())
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(task.starts_with("task_"), "{shown}");
    assert!(shown.contains("0 3 * * * (Europe/Paris)"), "{shown}");
    assert!(
        shown.contains("email.send for carol@elsewhere.test"),
        "{shown}"
    );
    let dropped = stderr(&output);
    assert_eq!(dropped.lines().count(), 3, "{dropped}");
    for line in [
        "dropped permission shell.exec=ls:exec: access `exec` cannot be granted",
        "dropped permission email.send=dave@elsewhere.test:write: `email.send` has risk external, not write",
        "dropped permission clock.now=noon:write: `clock.now` is not eligible",
    ] {
        assert!(dropped.contains(line), "{line} missing from:\n{dropped}");
    }

    // A disabled one, its instructions from a file, as JSON.
    let instructions = work.path().join("instructions.txt");
    std::fs::write(&instructions, "what time is it?").unwrap();
    let created = json_of(&server.client(&[
        "tasks",
        "create",
        "--title",
        "Clock",
        "--agent",
        "assistant",
        "--cron",
        "*/5 * * * *",
        "--disabled",
        "--instructions-file",
        instructions.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(created["task"]["enabled"], false);
    assert_eq!(created["task"]["instructions"], "what time is it?");
    assert_eq!(created["rules"], serde_json::json!([]));
    assert_eq!(created["dropped"], serde_json::json!([]));
    let clock = created["task"]["id"].as_str().unwrap().to_owned();

    let listing = stdout(&server.client(&["tasks", "list"]));
    for part in [
        task.as_str(),
        clock.as_str(),
        "Report for Bob",
        "assistant",
        "disabled",
        "enabled",
    ] {
        assert!(listing.contains(part), "{part} missing from:\n{listing}");
    }
    let rules = stdout(&server.client(&["rules", "list"]));
    assert!(rules.contains("carol@elsewhere.test"), "{rules}");
    assert!(rules.contains(&format!("task {task}")), "{rules}");

    // A run starts; the scripted assistant's mail to Bob waits for a person, so a second
    // run of the same task is refused while it does.
    let output = server.client(&["tasks", "run", &task]);
    exits(&output, 0);
    let run = stdout(&output).trim().to_owned();
    assert!(run.starts_with("run_"), "{run}");
    eventually(Duration::from_secs(20), "the run's approval", || {
        !server.pending().is_empty()
    });
    let output = server.client(&["tasks", "run", &task]);
    exits(&output, 1);
    assert!(
        stderr(&output).starts_with("error: "),
        "{}",
        stderr(&output)
    );
    let listing = stdout(&server.client(&["tasks", "list"]));
    assert!(listing.contains(&format!("running {run}")), "{listing}");
    let output = server.client(&["tasks", "run", &clock]);
    exits(&output, 1);

    // Revoked: its rules go with it, and it never runs again.
    let output = server.client(&["tasks", "revoke", &task]);
    exits(&output, 0);
    assert!(
        stdout(&output).contains(&format!("revoked {task}")),
        "{}",
        stdout(&output)
    );
    let rules = stdout(&server.client(&["rules", "list"]));
    assert!(!rules.contains("carol@elsewhere.test"), "{rules}");
    let page = json_of(&server.client(&["tasks", "list", "--json"]));
    let revoked = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["id"] == task.as_str())
        .unwrap();
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    let output = server.client(&["tasks", "run", &task]);
    exits(&output, 1);
    let output = server.client(&["tasks", "revoke", "task_nope"]);
    exits(&output, 2);
}

#[test]
fn insights_suggest_rules_and_never_add_them() {
    let work = tempfile::tempdir().unwrap();
    let server = demo_server(work.path());
    let demo = agent_id(&server, "demo");
    let agent_token = demo_agent_token(&server);
    let output = server.client(&["insights"]);
    exits(&output, 0);
    assert!(
        stdout(&output).contains("nobody has been asked yet"),
        "{}",
        stdout(&output)
    );

    // The same mail asked twice and approved twice.
    for _ in 0..2 {
        let output = server.client_as(
            &agent_token,
            &["call", "email.send", "--args", OUTSIDE_MAIL],
        );
        exits(&output, 1);
        exits(&server.client(&["approvals", "approve", "--latest"]), 0);
    }

    let output = server.client(&["insights"]);
    exits(&output, 0);
    let report = stdout(&output);
    assert!(report.contains("TOOL "), "{report}");
    assert!(report.contains("bob@elsewhere.test"), "{report}");
    assert!(report.contains("would have removed 2 prompts"), "{report}");
    let command =
        format!("airlock rules add email.send bob@elsewhere.test --scope agent --scope-id {demo}");
    let line = report
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("airlock rules add"))
        .unwrap_or_else(|| panic!("no command in:\n{report}"));
    assert_eq!(line, command);
    // Only suggested: nothing was added.
    let rules = stdout(&server.client(&["rules", "list"]));
    assert!(rules.contains("no live standing rules"), "{rules}");

    let answer = json_of(&server.client(&["insights", "--json"]));
    assert_eq!(answer["items"][0]["tool"], "email.send");
    assert_eq!(answer["items"][0]["asked"], 2);
    assert_eq!(answer["items"][0]["approved"], 2);
    assert_eq!(answer["suggestions"][0]["would_remove"], 2);
    assert_eq!(answer["suggestions"][0]["scope_id"], demo.as_str());
    // What `GET /v1/insights` learned rides along: mail is not exec, so no rule for it.
    assert_eq!(
        answer["learned"]["rules"],
        serde_json::json!([]),
        "{answer}"
    );

    // Running the printed command accepts the suggestion: the mail goes through and the
    // suggestion is gone.
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    exits(&server.client(&words), 0);
    let output = server.client_as(
        &agent_token,
        &["call", "email.send", "--args", OUTSIDE_MAIL],
    );
    exits(&output, 0);
    let report = stdout(&server.client(&["insights"]));
    assert!(report.contains("no standing rule to suggest"), "{report}");
}

#[test]
fn a_password_in_the_server_url_is_never_printed() {
    let work = tempfile::tempdir().unwrap();
    // Port 1 is never an airlock server; `rules revoke` has its own request code.
    for command in [&["rules", "list"][..], &["rules", "revoke", "rule_x"]] {
        let output = crate::support::command(work.path())
            .args(command)
            .args(["--url", "http://admin:hunter2@127.0.0.1:1", "--token", "t"])
            .output()
            .unwrap();
        exits(&output, 2);
        let text = stderr(&output);
        assert!(
            text.contains("cannot reach airlock at http://127.0.0.1:1: "),
            "{command:?}: {text}"
        );
        assert!(
            !text.contains("hunter2") && !text.contains("admin"),
            "{command:?}: {text}"
        );
    }
    // Nor does `--help` show it, taken from the environment.
    let output = crate::support::command(work.path())
        .args(["approvals", "--help"])
        .env("AIRLOCK_URL", "http://admin:hunter2@127.0.0.1:1")
        .output()
        .unwrap();
    exits(&output, 0);
    let help = stdout(&output);
    assert!(help.contains("AIRLOCK_URL"), "{help}");
    assert!(!help.contains("hunter2"), "{help}");
}
