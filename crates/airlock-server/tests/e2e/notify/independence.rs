//! Channels are independent: an SMTP server that accepts and never answers (a black hole)
//! delays no other channel's notifications, its attempt ends at the configured `timeout`
//! as a failed attempt, and stopping the notifier does not wait for it. A channel that
//! gives up is counted in `/metrics`.

use super::{next, notify, receiver, settings, wait_for_delivered, workspace_id};
use crate::support::{ask, server, PATIENCE};
use airlock_server::notify::Notifier;
use airlock_server::ServeOptions;
use airlock_store::NotificationStatus;
use airlock_testkit::TestServer;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// A TCP server on port 0 that accepts every connection and never sends a byte; the
/// sockets stay open as long as it runs. Returns its port.
async fn black_hole() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = Arc::new(Mutex::new(Vec::new()));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            held.lock().unwrap().push(socket);
        }
    });
    port
}

fn black_hole_settings(hooks: &str, smtp: u16, timeout: &str) -> String {
    format!(
        r#"
        [notifications]
        timeout = "{timeout}"
        retry = {{ initial = "100ms", attempts = 3 }}
        [[notifications.webhooks]]
        name = "ops"
        url = "{hooks}/ok"
        secret_env = "TEST_WEBHOOK_KEY"
        [notifications.email]
        to = ["alice@acme.test"]
        smtp = {{ host = "127.0.0.1", port = {smtp}, from = "airlock@acme.test" }}
        "#
    )
}

#[tokio::test]
async fn a_hanging_smtp_server_delays_no_other_channel_and_no_shutdown() {
    let (server, agent) = server().await;
    let (hooks, mut received) = receiver().await;
    let smtp = black_hole().await;
    let stop = CancellationToken::new();
    let notifier = Notifier::new(
        server.gate().clone(),
        settings(&black_hole_settings(&hooks, smtp, "60s")),
        &server.url,
    )
    .unwrap();
    let running = tokio::spawn(notifier.run(stop.clone()));

    let (_, first) = ask(&server, &agent, "bob@acme.test").await;
    let body: Value = serde_json::from_slice(&next(&mut received).await.body).unwrap();
    assert_eq!(body["approval"]["id"], first["id"]);
    // The email of the first approval is stuck in its SMTP greeting; the second approval
    // reaches the webhook all the same.
    let (_, second) = ask(&server, &agent, "carol@acme.test").await;
    let body: Value = serde_json::from_slice(&next(&mut received).await.body).unwrap();
    assert_eq!(body["approval"]["id"], second["id"]);
    let workspace = workspace_id(&server).await;
    let email = server
        .store()
        .approval_notifications(&workspace, first["id"].as_str().unwrap())
        .await
        .unwrap()
        .into_iter()
        .find(|(n, _)| n.channel == "email:alice@acme.test")
        .unwrap();
    assert!(email.1.is_empty(), "the email attempt ended: {email:?}");

    // Stopping does not wait for the attempt in flight (it has 60 s left).
    stop.cancel();
    tokio::time::timeout(PATIENCE, running)
        .await
        .expect("the notifier waited for the hanging SMTP attempt")
        .unwrap();
}

#[tokio::test]
async fn an_smtp_attempt_that_gets_no_answer_fails_at_the_timeout_and_is_retried() {
    let (server, agent) = server().await;
    let (hooks, _received) = receiver().await;
    let smtp = black_hole().await;
    let stop = notify(
        &server,
        settings(&black_hole_settings(&hooks, smtp, "300ms")),
    );
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let workspace = workspace_id(&server).await;
    let approval_id = approval["id"].as_str().unwrap();
    let recorded = wait_for_delivered(
        server.store(),
        &workspace,
        approval_id,
        "email:alice@acme.test",
    )
    .await;
    let (email, attempts) = recorded
        .iter()
        .find(|(n, _)| n.channel == "email:alice@acme.test")
        .unwrap();
    assert_eq!(email.status, NotificationStatus::GaveUp);
    assert_eq!(attempts.len(), 3);
    for attempt in attempts {
        let error = attempt.error.as_deref().unwrap();
        assert!(error.contains("no answer within 0.3 s"), "{error}");
    }
    stop.cancel();
}

#[tokio::test]
async fn a_channel_that_gives_up_is_counted_in_metrics() {
    let (hooks, _received) = receiver().await;
    let config = settings(&format!(
        r#"
        [notifications]
        retry = {{ initial = "50ms", attempts = 2 }}
        [[notifications.webhooks]]
        name = "ops"
        url = "{hooks}/always-fails"
        secret_env = "TEST_WEBHOOK_KEY"
        "#
    ));
    let options = ServeOptions {
        notifications: Some(config),
        ..ServeOptions::default()
    };
    let server = TestServer::start_with_options(None, options).await.unwrap();
    server.put_policy(crate::support::POLICY).await.unwrap();
    let (_, agent) = server.create_agent("scout").await.unwrap();
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let workspace = workspace_id(&server).await;
    let recorded = wait_for_delivered(
        server.store(),
        &workspace,
        approval["id"].as_str().unwrap(),
        "ops",
    )
    .await;
    assert_eq!(recorded[0].0.status, NotificationStatus::GaveUp);
    let metrics = reqwest::get(format!("{}/metrics", server.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "airlock_notifications_total{channel=\"ops\",outcome=\"failed\"} 1",
        "airlock_notifications_total{channel=\"ops\",outcome=\"gave_up\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
}
