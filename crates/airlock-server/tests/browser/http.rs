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

/// The turn form without a browser: it lists the run's pending calls; a posted item whose
/// approval was decided meanwhile shows its problem and leaves the others decided; an
/// approval of no run, or the only one of its run, gets no turn form.
#[tokio::test]
async fn a_stale_item_of_a_turn_is_refused_alone() {
    let fixture = Fixture::start().await;
    fixture.start_run("trio", "#three").await;
    let pending = fixture.pending(3).await;
    let cookie = fixture.sign_in(&fixture.approver).await;
    let id = |n: usize| pending[n]["id"].as_str().unwrap().to_owned();
    let page = fixture
        .page(&format!("/approvals/{}", id(0)), &cookie)
        .await;
    assert!(
        page.contains("Approve all of this turn (3 calls)"),
        "{page}"
    );
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    // The third is rejected elsewhere before the form is posted.
    fixture
        .server
        .client
        .post(
            &format!("/v1/approvals/{}/decision", id(2)),
            &fixture.server.owner_token,
            &serde_json::json!({"decision": "reject", "binding_digest": pending[2]["binding_digest"]}),
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let mut form = vec![
        ("csrf".to_owned(), csrf),
        ("decision".into(), "approve".into()),
    ];
    for approval in &pending {
        let (id, digest) = (&approval["id"], &approval["binding_digest"]);
        form.push((
            "item".into(),
            format!("{} {}", id.as_str().unwrap(), digest.as_str().unwrap()),
        ));
    }
    let reply = client()
        .post(format!("{}/turns/decision", fixture.server.url))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(serde_urlencoded::to_string(&form).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    let results = reply.text().await.unwrap();
    assert!(results.contains("Decided 2 of 3"), "{results}");
    assert!(
        results.contains(&format!(
            "data-approval-id=\"{}\" data-problem=\"already_decided\"",
            id(2)
        )),
        "{results}"
    );
    for (n, status) in [(0, "approved"), (1, "approved"), (2, "rejected")] {
        assert_eq!(fixture.approval(&id(n)).await["status"], status);
    }
    // Nothing checked is a precise 400, and nothing changes.
    let empty = client()
        .post(format!("{}/turns/decision", fixture.server.url))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(serde_urlencoded::to_string([("csrf", form[0].1.as_str())]).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status(), 400);
    // An approval asked outside any run has no turn to offer.
    let (_, alone) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "x@acme.test", "body": "1"}),
        )
        .await;
    let page = fixture
        .page(
            &format!("/approvals/{}", alone["id"].as_str().unwrap()),
            &cookie,
        )
        .await;
    assert!(!page.contains("Approve all of this turn"), "{page}");
}
