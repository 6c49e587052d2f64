//! Interactive Slack approvals (issue 20): a real server with its notifier posting to the
//! fake Slack of `slack_fake.rs`, and Slack's callbacks signed as Slack signs them. Each
//! flow ends with the message updated (buttons gone, the outcome said) and the approval
//! as the gate recorded it. Runs on either backend (`AIRLOCK_TEST_BACKEND`).

use crate::slack_fake::{FakeSlack, SIGNING_SECRET};
use crate::support::{ask, decide, POLICY};
use airlock_gate::clock::ManualClock;
use airlock_protocol::Role;
use airlock_server::notify::config::ServerConfig;
use airlock_server::ServeOptions;
use airlock_testkit::TestServer;
use serde_json::Value;
use std::sync::Arc;

/// A server under the shared policy with the Slack channel on `fake`, an agent, and
/// alice (an approver, whom `U0ALICE` maps to); returns the server, the agent's token
/// and alice's user id.
async fn slack_server(
    fake: &FakeSlack,
    clock: Option<Arc<ManualClock>>,
) -> (TestServer, String, String) {
    let env = |name: &str| match name {
        "SLACK_BOT" => Some(crate::slack_fake::BOT_TOKEN.to_owned()),
        "SLACK_SIGNING" => Some(SIGNING_SECRET.to_owned()),
        _ => None,
    };
    let settings = ServerConfig::parse(&fake.config(), "test.toml")
        .unwrap()
        .notification_settings(&env, None)
        .unwrap()
        .unwrap();
    let options = ServeOptions {
        notifications: Some(settings),
        ..ServeOptions::default()
    };
    let server = TestServer::start_with_options(clock, options)
        .await
        .unwrap();
    server.put_policy(POLICY).await.unwrap();
    let (_, agent) = server.create_agent("scout").await.unwrap();
    let (alice, _) = server.create_user("alice", Role::Approver).await.unwrap();
    (server, agent, alice)
}

/// Asks, then waits for the `count`-th message; returns the approval and the message's ts.
async fn asked(
    server: &TestServer,
    fake: &FakeSlack,
    agent: &str,
    count: usize,
) -> (Value, String) {
    let (_, approval) = ask(server, agent, "bob@acme.test").await;
    let posted = fake.until_requests("chat.postMessage", count).await;
    let ts = posted[count - 1].answer["ts"].as_str().unwrap().to_owned();
    // Slack answered the post before the notifier recorded the message (its `ts` comes
    // from that answer); a click is only meaningful once the server knows the message.
    let id = approval["id"].as_str().unwrap();
    let start = std::time::Instant::now();
    while server
        .gate()
        .notifications()
        .slack_message(id, "slack")
        .await
        .unwrap()
        .is_none()
    {
        assert!(
            start.elapsed() < crate::support::PATIENCE,
            "the message of {id} was never recorded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    (approval, ts)
}

async fn approval(server: &TestServer, id: &str) -> Value {
    server
        .client
        .get(&format!("/v1/approvals/{id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()
}

fn has_buttons(message: &Value) -> bool {
    message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|block| block["type"] == "actions")
}

#[tokio::test]
async fn approve_in_slack_decides_as_the_mapped_user_and_updates_the_message() {
    let fake = FakeSlack::start().await;
    let (server, agent, alice) = slack_server(&fake, None).await;
    let (asked_for, ts) = asked(&server, &fake, &agent, 1).await;
    let posted = &fake.requests("chat.postMessage")[0].body;
    // The preview: tool, summary, the redacted arguments; and both buttons, bound.
    let shown = posted.to_string();
    assert!(
        shown.contains("email.send") && shown.contains("bob@acme.test"),
        "{shown}"
    );
    let value = format!(
        "{}:{}",
        asked_for["id"].as_str().unwrap(),
        asked_for["binding_digest"].as_str().unwrap()
    );
    assert!(shown.contains(&value), "{shown}");
    assert!(has_buttons(posted));

    assert_eq!(
        fake.click(&server.url, &ts, "airlock_approve", "U0ALICE")
            .await,
        200
    );
    let decided = approval(&server, asked_for["id"].as_str().unwrap()).await;
    assert_eq!(decided["status"], "approved", "{decided}");
    assert_eq!(decided["decided_by"], format!("user:{alice}"));
    let message = fake.until_message_says(&ts, "Approved by alice").await;
    assert!(!has_buttons(&message), "{message}");
}

#[tokio::test]
async fn reject_opens_a_modal_and_its_reason_reaches_the_gate() {
    let fake = FakeSlack::start().await;
    let (server, agent, _) = slack_server(&fake, None).await;
    let (asked_for, ts) = asked(&server, &fake, &agent, 1).await;
    let id = asked_for["id"].as_str().unwrap();

    assert_eq!(
        fake.click(&server.url, &ts, "airlock_reject", "U0ALICE")
            .await,
        200
    );
    let opened = fake.until_requests("views.open", 1).await;
    assert_eq!(opened[0].body["view"]["type"], "modal");
    // Opening the modal decides nothing.
    assert_eq!(approval(&server, id).await["status"], "pending");

    let payload = fake.submission_payload("U0ALICE", "not to external addresses");
    let (status, ..) = fake
        .deliver(&server.url, &payload, None, SIGNING_SECRET)
        .await;
    assert_eq!(status, 200);
    let decided = approval(&server, id).await;
    assert_eq!(decided["status"], "rejected", "{decided}");
    assert_eq!(decided["decision_reason"], "not to external addresses");
    let message = fake
        .until_message_says(&ts, "Rejected by alice: not to external addresses")
        .await;
    assert!(!has_buttons(&message));
}

#[tokio::test]
async fn decided_elsewhere_updates_the_message_and_a_late_click_changes_nothing() {
    let fake = FakeSlack::start().await;
    let (server, agent, _) = slack_server(&fake, None).await;
    let (asked_for, ts) = asked(&server, &fake, &agent, 1).await;
    let id = asked_for["id"].as_str().unwrap();

    decide(&server, &server.owner_token, &asked_for, "reject")
        .await
        .expect_status(200)
        .unwrap();
    let message = fake.until_message_says(&ts, "Rejected by owner").await;
    assert!(!has_buttons(&message));

    // A click on a stale copy of the message (Slack clients lag): nothing changes.
    let late = fake.click_payload_from(&posted_body(&fake), &ts, "airlock_approve", "U0ALICE");
    let (status, ..) = fake.deliver(&server.url, &late, None, SIGNING_SECRET).await;
    assert_eq!(status, 200);
    let after = approval(&server, id).await;
    assert_eq!(after["status"], "rejected");
    assert_eq!(after["decision_reason"], "checked");
    let audit = crate::support::audit_records(&server).await;
    let decisions = audit
        .iter()
        .filter(|record| {
            record["subject"] == id
                && record["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("approval.")
                && record["kind"] != "approval.requested"
        })
        .count();
    assert_eq!(decisions, 1, "{audit:?}");
}

fn posted_body(fake: &FakeSlack) -> Value {
    fake.requests("chat.postMessage")[0].body.clone()
}

#[tokio::test]
async fn an_expired_approval_loses_its_buttons() {
    let fake = FakeSlack::start().await;
    let clock = Arc::new(ManualClock::new(jiff::Timestamp::now()));
    let (mut server, agent, _) = slack_server(&fake, Some(clock)).await;
    let (asked_for, ts) = asked(&server, &fake, &agent, 1).await;
    server
        .advance(std::time::Duration::from_secs(2 * 3600))
        .unwrap();
    let message = fake.until_message_says(&ts, "Expired").await;
    assert!(!has_buttons(&message));
    assert_eq!(
        approval(&server, asked_for["id"].as_str().unwrap()).await["status"],
        "expired"
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_restart_between_posting_and_clicking_loses_nothing() {
    let fake = FakeSlack::start().await;
    let (mut server, agent, _) = slack_server(&fake, None).await;
    let (asked_for, ts) = asked(&server, &fake, &agent, 1).await;
    server.restart().await.unwrap();
    // The new process knows the message from the database alone.
    assert_eq!(
        fake.click(&server.url, &ts, "airlock_approve", "U0ALICE")
            .await,
        200
    );
    assert_eq!(
        approval(&server, asked_for["id"].as_str().unwrap()).await["status"],
        "approved"
    );
    fake.until_message_says(&ts, "Approved by alice").await;
    // Posted once: the restarted notifier does not post the approval again.
    assert_eq!(fake.requests("chat.postMessage").len(), 1);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn forged_stale_and_replayed_requests_are_refused_and_decide_nothing() {
    let fake = FakeSlack::start().await;
    let (server, agent, _) = slack_server(&fake, None).await;
    let (asked_for, ts) = asked(&server, &fake, &agent, 1).await;
    let id = asked_for["id"].as_str().unwrap();
    let click = fake.click_payload(&ts, "airlock_approve", "U0ALICE");

    // Signed with another secret.
    let (status, ..) = fake
        .deliver(&server.url, &click, None, "not-the-secret")
        .await;
    assert_eq!(status, 401);
    // Signed correctly, six minutes ago.
    let old = jiff::Timestamp::now().as_second() - 360;
    let (status, ..) = fake
        .deliver(&server.url, &click, Some(old), SIGNING_SECRET)
        .await;
    assert_eq!(status, 401);
    // No signature at all.
    assert_eq!(
        fake.post_raw(&server.url, "payload=%7B%7D", "", "").await,
        401
    );
    assert_eq!(approval(&server, id).await["status"], "pending");

    // A good request, then the very same request again: the replay is refused. The
    // first one is from a user with no airlock account, so it decides nothing either.
    let stranger = fake.click_payload(&ts, "airlock_approve", "U0STRANGER");
    let (status, body, timestamp, signature) = fake
        .deliver(&server.url, &stranger, None, SIGNING_SECRET)
        .await;
    assert_eq!(status, 200);
    let ephemeral = fake.until_requests("chat.postEphemeral", 1).await;
    assert_eq!(ephemeral[0].body["user"], "U0STRANGER");
    assert!(ephemeral[0].body["text"]
        .as_str()
        .unwrap()
        .contains("not linked"));
    assert_eq!(
        fake.post_raw(&server.url, &body, &timestamp, &signature)
            .await,
        401
    );
    assert_eq!(approval(&server, id).await["status"], "pending");
    assert!(has_buttons(&fake.message(&ts)));
}

#[tokio::test]
async fn a_cancelled_approval_loses_its_buttons_and_says_why() {
    let fake = FakeSlack::start().await;
    let (server, agent, _) = slack_server(&fake, None).await;
    let (asked_for, ts) = asked(&server, &fake, &agent, 1).await;
    // A new policy cancels the approvals made under the old one.
    let changed = POLICY.replace("deadline = \"1h\"", "deadline = \"2h\"");
    assert_ne!(changed, POLICY);
    server.put_policy(&changed).await.unwrap();
    let message = fake.until_message_says(&ts, "Cancelled").await;
    assert!(!has_buttons(&message), "{message}");
    assert!(message.to_string().contains("stale_policy"), "{message}");
    assert_eq!(
        approval(&server, asked_for["id"].as_str().unwrap()).await["status"],
        "cancelled"
    );
    // A click on the old copy afterwards decides nothing.
    let late = fake.click_payload_from(&posted_body(&fake), &ts, "airlock_approve", "U0ALICE");
    let (status, ..) = fake.deliver(&server.url, &late, None, SIGNING_SECRET).await;
    assert_eq!(status, 200);
    assert_eq!(
        approval(&server, asked_for["id"].as_str().unwrap()).await["status"],
        "cancelled"
    );
}

#[tokio::test]
async fn a_linked_user_without_the_role_to_decide_is_told_and_decides_nothing() {
    let fake = FakeSlack::start().await;
    let (server, agent, _) = slack_server(&fake, None).await;
    server.create_user("vera", Role::Viewer).await.unwrap();
    let (asked_for, ts) = asked(&server, &fake, &agent, 1).await;
    assert_eq!(
        fake.click(&server.url, &ts, "airlock_approve", "U0VERA")
            .await,
        200
    );
    let ephemeral = fake.until_requests("chat.postEphemeral", 1).await;
    assert_eq!(ephemeral[0].body["user"], "U0VERA");
    let told = ephemeral[0].body["text"].as_str().unwrap();
    assert!(told.starts_with("Nothing was decided"), "{told}");
    assert_eq!(
        approval(&server, asked_for["id"].as_str().unwrap()).await["status"],
        "pending"
    );
    assert!(has_buttons(&fake.message(&ts)));
}

fn buttons(message: &Value) -> Vec<Value> {
    message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "actions")
        .flat_map(|block| block["elements"].as_array().unwrap().clone())
        .collect()
}

#[tokio::test]
async fn a_call_too_long_to_show_whole_can_be_rejected_but_not_approved_in_slack() {
    let fake = FakeSlack::start().await;
    let (server, agent, _) = slack_server(&fake, None).await;
    // Keys are shown in order, so the recipient comes after a body longer than a block.
    let asked = server
        .submit(
            &agent,
            "email.send",
            serde_json::json!({"body": "x".repeat(2900), "to": "attacker@evil.example"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let posted = fake.until_requests("chat.postMessage", 1).await;
    let message = &posted[0].body;
    let arguments = message["blocks"][1]["text"]["text"].as_str().unwrap();
    assert!(
        arguments.ends_with("…```") && !arguments.contains("attacker@evil.example"),
        "the arguments are shown whole after all: {arguments}"
    );
    let shown = buttons(message);
    let actions: Vec<_> = shown.iter().map(|b| b["action_id"].clone()).collect();
    assert_eq!(actions, ["airlock_reject", "airlock_read_all"], "{message}");
    // The other button opens the approval's page, where it is shown whole.
    let page = format!(
        "{}/approvals/{}",
        server.url,
        asked["approval_id"].as_str().unwrap()
    );
    assert_eq!(shown[1]["url"], page.as_str());
    assert!(message.to_string().contains("Too long to show whole here"));

    // A short call keeps its Approve button.
    let (short, _) = asked_message(&server, &fake, &agent, "bob@acme.test", 2).await;
    let actions: Vec<_> = buttons(&short)
        .iter()
        .map(|b| b["action_id"].clone())
        .collect();
    assert_eq!(actions, ["airlock_approve", "airlock_reject"]);
}

/// Asks for mail to `to` and returns the `count`-th posted message and its approval.
async fn asked_message(
    server: &TestServer,
    fake: &FakeSlack,
    agent: &str,
    to: &str,
    count: usize,
) -> (Value, Value) {
    let (_, approval) = ask(server, agent, to).await;
    let posted = fake.until_requests("chat.postMessage", count).await;
    (posted[count - 1].body.clone(), approval)
}

#[tokio::test]
async fn hidden_characters_and_markup_are_written_out_in_slack() {
    let fake = FakeSlack::start().await;
    let (server, agent, _) = slack_server(&fake, None).await;
    // Shown raw, U+202E makes this read as bob@evilexample.test.
    let (message, _) =
        asked_message(&server, &fake, &agent, "bob@evil\u{202e}tset.elpmaxe", 1).await;
    let shown = message.to_string();
    assert!(!shown.contains('\u{202e}'), "a raw U+202E: {shown}");
    let arguments = message["blocks"][1]["text"]["text"].as_str().unwrap();
    assert!(
        arguments.contains(r#""to": "bob@evil\u202etset.elpmaxe""#),
        "{arguments}"
    );
    // Slack's markup in an agent's text is shown, never live: a link in the
    // notification text (`text`) would be a real link.
    let (message, _) = asked_message(
        &server,
        &fake,
        &agent,
        "<https://evil.example/login|Open in airlock>",
        2,
    )
    .await;
    let text = message["text"].as_str().unwrap();
    assert!(!text.contains("<https://evil"), "{text}");
    assert!(
        text.contains("&lt;https://evil.example/login|Open in airlock&gt;"),
        "{text}"
    );
    assert!(!message.to_string().contains("<https://evil"), "{message}");
}
