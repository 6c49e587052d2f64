//! Crash tests at the redeem step (DESIGN.md §11.8): the server dies right after the
//! grant's consumption committed and before its answer left (`grant.redeemed`), and is
//! started again over the same data. The agent's retry under the same `Idempotency-Key`
//! gets the same grant's `200` (`replayed`), a redeem under another key or none is
//! `409 grant_spent`, and the call runs once: by a raw HTTP client, and by
//! `airlock call -- COMMAND` and by `airlock hook claude-code`, which retry the lost
//! answer themselves while the server restarts on the same address.

use crate::node::{http, Backend, Node};
use crate::scenario::audit;
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// An asked call (the demo policy asks before mail leaves the company).
const MAIL: &str = r#"{"to":"eve@elsewhere.test","subject":"Invoice","body":"Pay 100"}"#;

fn agent_token(node: &Node) -> String {
    crate::scenario::setup(node).caller_token
}

/// Approves the newest pending approval as the owner, once one shows up.
fn approve_when_asked(node: &Node) -> String {
    let client = http();
    let owner = node.owner_token();
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, page) = client
            .get(&format!("{}/v1/approvals?status=pending", node.url), &owner)
            .expect("the node is up");
        if let Some(approval) = page["items"].as_array().and_then(|items| items.first()) {
            let id = approval["id"].as_str().unwrap();
            let (status, body) = client
                .post(
                    &format!("{}/v1/approvals/{id}/decision", node.url),
                    &owner,
                    &json!({"decision": "approve", "binding_digest": approval["binding_digest"]}),
                )
                .expect("the node is up");
            assert_eq!(status, 200, "{body}");
            return approval["call_id"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < until, "no approval was asked");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for the armed server to abort at the failpoint.
fn died_at_the_failpoint(node: &mut Node) {
    let status = node
        .wait_exit(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("never reached grant.redeemed\n{}", node.stderr.text()));
    assert!(
        Node::aborted(status),
        "exited {status}\n{}",
        node.stderr.text()
    );
    assert!(node.stderr.text().contains("failpoint reached"));
}

/// The audit records of `kind` about `call_id`.
fn records(node: &Node, kind: &str, call_id: &str) -> usize {
    audit(node)
        .iter()
        .filter(|record| record["kind"] == kind && record["data"]["call_id"] == call_id)
        .count()
}

fn the_call(node: &Node, token: &str, call_id: &str) -> Value {
    let (status, call) = http()
        .get(&format!("{}/v1/calls/{call_id}", node.url), token)
        .expect("the node is up");
    assert_eq!(status, 200, "{call}");
    call
}

fn replay_after_a_crash(backend: fn() -> Backend) {
    let dir = tempfile::tempdir().unwrap();
    let backend = backend();
    let mut node = Node::start(dir.path(), &backend, Some("grant.redeemed"));
    let agent = agent_token(&node);
    let client = http();
    let (status, call) = client
        .post(
            &format!("{}/v1/calls", node.url),
            &agent,
            &serde_json::from_str::<Value>(&format!(
                r#"{{"tool":"email.send","arguments":{MAIL}}}"#
            ))
            .unwrap(),
        )
        .unwrap();
    assert_eq!(
        (status, call["status"].as_str()),
        (201, Some("pending")),
        "{call}"
    );
    let call_id = approve_when_asked(&node);
    assert_eq!(call["id"], call_id.as_str());
    let redeem = format!("{}/v1/calls/{call_id}/redeem", node.url);
    // The grant is consumed, and the server dies before it answers.
    assert!(
        client.post_keyed(&redeem, &agent, Some("key-1")).is_err(),
        "an answer came"
    );
    died_at_the_failpoint(&mut node);
    drop(node);

    let node = Node::start(dir.path(), &backend, None);
    let redeem = format!("{}/v1/calls/{call_id}/redeem", node.url);
    let (status, first) = client.post_keyed(&redeem, &agent, Some("key-1")).unwrap();
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["replayed"], true, "{first}");
    let call = the_call(&node, &agent, &call_id);
    assert_eq!(first["grant_id"], call["grant_id"], "the call's own grant");
    assert_eq!(
        first["consumed_at"], call["redeemed_at"],
        "consumed before the crash"
    );
    // The same key again: the same answer; another key or none: refused.
    let (status, again) = client.post_keyed(&redeem, &agent, Some("key-1")).unwrap();
    assert_eq!((status, &again), (200, &first));
    for key in [Some("key-2"), None] {
        let (status, body) = client.post_keyed(&redeem, &agent, key).unwrap();
        assert_eq!(
            (status, body["type"].as_str()),
            (409, Some("grant_spent")),
            "{key:?}: {body}"
        );
    }
    // The agent executes once and says so; a second report is stored once.
    let outcome = format!("{}/v1/calls/{call_id}/outcome", node.url);
    for _ in 0..2 {
        let (status, body) = client
            .post(&outcome, &agent, &json!({"status": "succeeded"}))
            .unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["outcome"]["status"], "succeeded", "{body}");
    }
    assert_eq!(records(&node, "grant.consumed", &call_id), 1);
    assert_eq!(records(&node, "call.outcome", &call_id), 1);
    let verify = node.client(&["audit", "verify"]);
    assert!(verify.status.success(), "{verify:?}");
}

fn the_cli_retries_through_a_restart(backend: fn() -> Backend) {
    let dir = tempfile::tempdir().unwrap();
    let backend = backend();
    let mut node = Node::start(dir.path(), &backend, Some("grant.redeemed"));
    let agent = agent_token(&node);
    let ran = dir.path().join("ran.txt");
    // `airlock call … -- COMMAND`: waits for the person, redeems, runs, reports.
    let mut caller = Command::new(crate::node::BIN)
        .current_dir(dir.path())
        .args([
            "call",
            "email.send",
            "--args",
            MAIL,
            "--wait",
            "60",
            "--url",
            &node.url,
        ])
        .args([
            "--",
            "sh",
            "-c",
            "echo ran >> \"$0\"",
            ran.to_str().unwrap(),
        ])
        .env("AIRLOCK_TOKEN", &agent)
        .env_remove("AIRLOCK_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let call_id = approve_when_asked(&node);
    died_at_the_failpoint(&mut node);
    // The caller is retrying its redeem against the dead address; bring it back there.
    let node = node.restart_in_place();
    let until = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = caller.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < until, "airlock call never finished");
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = caller.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(status.success(), "airlock call: {status}: {stderr}");
    assert!(stderr.contains("answer replayed"), "{stderr}");
    // Executed exactly once, and the server knows it.
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");
    let call = the_call(&node, &agent, &call_id);
    assert_eq!(call["outcome"]["status"], "succeeded", "{call}");
    assert_eq!(records(&node, "grant.consumed", &call_id), 1);
    let (status, body) = http()
        .post_keyed(
            &format!("{}/v1/calls/{call_id}/redeem", node.url),
            &agent,
            Some("other"),
        )
        .unwrap();
    assert_eq!(
        (status, body["type"].as_str()),
        (409, Some("grant_spent")),
        "{body}"
    );
}

/// `airlock hook claude-code` through the same crash: the server consumes the grant of the
/// approved call the hook waits on and dies before answering. The hook sends the same
/// request again under the same key (`claude-code:<tool_use_id>`) until the server is back,
/// and is answered `allow` for the same grant: no second call, no second approval, no
/// second consumption. Its `PostToolUse` then reports on that very call.
fn the_hook_retries_through_a_restart(backend: fn() -> Backend) {
    let dir = tempfile::tempdir().unwrap();
    let backend = backend();
    let mut node = Node::start(dir.path(), &backend, Some("grant.redeemed"));
    let agent = agent_token(&node);
    let payload = |event: &str| {
        json!({
            "session_id": "crash-session", "cwd": dir.path(), "hook_event_name": event,
            "tool_name": "email.send", "tool_use_id": "toolu_crash",
            "tool_input": serde_json::from_str::<Value>(MAIL).unwrap(),
        })
        .to_string()
    };
    let hook = |url: &str, input: String| {
        let mut child = Command::new(crate::node::BIN)
            .current_dir(dir.path())
            .args(["hook", "claude-code", "--wait", "55", "--url", url])
            .env("AIRLOCK_TOKEN", &agent)
            .env_remove("AIRLOCK_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, input.as_bytes()).unwrap();
        drop(stdin);
        child
    };
    let mut waiting = hook(&node.url, payload("PreToolUse"));
    let call_id = approve_when_asked(&node);
    died_at_the_failpoint(&mut node);
    let node = node.restart_in_place();
    let until = Instant::now() + Duration::from_secs(60);
    while waiting.try_wait().unwrap().is_none() {
        assert!(Instant::now() < until, "airlock hook never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = waiting.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    let inner = &answer["hookSpecificOutput"];
    assert_eq!(inner["permissionDecision"], "allow", "{answer}\n{stderr}");
    let reason = inner["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains(&call_id), "{reason}");
    assert!(reason.contains("answer replayed"), "{reason}");
    assert_eq!(records(&node, "grant.consumed", &call_id), 1);
    let (_, approvals) = http()
        .get(&format!("{}/v1/approvals", node.url), &node.owner_token())
        .unwrap();
    assert_eq!(
        approvals["items"].as_array().unwrap().len(),
        1,
        "{approvals}"
    );

    // The tool ran once; the agent's PostToolUse reports it on the same call.
    let reported = hook(&node.url, payload("PostToolUse"))
        .wait_with_output()
        .unwrap();
    assert!(reported.status.success(), "{reported:?}");
    assert!(reported.stdout.is_empty(), "{reported:?}");
    let call = the_call(&node, &agent, &call_id);
    assert_eq!(call["outcome"]["status"], "succeeded", "{call}");
    let (status, body) = http()
        .post_keyed(
            &format!("{}/v1/calls/{call_id}/redeem", node.url),
            &agent,
            Some("claude-code:toolu_other"),
        )
        .unwrap();
    assert_eq!(
        (status, body["type"].as_str()),
        (409, Some("grant_spent")),
        "{body}"
    );
}

#[test]
fn redeem_replay_on_sqlite() {
    replay_after_a_crash(Backend::sqlite);
}

#[test]
fn redeem_replay_on_postgres() {
    replay_after_a_crash(Backend::postgres);
}

#[test]
fn redeem_replay_by_airlock_call_on_sqlite() {
    the_cli_retries_through_a_restart(Backend::sqlite);
}

#[test]
fn redeem_replay_by_airlock_call_on_postgres() {
    the_cli_retries_through_a_restart(Backend::postgres);
}

#[test]
fn redeem_replay_by_airlock_hook_on_sqlite() {
    the_hook_retries_through_a_restart(Backend::sqlite);
}

#[test]
fn redeem_replay_by_airlock_hook_on_postgres() {
    the_hook_retries_through_a_restart(Backend::postgres);
}
