//! Regressions found by API fuzzing (scripts/api-fuzz.sh, schemathesis against
//! `/openapi.json`): each test pins one defect it found, fixed.

use crate::support::server;
use serde_json::json;

/// `?after=` past `i64::MAX` was a 503 (the store could not bind the cursor); it means
/// "after the last possible record": an empty page.
#[tokio::test]
async fn an_audit_cursor_past_the_largest_sequence_is_an_empty_page() {
    let (server, _) = server().await;
    for after in [
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551615",
    ] {
        let page = server
            .client
            .get(&format!("/v1/audit?after={after}"), &server.owner_token)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        assert_eq!(page["items"], json!([]), "after={after}");
    }
    // A cursor past u64 is a bad query, not a server error.
    let reply = server
        .client
        .get("/v1/audit?after=18446744073709551616", &server.owner_token)
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.text);
    assert_eq!(reply.content_type(), "application/problem+json");
}

/// The spec named too few error answers: every `/v1` route may answer 401, 403 and 503,
/// every route with a JSON body 400, 404, 413, 415 and 422, every route with an id 404.
#[tokio::test]
async fn the_spec_names_every_error_the_extractors_answer() {
    let (server, _) = server().await;
    let spec = server
        .client
        .get("/openapi.json", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let mut missing = Vec::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        if !path.starts_with("/v1/") {
            continue;
        }
        for (method, operation) in item.as_object().unwrap() {
            let mut expected = vec!["401", "403", "503"];
            let json_body = operation["requestBody"]["content"]
                .get("application/json")
                .is_some();
            if json_body {
                expected.extend(["400", "404", "413", "415", "422"]);
            }
            if path.contains('{') {
                expected.push("404");
            }
            for status in expected {
                let response = &operation["responses"][status];
                if response["content"]
                    .get("application/problem+json")
                    .is_none()
                {
                    missing.push(format!("{method} {path} {status}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "undocumented errors: {missing:?}");
}
