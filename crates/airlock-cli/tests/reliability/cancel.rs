//! Cancelling a run is one transaction (issue 18, defect 1): the server dies right after
//! the cancel commits (failpoint `run.cancelled`); after the restart the run is cancelled
//! *and* the approval it waited on is closed, so a person's click on it is refused. Before
//! the fix the run was committed first and its approvals closed one by one afterwards, so a
//! crash in between left an approval a click could still approve.

use crate::node::{http, Backend, Node};
use crate::scenario::{expect, run_state, start_run, wait_for_run_approval};
use serde_json::json;
use std::time::Duration;

fn crash_after_cancel(backend: fn() -> Backend) {
    let dir = tempfile::tempdir().unwrap();
    let backend = backend();
    let mut node = Node::start(dir.path(), &backend, Some("run.cancelled"));
    let (url, owner, client) = (node.url.clone(), node.owner_token(), http());
    let run_id = start_run(&client, &url, &owner).unwrap();
    let approval_id = wait_for_run_approval(&client, &url, &owner, &run_id).unwrap();
    let approval = expect(
        "read the approval",
        client
            .get(&format!("{url}/v1/approvals/{approval_id}"), &owner)
            .unwrap(),
        200,
    );
    // The cancel's answer is lost with the process.
    let _ = client.post_empty(&format!("{url}/v1/runs/{run_id}/cancel"), &owner);
    let status = node
        .wait_exit(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("never reached the failpoint\n{}", node.stderr.text()));
    assert!(Node::aborted(status), "{}", node.stderr.text());
    assert!(
        node.stderr.text().contains("failpoint reached"),
        "{}",
        node.stderr.text()
    );
    drop(node);

    let node = Node::start(dir.path(), &backend, None);
    let (url, owner) = (node.url.clone(), node.owner_token());
    assert_eq!(
        run_state(&client, &url, &owner, &run_id).unwrap(),
        "cancelled"
    );
    let after = expect(
        "read the approval",
        client
            .get(&format!("{url}/v1/approvals/{approval_id}"), &owner)
            .unwrap(),
        200,
    );
    assert_eq!(after["status"], "cancelled", "{after}");
    let (status, body) = client
        .post(
            &format!("{url}/v1/approvals/{approval_id}/decision"),
            &owner,
            &json!({"decision": "approve", "binding_digest": approval["binding_digest"]}),
        )
        .unwrap();
    assert_eq!(
        status, 409,
        "a click on the closed approval is refused: {body}"
    );
    // The run never resumed: nothing reached the outbox.
    let (status, outbox) = client.get(&format!("{url}/v1/outbox"), &owner).unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        outbox["items"].as_array().map(Vec::len),
        Some(0),
        "{outbox}"
    );
    let verify = node.client(&["audit", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{verify:?}");
}

#[test]
fn cancel_committed_on_sqlite() {
    crash_after_cancel(Backend::sqlite);
}

#[test]
fn cancel_committed_on_postgres() {
    crash_after_cancel(Backend::postgres);
}
