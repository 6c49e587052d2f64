//! The operational endpoints: `/healthz`, `/openapi.json`, `/metrics`, and the problem
//! answers for routes and methods that do not exist.

use crate::support::{ask, decide, server, until_waiting, SseReader, PATIENCE};
use airlock_testkit::TestServer;
use reqwest::Method;

#[tokio::test]
async fn healthz_answers_ok_without_a_token() {
    let server = TestServer::start().await.unwrap();
    let reply = server
        .client
        .raw(Method::GET, "/healthz", None, None, Vec::new())
        .await
        .unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, serde_json::json!({"status": "ok"}));
}

#[tokio::test]
async fn the_printed_inbox_url_answers_with_how_to_decide() {
    let server = TestServer::start().await.unwrap();
    let reply = server
        .client
        .raw(Method::GET, "/", None, None, Vec::new())
        .await
        .unwrap();
    assert_eq!(reply.status, 200);
    assert!(
        reply.text.contains("airlock approvals approve --latest"),
        "{}",
        reply.text
    );
}

#[tokio::test]
async fn openapi_document_parses_and_lists_the_api() {
    let server = TestServer::start().await.unwrap();
    let reply = server
        .client
        .raw(Method::GET, "/openapi.json", None, None, Vec::new())
        .await
        .unwrap();
    assert_eq!(reply.status, 200);
    let doc = &reply.body;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3."),
        "{}",
        reply.text
    );
    for path in [
        "/v1/calls",
        "/v1/calls/{id}",
        "/v1/approvals/{id}/decision",
        "/v1/policy",
        "/v1/events",
        "/v1/audit/export",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} is not in the spec");
    }
    assert!(doc["paths"]["/v1/calls"]["post"].is_object());
    for schema in [
        "Call",
        "Approval",
        "Problem",
        "AuditRecord",
        "DecisionRequest",
    ] {
        assert!(
            doc["components"]["schemas"][schema].is_object(),
            "schema {schema} missing"
        );
    }
}

#[tokio::test]
async fn metrics_count_responses_calls_decisions_and_waiters() {
    let (server, agent) = server().await;
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    decide(&server, &server.owner_token, &approval, "approve").await;
    server
        .client
        .get("/v1/nothing-here", &server.owner_token)
        .await
        .unwrap();

    let reply = server
        .client
        .raw(Method::GET, "/metrics", None, None, Vec::new())
        .await
        .unwrap();
    assert_eq!(reply.status, 200);
    assert!(reply.content_type().starts_with("text/plain"));
    let text = reply.text;
    let value = |name: &str| -> u64 {
        text.lines()
            .find_map(|line| {
                line.strip_prefix(name)
                    .map(|rest| rest.trim().parse().unwrap())
            })
            .unwrap_or_else(|| panic!("{name} missing in:\n{text}"))
    };
    assert!(value("airlock_http_responses_total{class=\"2xx\"}") >= 3);
    assert!(value("airlock_http_responses_total{class=\"4xx\"}") >= 1);
    assert_eq!(value("airlock_calls_total{outcome=\"pending\"}"), 1);
    assert_eq!(value("airlock_decisions_total{decision=\"approve\"}"), 1);
    assert_eq!(value("airlock_waiting_callers"), 0);
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405_problems() {
    let server = TestServer::start().await.unwrap();
    let reply = server
        .client
        .get("/v1/nope", &server.owner_token)
        .await
        .unwrap();
    assert_eq!(reply.status, 404);
    assert_eq!(reply.problem_type(), "not_found");
    assert_eq!(reply.content_type(), "application/problem+json");

    let reply = server
        .client
        .delete("/v1/calls", &server.owner_token)
        .await
        .unwrap();
    assert_eq!(reply.status, 405);
    assert_eq!(reply.problem_type(), "method_not_allowed");
    assert_eq!(reply.content_type(), "application/problem+json");
}

#[tokio::test]
async fn graceful_stop_ends_event_streams_and_answers_long_polls_at_once() {
    let (mut server, agent) = server().await;
    let (call, _) = ask(&server, &agent, "bob@acme.test").await;
    let _events = SseReader::open(&server, &server.owner_token.clone(), None).await;
    let client = server.client.clone();
    let path = format!("/v1/calls/{}?wait_s=60", call["id"].as_str().unwrap());
    let waiter = tokio::spawn(async move { client.get(&path, &agent).await.unwrap() });
    until_waiting(&server, 1).await;

    tokio::time::timeout(PATIENCE, server.stop())
        .await
        .expect("graceful stop waited for open requests")
        .unwrap();
    let reply = waiter.await.unwrap();
    assert_eq!(reply.body["status"], "pending", "{}", reply.text);
}
