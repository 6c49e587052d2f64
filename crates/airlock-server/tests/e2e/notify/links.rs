//! Who a notification's link signs in (G6: a link never lets its clicker do more than they
//! may). A shared channel (a webhook, Slack) is read by people airlock cannot tell apart,
//! so its link is the approval's page, which asks whoever opens it to sign in as
//! themselves. Only an email recipient bound to their own user gets a link that signs
//! that user in, and only while the approval is pending.

use super::{
    browser, email_settings, link_in, next, next_mail, notify, receiver, settings, smtp_sink,
};
use crate::support::{ask, audit_records, decide, server};
use airlock_protocol::Role;
use serde_json::Value;

#[tokio::test]
async fn a_shared_channels_link_signs_nobody_in_even_with_a_user_configured() {
    let (server, agent) = server().await;
    server.create_user("alice", Role::Approver).await.unwrap();
    let (hooks, mut received) = receiver().await;
    let config = settings(&format!(
        r#"
        [[notifications.webhooks]]
        name = "ops"
        url = "{hooks}/ok"
        secret_env = "TEST_WEBHOOK_KEY"
        user = "alice"
        [[notifications.webhooks]]
        name = "chat"
        url = "{hooks}/ok"
        format = "slack"
        user = "alice"
        "#
    ));
    // The ignored `user` keys are said, once each, when the notifier starts.
    assert_eq!(config.warnings.len(), 2, "{:?}", config.warnings);
    assert!(config.warnings[0].contains("`ops`: `user` is ignored"));
    let stop = notify(&server, config);
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let page = format!(
        "{}/approvals/{}",
        server.url,
        approval["id"].as_str().unwrap()
    );
    for _ in 0..2 {
        let request = next(&mut received).await;
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let shown = body.to_string();
        assert!(!shown.contains("/l/v1."), "a link that signs in: {shown}");
        assert!(shown.contains(&page), "{shown}");
    }
    // The page asks whoever opens it to sign in.
    let opened = browser().get(&page).send().await.unwrap();
    assert_eq!(opened.status(), 303);
    assert!(opened.headers()["location"]
        .to_str()
        .unwrap()
        .starts_with("/login"));
    stop.cancel();
}

#[tokio::test]
async fn each_email_recipient_gets_a_link_for_their_own_user_only() {
    let (_sink, port, mut lines) = smtp_sink().await;
    let (server, agent) = server().await;
    let (alice, _) = server.create_user("alice", Role::Approver).await.unwrap();
    server.create_user("bob", Role::Viewer).await.unwrap();
    let stop = notify(
        &server,
        email_settings(
            port,
            &["alice@acme.test", "bob@acme.test"],
            r#"users = { "alice@acme.test" = "alice" }"#,
        ),
    );
    let (_, approval) = ask(&server, &agent, "carol@acme.test").await;
    let approval_id = approval["id"].as_str().unwrap();
    let mut links = std::collections::BTreeMap::new();
    for _ in 0..2 {
        let text = next_mail(&mut lines).await;
        let to = if text.contains("To: alice@acme.test") {
            "alice"
        } else {
            assert!(text.contains("To: bob@acme.test"), "{text}");
            "bob"
        };
        links.insert(to, link_in(&text, &server.url));
    }
    // bob's address is bound to nobody: his link is the page, which asks for a sign-in.
    assert_eq!(
        links["bob"],
        format!("{}/approvals/{approval_id}", server.url)
    );
    // alice's signs alice in, and only her.
    let alices = &links["alice"];
    assert!(alices.contains("/l/v1."), "{alices}");
    let opened = browser().post(alices).send().await.unwrap();
    assert_eq!(opened.status(), 303);
    let audit = audit_records(&server).await;
    let sign_ins: Vec<_> = audit
        .iter()
        .filter(|r| r["kind"] == "web_session.created" && r["data"]["via"] == "link")
        .map(|r| r["actor"].clone())
        .collect();
    assert_eq!(sign_ins, [Value::from(format!("user:{alice}"))]);
    stop.cancel();
}

#[tokio::test]
async fn a_link_signs_nobody_in_once_its_approval_was_decided() {
    let (_sink, port, mut lines) = smtp_sink().await;
    let (server, agent) = server().await;
    server.create_user("alice", Role::Approver).await.unwrap();
    let stop = notify(
        &server,
        email_settings(port, &["alice@acme.test"], "user = \"alice\""),
    );
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let link = link_in(&next_mail(&mut lines).await, &server.url);
    assert!(link.contains("/l/v1."), "{link}");
    decide(&server, &server.owner_token, &approval, "reject")
        .await
        .expect_status(200)
        .unwrap();
    // Archived or forwarded after the decision, the unused link opens no session.
    let looked = browser().get(&link).send().await.unwrap();
    assert_eq!(looked.status(), 410);
    assert!(looked.text().await.unwrap().contains("no longer waiting"));
    let used = browser().post(&link).send().await.unwrap();
    assert_eq!(used.status(), 410);
    assert!(used.headers().get("set-cookie").is_none());
    let text = used.text().await.unwrap();
    assert!(text.contains("already rejected"), "{text}");
    let audit = audit_records(&server).await;
    assert!(
        !audit.iter().any(|r| r["kind"] == "web_session.created"),
        "{audit:?}"
    );
    stop.cancel();
}
