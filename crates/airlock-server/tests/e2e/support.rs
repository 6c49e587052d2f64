//! What the end-to-end tests share: the policies they run under, the steps most of them
//! take (an agent, an asked call, a decision), reading the audit log, and a small SSE
//! reader.

use airlock_testkit::{Reply, TestServer};
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Mail is asked, reads are allowed, destructive shell commands are denied, the rest is
/// asked.
pub const POLICY: &str = r#"
version = 1
default = "ask"
deadline = "1h"
secrets = "deny"

[tools."email.send"]
risk = "external"
target = "to"
summary = "Send email to {to}"
body = "{body}"

[tools."fs.read"]
risk = "read"
summary = "Read {path}"

[tools."shell.exec"]
risk = "exec"

[[rules]]
name = "reads-are-fine"
tool = "fs.read"
decision = "allow"

[[rules]]
name = "no-destructive-shell"
tool = "shell.exec"
decision = "deny"
reason = "destructive command"
when = { command = { prefix = ["rm -rf"] } }

[[rules]]
name = "mail-needs-a-person"
tool = "email.send"
decision = "ask"
"#;

/// How long a test waits for something that should happen at once.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A server under [`POLICY`] with one agent; returns the server and the agent's token.
pub async fn server() -> (TestServer, String) {
    let server = TestServer::start().await.unwrap();
    let token = setup(&server).await;
    (server, token)
}

/// A server on a manual clock under `policy` with one agent.
pub async fn manual_server(policy: &str) -> (TestServer, String) {
    let server = TestServer::start_manual().await.unwrap();
    server.put_policy(policy).await.unwrap();
    let (_, token) = server.create_agent("scout").await.unwrap();
    (server, token)
}

async fn setup(server: &TestServer) -> String {
    server.put_policy(POLICY).await.unwrap();
    let (_, token) = server.create_agent("scout").await.unwrap();
    token
}

/// Submits an `email.send` (asked under [`POLICY`]); returns the call and its approval.
pub async fn ask(server: &TestServer, agent: &str, to: &str) -> (Value, Value) {
    let call = server
        .submit(agent, "email.send", json!({"to": to, "body": "hello"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "pending", "{call}");
    let approval_id = call["approval_id"].as_str().unwrap();
    let approval = server
        .client
        .get(&format!("/v1/approvals/{approval_id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    (call, approval)
}

/// Posts a decision with the approval's own digest.
pub async fn decide(server: &TestServer, token: &str, approval: &Value, decision: &str) -> Reply {
    decide_with(
        server,
        token,
        approval,
        decision,
        approval["binding_digest"].as_str().unwrap(),
    )
    .await
}

/// Posts a decision with any digest.
pub async fn decide_with(
    server: &TestServer,
    token: &str,
    approval: &Value,
    decision: &str,
    digest: &str,
) -> Reply {
    let id = approval["id"].as_str().unwrap();
    server
        .client
        .post(
            &format!("/v1/approvals/{id}/decision"),
            token,
            &json!({"decision": decision, "binding_digest": digest, "reason": "checked"}),
        )
        .await
        .unwrap()
}

/// Every audit record of the owner's workspace, read page by page.
pub async fn audit_records(server: &TestServer) -> Vec<Value> {
    let mut records = Vec::new();
    loop {
        let after = records
            .last()
            .map_or(0, |r: &Value| r["seq"].as_u64().unwrap());
        let page = server
            .client
            .get(
                &format!("/v1/audit?after={after}&limit=1000"),
                &server.owner_token,
            )
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        let items = page["items"].as_array().unwrap().clone();
        if items.is_empty() {
            return records;
        }
        records.extend(items);
    }
}

/// A web page as the holder of `token` sees it, signed in with a cookie.
pub async fn page_as(server: &TestServer, token: &str, path: &str) -> String {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let signed_in = http
        .post(server.client.url("/login"))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    let cookie = signed_in.headers()[reqwest::header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let page = http
        .get(server.client.url(path))
        .header(reqwest::header::COOKIE, cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200, "{path}");
    page.text().await.unwrap()
}

/// Waits, within [`PATIENCE`], until `count` callers are long-polling.
pub async fn until_waiting(server: &TestServer, count: usize) {
    let start = Instant::now();
    while server.gate().waiting() < count {
        assert!(start.elapsed() < PATIENCE, "nobody started waiting");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A secret that exists nowhere else: `sk-proj-` + something unique to this run.
pub fn unique_api_key() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("sk-proj-Q7{nanos:x}Zr{:x}Xk93LmWv", std::process::id())
}

/// One Server-Sent Event.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub id: Option<String>,
    pub kind: Option<String>,
    pub data: String,
}

/// Reads SSE frames from a streaming response.
pub struct SseReader {
    stream: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl SseReader {
    /// Opens `/v1/events`, optionally from a `Last-Event-ID`.
    pub async fn open(server: &TestServer, token: &str, last_event_id: Option<u64>) -> SseReader {
        SseReader::open_path(server, token, "/v1/events", last_event_id).await
    }

    /// Opens any event stream, optionally from a `Last-Event-ID`.
    pub async fn open_path(
        server: &TestServer,
        token: &str,
        path: &str,
        last_event_id: Option<u64>,
    ) -> SseReader {
        let mut request = server
            .client
            .request(reqwest::Method::GET, path, Some(token));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        SseReader {
            stream: response
                .bytes_stream()
                .map(|chunk| chunk.map(|bytes| bytes.to_vec()))
                .boxed(),
            buffer: String::new(),
        }
    }

    /// The next event (comments skipped), within [`PATIENCE`].
    pub async fn next(&mut self) -> SseEvent {
        tokio::time::timeout(PATIENCE, self.read())
            .await
            .expect("no event arrived in time")
    }

    /// The next event of `kind`, skipping others.
    pub async fn next_of(&mut self, kind: &str) -> SseEvent {
        loop {
            let event = self.next().await;
            if event.kind.as_deref() == Some(kind) {
                return event;
            }
        }
    }

    async fn read(&mut self) -> SseEvent {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                let mut event = SseEvent {
                    id: None,
                    kind: None,
                    data: String::new(),
                };
                for line in frame.lines() {
                    if let Some(value) = line.strip_prefix("id:") {
                        event.id = Some(value.trim().to_owned());
                    } else if let Some(value) = line.strip_prefix("event:") {
                        event.kind = Some(value.trim().to_owned());
                    } else if let Some(value) = line.strip_prefix("data:") {
                        event.data.push_str(value.trim_start());
                    }
                }
                if event.id.is_some() || !event.data.is_empty() {
                    return event;
                }
                continue;
            }
            let chunk = self.stream.next().await.expect("the stream ended").unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Every event until the stream ends, within [`PATIENCE`].
    pub async fn read_to_end(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        loop {
            match tokio::time::timeout(PATIENCE, self.read_or_end()).await {
                Ok(Some(event)) => events.push(event),
                Ok(None) => return events,
                Err(_) => panic!("the stream did not end in time; got {events:?}"),
            }
        }
    }

    async fn read_or_end(&mut self) -> Option<SseEvent> {
        loop {
            if self.buffer.contains("\n\n") {
                return Some(self.read().await);
            }
            let chunk = self.stream.next().await?.unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}
