//! A session's own mode (DESIGN.md §4.4, §11.6): `PATCH /v1/sessions/{id} {mode}`
//! overrides the agent's mode for the calls of one session, `null` goes back to the
//! agent's, the change is audited, and a dry run of the policy in force replays each call
//! under the mode it had. Runs on SQLite, and on PostgreSQL with
//! `AIRLOCK_TEST_BACKEND=postgres`.

use crate::support::{audit_records, server, POLICY};
use airlock_protocol::{ReplayReport, Role};
use airlock_testkit::{Reply, TestServer};
use serde_json::{json, Value};

async fn patch(server: &TestServer, token: &str, session: &str, body: Value) -> Reply {
    server
        .client
        .patch(&format!("/v1/sessions/{session}"), token, &body)
        .await
        .unwrap()
}

/// Submits an `email.send` (asked under [`POLICY`]) in `session` (or none); its status
/// and who decided.
async fn mail(server: &TestServer, agent: &str, session: Option<&str>) -> (String, String) {
    let mut body =
        json!({"tool": "email.send", "arguments": {"to": "bob@acme.test", "body": "hi"}});
    if let Some(session) = session {
        body["session_id"] = session.into();
    }
    let call = server
        .client
        .post("/v1/calls", agent, &body)
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    (
        call["status"].as_str().unwrap().to_owned(),
        call["decided_by"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn a_session_mode_overrides_the_agents_for_that_session_only() {
    let (server, agent) = server().await;
    let owner = server.owner_token.clone();
    let session = server
        .client
        .post("/v1/sessions", &agent, &json!({"title": "night work"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    assert!(session.get("mode").is_none(), "{session}");
    assert_eq!(mail(&server, &agent, Some(&id)).await.0, "pending");

    let changed = patch(&server, &owner, &id, json!({"mode": "read_only"}))
        .await
        .expect_status(200)
        .unwrap();
    assert_eq!(changed["mode"], "read_only");
    let snapshot = server
        .client
        .get(&format!("/v1/sessions/{id}"), &owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(snapshot["mode"], "read_only", "{snapshot}");
    assert_eq!(
        mail(&server, &agent, Some(&id)).await,
        ("denied".to_owned(), "mode".to_owned())
    );
    // A read is still allowed; the agent's other calls keep its own mode.
    let read = server
        .client
        .post(
            "/v1/calls",
            &agent,
            &json!({"tool": "fs.read", "arguments": {"path": "a"}, "session_id": id}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(read["status"], "allowed");
    assert_eq!(mail(&server, &agent, None).await.0, "pending");

    patch(&server, &owner, &id, json!({"mode": "unattended"}))
        .await
        .expect_status(200)
        .unwrap();
    assert_eq!(
        mail(&server, &agent, Some(&id)).await,
        ("denied".to_owned(), "mode".to_owned())
    );
    let cleared = patch(&server, &owner, &id, json!({"mode": null}))
        .await
        .expect_status(200)
        .unwrap();
    assert!(cleared.get("mode").is_none(), "{cleared}");
    assert_eq!(mail(&server, &agent, Some(&id)).await.0, "pending");

    let records = audit_records(&server).await;
    let modes: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "session.updated" && r["subject"] == id.as_str())
        .map(|r| &r["data"]["mode"])
        .collect();
    assert_eq!(
        modes,
        [&json!("read_only"), &json!("unattended"), &Value::Null]
    );

    // Replayed under the policy in force, every call keeps its decision: each is judged
    // in the mode its session had at the time.
    let report: ReplayReport = serde_json::from_value(
        server
            .client
            .put_text("/v1/policy?dry_run=true", &owner, POLICY)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(report.calls, 6, "{report:?}");
    assert_eq!(report.changed, 0, "{report:?}");
}

#[tokio::test]
async fn only_owners_and_admins_set_a_session_mode_and_bad_ones_change_nothing() {
    let (server, agent) = server().await;
    let session = server
        .client
        .post("/v1/sessions", &agent, &json!({}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let id = session["id"].as_str().unwrap();
    let (_, approver) = server.create_user("arno", Role::Approver).await.unwrap();
    let (_, admin) = server.create_user("ada", Role::Admin).await.unwrap();
    let before = audit_records(&server).await;
    for token in [&approver, &agent] {
        let reply = patch(&server, token, id, json!({"mode": "ask"})).await;
        assert_eq!(reply.status, 403, "{}", reply.text);
    }
    let reply = patch(&server, &admin, id, json!({"mode": "sometimes"})).await;
    assert_eq!(reply.status, 422, "{}", reply.text);
    let reply = patch(&server, &admin, id, json!({"mode": "ask", "title": "x"})).await;
    assert_eq!(reply.status, 422, "{}", reply.text);
    assert!(reply.text.contains("title"), "{}", reply.text);
    let reply = patch(
        &server,
        &admin,
        "ses_nobody_has_this",
        json!({"mode": "ask"}),
    )
    .await;
    assert_eq!(reply.status, 404, "{}", reply.text);
    assert_eq!(audit_records(&server).await, before);
    let reply = patch(&server, &admin, id, json!({"mode": "read_only"})).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}
