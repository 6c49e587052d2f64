//! Asked calls through the proxy between the filesystem server and the `mcp` Python SDK
//! client: a client that cancels or disconnects cancels the approval; inline approval in
//! the client (MCP elicitation) is the approver's own decision, and an edited approval
//! forwards exactly the edited arguments.

use super::*;

#[test]
fn a_client_cancelling_an_asked_call_cancels_its_approval() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let upstream = filesystem_upstream(&root);

    let steps = McpClient::new(&server.url, &agent, "cancel", &root, &upstream).run(|client| {
        eventually(Duration::from_secs(30), "the move to be asked", || {
            !server.pending().is_empty()
        });
        let approval = server.pending().remove(0);
        client.go_on();
        eventually(Duration::from_secs(10), "the approval cancelled", || {
            server.get_json(&format!("/v1/approvals/{approval}"))["status"] == "cancelled"
        });
        // Nobody can approve it anymore, so the call can never run.
        let output = server.client(&["approvals", "approve", &approval]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        client.wait_for_step("cancelled");
        client.go_on();
    });

    assert!(!has_step(&steps, "move"), "{steps:?}");
    // The session goes on, and the file was never moved.
    let read = step(&steps, "read");
    assert_eq!(read["is_error"], false, "{read}");
    assert_not_moved(&root);
    assert_eq!(only_approval(&server)["status"], "cancelled");
}

#[test]
fn a_client_that_disconnects_cancels_its_approval() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let upstream = filesystem_upstream(&root);

    let mut client = McpClient::new(&server.url, &agent, "hang", &root, &upstream).start();
    eventually(Duration::from_secs(30), "the move to be asked", || {
        !server.pending().is_empty()
    });
    let approval = server.pending().remove(0);
    // Killed: the proxy's stdin just ends, as when an MCP client quits.
    client.child.0.kill().unwrap();
    client.child.0.wait().unwrap();
    eventually(Duration::from_secs(10), "the approval cancelled", || {
        server.get_json(&format!("/v1/approvals/{approval}"))["status"] == "cancelled"
    });
    assert_not_moved(&root);
}

#[test]
fn approving_inline_in_the_client_is_that_persons_decision() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let (approver_id, approver) = create_approver(&server, "alice");

    let steps = McpClient::new(
        &server.url,
        &agent,
        "inline-accept",
        &root,
        &inline_upstream(&root),
    )
    .env("AIRLOCK_APPROVER", &approver)
    .run(|_| {});

    let approval = only_approval(&server);
    let elicited = step(&steps, "elicited");
    let message = elicited["message"].as_str().unwrap();
    assert!(
        message.contains(approval["preview"]["summary"].as_str().unwrap())
            && message.contains(approval["id"].as_str().unwrap()),
        "{message}\n{approval}"
    );
    assert_eq!(
        elicited["schema"]["properties"]["approve"]["type"], "boolean",
        "{elicited}"
    );
    // Forwarded once: a second move would have failed (no hello.txt left).
    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], false, "{moved}");
    assert!(root.join("moved.txt").is_file() && !root.join("hello.txt").exists());
    assert_eq!(approval["status"], "approved", "{approval}");
    assert_eq!(
        approval["decided_by"],
        format!("user:{approver_id}"),
        "{approval}"
    );
}

#[test]
fn declining_inline_in_the_client_rejects_the_call() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let (approver_id, approver) = create_approver(&server, "alice");

    let steps = McpClient::new(
        &server.url,
        &agent,
        "inline-decline",
        &root,
        &inline_upstream(&root),
    )
    .env("AIRLOCK_APPROVER", &approver)
    .run(|_| {});

    assert!(has_step(&steps, "elicited"), "{steps:?}");
    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], true, "{moved}");
    let text = moved["text"].as_str().unwrap();
    assert!(
        text.starts_with("Denied: ") && text.contains("declined in the MCP client"),
        "{text}"
    );
    assert_not_moved(&root);
    let approval = only_approval(&server);
    assert_eq!(approval["status"], "rejected", "{approval}");
    assert_eq!(
        approval["decided_by"],
        format!("user:{approver_id}"),
        "{approval}"
    );
}

#[test]
fn an_inbox_decision_first_wins_over_a_late_inline_answer() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let (approver_id, approver) = create_approver(&server, "alice");

    let steps = McpClient::new(
        &server.url,
        &agent,
        "inline-late",
        &root,
        &inline_upstream(&root),
    )
    .env("AIRLOCK_APPROVER", &approver)
    .run(|client| {
        client.wait_for_step("elicited");
        let output = server.client(&["approvals", "approve", "--latest"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    });

    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], false, "{moved}");
    assert!(root.join("moved.txt").is_file());
    // The proxy withdrew the question; the client's (declining) answer never counted.
    assert!(has_step(&steps, "withdrawn"), "{steps:?}");
    let approval = only_approval(&server);
    assert_eq!(approval["status"], "approved", "{approval}");
    assert_ne!(
        approval["decided_by"],
        format!("user:{approver_id}"),
        "{approval}"
    );
}

#[test]
fn without_an_approver_token_the_client_is_not_asked_inline() {
    let (_work, server, agent, _folder, root) = filesystem_setup();
    let upstream = filesystem_upstream(&root);

    // The client would decline, if it were asked.
    let steps = McpClient::new(&server.url, &agent, "inline-decline", &root, &upstream).run(|_| {
        eventually(Duration::from_secs(30), "the move to be asked", || {
            !server.pending().is_empty()
        });
        let output = server.client(&["approvals", "approve", "--latest"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    });

    assert!(!has_step(&steps, "elicited"), "{steps:?}");
    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], false, "{moved}");
}

/// Approve with edits (DESIGN.md §11.6) through `airlock approvals approve ID --args`: the
/// proxy forwards the edited arguments to the real server, once, and the model reads what
/// changed.
#[test]
fn an_edited_approval_forwards_the_edited_arguments_to_the_real_server() {
    let (_work, server, agent, _folder, root) = filesystem_setup();

    let upstream = filesystem_upstream(&root);
    let steps = run_client(&server.url, &agent, "gated", &root, &upstream, || {
        eventually(Duration::from_secs(30), "the move to be asked", || {
            !server.pending().is_empty()
        });
        let approval = only_approval(&server);
        let mut edited = approval["preview"]["arguments"].clone();
        assert!(edited["destination"]
            .as_str()
            .unwrap()
            .ends_with("moved.txt"));
        edited["destination"] = root.join("edited.txt").display().to_string().into();
        let id = approval["id"].as_str().unwrap();
        let args = edited.to_string();
        let output = server.client(&["approvals", "approve", id, "--args", &args]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let said = crate::support::stdout(&output);
        assert!(said.contains("with edited arguments"), "{said}");
    });

    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], false, "{moved}");
    assert!(root.join("edited.txt").is_file(), "the edit did not run");
    assert!(!root.join("moved.txt").exists() && !root.join("hello.txt").exists());
    let text = moved["text"].as_str().unwrap();
    assert!(text.contains("a person edited"), "{text}");
    let approved = server.get_json("/v1/approvals?status=approved");
    let call_id = approved["items"][0]["call_id"].as_str().unwrap();
    let call = server.get_json(&format!("/v1/calls/{call_id}"));
    assert!(call["arguments"]["destination"]
        .as_str()
        .unwrap()
        .ends_with("edited.txt"));
    assert!(call["original_arguments"]["destination"]
        .as_str()
        .unwrap()
        .ends_with("moved.txt"));
    assert_eq!(call["outcome"]["status"], "succeeded", "{call}");
}

/// `--args` that is not a JSON object is a usage error (exit 2), sent nowhere; an edit the
/// policy denies is a refusal (exit 1) that leaves the approval pending; `--args-file`
/// approves the edit in a file.
#[test]
fn approve_with_args_refuses_bad_json_and_denied_edits() {
    const NOTES: &str = r#"version = 1
default = "ask"
deadline = "1h"

[[rules]]
name = "not-etc"
tool = "notes.write"
decision = "deny"
reason = "nothing under /etc"
when = { path = { path = ["/etc/**"] } }
"#;
    let (work, server) = server_with_policy(NOTES);
    let agent = server.create_agent("desktop");
    let (status, call) = post_json(
        &server,
        &agent,
        "/v1/calls",
        &json!({"tool": "notes.write", "arguments": {"path": "/tmp/a"}}),
    );
    assert_eq!(
        (status, &call["status"]),
        (201, &json!("pending")),
        "{call}"
    );
    let id = call["approval_id"].as_str().unwrap();
    let file = work.path().join("edit.json");
    std::fs::write(&file, r#"{"path": "/tmp/b"}"#).unwrap();
    let file = file.to_str().unwrap();

    for args in [
        &["--args", "not json"][..],
        &["--args", "[1, 2]"],
        &["--args", "{}", "--args-file", file],
        &["--args", "{}", "--remember", "agent"],
    ] {
        let output = server.client(&[&["approvals", "approve", id][..], args].concat());
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    let output = server.client(&[
        "approvals",
        "approve",
        id,
        "--args",
        r#"{"path": "/etc/passwd"}"#,
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("nothing under /etc"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.pending(), [id.to_owned()]);

    let output = server.client(&["approvals", "approve", id, "--args-file", file]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let call_id = call["id"].as_str().unwrap();
    let call = server.get_json(&format!("/v1/calls/{call_id}"));
    assert_eq!(call["arguments"], json!({"path": "/tmp/b"}), "{call}");
    assert_eq!(
        call["original_arguments"],
        json!({"path": "/tmp/a"}),
        "{call}"
    );
}
