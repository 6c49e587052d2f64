//! The proxy with a 2026-07-28 client (the `mcp` Python SDK pinned to 2026-07-28, or in
//! `auto` mode, where it probes `server/discover`): an asked call is answered at once
//! with an input-required result and its request state, and the retry carrying that state
//! runs the call once a person approved it; in the older era the request is kept alive
//! with progress. Also: the real server's progress reaches the client under the client's
//! own token, on either era, and the upstream leg speaks 2026-07-28 to a server that
//! offers it (tests/fixtures/mcp/server.py).

use super::*;

const ERA: &str = "AIRLOCK_TEST_MCP_ERA";

/// Allows the long-running operation of the everything server.
const PROGRESS_POLICY: &str = r#"version = 1
default = "deny"

[[rules]]
name = "long-is-fine"
tool = "mcp__everything__trigger-long-running-operation"
decision = "allow"
"#;

fn everything_upstream() -> Vec<String> {
    ["--server-name", "everything", "--", "node"]
        .map(String::from)
        .into_iter()
        .chain([everything_server(), "stdio".into()])
        .collect()
}

#[test]
fn a_2026_client_is_answered_at_once_and_its_retry_runs_the_approved_call_once() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let upstream = filesystem_upstream(&root);

    let steps = McpClient::new(&server.url, &agent, "gated", &root, &upstream)
        .env(ERA, "2026-07-28")
        .run(|client| {
            // Nothing is held open: the client has its answer before anybody decided.
            client.wait_for_step("input-required");
            assert_eq!(server.pending().len(), 1);
            let output = server.client(&["approvals", "approve", "--latest"]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        });

    let list = step(&steps, "list");
    assert_eq!(list["protocol"], "2026-07-28", "{list}");
    let read = step(&steps, "read");
    assert_eq!(read["is_error"], false, "{read}");
    let write = step(&steps, "write");
    assert_eq!(write["is_error"], true, "{write}");
    let text = write["text"].as_str().unwrap();
    assert!(
        text.starts_with("Denied: ") && text.contains("no writing through MCP"),
        "{write}"
    );
    assert!(!root.join("evil.txt").exists());

    let asked = step(&steps, "input-required");
    let approval = only_approval(&server);
    let state = asked["state"].as_str().unwrap();
    assert!(
        state.contains(approval["call_id"].as_str().unwrap()),
        "{asked} {approval}"
    );
    // No approver token: the client is not asked inline.
    assert_eq!(asked["inputs"], json!([]), "{asked}");

    // The move ran exactly once: a second run would have failed (no hello.txt left).
    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], false, "{moved}");
    assert!(root.join("moved.txt").is_file() && !root.join("hello.txt").exists());
    assert_eq!(approval["status"], "approved", "{approval}");
}

#[test]
fn an_older_era_client_waiting_for_a_person_gets_progress_to_keep_its_request_alive() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let upstream = filesystem_upstream(&root);

    let steps = McpClient::new(&server.url, &agent, "gated", &root, &upstream).run(|client| {
        eventually(Duration::from_secs(30), "the move to be asked", || {
            !server.pending().is_empty()
        });
        // The proxy sends one every 10 s while the person has not decided.
        client.wait_for_step("progress-notified");
        let output = server.client(&["approvals", "approve", "--latest"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    });

    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], false, "{moved}");
    let progress = step(&steps, "waited")["progress"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!progress.is_empty(), "{steps:?}");
    assert!(
        progress
            .iter()
            .all(|message| message == "waiting for approval in airlock"),
        "{progress:?}"
    );
}

#[test]
fn a_request_state_runs_only_the_call_it_was_given_for() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let upstream = filesystem_upstream(&root);

    let steps = McpClient::new(&server.url, &agent, "forged", &root, &upstream)
        .env(ERA, "2026-07-28")
        .run(|client| {
            client.wait_for_step("input-required");
            let output = server.client(&["approvals", "approve", "--latest"]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
            client.go_on();
        });

    // The approved state with other arguments: denied, never forwarded (G2).
    let forged = step(&steps, "forged");
    assert_eq!(forged["is_error"], true, "{forged}");
    assert!(
        forged["text"]
            .as_str()
            .unwrap()
            .contains("is not the call approval"),
        "{forged}"
    );
    assert!(!root.join("stolen.txt").exists());
    let unknown = step(&steps, "unknown");
    assert_eq!(unknown["is_error"], true, "{unknown}");
    assert!(
        unknown["text"].as_str().unwrap().contains("names no call"),
        "{unknown}"
    );
    // The call the person approved still runs, once.
    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], false, "{moved}");
    assert!(root.join("moved.txt").is_file() && !root.join("hello.txt").exists());
}

#[test]
fn a_client_in_auto_mode_discovers_2026_through_the_proxy() {
    let (work, server) = server_with_policy(EVERYTHING_POLICY);
    let agent = server.create_agent("desktop");

    let steps = McpClient::new(
        &server.url,
        &agent,
        "everything",
        work.path(),
        &everything_upstream(),
    )
    .env(ERA, "auto")
    .run(|_| {});

    // `server/discover` answered with the real server's capabilities: the SDK adopted
    // 2026-07-28, while the real server behind speaks 2025-11-25.
    let list = step(&steps, "list");
    assert_eq!(list["protocol"], "2026-07-28", "{list}");
    assert!(
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "echo"),
        "{list}"
    );
    let echo = step(&steps, "echo");
    assert_eq!(echo["text"], "Echo: through airlock", "{echo}");
    let sum = step(&steps, "sum");
    assert_eq!(sum["is_error"], true, "{sum}");
    assert!(
        sum["text"]
            .as_str()
            .unwrap()
            .contains("no arithmetic through MCP"),
        "{sum}"
    );
}

#[test]
fn on_2026_the_approval_form_rides_the_input_request_and_its_answer_the_retry() {
    for (scenario, status, is_error) in [
        ("inline-accept", "approved", false),
        ("inline-decline", "rejected", true),
    ] {
        let (_work, server, agent, _folder, root) = filesystem_setup();
        let (approver_id, approver) = create_approver(&server, "alice");

        let steps = McpClient::new(
            &server.url,
            &agent,
            scenario,
            &root,
            &inline_upstream(&root),
        )
        .env("AIRLOCK_APPROVER", &approver)
        .env(ERA, "2026-07-28")
        .run(|_| {});

        let asked = step(&steps, "input-required");
        assert_eq!(asked["inputs"], json!(["airlock_approval"]), "{asked}");
        let approval = only_approval(&server);
        let elicited = step(&steps, "elicited");
        assert!(
            elicited["message"]
                .as_str()
                .unwrap()
                .contains(approval["id"].as_str().unwrap()),
            "{elicited}"
        );
        assert_eq!(approval["status"], status, "{approval}");
        assert_eq!(
            approval["decided_by"],
            format!("user:{approver_id}"),
            "{approval}"
        );
        let moved = step(&steps, "move");
        assert_eq!(moved["is_error"], is_error, "{moved}");
        if is_error {
            assert!(
                moved["text"]
                    .as_str()
                    .unwrap()
                    .contains("declined in the MCP client"),
                "{moved}"
            );
            assert_not_moved(&root);
        } else {
            assert!(root.join("moved.txt").is_file() && !root.join("hello.txt").exists());
        }
    }
}

#[test]
fn on_2026_an_inbox_decision_first_wins_over_the_forms_late_answer() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let (approver_id, approver) = create_approver(&server, "alice");

    // The form stays open (and then declines) while the inbox approves.
    let steps = McpClient::new(
        &server.url,
        &agent,
        "inline-late",
        &root,
        &inline_upstream(&root),
    )
    .env("AIRLOCK_APPROVER", &approver)
    .env(ERA, "2026-07-28")
    .run(|client| {
        client.wait_for_step("elicited");
        let output = server.client(&["approvals", "approve", "--latest"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    });

    assert!(has_step(&steps, "answered-late"), "{steps:?}");
    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], false, "{moved}");
    assert!(root.join("moved.txt").is_file());
    // The late decline came with the retry and was refused like any second decision.
    let approval = only_approval(&server);
    assert_eq!(approval["status"], "approved", "{approval}");
    assert_ne!(
        approval["decided_by"],
        format!("user:{approver_id}"),
        "{approval}"
    );
}

#[test]
fn a_2026_client_that_disconnects_cancels_the_approval_it_was_retrying() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let upstream = filesystem_upstream(&root);

    let mut client = McpClient::new(&server.url, &agent, "hang", &root, &upstream)
        .env(ERA, "2026-07-28")
        .start();
    client.wait_for_step("input-required");
    let approval = server.pending().remove(0);
    client.child.0.kill().unwrap();
    client.child.0.wait().unwrap();
    eventually(Duration::from_secs(10), "the approval cancelled", || {
        server.get_json(&format!("/v1/approvals/{approval}"))["status"] == "cancelled"
    });
    assert_not_moved(&root);
}

#[test]
fn a_2026_call_nobody_decides_within_the_wait_is_withdrawn_at_a_retry() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let upstream: Vec<String> = ["--wait".to_string(), "1".into()]
        .into_iter()
        .chain(filesystem_upstream(&root))
        .collect();

    let steps = McpClient::new(&server.url, &agent, "hang", &root, &upstream)
        .env(ERA, "2026-07-28")
        .run(|_| {});

    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], true, "{moved}");
    let text = moved["text"].as_str().unwrap();
    assert!(text.contains("nobody decided within 1 s"), "{text}");
    let approval = only_approval(&server);
    assert!(text.contains(approval["id"].as_str().unwrap()), "{text}");
    assert_eq!(approval["status"], "cancelled", "{approval}");
    assert_not_moved(&root);
}

#[test]
fn a_2026_client_is_denied_when_the_gateway_is_down() {
    let folder = folder_with_hello();
    let root = folder.path().canonicalize().unwrap();
    let upstream = filesystem_upstream(&root);
    let steps = McpClient::new("http://127.0.0.1:1", "any-token", "down", &root, &upstream)
        .env(ERA, "2026-07-28")
        .run(|_| {});
    let read = step(&steps, "read");
    assert_eq!(read["is_error"], true, "{read}");
    assert!(
        read["text"]
            .as_str()
            .unwrap()
            .starts_with("Denied: airlock is unreachable: "),
        "{read}"
    );
}

#[test]
fn the_real_servers_progress_reaches_the_client_under_its_own_token() {
    let (work, server) = server_with_policy(PROGRESS_POLICY);
    let agent = server.create_agent("desktop");

    for era in ["legacy", "2026-07-28"] {
        let steps = McpClient::new(
            &server.url,
            &agent,
            "progress",
            work.path(),
            &everything_upstream(),
        )
        .env(ERA, era)
        .run(|_| {});
        let long = step(&steps, "long");
        assert_eq!(long["is_error"], false, "{era}: {long}");
        assert!(
            long["text"].as_str().unwrap().contains("Steps: 4"),
            "{era}: {long}"
        );
        // Every step, in order, under the token the client gave (the SDK drops progress
        // on a token it does not know).
        let seen = &step(&steps, "progress")["seen"];
        let expected: Vec<Value> = (1..=4)
            .map(|n| json!({"progress": n as f64, "total": 4.0}))
            .collect();
        assert_eq!(seen, &json!(expected), "{era}: {steps:?}");
    }
}

/// `era` runs, anything else (a `note`) asks.
const PYTHON_SERVER_POLICY: &str = r#"version = 1
default = "ask"
deadline = "1h"

[[rules]]
name = "era-is-fine"
tool = "mcp__pyserver__era"
decision = "allow"

[[rules]]
name = "slow-is-fine"
tool = "mcp__pyserver__slow"
decision = "allow"
"#;

/// The proxy arguments for the Python server, noting into `notes`.
fn python_upstream(notes: &Path) -> Vec<String> {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/server.py");
    ["--server-name", "pyserver", "--", "python3"]
        .map(String::from)
        .into_iter()
        .chain([fixture.display().to_string(), notes.display().to_string()])
        .collect()
}

#[test]
fn a_client_cancelling_a_forwarded_call_cancels_it_at_the_real_server() {
    let (work, server) = server_with_policy(PYTHON_SERVER_POLICY);
    let agent = server.create_agent("desktop");

    for era in ["legacy", "2026-07-28"] {
        let notes = work.path().join(format!("notes-{era}.txt"));
        let steps = McpClient::new(
            &server.url,
            &agent,
            "cancel-forwarded",
            work.path(),
            &python_upstream(&notes),
        )
        .env(ERA, era)
        .run(|client| {
            client.wait_for_step("calling");
            // The client cancels only once the call runs at the real server: cancelling
            // before it was forwarded would prove nothing (and leave no note).
            eventually(Duration::from_secs(30), "the slow call started", || {
                std::fs::read_to_string(&notes).unwrap_or_default() == "slow started\n"
            });
            client.go_on();
            client.wait_for_step("cancelled");
            // While the client is still connected: the cancellation itself reached the
            // server (not the end of its input).
            eventually(Duration::from_secs(10), "the slow call cancelled", || {
                std::fs::read_to_string(&notes).unwrap_or_default()
                    == "slow started\nslow cancelled\n"
            });
            client.go_on();
        });
        let era_step = step(&steps, "era");
        assert_eq!(era_step["is_error"], false, "{era}: {era_step}");
    }
}

#[test]
fn the_upstream_leg_speaks_2026_to_a_server_that_offers_it() {
    let (work, server) = server_with_policy(PYTHON_SERVER_POLICY);
    let agent = server.create_agent("desktop");
    let notes = work.path().join("notes.txt");
    let upstream = python_upstream(&notes);

    for (n, era) in ["legacy", "2026-07-28"].into_iter().enumerate() {
        let steps = McpClient::new(&server.url, &agent, "python-server", work.path(), &upstream)
            .env(ERA, era)
            .run(|client| {
                client.wait_for_step("asking");
                eventually(Duration::from_secs(30), "the note to be asked", || {
                    !server.pending().is_empty()
                });
                let output = server.client(&["approvals", "approve", "--latest"]);
                assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
            });
        // Whatever the client speaks, the real server was reached in 2026-07-28.
        let reached = step(&steps, "era");
        assert_eq!(reached["text"], "era 2026-07-28", "{era}: {reached}");
        let note = step(&steps, "note");
        assert_eq!(note["is_error"], false, "{era}: {note}");
        // Approved once, run once.
        let written = std::fs::read_to_string(&notes).unwrap();
        assert_eq!(written.lines().count(), n + 1, "{era}: {written}");
    }
}
