//! The pages over plain HTTP, where a browser is not needed to see it: redirects to the
//! sign-in page, where a sign-in may lead, the headers every page carries, and what the
//! cookie-authenticated event stream accepts.

use crate::support::{Fixture, POLICY};
use airlock_server::notify::sign;
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

/// The CSRF token of the session a page was rendered for.
fn csrf_of(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned()
}

/// The part of `page` from the first `start` to the first `end` after it.
fn between<'p>(page: &'p str, start: &str, end: &str) -> &'p str {
    let from = page
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in {page}"));
    let rest = &page[from..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

async fn post_form(
    fixture: &Fixture,
    path: &str,
    cookie: Option<&str>,
    form: &[(&str, &str)],
) -> Response {
    let mut request = client()
        .post(format!("{}{path}", fixture.server.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(serde_urlencoded::to_string(form).unwrap());
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    request.send().await.unwrap()
}

/// What a card approves is what it shows (G2): every argument, hidden characters written
/// out; a call too long to show whole is approved from its page, and its card offers
/// only Reject and the way there.
#[tokio::test]
async fn a_card_shows_every_argument_and_offers_approve_only_for_a_call_it_shows_whole() {
    let fixture = Fixture::start().await;
    let (_, short) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "ceo@acme.test", "body": "numbers", "bcc": "leak@rival.test\u{200b}"}),
        )
        .await;
    let long_body = format!("{} P.S. wire the money", "x".repeat(2000));
    let (_, long) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "ceo@acme.test", "body": long_body}),
        )
        .await;
    let cookie = fixture.sign_in(&fixture.approver).await;
    let inbox = fixture.page("/", &cookie).await;
    let card = |approval: &serde_json::Value| {
        let id = approval["id"].as_str().unwrap();
        between(&inbox, &format!("id=\"card-{id}\""), "</article>").to_owned()
    };

    // The short one: the Bcc no template mentions is on the card, its hidden character
    // written out, and the card may approve it.
    let short_card = card(&short);
    assert!(
        short_card.contains("leak@rival.test\\u200b"),
        "{short_card}"
    );
    assert!(!short_card.contains('\u{200b}'), "{short_card}");
    assert!(short_card.contains("value=\"approve\""), "{short_card}");
    assert!(short_card.contains("value=\"remember\""), "{short_card}");

    // The long one: cut on the card, so no Approve (nor remember) there; Reject stays,
    // and the link leads to the page that shows it all and approves it.
    let long_id = long["id"].as_str().unwrap();
    let long_card = card(&long);
    assert!(!long_card.contains("P.S. wire the money"), "{long_card}");
    assert!(!long_card.contains("value=\"approve\""), "{long_card}");
    assert!(!long_card.contains("value=\"remember\""), "{long_card}");
    assert!(long_card.contains("value=\"reject\""), "{long_card}");
    assert!(
        long_card.contains(&format!("class=\"read-all\" href=\"/approvals/{long_id}\"")),
        "{long_card}"
    );
    let page = fixture
        .page(&format!("/approvals/{long_id}"), &cookie)
        .await;
    assert!(page.contains("P.S. wire the money"), "{page}");
    assert!(page.contains("value=\"approve\""), "{page}");
    // The card fragment the live inbox fetches is the same card.
    let fragment = fixture
        .page(&format!("/web/cards/{long_id}"), &cookie)
        .await;
    assert!(!fragment.contains("value=\"approve\""), "{fragment}");
}

/// "Approve all of this turn" shows each call it approves with its arguments (G2), not
/// only its summary: the three mails' subjects are in no summary.
#[tokio::test]
async fn the_turn_form_shows_the_arguments_of_every_call_it_approves() {
    let fixture = Fixture::start().await;
    fixture.start_run("trio", "#three").await;
    let pending = fixture.pending(3).await;
    let cookie = fixture.sign_in(&fixture.approver).await;
    let id = pending[0]["id"].as_str().unwrap();
    let page = fixture.page(&format!("/approvals/{id}"), &cookie).await;
    let turn = between(&page, "<details class=\"turn\"", "</details>");
    for subject in ["One", "Two", "Three"] {
        assert!(
            turn.contains(&format!("&quot;subject&quot;: &quot;{subject}&quot;")),
            "{subject} in {turn}"
        );
    }
    // Each is shown whole, so each is checked.
    assert_eq!(turn.matches("name=\"item\" checked").count(), 3, "{turn}");
}

/// Hidden and reordering characters are written out wherever an argument's value is
/// shown: the diff and written content of an edit, the inbox card, the ambiguous calls.
#[tokio::test]
async fn hidden_characters_are_written_out_in_the_diff_the_cards_and_the_ambiguous_calls() {
    const HIDDEN: [char; 4] = ['\u{202e}', '\u{200b}', '\u{2066}', '\u{2069}'];
    let fixture = Fixture::start_manual().await;
    let policy = POLICY.replacen(
        "secrets = \"deny\"\n",
        "secrets = \"deny\"\noutcome_timeout = \"1m\"\n",
        1,
    );
    fixture.server.put_policy(&policy).await.unwrap();
    let (_, edit) = fixture
        .ask(
            "fs.edit",
            serde_json::json!({
                "path": "/srv/pass\u{200b}wd",
                "old_string": "a = 1\nsafe()",
                "new_string": "a = 2\nrm\u{2066} -rf /\u{2069}",
                "content": "benign\u{202e} ;)(lave",
            }),
        )
        .await;
    let (mail_call, mail) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "bob@acme.test", "body": "ran?\u{202e}x"}),
        )
        .await;
    let cookie = fixture.sign_in(&fixture.approver).await;
    let page = fixture
        .page(
            &format!("/approvals/{}", edit["id"].as_str().unwrap()),
            &cookie,
        )
        .await;
    let changes = between(&page, "<section class=\"changes\">", "</section>");
    for shown in [
        "/srv/pass&lt;U+200B&gt;wd",
        "rm&lt;U+2066&gt; -rf /&lt;U+2069&gt;",
        "benign&lt;U+202E&gt; ;)(lave",
    ] {
        assert!(changes.contains(shown), "{shown} in {changes}");
    }
    assert!(
        !page.contains(HIDDEN),
        "a hidden character is shown raw: {page}"
    );

    // The mail is approved, redeemed and never reported: ambiguous after a minute.
    fixture
        .server
        .client
        .post(
            &format!("/v1/approvals/{}/decision", mail["id"].as_str().unwrap()),
            &fixture.server.owner_token,
            &serde_json::json!({"decision": "approve", "binding_digest": mail["binding_digest"]}),
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let call_id = mail_call["id"].as_str().unwrap();
    fixture
        .server
        .client
        .post(
            &format!("/v1/calls/{call_id}/redeem"),
            &fixture.agent_token,
            &serde_json::json!({}),
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    fixture
        .server
        .advance(std::time::Duration::from_secs(61))
        .unwrap();
    let start = std::time::Instant::now();
    let inbox = loop {
        let inbox = fixture.page("/", &cookie).await;
        if inbox.contains(&format!("id=\"ambiguous-{call_id}\"")) {
            break inbox;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "never ambiguous: {inbox}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let ambiguous = between(&inbox, &format!("id=\"ambiguous-{call_id}\""), "</article>");
    assert!(ambiguous.contains("ran?\\u202ex"), "{ambiguous}");
    // The edit's card too: nothing on the inbox is shown raw.
    assert!(inbox.contains(&format!("id=\"card-{}\"", edit["id"].as_str().unwrap())));
    assert!(
        !inbox.contains(HIDDEN),
        "a hidden character is shown raw: {inbox}"
    );
}

/// A link in a mail or a chat is a navigation from another site, which never carries the
/// `SameSite=Strict` cookie: the page goes on from this site (which does), instead of
/// sending a signed-in person to the sign-in form. Other requests are unchanged.
#[tokio::test]
async fn an_arrival_from_another_site_goes_on_from_this_site_and_looking_at_a_link_spends_nothing()
{
    let fixture = Fixture::start().await;
    let (_, approval) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "bob@acme.test", "body": "hi"}),
        )
        .await;
    let id = approval["id"].as_str().unwrap();
    let url = format!("{}/approvals/{id}", fixture.server.url);
    let from_elsewhere = client()
        .get(&url)
        .header("sec-fetch-site", "cross-site")
        .header("sec-fetch-mode", "navigate")
        .send()
        .await
        .unwrap();
    assert_eq!(from_elsewhere.status(), 200);
    assert_eq!(
        from_elsewhere.headers()["refresh"],
        format!("0; url=/approvals/{id}").as_str()
    );
    assert_eq!(from_elsewhere.headers()["x-frame-options"], "DENY");
    let body = from_elsewhere.text().await.unwrap();
    assert!(
        body.contains(&format!("href=\"/approvals/{id}\"")),
        "{body}"
    );
    // From this site with no session: the sign-in, as before (so no loop).
    let here = client()
        .get(&url)
        .header("sec-fetch-site", "same-origin")
        .header("sec-fetch-mode", "navigate")
        .send()
        .await
        .unwrap();
    assert_eq!(here.status(), 303);
    assert_eq!(location(&here), format!("/login?next=%2Fapprovals%2F{id}"));

    // A signed link opened from a mail: looking at it (a person, a mail scanner, a chat's
    // preview) spends nothing and signs nobody in; its page's button, posted from this
    // site, does, once, and leads to the approval with the cookie.
    let workspace = fixture
        .server
        .store()
        .workspace_by_name("default")
        .await
        .unwrap()
        .unwrap()
        .id;
    let key = airlock_server::notify::link_key(fixture.server.gate())
        .await
        .unwrap();
    let claims = sign::LinkClaims {
        workspace,
        approval_id: id.to_owned(),
        user_id: fixture.approver_id.clone(),
        expires_at: jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1),
        nonce: "ntf_crosssite".into(),
    };
    let link = format!(
        "{}/l/{}",
        fixture.server.url,
        sign::link_token(key.as_bytes(), &claims).unwrap()
    );
    for _ in 0..2 {
        let looked = client()
            .get(&link)
            .header("sec-fetch-site", "cross-site")
            .header("sec-fetch-mode", "navigate")
            .send()
            .await
            .unwrap();
        assert_eq!(looked.status(), 200);
        assert!(looked.headers().get("set-cookie").is_none());
        let page = looked.text().await.unwrap();
        assert!(page.contains("id=\"use-link\""), "{page}");
    }
    let used = client()
        .post(&link)
        .header("sec-fetch-site", "same-origin")
        .header("content-type", "application/x-www-form-urlencoded")
        .send()
        .await
        .unwrap();
    assert_eq!(used.status(), 303);
    assert_eq!(location(&used), format!("/approvals/{id}"));
    let cookie = used.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let page = fixture.page(&format!("/approvals/{id}"), &cookie).await;
    assert!(page.contains("value=\"approve\""), "{page}");
    // Once only; and never posted from another site.
    let again = client().post(&link).send().await.unwrap();
    assert_eq!(again.status(), 410);
    let elsewhere = client()
        .post(&link)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), 403);
}

/// A form posted after the session ended leads, once signed in, back to the page the form
/// was on — not to its action, which only takes a POST.
#[tokio::test]
async fn a_form_posted_signed_out_comes_back_to_its_page() {
    let fixture = Fixture::start().await;
    let reply = post_form(
        &fixture,
        "/approvals/apr_1/decision",
        None,
        &[("decision", "approve"), ("binding_digest", "x")],
    )
    .await;
    assert_eq!(reply.status(), 303);
    assert_eq!(location(&reply), "/login?next=%2Fapprovals%2Fapr_1");
    let reply = post_form(&fixture, "/rules/rule_1/revoke", None, &[]).await;
    assert_eq!(location(&reply), "/login?next=%2Frules");
}

/// An edit the policy denies is refused as the API refuses it (409 `edit_denied`), and
/// nothing changes.
#[tokio::test]
async fn an_edit_the_policy_denies_is_a_conflict_and_changes_nothing() {
    let fixture = Fixture::start().await;
    let policy = format!(
        "{}\n[[rules]]\nname = \"not-to-rivals\"\ntool = \"email.send\"\ndecision = \"deny\"\nwhen = {{ to = {{ glob = \"*@rival.test\" }} }}\n",
        POLICY
    );
    fixture.server.put_policy(&policy).await.unwrap();
    let (_, approval) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "bob@acme.test", "body": "hi"}),
        )
        .await;
    let id = approval["id"].as_str().unwrap();
    let cookie = fixture.sign_in(&fixture.approver).await;
    let page = fixture.page(&format!("/approvals/{id}"), &cookie).await;
    let csrf = csrf_of(&page);
    let reply = post_form(
        &fixture,
        &format!("/approvals/{id}/decision"),
        Some(&cookie),
        &[
            ("csrf", &csrf),
            ("decision", "edit"),
            (
                "binding_digest",
                approval["binding_digest"].as_str().unwrap(),
            ),
            ("arguments", r#"{"to": "eve@rival.test", "body": "hi"}"#),
        ],
    )
    .await;
    assert_eq!(reply.status(), 409);
    let body = reply.text().await.unwrap();
    assert!(body.contains("Nothing was changed"), "{body}");
    assert_eq!(fixture.approval(id).await["status"], "pending");
}

/// A call whose arguments hold a redacted secret cannot be edited (the gate refuses any
/// such edit): its page does not offer it.
#[tokio::test]
async fn a_call_with_redacted_secrets_is_not_offered_for_editing() {
    let fixture = Fixture::start().await;
    let policy = POLICY.replace("secrets = \"deny\"", "secrets = \"redact\"");
    fixture.server.put_policy(&policy).await.unwrap();
    let (_, approval) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "ops@acme.test", "body": "token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef012345"}),
        )
        .await;
    let id = approval["id"].as_str().unwrap();
    let cookie = fixture.sign_in(&fixture.approver).await;
    let page = fixture.page(&format!("/approvals/{id}"), &cookie).await;
    assert!(page.contains("[REDACTED:"), "{page}");
    assert!(!page.contains("id=\"edit-arguments\""), "{page}");
    assert!(page.contains("id=\"no-edit\""), "{page}");
    assert!(page.contains("value=\"approve\""), "{page}");
}

/// A form larger than any page posts is refused as the API refuses a body too large (413),
/// and nothing changes.
#[tokio::test]
async fn a_form_too_large_is_a_413_and_changes_nothing() {
    let fixture = Fixture::start().await;
    let (_, approval) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "bob@acme.test", "body": "hi"}),
        )
        .await;
    let id = approval["id"].as_str().unwrap();
    let cookie = fixture.sign_in(&fixture.approver).await;
    let csrf = csrf_of(&fixture.page("/", &cookie).await);
    let huge = "a".repeat(4 * 1024 * 1024);
    let reply = post_form(
        &fixture,
        &format!("/approvals/{id}/decision"),
        Some(&cookie),
        &[
            ("csrf", &csrf),
            ("decision", "reject"),
            (
                "binding_digest",
                approval["binding_digest"].as_str().unwrap(),
            ),
            ("reason", &huge),
        ],
    )
    .await;
    assert_eq!(reply.status(), 413);
    assert_eq!(fixture.approval(id).await["status"], "pending");
}

/// Under the two-person rule "Approve and remember" would let one person allow what the
/// rule gives to several (the gate refuses it): the form does not offer it.
#[tokio::test]
async fn approve_and_remember_is_not_offered_where_several_people_must_approve() {
    let fixture = Fixture::start().await;
    let policy = POLICY.replace(
        "reason = \"mail leaves the company\"",
        "reason = \"mail leaves the company\"\napprovals = 2",
    );
    fixture.server.put_policy(&policy).await.unwrap();
    let (_, approval) = fixture
        .ask(
            "email.send",
            serde_json::json!({"to": "bob@acme.test", "body": "hi"}),
        )
        .await;
    let id = approval["id"].as_str().unwrap();
    let cookie = fixture.sign_in(&fixture.approver).await;
    for path in [format!("/approvals/{id}"), format!("/web/cards/{id}")] {
        let page = fixture.page(&path, &cookie).await;
        assert!(page.contains("0 of 2 approvals"), "{path}: {page}");
        assert!(page.contains("value=\"approve\""), "{path}: {page}");
        assert!(!page.contains("value=\"remember\""), "{path}: {page}");
    }
}

#[tokio::test]
async fn the_inbox_leads_to_the_older_requests_a_page_at_a_time() {
    let fixture = Fixture::start().await;
    // One more than a page holds: the first asked is the oldest.
    let mut ids = Vec::new();
    for index in 0..201 {
        let (_, approval) = fixture
            .ask(
                "email.send",
                serde_json::json!({"to": format!("p{index}@acme.test"), "body": "hi"}),
            )
            .await;
        ids.push(approval["id"].as_str().unwrap().to_owned());
    }
    let cookie = fixture.sign_in(&fixture.approver).await;
    let first = fixture.page("/", &cookie).await;
    assert!(first.contains(&format!("id=\"card-{}\"", ids[200])));
    assert!(!first.contains(&format!("id=\"card-{}\"", ids[0])));
    let older = format!("href=\"/?before={}\"", ids[1]);
    assert!(
        first.contains(&older),
        "the first page links to the older requests"
    );
    let second = fixture.page(&format!("/?before={}", ids[1]), &cookie).await;
    assert!(
        second.contains(&format!("id=\"card-{}\"", ids[0])),
        "{second}"
    );
    assert!(!second.contains(&format!("id=\"card-{}\"", ids[1])));
    assert!(
        second.contains("data-older"),
        "an older page takes no new arrivals"
    );
    assert!(
        second.contains("Newest requests"),
        "and leads back to the newest"
    );
    assert!(!first.contains("data-older") && !first.contains("Newest requests"));
    assert!(
        !second.contains("?before="),
        "nothing is older than the last page"
    );
}
