//! DESIGN.md §10 acceptance 12 as one story over HTTP: open a session, evaluate a call
//! under an ask rule, watch `approval.requested` arrive on the workspace SSE stream, find
//! it pending in the session snapshot, approve → the waiting caller gets allowed; reject
//! a second → denied. Then the stream's replay from `Last-Event-ID`.

use crate::support::{server, until_waiting, SseReader};
use serde_json::{json, Value};

#[tokio::test]
async fn http_story_session_evaluate_stream_snapshot_approve_then_reject() {
    let (server, agent) = server().await;
    let owner = server.owner_token.clone();
    let mut events = SseReader::open(&server, &owner, None).await;

    // A session for the agent, opened by the agent itself.
    let session = server
        .client
        .post("/v1/sessions", &agent, &json!({"title": "mail run"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let session_id = session["id"].as_str().unwrap().to_owned();

    // The dry run says a person must decide, and stores nothing.
    let arguments = json!({"to": "bob@acme.test", "body": "quarterly numbers"});
    let verdict = server
        .client
        .post(
            "/v1/policy/evaluate",
            &owner,
            &json!({"tool": "email.send", "arguments": arguments, "agent": "scout"}),
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(verdict["decision"], "ask", "{verdict}");
    assert_eq!(verdict["rule"], "mail-needs-a-person");
    assert_eq!(verdict["risk"], "external");

    // The agent submits and waits for the verdict.
    let caller = |arguments: Value| {
        let client = server.client.clone();
        let agent = agent.clone();
        let session_id = session_id.clone();
        tokio::spawn(async move {
            client
                .post("/v1/calls", &agent, &json!({"tool": "email.send", "arguments": arguments, "session_id": session_id, "wait_s": 30}))
                .await
                .unwrap()
        })
    };
    let waiting = caller(arguments);

    let requested = events.next_of("approval.requested").await;
    let event: Value = serde_json::from_str(&requested.data).unwrap();
    assert_eq!(
        requested.id.as_deref(),
        Some(event["id"].to_string().as_str())
    );
    let approval = event["data"].clone();
    assert_eq!(approval["session_id"], session_id.as_str());
    assert_eq!(
        approval["preview"]["summary"],
        "Send email to bob@acme.test"
    );

    let snapshot = server
        .client
        .get(&format!("/v1/sessions/{session_id}"), &owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(snapshot["id"], session_id.as_str());
    assert_eq!(snapshot["runs"], json!([]));
    let pending = snapshot["pending_approvals"].as_array().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["id"], approval["id"]);
    assert_eq!(pending[0]["status"], "pending");

    until_waiting(&server, 1).await;
    let path = format!(
        "/v1/approvals/{}/decision",
        approval["id"].as_str().unwrap()
    );
    server
        .client
        .post(
            &path,
            &owner,
            &json!({"decision": "approve", "binding_digest": approval["binding_digest"]}),
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let allowed = waiting.await.unwrap();
    assert_eq!(allowed.status, 201);
    assert_eq!(allowed.body["status"], "approved", "{}", allowed.text);
    assert!(allowed.body["grant_id"].is_string());
    let decided = events.next_of("approval.decided").await;
    assert!(decided.data.contains("\"approved\""), "{}", decided.data);

    // A second call, rejected: the caller is told, with no grant.
    let waiting = caller(json!({"to": "eve@evil.test", "body": "all the numbers"}));
    let requested = events.next_of("approval.requested").await;
    let approval = serde_json::from_str::<Value>(&requested.data).unwrap()["data"].clone();
    until_waiting(&server, 1).await;
    let path = format!(
        "/v1/approvals/{}/decision",
        approval["id"].as_str().unwrap()
    );
    server
        .client
        .post(&path, &owner, &json!({"decision": "reject", "binding_digest": approval["binding_digest"], "reason": "not to eve"}))
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let denied = waiting.await.unwrap();
    assert_eq!(denied.body["status"], "rejected", "{}", denied.text);
    assert!(denied.body["grant_id"].is_null());

    let snapshot = server
        .client
        .get(&format!("/v1/sessions/{session_id}"), &owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(snapshot["pending_approvals"], json!([]));
}

#[tokio::test]
async fn event_stream_replays_after_last_event_id_then_goes_live() {
    let (server, agent) = server().await;
    let owner = server.owner_token.clone();
    for to in ["a@acme.test", "b@acme.test"] {
        server
            .submit(&agent, "email.send", json!({"to": to}))
            .await
            .unwrap()
            .expect_status(201)
            .unwrap();
    }
    // From the start: everything, in order, with increasing ids.
    let mut replay = SseReader::open(&server, &owner, Some(0)).await;
    let mut ids = Vec::new();
    let mut kinds = Vec::new();
    while kinds
        .iter()
        .filter(|k: &&String| *k == "approval.requested")
        .count()
        < 2
    {
        let event = replay.next().await;
        ids.push(event.id.unwrap().parse::<u64>().unwrap());
        kinds.push(event.kind.unwrap());
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");

    // Resuming after the first requested approval gives the second one first, then live.
    let first_requested = ids[kinds
        .iter()
        .position(|k| k == "approval.requested")
        .unwrap()];
    let mut resumed = SseReader::open(&server, &owner, Some(first_requested)).await;
    let next = resumed.next_of("approval.requested").await;
    assert!(next.id.unwrap().parse::<u64>().unwrap() > first_requested);
    server
        .submit(&agent, "email.send", json!({"to": "c@acme.test"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let live = resumed.next_of("approval.requested").await;
    assert!(live.data.contains("c@acme.test"), "{}", live.data);

    // Agents do not stream the workspace.
    let reply = server.client.get("/v1/events", &agent).await.unwrap();
    assert_eq!(reply.status, 403);
}
