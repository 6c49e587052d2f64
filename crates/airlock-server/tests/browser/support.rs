//! What the browser tests share: the server they run against (a policy, an agent, an
//! approver and a viewer), asking calls through the API, and [`Scenario`], one node
//! process that drives a headless chromium through a `*.mjs` script of this folder.

use airlock_protocol::Role;
use airlock_testkit::TestServer;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Mail and edits are asked; everything else too (the default).
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

[tools."fs.edit"]
risk = "write"
target = "path"
summary = "Edit {path}"

[[rules]]
name = "mail-needs-a-person"
tool = "email.send"
decision = "ask"
reason = "mail leaves the company"

[[rules]]
name = "edits-need-a-person"
tool = "fs.edit"
decision = "ask"
"#;

/// The environment variable naming the `node_modules` folder that holds playwright-core.
pub const PLAYWRIGHT_VAR: &str = "AIRLOCK_TEST_PLAYWRIGHT";

/// How long one step of a scenario may take (a cold chromium start included).
const STEP_TIMEOUT: Duration = Duration::from_secs(90);

/// A server with the people and the agent the scenarios use.
pub struct Fixture {
    pub server: TestServer,
    pub agent: String,
    pub agent_token: String,
    pub approver_id: String,
    pub approver: String,
    pub viewer: String,
}

impl Fixture {
    pub async fn start() -> Fixture {
        Fixture::on(TestServer::start().await.unwrap()).await
    }

    /// A fixture whose server's time moves only when the test moves it.
    pub async fn start_manual() -> Fixture {
        Fixture::on(TestServer::start_manual().await.unwrap()).await
    }

    async fn on(server: TestServer) -> Fixture {
        server.put_policy(POLICY).await.unwrap();
        let (_, agent_token) = server.create_agent("scout").await.unwrap();
        let (approver_id, approver) = server.create_user("ana", Role::Approver).await.unwrap();
        let (_, viewer) = server.create_user("vic", Role::Viewer).await.unwrap();
        Fixture {
            server,
            agent: "scout".into(),
            agent_token,
            approver_id,
            approver,
            viewer,
        }
    }

    /// Submits a call the policy asks about; returns the call and its approval.
    pub async fn ask(&self, tool: &str, arguments: Value) -> (Value, Value) {
        self.ask_in(tool, arguments, None).await
    }

    /// Like [`Fixture::ask`], in a session.
    pub async fn ask_in(
        &self,
        tool: &str,
        arguments: Value,
        session_id: Option<&str>,
    ) -> (Value, Value) {
        let mut body = json!({"tool": tool, "arguments": arguments});
        if let Some(session) = session_id {
            body["session_id"] = json!(session);
        }
        let call = self
            .server
            .client
            .post("/v1/calls", &self.agent_token, &body)
            .await
            .unwrap()
            .expect_status(201)
            .unwrap();
        assert_eq!(call["status"], "pending", "{call}");
        let approval = self.approval(call["approval_id"].as_str().unwrap()).await;
        (call, approval)
    }

    pub async fn approval(&self, id: &str) -> Value {
        self.server
            .client
            .get(&format!("/v1/approvals/{id}"), &self.server.owner_token)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap()
    }

    /// Long-polls the call as its agent, the way a waiting caller does; resolves with the
    /// call once it is decided (or after 60 s, still pending).
    pub async fn wait_for(&self, call: &Value) -> tokio::task::JoinHandle<Value> {
        let before = self.server.gate().waiting();
        let client = self.server.client.clone();
        let token = self.agent_token.clone();
        let path = format!("/v1/calls/{}?wait_s=60", call["id"].as_str().unwrap());
        let waiter = tokio::spawn(async move {
            client
                .get(&path, &token)
                .await
                .unwrap()
                .expect_status(200)
                .unwrap()
        });
        let start = Instant::now();
        while self.server.gate().waiting() <= before {
            assert!(start.elapsed() < Duration::from_secs(10), "nobody waits");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        waiter
    }

    /// Every audit record of the workspace of `kind`.
    pub async fn audit(&self, kind: &str) -> Vec<Value> {
        let page = self
            .server
            .client
            .get("/v1/audit?after=0&limit=1000", &self.server.owner_token)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|record| record["kind"] == kind)
            .cloned()
            .collect()
    }
}

/// One browser scenario: `node tests/browser/<name>.mjs`, with the server's URL, a user
/// token and `input` in its environment.
pub struct Scenario {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Scenario {
    /// Starts the scenario. Fails (never skips) when chromium, node or playwright-core is
    /// missing.
    pub fn start(name: &str, server: &TestServer, token: &str, input: Value) -> Scenario {
        let modules = std::env::var(PLAYWRIGHT_VAR).unwrap_or_else(|_| {
            panic!(
                "{PLAYWRIGHT_VAR} is not set: it names the node_modules folder with \
                 playwright-core (scripts/test.sh installs it and sets it)"
            )
        });
        assert!(
            Path::new(&modules)
                .join("playwright-core/package.json")
                .is_file(),
            "{PLAYWRIGHT_VAR}={modules} holds no playwright-core (scripts/test.sh installs it)"
        );
        assert!(
            Path::new("/usr/bin/chromium").is_file(),
            "/usr/bin/chromium is missing (scripts/test.sh installs Debian's chromium)"
        );
        let script = here().join(format!("{name}.mjs"));
        let mut child = Command::new("node")
            .arg(&script)
            .env(PLAYWRIGHT_VAR, &modules)
            .env("AIRLOCK_URL", &server.url)
            .env("AIRLOCK_TOKEN", token)
            .env("AIRLOCK_ARTIFACTS", artifacts())
            .env("AIRLOCK_INPUT", input.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run node {}: {error}", script.display()));
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Scenario {
            name: name.to_owned(),
            child,
            stdin,
            stdout,
        }
    }

    /// Waits until the script reports `step`; returns the data it sent with it.
    pub async fn until(&mut self, step: &str) -> Value {
        loop {
            let line = tokio::time::timeout(STEP_TIMEOUT, self.stdout.next_line())
                .await
                .unwrap_or_else(|_| panic!("{}: no `{step}` within {STEP_TIMEOUT:?}", self.name))
                .unwrap();
            let Some(line) = line else {
                let status = self.child.wait().await.unwrap();
                panic!("{}: ended ({status}) before `{step}`", self.name);
            };
            match line
                .strip_prefix("step ")
                .and_then(|rest| rest.split_once(' '))
            {
                Some((name, data)) if name == step => return serde_json::from_str(data).unwrap(),
                Some(("done", _)) => {
                    panic!("{}: finished before `{step}`", self.name)
                }
                _ => eprintln!("[{}] {line}", self.name),
            }
        }
    }

    /// Sends the script the message it waits for.
    pub async fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    /// Waits for the script to report `done` and exit 0.
    pub async fn finish(mut self) {
        self.until("done").await;
        drop(self.stdin.take());
        let status = tokio::time::timeout(STEP_TIMEOUT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("{}: did not exit", self.name))
            .unwrap();
        assert!(status.success(), "{}: {status}", self.name);
    }
}

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// `target/browser-artifacts` of the workspace (or of `CARGO_TARGET_DIR`).
pub fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("browser-artifacts")
}

/// Scripted model turns for [`Fixture::scripted_agent`]: a message with `#email` makes the
/// agent send a mail, then say so; `#three` sends three mails in one turn.
const SCENARIOS: &str = r##"
[[scenario]]
marker = "#three"
[[scenario.turn]]
events = [
  { type = "tool_use", name = "email.send", arguments = { to = "ann@example.com", subject = "One", body = "first" } },
  { type = "tool_use", name = "email.send", arguments = { to = "bob@example.com", subject = "Two", body = "second" } },
  { type = "tool_use", name = "email.send", arguments = { to = "cid@example.com", subject = "Three", body = "third" } },
]
[[scenario.turn]]
events = [{ type = "text", text = "All three handled." }]

[[scenario]]
marker = "#email"
[[scenario.turn]]
events = [
  { type = "text", text = "Sending the report." },
  { type = "tool_use", name = "email.send", arguments = { to = "bob@example.com", subject = "Report", body = "Hi Bob, the report." } },
]
[[scenario.turn]]
events = [{ type = "text", text = "Carrying on after the email step." }]
"##;

impl Fixture {
    /// A built-in agent whose model is scripted, and a session of it; returns the agent's
    /// token and the session id.
    pub async fn scripted_agent(&self, name: &str) -> (String, String) {
        let server = &self.server;
        let scenarios = server.data_dir().join(format!("{name}.scenarios.toml"));
        std::fs::write(&scenarios, SCENARIOS).unwrap();
        let body = json!({
            "name": name,
            "llm": {"base_url": format!("scripted:{}", scenarios.display()), "model": "script"},
            "system_prompt": "You are a test agent.",
        });
        let created = server
            .client
            .post("/v1/agents", &server.owner_token, &body)
            .await
            .unwrap()
            .expect_status(201)
            .unwrap();
        let session = server
            .client
            .post(
                "/v1/sessions",
                &server.owner_token,
                &json!({"agent_id": created["agent"]["id"], "title": "weekly report"}),
            )
            .await
            .unwrap()
            .expect_status(201)
            .unwrap();
        (
            created["token"].as_str().unwrap().to_owned(),
            session["id"].as_str().unwrap().to_owned(),
        )
    }

    /// The first pending approval, once there is one.
    pub async fn first_pending(&self) -> Value {
        let start = Instant::now();
        loop {
            let list = self
                .server
                .client
                .get("/v1/approvals?status=pending", &self.server.owner_token)
                .await
                .unwrap()
                .expect_status(200)
                .unwrap();
            if let Some(first) = list["items"].as_array().and_then(|items| items.first()) {
                return first.clone();
            }
            assert!(start.elapsed() < Duration::from_secs(20), "nothing asked");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The pending approvals, oldest first, once there are `count`.
    pub async fn pending(&self, count: usize) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let list = self
                .server
                .client
                .get("/v1/approvals?status=pending", &self.server.owner_token)
                .await
                .unwrap()
                .expect_status(200)
                .unwrap();
            let mut items = list["items"].as_array().unwrap().clone();
            if items.len() == count {
                items.reverse();
                return items;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "never {count} pending: {list}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Starts a run of the scripted agent `name` on `text`; returns the run id.
    pub async fn start_run(&self, name: &str, text: &str) -> String {
        let (agent, session_id) = self.scripted_agent(name).await;
        self.server
            .client
            .post(
                &format!("/v1/sessions/{session_id}/messages"),
                &agent,
                &json!({ "text": text }),
            )
            .await
            .unwrap()
            .expect_status(202)
            .unwrap()["run_id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The run once it has ended.
    pub async fn run_until_ended(&self, run_id: &str) -> Value {
        let start = Instant::now();
        loop {
            let run = self
                .server
                .client
                .get(&format!("/v1/runs/{run_id}"), &self.server.owner_token)
                .await
                .unwrap()
                .expect_status(200)
                .unwrap();
            if matches!(
                run["state"].as_str(),
                Some("completed" | "failed" | "cancelled")
            ) {
                return run;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the run hangs: {run}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn rules(&self) -> Vec<Value> {
        let list = self
            .server
            .client
            .get("/v1/rules", &self.server.owner_token)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        list["items"].as_array().unwrap().clone()
    }

    /// Signs in over plain HTTP; returns the `Cookie` header value.
    pub async fn sign_in(&self, token: &str) -> String {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let reply = http
            .post(format!("{}/login", self.server.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded_token(token))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 303);
        let set = reply.headers()["set-cookie"].to_str().unwrap();
        set.split(';').next().unwrap().to_owned()
    }

    /// A page's HTML (200 expected).
    pub async fn page(&self, path: &str, cookie: &str) -> String {
        let reply = reqwest::Client::new()
            .get(format!("{}{path}", self.server.url))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200, "{path}");
        reply.text().await.unwrap()
    }
}

fn serde_urlencoded_token(token: &str) -> String {
    // Tokens are `alk_` + hex: nothing to escape.
    assert!(token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    format!("token={token}")
}
