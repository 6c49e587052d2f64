//! A fake Slack for the interactive Slack tests: a local HTTP server (axum on port 0)
//! speaking the part of Slack's Web API airlock uses, as Slack documents it, and Slack's
//! side of interactivity: it posts `block_actions` and `view_submission` payloads to the
//! app's action URL, form-encoded and signed exactly as Slack signs them (v0, HMAC-SHA256
//! over `v0:<timestamp>:<body>` under the app's signing secret).
//!
//! Web API methods (`POST /api/<method>`, JSON body, `Authorization: Bearer <bot token>`;
//! every answer is 200 with `ok` true or false and an `error`, as Slack answers):
//! - `chat.postMessage` (`channel` and `text` or `blocks`) → `{ok, channel, ts, message}`;
//! - `chat.update` (`channel`, `ts` of a message it posted) → `{ok, channel, ts, text}`;
//! - `views.open` (`trigger_id` it issued, `view`) → `{ok, view}`;
//! - `chat.postEphemeral` (`channel`, `user`, `text`) → `{ok, message_ts}`.
//!
//! Every request is recorded; the current content of each message is kept by `ts`.

use airlock_server::notify::sign::hmac_sha256;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BOT_TOKEN: &str = "xoxb-test-0000-airlock";
pub const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
pub const CHANNEL: &str = "C0APPROVALS";

/// One Web API request as the fake received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub body: Value,
    /// What the fake answered.
    pub answer: Value,
}

#[derive(Default)]
struct Inner {
    requests: Vec<Request>,
    /// ts → the message as last posted or updated.
    messages: HashMap<String, Value>,
    triggers: Vec<String>,
    /// The views opened, newest last.
    views: Vec<Value>,
    counter: u64,
}

#[derive(Clone)]
pub struct FakeSlack {
    /// `http://127.0.0.1:<port>/api`: the `api_url` to configure.
    pub api_url: String,
    inner: Arc<Mutex<Inner>>,
    http: reqwest::Client,
}

fn slack_error(error: &str) -> Json<Value> {
    Json(json!({"ok": false, "error": error}))
}

async fn web_api(
    State(fake): State<FakeSlack>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Json<Value> {
    let authorized = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        == Some(&format!("Bearer {BOT_TOKEN}"));
    if !authorized {
        return slack_error("invalid_auth");
    }
    let Ok(body) = serde_json::from_str::<Value>(&body) else {
        return slack_error("invalid_json");
    };
    let mut inner = fake.inner.lock().unwrap();
    let Json(answer) = answer(&mut inner, &method, &body);
    inner.requests.push(Request {
        method,
        body,
        answer: answer.clone(),
    });
    Json(answer)
}

fn answer(inner: &mut Inner, method: &str, body: &Value) -> Json<Value> {
    inner.counter += 1;
    let counter = inner.counter;
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
    match method {
        "chat.postMessage" => {
            let Some(channel) = text("channel") else {
                return slack_error("channel_not_found");
            };
            if text("text").is_none() && body.get("blocks").is_none() {
                return slack_error("no_text");
            }
            let ts = format!("1700000000.{counter:06}");
            inner.messages.insert(ts.clone(), body.clone());
            Json(json!({"ok": true, "channel": channel, "ts": ts, "message": body}))
        }
        "chat.update" => {
            let (Some(channel), Some(ts)) = (text("channel"), text("ts")) else {
                return slack_error("message_not_found");
            };
            if !inner.messages.contains_key(&ts) {
                return slack_error("message_not_found");
            }
            inner.messages.insert(ts.clone(), body.clone());
            Json(json!({"ok": true, "channel": channel, "ts": ts, "text": text("text")}))
        }
        "views.open" => {
            let Some(trigger) = text("trigger_id") else {
                return slack_error("invalid_arguments");
            };
            if !inner.triggers.contains(&trigger) {
                return slack_error("invalid_trigger_id");
            }
            let Some(view) = body.get("view").cloned() else {
                return slack_error("invalid_arguments");
            };
            let mut opened = view.clone();
            opened["id"] = json!(format!("V{counter:08}"));
            inner.views.push(opened.clone());
            Json(json!({"ok": true, "view": opened}))
        }
        "chat.postEphemeral" => {
            if text("channel").is_none() || text("user").is_none() || text("text").is_none() {
                return slack_error("invalid_arguments");
            }
            Json(json!({"ok": true, "message_ts": format!("1700000001.{counter:06}")}))
        }
        _ => slack_error("unknown_method"),
    }
}

impl FakeSlack {
    pub async fn start() -> FakeSlack {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api_url = format!("http://{}/api", listener.local_addr().unwrap());
        let fake = FakeSlack {
            api_url,
            inner: Arc::default(),
            http: reqwest::Client::new(),
        };
        let app = Router::new()
            .route("/api/{method}", post(web_api))
            .with_state(fake.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        fake
    }

    /// The `[notifications.slack]` table for this fake, mapping `U0ALICE` to `alice` and
    /// `U0VERA` to `vera` (the tests make vera a viewer, who may not decide).
    pub fn config(&self) -> String {
        format!(
            "[notifications.slack]\nchannel = \"{CHANNEL}\"\nbot_token_env = \"SLACK_BOT\"\n\
             signing_secret_env = \"SLACK_SIGNING\"\napi_url = \"{}\"\n\
             users = {{ U0ALICE = \"alice\", U0VERA = \"vera\" }}\n",
            self.api_url
        )
    }

    pub fn requests(&self, method: &str) -> Vec<Request> {
        let inner = self.inner.lock().unwrap();
        inner
            .requests
            .iter()
            .filter(|request| request.method == method)
            .cloned()
            .collect()
    }

    /// Waits until `method` has been called `count` times; returns those calls.
    pub async fn until_requests(&self, method: &str, count: usize) -> Vec<Request> {
        let deadline = Instant::now() + crate::support::PATIENCE;
        loop {
            let found = self.requests(method);
            if found.len() >= count {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "Slack got {} {method} calls, expected {count}",
                found.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The message with this ts as it stands.
    pub fn message(&self, ts: &str) -> Value {
        self.inner.lock().unwrap().messages[ts].clone()
    }

    /// Waits until the message's text says `expected`; returns the message.
    pub async fn until_message_says(&self, ts: &str, expected: &str) -> Value {
        let deadline = Instant::now() + crate::support::PATIENCE;
        loop {
            let message = self.message(ts);
            if message["text"]
                .as_str()
                .unwrap_or_default()
                .contains(expected)
            {
                return message;
            }
            assert!(
                Instant::now() < deadline,
                "the message never said {expected:?}: {message}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The newest view opened.
    pub fn last_view(&self) -> Option<Value> {
        self.inner.lock().unwrap().views.last().cloned()
    }

    fn trigger(&self) -> String {
        let mut inner = self.inner.lock().unwrap();
        inner.counter += 1;
        let trigger = format!("{}.{}.trigger", 398738663015u64, inner.counter);
        inner.triggers.push(trigger.clone());
        trigger
    }

    /// The `block_actions` payload of `user` clicking the button `action_id` of the
    /// message `ts`, with the button's value as the message shows it.
    pub fn click_payload(&self, ts: &str, action_id: &str, user: &str) -> Value {
        self.click_payload_from(&self.message(ts), ts, action_id, user)
    }

    /// The same for a copy of the message as a Slack client showed it (possibly stale).
    pub fn click_payload_from(
        &self,
        message: &Value,
        ts: &str,
        action_id: &str,
        user: &str,
    ) -> Value {
        let button = message["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|block| block["type"] == "actions")
            .flat_map(|block| block["elements"].as_array().unwrap().iter())
            .find(|element| element["action_id"] == action_id)
            .unwrap_or_else(|| panic!("the message has no {action_id} button: {message}"))
            .clone();
        json!({
            "type": "block_actions",
            "user": {"id": user, "username": user.to_lowercase(), "team_id": "T0TEAM"},
            "api_app_id": "A0AIRLOCK",
            "team": {"id": "T0TEAM", "domain": "acme"},
            "container": {"type": "message", "message_ts": ts, "channel_id": CHANNEL, "is_ephemeral": false},
            "trigger_id": self.trigger(),
            "channel": {"id": CHANNEL, "name": "approvals"},
            "message": message,
            "response_url": format!("{}/response", self.api_url),
            "actions": [{
                "type": "button",
                "action_id": action_id,
                "block_id": "airlock_decision",
                "value": button["value"],
                "text": button["text"],
                "action_ts": "1700000002.000001",
            }],
        })
    }

    /// The `view_submission` payload of `user` submitting the newest view with `reason`.
    pub fn submission_payload(&self, user: &str, reason: &str) -> Value {
        let view = self.last_view().expect("no view was opened");
        json!({
            "type": "view_submission",
            "user": {"id": user, "username": user.to_lowercase(), "team_id": "T0TEAM"},
            "api_app_id": "A0AIRLOCK",
            "team": {"id": "T0TEAM", "domain": "acme"},
            "trigger_id": self.trigger(),
            "view": {
                "id": view["id"],
                "type": "modal",
                "callback_id": view["callback_id"],
                "private_metadata": view["private_metadata"],
                "state": {"values": {"reason": {"reason": {"type": "plain_text_input", "value": reason}}}},
            },
        })
    }

    /// Posts `payload` to the app's action URL on `server` as Slack does: form-encoded,
    /// signed at `timestamp` (unix seconds; now when `None`) under `secret`.
    pub async fn deliver(
        &self,
        server: &str,
        payload: &Value,
        timestamp: Option<i64>,
        secret: &str,
    ) -> (u16, String, String, String) {
        let body = serde_urlencoded::to_string([("payload", payload.to_string())]).unwrap();
        let timestamp = timestamp
            .unwrap_or_else(|| jiff::Timestamp::now().as_second())
            .to_string();
        let mut message = format!("v0:{timestamp}:").into_bytes();
        message.extend_from_slice(body.as_bytes());
        let signature = format!(
            "v0={}",
            hex::encode(hmac_sha256(secret.as_bytes(), &message))
        );
        let status = self.post_raw(server, &body, &timestamp, &signature).await;
        (status, body, timestamp, signature)
    }

    /// Posts a body with the given signature headers, as they are; the status.
    pub async fn post_raw(
        &self,
        server: &str,
        body: &str,
        timestamp: &str,
        signature: &str,
    ) -> u16 {
        self.http
            .post(format!("{server}/v1/integrations/slack/actions"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-slack-request-timestamp", timestamp)
            .header("x-slack-signature", signature)
            .body(body.to_owned())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// Clicks as Slack would, correctly signed now; the status.
    pub async fn click(&self, server: &str, ts: &str, action_id: &str, user: &str) -> u16 {
        let payload = self.click_payload(ts, action_id, user);
        self.deliver(server, &payload, None, SIGNING_SECRET).await.0
    }
}
