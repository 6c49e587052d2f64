//! `airlock serve`: first start, restart, shutdown, the watched policy file and `--demo`.

use crate::support::{
    command, eventually, finished_output, stderr, stdout, wait_exit, KillOnDrop, Server,
};
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

#[test]
fn first_start_writes_the_owner_token_and_prints_the_inbox_once() {
    let work = tempfile::tempdir().unwrap();
    let mut server = Server::start(work.path(), &[]);
    let token_file = server.data_dir.join("owner.token");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "owner.token mode {mode:o}");
    let token = server.owner_token();
    // Two lines, two writes: the reader may hold the first and not yet the second.
    eventually(
        Duration::from_secs(5),
        "the inbox URL and the token file",
        || {
            let printed = server.stdout.text();
            printed.contains(&format!("{}/", server.url)) && printed.contains("owner.token")
        },
    );

    // SIGTERM is a graceful shutdown.
    assert!(server.terminate().success(), "{}", server.stderr.text());

    // A restart keeps the workspace and the token and prints no second welcome: all the
    // server ever printed, read to its end once it stopped.
    let mut server = Server::start(work.path(), &[]);
    assert_eq!(server.owner_token(), token);
    let output = server.client(&["approvals", "list"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(server.terminate().success(), "{}", server.stderr.text());
    assert!(
        !server.stdout.text().contains("open the inbox"),
        "{}",
        server.stdout.text()
    );
}

#[test]
fn bad_start_options_are_usage_errors() {
    let work = tempfile::tempdir().unwrap();
    let output = command(work.path())
        .args(["serve", "--db", "mysql://localhost/airlock"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--db `mysql://localhost/airlock` is not supported"),
        "{}",
        stderr(&output)
    );

    let policy = work.path().join("bad.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[rules]]\ntool = \"x\"\ndecison = \"allow\"\n",
    )
    .unwrap();
    let output = command(work.path())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--policy",
            policy.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(&format!(
            "{}:4:1: unknown field `decison`",
            policy.display()
        )),
        "{}",
        stderr(&output)
    );
    assert!(
        !work.path().join("airlock-data").exists(),
        "nothing is created on a bad start"
    );
}

const ASK_MAIL: &str = r#"version = 1
default = "ask"

[tools."email.send"]
risk = "external"
target = "to"
summary = "Send email to {to}"
"#;

#[test]
fn a_watched_policy_reloads_good_edits_and_keeps_through_bad_ones() {
    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, ASK_MAIL).unwrap();
    let server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
    let digest = |server: &Server| {
        server.get_json("/v1/policy")["digest"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let first = digest(&server);
    assert_eq!(server.get_json("/v1/policy")["source"], ASK_MAIL);
    let agent = server.create_agent("mailer");
    let mail = [
        "call",
        "email.send",
        "--args",
        r#"{"to":"ana@example.com"}"#,
    ];

    // A bad edit is reported with its position and the policy in force stays.
    std::fs::write(
        &policy,
        format!("{ASK_MAIL}\n[[rules]]\ntool = \"email.send\"\ndecision = \"alow\"\n"),
    )
    .unwrap();
    eventually(
        Duration::from_secs(10),
        "the bad edit to be reported",
        || server.stderr.text().contains("does not load"),
    );
    assert!(
        server
            .stderr
            .text()
            .contains(&format!("{}:", policy.display())),
        "{}",
        server.stderr.text()
    );
    assert_eq!(digest(&server), first);
    assert_eq!(
        server.client_as(&agent, &mail).status.code(),
        Some(1),
        "still asked"
    );

    // A good edit is put in force.
    let allow = format!("{ASK_MAIL}\n[[rules]]\ntool = \"email.send\"\ndecision = \"allow\"\nwhen = {{ to = {{ glob = \"*@example.com\" }} }}\n");
    std::fs::write(&policy, &allow).unwrap();
    eventually(
        Duration::from_secs(10),
        "the good edit to be put in force",
        || digest(&server) != first,
    );
    assert_eq!(server.get_json("/v1/policy")["source"], allow.as_str());
    let output = server.client_as(&agent, &mail);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(stdout(&output).contains("allowed"), "{}", stdout(&output));
}

#[test]
fn the_demo_prints_two_commands_that_run_the_whole_loop() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &["--demo"]);
    let token_file = server.data_dir.join("demo-agent.token");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let mut printed = String::new();
    // The whole block, to its last line (the chat command) and that line's end.
    eventually(Duration::from_secs(5), "the demo commands", || {
        printed = server.stdout.text();
        printed.contains(" chat assistant ") && printed.ends_with('\n')
    });
    let line = |needle: &str| {
        printed
            .lines()
            .find(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` line in:\n{printed}"))
            .trim()
            .to_owned()
    };
    let call = line(" call email.send ");
    let approve = line("approvals approve --latest");
    assert!(call.contains(crate::support::BIN), "{call}");
    assert!(call.contains("--wait 300"), "{call}");

    // Paste the first (it waits), then the second, from anywhere.
    let elsewhere = tempfile::tempdir().unwrap();
    let shell = |script: &str| {
        let mut shell = std::process::Command::new("sh");
        shell
            .args(["-c", script])
            .current_dir(elsewhere.path())
            .env_remove("AIRLOCK_URL")
            .env_remove("AIRLOCK_TOKEN");
        shell
    };
    let mut caller = KillOnDrop(
        shell(&call)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    eventually(Duration::from_secs(20), "the demo call's approval", || {
        !server.pending().is_empty()
    });
    let output = shell(&approve).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stdout(&output).contains("Send email to bob@elsewhere.test"),
        "{}",
        stdout(&output)
    );
    let status = wait_exit(&mut caller.0, Duration::from_secs(20));
    let (out, err) = finished_output(&mut caller.0);
    assert_eq!(status.code(), Some(0), "{out}{err}");
    assert!(out.contains("approved"), "{out}");

    // The demo policy: mail within example.com is allowed, `rm -rf` is denied.
    let agent = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    let inside = server.client_as(
        &agent,
        &[
            "call",
            "email.send",
            "--args",
            r#"{"to":"ana@example.com"}"#,
        ],
    );
    assert_eq!(inside.status.code(), Some(0), "{}", stdout(&inside));
    let shell_call = server.client_as(
        &agent,
        &["call", "shell.exec", "--args", r#"{"command":"rm -rf /"}"#],
    );
    assert_eq!(shell_call.status.code(), Some(1));
    assert!(
        stdout(&shell_call).contains("no-destructive-shell"),
        "{}",
        stdout(&shell_call)
    );
}

/// G7 on the embedded database: `kill -9` with an approval pending and a caller waiting;
/// after a restart on the same folder the approval is still pending, it can be decided,
/// and the caller's re-poll gets the verdict.
#[test]
fn a_killed_server_restarts_with_its_pending_approvals_decidable() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &[]);
    let agent = server.create_agent("scout");
    let mut waiting = KillOnDrop(
        server
            .client_command(
                &agent,
                &[
                    "call",
                    "email.send",
                    "--args",
                    r#"{"to": "eve@example.org"}"#,
                    "--wait",
                    "30",
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    eventually(Duration::from_secs(10), "the call is pending", || {
        server.pending().len() == 1
    });
    let approval = server.pending().remove(0);
    drop(server); // SIGKILL, no graceful shutdown
    let status = wait_exit(&mut waiting.0, Duration::from_secs(10));
    assert_ne!(
        status.code(),
        Some(0),
        "the waiter cannot have been approved"
    );

    let server = Server::start(work.path(), &[]);
    assert_eq!(server.pending(), vec![approval.clone()]);
    // The caller re-polls its call on the restarted server and is woken by the decision.
    let shown = server.client(&["approvals", "show", &approval, "--json"]);
    let shown: serde_json::Value = serde_json::from_str(&stdout(&shown)).unwrap();
    let call_url = format!(
        "{}/v1/calls/{}?wait_s=30",
        server.url,
        shown["call_id"].as_str().unwrap()
    );
    let agent_token = agent.clone();
    let re_poll = std::thread::spawn(move || -> serde_json::Value {
        ureq::get(call_url)
            .header("Authorization", format!("Bearer {agent_token}"))
            .call()
            .unwrap()
            .into_body()
            .read_json()
            .unwrap()
    });
    eventually(Duration::from_secs(10), "the caller waits again", || {
        ureq::get(format!("{}/metrics", server.url))
            .call()
            .unwrap()
            .into_body()
            .read_to_string()
            .unwrap()
            .contains("airlock_waiting_callers 1")
    });
    let decided = server.client(&[
        "approvals",
        "approve",
        &approval,
        "--reason",
        "after restart",
    ]);
    assert_eq!(decided.status.code(), Some(0), "{}", stderr(&decided));
    assert_eq!(re_poll.join().unwrap()["status"], "approved");
    let listed = server.client(&["approvals", "list", "--status", "approved", "--json"]);
    assert!(stdout(&listed).contains(&approval), "{}", stdout(&listed));
}
