//! Bad input is refused with a problem and changes nothing: malformed JSON (400), wrong
//! shapes and unknown fields (422, naming the field), oversize bodies (413), non-JSON
//! content types (415), a policy that does not load (422 with positions, old policy kept),
//! unknown ids (404), bad or missing tokens (401), bad query parameters (422).

use crate::support::{server, POLICY};
use airlock_testkit::TestServer;
use futures::stream;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn malformed_json_is_400_invalid() {
    let (server, agent) = server().await;
    let reply = server
        .client
        .raw(
            Method::POST,
            "/v1/calls",
            Some(&agent),
            Some("application/json"),
            b"{\"tool\": ".to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(reply.problem_type(), "invalid");
    assert_eq!(reply.content_type(), "application/problem+json");
}

#[tokio::test]
async fn wrong_types_and_missing_fields_are_422_invalid() {
    let (server, agent) = server().await;
    let wrong_type = server
        .client
        .post("/v1/calls", &agent, &json!({"tool": 5, "arguments": {}}))
        .await
        .unwrap();
    assert_eq!(wrong_type.status, 422, "{}", wrong_type.text);
    assert_eq!(wrong_type.problem_type(), "invalid");
    assert!(
        wrong_type.body["detail"].as_str().unwrap().contains("tool"),
        "{}",
        wrong_type.text
    );

    let missing = server
        .client
        .post("/v1/calls", &agent, &json!({"arguments": {}}))
        .await
        .unwrap();
    assert_eq!(missing.status, 422, "{}", missing.text);
    assert!(
        missing.body["detail"].as_str().unwrap().contains("tool"),
        "{}",
        missing.text
    );

    let not_an_object = server
        .client
        .post(
            "/v1/calls",
            &agent,
            &json!({"tool": "fs.read", "arguments": [1]}),
        )
        .await
        .unwrap();
    assert_eq!(not_an_object.status, 422, "{}", not_an_object.text);
}

#[tokio::test]
async fn unknown_fields_are_422_naming_the_field() {
    let (server, agent) = server().await;
    let reply = server
        .client
        .post(
            "/v1/calls",
            &agent,
            &json!({"tool": "fs.read", "arguments": {}, "colour": "red"}),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.text);
    assert!(
        reply.body["detail"].as_str().unwrap().contains("colour"),
        "{}",
        reply.text
    );

    let reply = server
        .client
        .post(
            "/v1/approvals/apr_x/decision",
            &server.owner_token,
            &json!({"decision": "approve", "binding_digest": "x", "really": true}),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.text);
    assert!(
        reply.body["detail"].as_str().unwrap().contains("really"),
        "{}",
        reply.text
    );
}

#[tokio::test]
async fn oversize_bodies_are_413_by_length_and_by_stream() {
    let (server, agent) = server().await;
    let big = json!({"tool": "fs.read", "arguments": {"path": "x".repeat(1024 * 1024 + 1)}});
    let reply = server.client.post("/v1/calls", &agent, &big).await.unwrap();
    assert_eq!(reply.status, 413, "{}", reply.text);
    assert_eq!(reply.problem_type(), "payload_too_large");

    // Without a Content-Length the server counts what it reads.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..20).map(|_| Ok(vec![b' '; 64 * 1024])).collect();
    let request = server
        .client
        .request(Method::POST, "/v1/calls", Some(&agent))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(stream::iter(chunks)));
    let reply = server.client.send(request).await.unwrap();
    assert_eq!(reply.status, 413, "{}", reply.text);
    assert_eq!(reply.problem_type(), "payload_too_large");

    let policy = "#".repeat(1024 * 1024 + 1);
    let reply = server
        .client
        .put_text("/v1/policy", &server.owner_token, &policy)
        .await
        .unwrap();
    assert_eq!(reply.status, 413, "{}", reply.text);
}

#[tokio::test]
async fn non_json_content_type_on_a_json_endpoint_is_415() {
    let (server, agent) = server().await;
    let reply = server
        .client
        .raw(
            Method::POST,
            "/v1/calls",
            Some(&agent),
            Some("text/plain"),
            br#"{"tool":"fs.read","arguments":{}}"#.to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 415, "{}", reply.text);
    assert_eq!(reply.content_type(), "application/problem+json");
}

#[tokio::test]
async fn bad_policy_upload_is_422_with_positions_and_the_old_policy_stays() {
    let (server, agent) = server().await;
    let before = server
        .client
        .get("/v1/policy", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();

    let broken =
        "version = 1\ndefault = \"ask\"\n\n[[rules]]\ntool = \"fs.*\"\ndecision = \"perhaps\"\n";
    let reply = server
        .client
        .put_text("/v1/policy", &server.owner_token, broken)
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.text);
    assert_eq!(reply.problem_type(), "invalid");
    let errors = reply.body["errors"].as_array().unwrap();
    assert!(!errors.is_empty());
    assert_eq!(errors[0]["line"], 6, "{}", reply.text);
    assert!(errors[0]["column"].as_u64().unwrap() >= 1);
    assert!(!errors[0]["message"].as_str().unwrap().is_empty());

    let after = server
        .client
        .get("/v1/policy", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(after, before);
    assert_eq!(after["source"], POLICY);
    // And it still decides: reads are allowed under the old policy.
    let call = server
        .submit(&agent, "fs.read", json!({"path": "/etc/motd"}))
        .await
        .unwrap();
    assert_eq!(call.body["status"], "allowed", "{}", call.text);
}

#[tokio::test]
async fn unknown_ids_are_404_not_found() {
    let (server, agent) = server().await;
    let owner = &server.owner_token;
    let replies = [
        server
            .client
            .get("/v1/calls/call_nope", &agent)
            .await
            .unwrap(),
        server
            .client
            .post_empty("/v1/calls/call_nope/redeem", &agent)
            .await
            .unwrap(),
        server
            .client
            .get("/v1/approvals/apr_nope", owner)
            .await
            .unwrap(),
        server
            .client
            .get("/v1/agents/agt_nope", owner)
            .await
            .unwrap(),
        server
            .client
            .get("/v1/sessions/ses_nope", owner)
            .await
            .unwrap(),
        server
            .client
            .delete("/v1/rules/rule_nope", owner)
            .await
            .unwrap(),
        server
            .client
            .post(
                "/v1/approvals/apr_nope/decision",
                owner,
                &json!({"decision": "approve", "binding_digest": "x"}),
            )
            .await
            .unwrap(),
    ];
    for reply in replies {
        assert_eq!(reply.status, 404, "{}", reply.text);
        assert_eq!(reply.problem_type(), "not_found");
    }
}

#[tokio::test]
async fn missing_malformed_and_unknown_tokens_are_401() {
    let server = TestServer::start().await.unwrap();
    let missing = server
        .client
        .raw(Method::GET, "/v1/approvals", None, None, Vec::new())
        .await
        .unwrap();
    assert_eq!(missing.status, 401);
    assert_eq!(missing.problem_type(), "unauthorized");
    assert_eq!(missing.headers["www-authenticate"], "Bearer");

    let basic = server
        .client
        .send(
            server
                .client
                .http()
                .get(server.client.url("/v1/approvals"))
                .header("authorization", "Basic b3duZXI6cHc="),
        )
        .await
        .unwrap();
    assert_eq!(basic.status, 401);

    let unknown = server
        .client
        .get("/v1/approvals", &format!("alk_{}", "0".repeat(64)))
        .await
        .unwrap();
    assert_eq!(unknown.status, 401);
    assert_eq!(unknown.problem_type(), "unauthorized");
}

#[tokio::test]
async fn bad_query_parameters_are_422() {
    let (server, agent) = server().await;
    let call = server
        .submit(&agent, "fs.read", json!({"path": "a"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let id = call["id"].as_str().unwrap();
    let owner = &server.owner_token;
    let replies = [
        server
            .client
            .get(&format!("/v1/calls/{id}?wait_s=61"), &agent)
            .await
            .unwrap(),
        server
            .client
            .get(&format!("/v1/calls/{id}?wait_s=soon"), &agent)
            .await
            .unwrap(),
        server
            .client
            .get(&format!("/v1/calls/{id}?colour=red"), &agent)
            .await
            .unwrap(),
        server
            .client
            .get("/v1/approvals?status=maybe", owner)
            .await
            .unwrap(),
        server
            .client
            .get("/v1/approvals?limit=0", owner)
            .await
            .unwrap(),
        server
            .client
            .get("/v1/audit?after=-1", owner)
            .await
            .unwrap(),
        server
            .client
            .post(
                "/v1/calls",
                &agent,
                &json!({"tool": "fs.read", "arguments": {}, "wait_s": 61}),
            )
            .await
            .unwrap(),
    ];
    for reply in replies {
        assert_eq!(reply.status, 422, "{}", reply.text);
        assert_eq!(reply.problem_type(), "invalid");
    }
}

/// F14: agent settings the runtime could not run are refused when saved (create and
/// patch), 422 with the field named, and nothing is saved; settings it can run are 201.
#[tokio::test]
async fn agent_settings_the_runtime_cannot_run_are_422_naming_the_field() {
    let (server, _) = server().await;
    let scripted = json!({"base_url": "scripted:demo", "model": "script"});
    let cases = [
        (
            json!({"tools": ["email.sned"], "llm": scripted}),
            "tools[0]",
        ),
        (
            json!({"llm": {"base_url": "ftp://x/v1", "model": "m"}}),
            "llm.base_url",
        ),
        (
            json!({"llm": {"base_url": "http://127.0.0.1:1/v1", "model": ""}}),
            "llm.model",
        ),
        (
            json!({"llm": scripted, "mcp_servers": [{"name": "Bad Name", "command": "sh"}]}),
            "mcp_servers[0].name",
        ),
        (
            json!({"llm": scripted, "mcp_servers": [{"name": "fs", "command": "/nonexistent/server"}]}),
            "mcp_servers[0].command",
        ),
    ];
    for (position, (settings, field)) in cases.iter().enumerate() {
        let mut body = settings.clone();
        body["name"] = json!(format!("bad-{position}"));
        let reply = server
            .client
            .post("/v1/agents", &server.owner_token, &body)
            .await
            .unwrap();
        assert_eq!(reply.status, 422, "{body}: {}", reply.text);
        assert_eq!(reply.problem_type(), "invalid");
        let detail = reply.body["detail"].as_str().unwrap();
        assert!(detail.starts_with(field), "{field}: {detail}");
    }
    let agents = server
        .client
        .get("/v1/agents", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let names: Vec<&str> = agents["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|agent| agent["name"].as_str().unwrap())
        .collect();
    assert!(
        !names.iter().any(|name| name.starts_with("bad-")),
        "{names:?}"
    );

    let created = server
        .client
        .post(
            "/v1/agents",
            &server.owner_token,
            &json!({"name": "good", "tools": ["clock.now"], "llm": scripted}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let id = created["agent"]["id"].as_str().unwrap();
    let patched = server
        .client
        .patch(
            &format!("/v1/agents/{id}"),
            &server.owner_token,
            &json!({"tools": ["clock.now", "fs.raed"]}),
        )
        .await
        .unwrap();
    assert_eq!(patched.status, 422, "{}", patched.text);
    assert!(patched.body["detail"]
        .as_str()
        .unwrap()
        .starts_with("tools[1]: unknown tool `fs.raed`"));
    let unchanged = server
        .client
        .get(&format!("/v1/agents/{id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(unchanged["tools"], json!(["clock.now"]));
}
