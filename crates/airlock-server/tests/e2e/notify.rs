//! Notifications (issue 7): a real server with the notifier running beside it (on the
//! server's own gate), a webhook receiver written here (axum on port 0), a real SMTP sink
//! (`python3 -m aiosmtpd`), and the signed links opened over HTTP as a browser would.
//!
//! - `links`: who a link signs in (only an email recipient's own user), and when not.
//! - `independence`: a channel that hangs delays no other channel and no shutdown; a
//!   channel that gives up is counted.

mod independence;
mod links;

use crate::support::{ask, server, PATIENCE};
use airlock_protocol::Role;
use airlock_server::notify::config::{ServerConfig, Settings};
use airlock_server::notify::sign::hmac_sha256;
use airlock_server::notify::Notifier;
use airlock_store::{NotificationStatus, Store};
use airlock_testkit::TestServer;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::Value;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const WEBHOOK_KEY: &str = "whsec_test_3f9a";

/// One request the receiver got.
#[derive(Debug)]
struct Received {
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

#[derive(Clone)]
struct Receiver {
    sender: mpsc::UnboundedSender<Received>,
    /// Requests to `/fails-once` answered so far (the first gets a 500).
    seen: Arc<AtomicUsize>,
}

/// A webhook receiver on port 0: `/fails-once` answers 500 the first time, 200 after;
/// `/ok` always 200, `/always-fails` always 500. Returns its base URL and what it receives.
async fn receiver() -> (String, mpsc::UnboundedReceiver<Received>) {
    async fn record(
        State(receiver): State<Receiver>,
        uri: axum::http::Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> StatusCode {
        let path = uri.path().to_owned();
        let fail = path == "/always-fails"
            || (path == "/fails-once" && receiver.seen.fetch_add(1, Ordering::SeqCst) == 0);
        receiver
            .sender
            .send(Received {
                path,
                headers,
                body,
            })
            .unwrap();
        if fail {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::OK
        }
    }
    let (sender, received) = mpsc::unbounded_channel();
    let state = Receiver {
        sender,
        seen: Arc::default(),
    };
    let app = Router::new()
        .route("/fails-once", post(record))
        .route("/ok", post(record))
        .route("/always-fails", post(record))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

fn settings(toml: &str) -> Settings {
    let env = |name: &str| (name == "TEST_WEBHOOK_KEY").then(|| WEBHOOK_KEY.to_owned());
    ServerConfig::parse(toml, "test.toml")
        .unwrap()
        .notification_settings(&env, None)
        .unwrap()
        .unwrap()
}

/// Runs the notifier on the server's gate until the returned token is cancelled.
fn notify(server: &TestServer, settings: Settings) -> CancellationToken {
    let stop = CancellationToken::new();
    let notifier = Notifier::new(server.gate().clone(), settings, &server.url).unwrap();
    tokio::spawn(notifier.run(stop.clone()));
    stop
}

async fn next(received: &mut mpsc::UnboundedReceiver<Received>) -> Received {
    tokio::time::timeout(PATIENCE, received.recv())
        .await
        .expect("no webhook arrived in time")
        .unwrap()
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> &'h str {
    headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
}

/// A browser that does not follow redirects, so the test sees the 303 and the cookie.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn workspace_id(server: &TestServer) -> String {
    server
        .store()
        .workspace_by_name("default")
        .await
        .unwrap()
        .unwrap()
        .id
}

#[tokio::test]
async fn a_signed_webhook_is_retried_after_a_500() {
    let (server, agent) = server().await;
    server.create_user("alice", Role::Approver).await.unwrap();
    let (hooks, mut received) = receiver().await;
    let stop = notify(
        &server,
        settings(&format!(
            r#"
            [notifications]
            retry = {{ initial = "100ms", max = "1s", attempts = 5 }}
            [[notifications.webhooks]]
            name = "ops"
            url = "{hooks}/fails-once"
            secret_env = "TEST_WEBHOOK_KEY"
            user = "alice"
            [[notifications.webhooks]]
            name = "chat"
            url = "{hooks}/ok"
            format = "slack"
            [[notifications.webhooks]]
            name = "exec-only"
            url = "{hooks}/ok"
            format = "slack"
            min_risk = "exec"
            "#
        )),
    );
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let approval_id = approval["id"].as_str().unwrap();

    // Two requests to the signed channel (500, then 200) and one Slack message.
    let mut signed = Vec::new();
    let mut slack = Vec::new();
    while signed.len() < 2 || slack.is_empty() {
        let request = next(&mut received).await;
        match request.path.as_str() {
            "/fails-once" => signed.push(request),
            _ => slack.push(request),
        }
    }
    for request in &signed {
        // The signature verifies with the key over "<timestamp>.<raw body>".
        let timestamp = header(&request.headers, "x-airlock-timestamp");
        let mut material = format!("{timestamp}.").into_bytes();
        material.extend_from_slice(&request.body);
        let expected = format!(
            "sha256={}",
            hex::encode(hmac_sha256(WEBHOOK_KEY.as_bytes(), &material))
        );
        assert_eq!(header(&request.headers, "x-airlock-signature"), expected);
        let wrong = hmac_sha256(b"another key", &material);
        assert_ne!(expected, format!("sha256={}", hex::encode(wrong)));
        assert_eq!(header(&request.headers, "content-type"), "application/json");
    }
    // Retries carry the same delivery id and the same body.
    assert_eq!(signed[0].body, signed[1].body);
    let body: Value = serde_json::from_slice(&signed[1].body).unwrap();
    assert_eq!(body["event"], "approval.requested");
    assert_eq!(
        header(&signed[1].headers, "x-airlock-delivery"),
        body["delivery"].as_str().unwrap()
    );
    assert_eq!(body["approval"]["id"], approval_id);
    assert_eq!(body["approval"]["agent"], "scout");
    assert_eq!(body["approval"]["tool"], "email.send");
    assert_eq!(body["approval"]["risk"], "external");
    assert_eq!(body["approval"]["summary"], "Send email to bob@acme.test");
    assert_eq!(body["approval"]["deadline"], approval["deadline"]);
    // A webhook is read by whoever reads what it receives: its link (`user` or not) is
    // the approval's page, which asks for a sign-in.
    assert_eq!(
        body["link"],
        format!("{}/approvals/{approval_id}", server.url)
    );

    // The Slack shape: fallback text and blocks with a button to the page (no user:
    // the plain approval page, which asks for a sign-in).
    let message: Value = serde_json::from_slice(&slack[0].body).unwrap();
    assert!(message["text"]
        .as_str()
        .unwrap()
        .contains("Send email to bob@acme.test"));
    let button = &message["blocks"][2]["elements"][0];
    assert_eq!(button["type"], "button");
    assert_eq!(
        button["url"],
        format!("{}/approvals/{approval_id}", server.url)
    );
    assert!(slack[0].headers.get("x-airlock-signature").is_none());

    // Every attempt is recorded; the filtered channel is skipped, not sent.
    let workspace = workspace_id(&server).await;
    let store = server.store();
    let recorded = wait_for_delivered(store, &workspace, approval_id, "ops").await;
    let by_channel: Vec<_> = recorded
        .iter()
        .map(|(n, attempts)| {
            let codes: Vec<_> = attempts.iter().map(|a| a.status_code).collect();
            (n.channel.as_str(), n.status, codes)
        })
        .collect();
    assert_eq!(
        by_channel,
        vec![
            ("chat", NotificationStatus::Delivered, vec![Some(200)]),
            ("exec-only", NotificationStatus::Skipped, vec![]),
            (
                "ops",
                NotificationStatus::Delivered,
                vec![Some(500), Some(200)]
            ),
        ]
    );
    let ops = &recorded[2];
    assert!(ops.1[0].error.as_deref().unwrap().contains("500"));
    assert_eq!(ops.1[1].error, None);
    assert!(ops.1[0].at < ops.1[1].at);

    stop.cancel();
}

async fn wait_for_delivered(
    store: &dyn Store,
    workspace: &str,
    approval_id: &str,
    channel: &str,
) -> Vec<(
    airlock_store::Notification,
    Vec<airlock_store::NotificationAttempt>,
)> {
    let started = std::time::Instant::now();
    loop {
        let found = store
            .approval_notifications(workspace, approval_id)
            .await
            .unwrap();
        let done = found
            .iter()
            .all(|(n, _)| n.status != NotificationStatus::Pending)
            && found.iter().any(|(n, _)| n.channel == channel);
        if done {
            return found;
        }
        assert!(started.elapsed() < PATIENCE, "not delivered: {found:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts `python3 -m aiosmtpd` on a free loopback port; lines it prints arrive on the
/// returned channel.
async fn smtp_sink() -> (tokio::process::Child, u16, mpsc::UnboundedReceiver<String>) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut sink = tokio::process::Command::new("python3")
        .args(["-u", "-m", "aiosmtpd", "-n", "-l"])
        .arg(format!("127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 is needed for the SMTP sink");
    let (sender, lines) = mpsc::unbounded_channel();
    let mut stdout = BufReader::new(sink.stdout.take().unwrap()).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stdout.next_line().await {
            let _ = sender.send(line);
        }
    });
    for _ in 0..200 {
        if let Some(status) = sink.try_wait().unwrap() {
            panic!(
                "the SMTP sink (python3 -m aiosmtpd) exited with {status}; pip install aiosmtpd"
            );
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return (sink, port, lines);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the SMTP sink did not listen on port {port} within 10 s");
}

/// The next message the sink prints, decoded as a mail client reads it: the body is
/// quoted-printable (a link is longer than a mail line), so soft line breaks are joined
/// and `=3D` is `=`.
async fn next_mail(lines: &mut mpsc::UnboundedReceiver<String>) -> String {
    let mut message = Vec::new();
    loop {
        let line = tokio::time::timeout(PATIENCE, lines.recv())
            .await
            .expect("no mail arrived in time")
            .unwrap();
        if line.contains("END MESSAGE") {
            break;
        }
        message.push(line);
    }
    message.join("\n").replace("=\n", "").replace("=3D", "=")
}

/// The link in a mail's text (the first address on `base`).
fn link_in(text: &str, base: &str) -> String {
    let start = text
        .find(&format!("{base}/"))
        .unwrap_or_else(|| panic!("no link in {text}"));
    text[start..].split_whitespace().next().unwrap().to_owned()
}

/// An email channel to `to` (addresses) on the sink at `port`, with `extra` lines in
/// `[notifications.email]`.
fn email_settings(port: u16, to: &[&str], extra: &str) -> Settings {
    settings(&format!(
        r#"
        [notifications]
        link_ttl = "10m"
        [notifications.email]
        to = {to:?}
        {extra}
        smtp = {{ host = "127.0.0.1", port = {port}, from = "airlock@acme.test" }}
        "#
    ))
}

#[tokio::test]
async fn an_email_with_the_link_reaches_the_smtp_sink_and_signs_its_recipient_in_once() {
    let (_sink, port, mut lines) = smtp_sink().await;
    let (server, agent) = server().await;
    let (alice, _) = server.create_user("alice", Role::Approver).await.unwrap();
    let stop = notify(
        &server,
        email_settings(port, &["alice@acme.test"], "user = \"alice\""),
    );
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let approval_id = approval["id"].as_str().unwrap();
    let text = next_mail(&mut lines).await;
    let link = link_in(&text, &server.url);
    assert!(link.starts_with(&format!("{}/l/v1.", server.url)), "{text}");
    assert!(text.contains("To: alice@acme.test"), "{text}");
    assert!(
        text.contains("Subject: [airlock] scout asks: Send email to bob@acme.test"),
        "{text}"
    );
    // Looking at the link (as a mail scanner does) spends nothing and signs nobody in.
    let browser = browser();
    for _ in 0..2 {
        let looked = browser.get(&link).send().await.unwrap();
        assert_eq!(looked.status(), 200);
        assert!(looked.headers().get("set-cookie").is_none());
        assert!(looked
            .text()
            .await
            .unwrap()
            .contains("Sign in and open the approval"));
    }
    // Its button signs alice in once and opens the approval page.
    let opened = browser.post(&link).send().await.unwrap();
    assert_eq!(opened.status(), 303);
    assert_eq!(
        opened.headers()["location"],
        format!("/approvals/{approval_id}").as_str()
    );
    let cookie = opened.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let page = browser
        .get(format!("{}/approvals/{approval_id}", server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("alice"));
    let audit = crate::support::audit_records(&server).await;
    let sign_in = audit
        .iter()
        .find(|r| r["kind"] == "web_session.created" && r["data"]["via"] == "link")
        .expect("the sign-in by link is audited");
    assert_eq!(sign_in["actor"], format!("user:{alice}"));

    let again = browser.post(&link).send().await.unwrap();
    assert_eq!(again.status(), 410);
    assert!(again.headers().get("set-cookie").is_none());
    assert!(again.text().await.unwrap().contains("already used"));

    // A link changed on the way (another user, a later expiry) is not valid.
    let forged = link.replace(&alice, "usr_0000");
    let refused = browser.get(&forged).send().await.unwrap();
    assert_eq!(refused.status(), 404);
    assert!(refused.text().await.unwrap().contains("not valid"));
    stop.cancel();
}

#[tokio::test]
async fn an_expired_link_is_refused() {
    let (_sink, port, mut lines) = smtp_sink().await;
    let (server, agent) = crate::support::manual_server(crate::support::POLICY).await;
    server.create_user("alice", Role::Approver).await.unwrap();
    let stop = notify(
        &server,
        email_settings(port, &["alice@acme.test"], "user = \"alice\""),
    );
    ask(&server, &agent, "bob@acme.test").await;
    let link = link_in(&next_mail(&mut lines).await, &server.url);
    assert!(link.contains("/l/v1."), "{link}");
    // Ten minutes later (well before the approval's one-hour deadline): expired.
    server.advance(Duration::from_secs(601)).unwrap();
    let refused = browser().get(&link).send().await.unwrap();
    assert_eq!(refused.status(), 410);
    assert!(refused.headers().get("set-cookie").is_none());
    assert!(refused.text().await.unwrap().contains("expired"));
    stop.cancel();
}

#[tokio::test]
async fn a_webhook_that_keeps_failing_is_given_up_after_its_attempts() {
    let (server, agent) = server().await;
    let (hooks, mut received) = receiver().await;
    let stop = notify(
        &server,
        settings(&format!(
            r#"
            [notifications]
            retry = {{ initial = "50ms", attempts = 3 }}
            [[notifications.webhooks]]
            url = "{hooks}/always-fails"
            secret_env = "TEST_WEBHOOK_KEY"
            "#
        )),
    );
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let approval_id = approval["id"].as_str().unwrap();
    let workspace = workspace_id(&server).await;
    let recorded = wait_for_delivered(server.store(), &workspace, approval_id, "webhooks[0]").await;
    let (notification, attempts) = &recorded[0];
    assert_eq!(notification.status, NotificationStatus::GaveUp);
    assert_eq!(notification.attempts, 3);
    let codes: Vec<_> = attempts.iter().map(|a| a.status_code).collect();
    assert_eq!(codes, vec![Some(500); 3]);
    // Backed off: 50 ms, then 100 ms, between the attempts (and not a whole second: the
    // sweeper sleeps until the next retry is due).
    let gaps: Vec<_> = attempts
        .windows(2)
        .map(|pair| pair[1].at.as_millisecond() - pair[0].at.as_millisecond())
        .collect();
    assert!(gaps[0] >= 50 && gaps[1] >= 100, "{gaps:?}");
    assert!(gaps[0] < 900 && gaps[1] < 900, "{gaps:?}");
    for _ in 0..3 {
        next(&mut received).await;
    }
    stop.cancel();
}

#[tokio::test]
async fn an_approval_decided_before_its_retry_is_not_notified_again() {
    let (server, agent) = server().await;
    let (hooks, mut received) = receiver().await;
    let stop = notify(
        &server,
        settings(&format!(
            r#"
            [notifications]
            retry = {{ initial = "300ms", attempts = 5 }}
            [[notifications.webhooks]]
            url = "{hooks}/always-fails"
            secret_env = "TEST_WEBHOOK_KEY"
            "#
        )),
    );
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    next(&mut received).await;
    let decided = crate::support::decide(&server, &server.owner_token, &approval, "approve").await;
    decided.expect_status(200).unwrap();
    let workspace = workspace_id(&server).await;
    let approval_id = approval["id"].as_str().unwrap();
    let recorded = wait_for_delivered(server.store(), &workspace, approval_id, "webhooks[0]").await;
    let (notification, attempts) = &recorded[0];
    assert_eq!(notification.status, NotificationStatus::Skipped);
    assert_eq!(
        notification.last_error.as_deref(),
        Some("the approval is already approved")
    );
    assert_eq!(attempts.len(), 1);
    assert!(
        received.try_recv().is_err(),
        "sent again after the decision"
    );
    stop.cancel();
}

#[tokio::test]
async fn a_slack_webhooks_text_carries_no_live_markup() {
    let (server, agent) = server().await;
    let (hooks, mut received) = receiver().await;
    let stop = notify(
        &server,
        settings(&format!(
            r#"
            [[notifications.webhooks]]
            url = "{hooks}/ok"
            format = "slack"
            "#
        )),
    );
    ask(
        &server,
        &agent,
        "<https://evil.example/login|Open in airlock>",
    )
    .await;
    let message: Value = serde_json::from_slice(&next(&mut received).await.body).unwrap();
    // Slack shows `text` in notifications (and a receiver that ignores blocks shows only
    // it): an agent's `<url|label>` there would be a live link.
    let text = message["text"].as_str().unwrap();
    assert!(!text.contains("<https://evil"), "{text}");
    assert!(
        text.contains("&lt;https://evil.example/login|Open in airlock&gt;"),
        "{text}"
    );
    assert!(!message.to_string().contains("<https://evil"), "{message}");
    stop.cancel();
}
