//! Pausing a run is one transaction, and so is resuming it (issue 18): the server dies
//! right after the pause commits (failpoint `run.paused`, before the answer); after the
//! restart the run is still paused and its approval closed, so a click is refused, and a
//! resume asks again. Then it dies right after a resume commits (`run.unpaused`, before
//! any node claimed the run): after the restart a node's sweeper picks the run up and asks
//! again, and the email goes out once.

use crate::node::{http, Backend, Http, Node};
use crate::scenario::{expect, expire_dead_leases, run_state, start_run, wait_for_run_approval};
use serde_json::{json, Value};
use std::time::Duration;

fn approval(client: &Http, url: &str, owner: &str, id: &str) -> Value {
    expect(
        "read the approval",
        client
            .get(&format!("{url}/v1/approvals/{id}"), owner)
            .unwrap(),
        200,
    )
}

/// Waits until the run is suspended: its leg has stopped, so a pause leaves no step of it
/// finishing, and the resume after it is never told to wait for one.
fn suspended(client: &Http, url: &str, owner: &str, run_id: &str) {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while run_state(client, url, owner, run_id).unwrap() != "awaiting_approval" {
        assert!(std::time::Instant::now() < until, "the run never suspended");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Posts `verb` to the run, expecting the node to die at its failpoint on the way.
fn dies_at(node: &mut Node, client: &Http, run_id: &str, verb: &str) {
    let (url, owner) = (node.url.clone(), node.owner_token());
    let _ = client.post_empty(&format!("{url}/v1/runs/{run_id}/{verb}"), &owner);
    let status = node
        .wait_exit(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("never reached the failpoint\n{}", node.stderr.text()));
    assert!(Node::aborted(status), "{}", node.stderr.text());
    assert!(
        node.stderr.text().contains("failpoint reached"),
        "{}",
        node.stderr.text()
    );
}

/// Approves the run's one pending approval (not `old`) and waits for the run to end with
/// exactly one email in the outbox.
fn approve_again_and_complete(node: &Node, client: &Http, run_id: &str, old: &str) {
    let (url, owner) = (node.url.clone(), node.owner_token());
    let again = wait_for_run_approval(client, &url, &owner, run_id).unwrap();
    assert_ne!(again, old, "a new approval, never the old one revived");
    let fresh = approval(client, &url, &owner, &again);
    expect(
        "approve the new approval",
        client
            .post(
                &format!("{url}/v1/approvals/{again}/decision"),
                &owner,
                &json!({"decision": "approve", "binding_digest": fresh["binding_digest"]}),
            )
            .unwrap(),
        200,
    );
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let state = run_state(client, &url, &owner, run_id).unwrap();
        if state == "completed" {
            break;
        }
        if std::time::Instant::now() >= until {
            let (_, run) = client
                .get(&format!("{url}/v1/runs/{run_id}"), &owner)
                .unwrap();
            panic!(
                "the run never completed: it is {state}\n{run}\n{}",
                node.stderr.text()
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let (status, outbox) = client.get(&format!("{url}/v1/outbox"), &owner).unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        outbox["items"].as_array().map(Vec::len),
        Some(1),
        "{outbox}"
    );
    assert_eq!(approval(client, &url, &owner, old)["status"], "cancelled");
    let verify = node.client(&["audit", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{verify:?}");
}

fn crash_after_pause(backend: fn() -> Backend) {
    let dir = tempfile::tempdir().unwrap();
    let backend = backend();
    let client = http();
    let mut node = Node::start(dir.path(), &backend, Some("run.paused"));
    let (url, owner) = (node.url.clone(), node.owner_token());
    let run_id = start_run(&client, &url, &owner).unwrap();
    let first = wait_for_run_approval(&client, &url, &owner, &run_id).unwrap();
    suspended(&client, &url, &owner, &run_id);
    let before = approval(&client, &url, &owner, &first);
    dies_at(&mut node, &client, &run_id, "pause");
    drop(node);

    let node = Node::start(dir.path(), &backend, None);
    let (url, owner) = (node.url.clone(), node.owner_token());
    // The restarted node runs its sweeper and takes on other work: another run suspends
    // on its own approval, while the paused run stays paused with nothing pending.
    let other = start_run(&client, &url, &owner).unwrap();
    wait_for_run_approval(&client, &url, &owner, &other).unwrap();
    assert_eq!(run_state(&client, &url, &owner, &run_id).unwrap(), "paused");
    assert_eq!(
        approval(&client, &url, &owner, &first)["status"],
        "cancelled"
    );
    let (status, body) = client
        .post(
            &format!("{url}/v1/approvals/{first}/decision"),
            &owner,
            &json!({"decision": "approve", "binding_digest": before["binding_digest"]}),
        )
        .unwrap();
    assert_eq!(
        status, 409,
        "a click on the closed approval is refused: {body}"
    );
    let cancelled = client
        .post_empty(&format!("{url}/v1/runs/{other}/cancel"), &owner)
        .unwrap();
    assert_eq!(cancelled.0, 200, "{}", cancelled.1);

    // Resuming after the restart works, through the CLI.
    let resumed = node.client(&["runs", "resume", &run_id]);
    assert_eq!(resumed.status.code(), Some(0), "{resumed:?}");
    approve_again_and_complete(&node, &client, &run_id, &first);
}

fn crash_after_resume(backend: fn() -> Backend) {
    let dir = tempfile::tempdir().unwrap();
    let backend = backend();
    let client = http();
    let mut node = Node::start(dir.path(), &backend, Some("run.unpaused"));
    let (url, owner) = (node.url.clone(), node.owner_token());
    let run_id = start_run(&client, &url, &owner).unwrap();
    let first = wait_for_run_approval(&client, &url, &owner, &run_id).unwrap();
    suspended(&client, &url, &owner, &run_id);
    let paused = client
        .post_empty(&format!("{url}/v1/runs/{run_id}/pause"), &owner)
        .unwrap();
    assert_eq!(paused.0, 200, "{}", paused.1);
    dies_at(&mut node, &client, &run_id, "resume");
    drop(node);

    // The resume committed: no node holds the run, and the restarted node's sweeper
    // claims it and asks again. The dead node's own sweeper (every second) may have
    // claimed it between the commit and the crash: on PostgreSQL the run then waits out
    // that node's lease (120 s) before another takes it over, so the lease is expired
    // here, before the restart, as in the other crash scenarios (SQLite's node takes its
    // runs over at start).
    expire_dead_leases(&backend);
    let node = Node::start(dir.path(), &backend, None);
    approve_again_and_complete(&node, &client, &run_id, &first);
}

#[test]
fn pause_committed_on_sqlite() {
    crash_after_pause(Backend::sqlite);
}

#[test]
fn pause_committed_on_postgres() {
    crash_after_pause(Backend::postgres);
}

#[test]
fn resume_committed_on_sqlite() {
    crash_after_resume(Backend::sqlite);
}

#[test]
fn resume_committed_on_postgres() {
    crash_after_resume(Backend::postgres);
}
