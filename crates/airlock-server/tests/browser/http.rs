//! The pages over plain HTTP, where a browser is not needed to see it: redirects to the
//! sign-in page, where a sign-in may lead, the headers every page carries, and what the
//! cookie-authenticated event stream accepts.

use crate::support::Fixture;
use reqwest::redirect::Policy;
use reqwest::{Client, Response};

fn client() -> Client {
    Client::builder().redirect(Policy::none()).build().unwrap()
}

fn location(reply: &Response) -> &str {
    reply.headers()["location"].to_str().unwrap()
}

#[tokio::test]
async fn pages_without_a_session_lead_to_sign_in_and_back_and_bearer_tokens_do_not_open_them() {
    let fixture = Fixture::start().await;
    let url = &fixture.server.url;
    let http = client();
    for (path, expected) in [
        ("/", "/login"),
        ("/audit?kind=rule.", "/login?next=%2Faudit%3Fkind%3Drule."),
        ("/approvals/apr_x", "/login?next=%2Fapprovals%2Fapr_x"),
        ("/web/events", "/login"),
    ] {
        let reply = http
            .get(format!("{url}{path}"))
            .bearer_auth(&fixture.approver)
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 303, "{path}");
        assert_eq!(location(&reply), expected, "{path}");
    }
}

#[tokio::test]
async fn a_sign_in_goes_back_to_a_page_of_this_site_only() {
    let fixture = Fixture::start().await;
    let url = &fixture.server.url;
    let http = client();
    for (next, expected) in [
        ("/audit", "/audit"),
        ("//evil.example/x", "/"),
        ("https://evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("/login", "/"),
    ] {
        let body =
            serde_urlencoded::to_string([("token", fixture.approver.as_str()), ("next", next)])
                .unwrap();
        let reply = http
            .post(format!("{url}/login"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 303, "{next}");
        assert_eq!(location(&reply), expected, "{next}");
    }
    // A wrong token: the form again, 401, and no cookie.
    let reply = http
        .post(format!("{url}/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("token=alk_wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 401);
    assert!(reply.headers().get("set-cookie").is_none());
}

#[tokio::test]
async fn every_page_is_served_with_the_security_headers_and_never_cached() {
    let fixture = Fixture::start().await;
    let cookie = fixture.sign_in(&fixture.approver).await;
    let http = client();
    for path in ["/login", "/", "/audit", "/rules", "/policy"] {
        let reply = http
            .get(format!("{}{path}", fixture.server.url))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        let status = reply.status();
        let headers = reply.headers();
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["cache-control"], "no-store", "{path}");
        // Signed in, the sign-in page moves on to the inbox.
        let expected = if path == "/login" { 303 } else { 200 };
        assert_eq!(status, expected, "{path}");
    }
}

#[tokio::test]
async fn the_event_stream_opens_for_a_session_from_the_event_the_page_was_rendered_at() {
    let fixture = Fixture::start().await;
    let cookie = fixture.sign_in(&fixture.viewer).await;
    let inbox = fixture.page("/", &cookie).await;
    let after: u64 = inbox
        .split("data-after=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .parse()
        .unwrap();
    let (_, approval) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "bob@acme.test", "body": "hi"}),
        )
        .await;
    let mut reply = client()
        .get(format!("{}/web/events?after={after}", fixture.server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    assert!(reply.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    // The approval asked after the page was rendered is replayed.
    let id = approval["id"].as_str().unwrap();
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !seen.contains(id) {
        assert!(std::time::Instant::now() < deadline, "not replayed: {seen}");
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), reply.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("event: approval.requested"), "{seen}");
}

#[tokio::test]
async fn a_person_of_another_workspace_sees_nothing_of_this_one() {
    let fixture = Fixture::start().await;
    let (_, approval) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "bob@acme.test", "body": "hi"}),
        )
        .await;
    let id = approval["id"].as_str().unwrap();
    let stranger = fixture.server.second_workspace("elsewhere").await.unwrap();
    let cookie = fixture.sign_in(&stranger).await;
    let inbox = fixture.page("/", &cookie).await;
    assert!(!inbox.contains(id), "{inbox}");
    for path in [format!("/approvals/{id}"), format!("/web/cards/{id}")] {
        let reply = client()
            .get(format!("{}{path}", fixture.server.url))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 404, "{path}");
    }
}
