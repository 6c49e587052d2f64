//! The proxy ([`airlock_mcp::run_on`]) between a raw JSON-RPC client, which can send what
//! a well-behaved SDK never would, and a real MCP server: one from npm, or
//! tests/fixtures/withdrawing_server.mjs on the TypeScript SDK installed with them. The gate is
//! [`TestGate`]: it denies `write_file` and allows everything else, and remembers what it
//! was asked. Where a test must know what reached the real server, the server runs behind
//! `tee`, which keeps a copy of every line the proxy sent it.

use airlock_mcp::upstream::{Command, Endpoint};
use airlock_mcp::{
    ApprovalPrompt, Gate, GateCall, InlineDecision, ProxyConfig, ProxyError, Submitted, Verdict,
    Waited,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::task::JoinHandle;

const PATIENCE: Duration = Duration::from_secs(20);

/// Denies `write_file`, allows the rest; what it was asked and told stays readable.
#[derive(Clone, Default)]
struct TestGate {
    submitted: Arc<Mutex<Vec<GateCall>>>,
}

impl TestGate {
    fn submitted_tools(&self) -> Vec<String> {
        let submitted = self.submitted.lock().unwrap();
        submitted.iter().map(|call| call.tool.clone()).collect()
    }
}

impl Gate for TestGate {
    async fn submit(&self, call: GateCall) -> Submitted {
        let denied = call.tool.ends_with("__write_file");
        let mut submitted = self.submitted.lock().unwrap();
        submitted.push(call);
        if denied {
            Submitted::Denied {
                reason: "no writing through MCP".into(),
            }
        } else {
            Submitted::Allowed {
                call_id: format!("call_{}", submitted.len()),
            }
        }
    }

    async fn wait(&self, _call_id: String) -> Waited {
        Waited::Closed {
            reason: "nobody asks in these tests".into(),
            gave_up: false,
        }
    }

    async fn check(&self, _call_id: String) -> Option<Waited> {
        None
    }

    fn wait_limit(&self) -> Duration {
        PATIENCE
    }

    async fn redeem(&self, _call_id: String) -> Verdict {
        Verdict::Allow { edited: None }
    }

    async fn report(&self, _call_id: String, _succeeded: bool, _detail: Option<String>) {}

    async fn cancel(&self, _call_id: String) {}

    fn decides_inline(&self) -> bool {
        false
    }

    async fn prompt(&self, _approval_id: String) -> Result<ApprovalPrompt, String> {
        Err("no person in these tests".into())
    }

    async fn decide(
        &self,
        _prompt: ApprovalPrompt,
        _decision: InlineDecision,
    ) -> Result<(), String> {
        Err("no person in these tests".into())
    }
}

/// The client's end of a running proxy: JSON-RPC lines in and out.
struct RawClient {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    proxy: JoinHandle<Result<(), ProxyError>>,
}

impl RawClient {
    /// Starts the proxy in front of `command` (named `server`), gated by `gate`.
    fn start(server: &str, command: Command, gate: TestGate) -> RawClient {
        let (client, proxy) = tokio::io::duplex(1 << 20);
        let (proxy_input, proxy_output) = tokio::io::split(proxy);
        let config = ProxyConfig {
            server_name: server.into(),
            upstream: Endpoint::Stdio(command),
            hidden_variables: Vec::new(),
        };
        let proxy = tokio::spawn(airlock_mcp::run_on(
            config,
            gate,
            std::future::pending(),
            proxy_input,
            proxy_output,
        ));
        let (reader, writer) = tokio::io::split(client);
        RawClient {
            lines: BufReader::new(reader).lines(),
            writer,
            proxy,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// The next message from the proxy; `None` once it closed its output.
    async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .expect("the proxy answers in time")
            .unwrap()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")))
    }

    /// The answer to request `id` (other messages are passed over).
    async fn answer(&mut self, id: Value) -> Value {
        loop {
            let message = self
                .next()
                .await
                .unwrap_or_else(|| panic!("the proxy ended before answering {id}"));
            if message["id"] == id
                && (message.get("result").is_some() || message.get("error").is_some())
            {
                return message;
            }
        }
    }

    /// Closes the client's side and waits for the proxy to stop (and its server with it).
    async fn finish(mut self) -> Result<(), ProxyError> {
        self.writer.shutdown().await.unwrap();
        drop(self.writer);
        tokio::time::timeout(PATIENCE, self.proxy)
            .await
            .expect("the proxy stops when its client leaves")
            .unwrap()
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.answer(json!(id)).await
    }

    /// The `initialize` handshake, in the 2025-06-18 era, with no capabilities.
    async fn initialize(&mut self) {
        self.initialize_with(json!({})).await;
    }

    async fn initialize_with(&mut self, capabilities: Value) {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": capabilities,
            "clientInfo": {"name": "raw-test-client", "version": "1"}
        });
        let answer = self.request(0, "initialize", params).await;
        assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }
}

/// A temp folder for the filesystem server, canonical (macOS temp paths are symlinks).
fn folder() -> (tempfile::TempDir, PathBuf) {
    let folder = tempfile::tempdir().unwrap();
    let root = folder.path().canonicalize().unwrap();
    (folder, root)
}

/// The filesystem server serving `root`, behind `tee`, which appends every line the proxy
/// sends the server to `log`.
fn recorded_filesystem(root: &Path, log: &Path) -> Command {
    let script = crate::npm_server("server-filesystem", "AIRLOCK_TEST_MCP_FILESYSTEM");
    Command {
        program: "sh".into(),
        args: vec![
            "-c".into(),
            r#"tee -a "$0" | exec node "$1" "$2""#.into(),
            log.display().to_string(),
            script.display().to_string(),
            root.display().to_string(),
        ],
    }
}

/// The lines the real server received so far.
fn received(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Waits until the real server received a message with `method`.
async fn until_received(log: &Path, method: &str) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !received(log)
        .iter()
        .any(|message| message["method"] == method)
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server never received {method}: {:?}",
            received(log)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn tool_calls_received(log: &Path) -> Vec<Value> {
    received(log)
        .into_iter()
        .filter(|message| message["method"] == "tools/call")
        .collect()
}

#[tokio::test]
async fn a_tools_call_rmcp_cannot_read_is_refused_and_never_reaches_the_server() {
    let (_folder, root) = folder();
    let log = root.join("received.jsonl");
    let gate = TestGate::default();
    let mut client = RawClient::start("filesystem", recorded_filesystem(&root, &log), gate.clone());
    client.initialize().await;

    // Fields the real server ignores, of a type rmcp refuses: the call must not slip past
    // the gate as a request rmcp does not know.
    let write = |name: &str| json!({"path": root.join(name), "content": "pwned"});
    let malformed = [
        json!({"name": "write_file", "arguments": write("state.txt"), "requestState": 5}),
        json!({"name": "write_file", "arguments": write("inputs.txt"), "inputResponses": 5}),
        json!({"name": "write_file", "arguments": write("name.txt"), "requestState": {"x": 1}}),
    ];
    for (id, params) in (1..).zip(malformed) {
        let answer = client.request(id, "tools/call", params).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not forwarded"),
            "{answer}"
        );
    }
    // No params at all.
    client
        .send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call"}))
        .await;
    let answer = client.answer(json!(9)).await;
    assert!(answer.get("error").is_some(), "{answer}");

    // The well-formed call is gated (and denied) as ever.
    let denied = client
        .request(
            10,
            "tools/call",
            json!({"name": "write_file", "arguments": write("plain.txt")}),
        )
        .await;
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert_eq!(
        denied["result"]["content"][0]["text"],
        "Denied: no writing through MCP"
    );
    assert_eq!(gate.submitted_tools(), ["mcp__filesystem__write_file"]);

    client.finish().await.unwrap();
    for name in ["state.txt", "inputs.txt", "name.txt", "plain.txt"] {
        assert!(!root.join(name).exists(), "{name} was written");
    }
    assert_eq!(tool_calls_received(&log), Vec::<Value>::new());
}

#[tokio::test]
async fn a_tools_call_sent_as_a_notification_is_not_relayed() {
    let (_folder, root) = folder();
    let log = root.join("received.jsonl");
    let mut client = RawClient::start(
        "filesystem",
        recorded_filesystem(&root, &log),
        TestGate::default(),
    );
    client.initialize().await;

    let write =
        json!({"name": "write_file", "arguments": {"path": root.join("x.txt"), "content": "x"}});
    client
        .send(json!({"jsonrpc": "2.0", "method": "tools/call", "params": write}))
        .await;
    // A notification the proxy does not know still reaches the server: once it arrived,
    // so would have the one before it.
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/airlock-test", "params": {}}))
        .await;
    until_received(&log, "notifications/airlock-test").await;
    let listed = client.request(1, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");

    client.finish().await.unwrap();
    assert_eq!(tool_calls_received(&log), Vec::<Value>::new());
    assert!(!root.join("x.txt").exists());
}

/// An airlock token as airlock issues them: `alk_` and 64 hex digits.
fn token(digit: char) -> String {
    format!("alk_{}", digit.to_string().repeat(64))
}

#[tokio::test]
async fn the_real_server_never_sees_airlock_tokens() {
    // What an MCP client's `env` gives the proxy: the agent's token, a person's token for
    // inline approval (under any name), and the server's own settings.
    std::env::set_var("AIRLOCK_TOKEN", token('a'));
    std::env::set_var("AIRLOCK_TEST_APPROVER", token('b'));
    std::env::set_var("AIRLOCK_TEST_SERVER_SETTING", "kept");
    let everything = crate::npm_server("server-everything", "AIRLOCK_TEST_MCP_EVERYTHING");
    let command = Command {
        program: "node".into(),
        args: vec![everything.display().to_string(), "stdio".into()],
    };
    let mut client = RawClient::start("everything", command, TestGate::default());
    client.initialize().await;

    let answer = client
        .request(1, "tools/call", json!({"name": "get-env", "arguments": {}}))
        .await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    let environment: Value = serde_json::from_str(text).unwrap();
    assert_eq!(environment["AIRLOCK_TEST_SERVER_SETTING"], "kept", "{text}");
    assert!(environment.get("AIRLOCK_TOKEN").is_none(), "{text}");
    assert!(environment.get("AIRLOCK_TEST_APPROVER").is_none(), "{text}");
    assert!(!text.contains("alk_"), "{text}");
    client.finish().await.unwrap();
}

#[tokio::test]
async fn the_proxy_ends_when_the_real_server_exits() {
    let (_folder, root) = folder();
    let pid_file = root.join("server.pid");
    let everything = crate::npm_server("server-everything", "AIRLOCK_TEST_MCP_EVERYTHING");
    let command = Command {
        program: "sh".into(),
        args: vec![
            "-c".into(),
            r#"echo $$ > "$0"; exec node "$1" stdio"#.into(),
            pid_file.display().to_string(),
            everything.display().to_string(),
        ],
    };
    let mut client = RawClient::start("everything", command, TestGate::default());
    client.initialize().await;
    let echoed = client
        .request(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "hi"}}),
        )
        .await;
    assert_eq!(echoed["result"]["isError"], Value::Null, "{echoed}");

    // A call in flight when the server goes (its progress shows it runs): its answer says so.
    let long = json!({
        "name": "trigger-long-running-operation",
        "arguments": {"duration": 30, "steps": 30},
        "_meta": {"progressToken": "long"}
    });
    client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": long}))
        .await;
    while client.next().await.expect("progress")["method"] != "notifications/progress" {}
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let failed = client.answer(json!(2)).await;
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("the MCP server: "), "{failed}");

    // The client sees its server end: the proxy closes its output and stops.
    while let Some(message) = client.next().await {
        assert!(
            message.get("method").is_some(),
            "an unexpected answer: {message}"
        );
    }
    let stopped = tokio::time::timeout(PATIENCE, client.proxy)
        .await
        .expect("the proxy stops once its server is gone")
        .unwrap();
    assert!(
        matches!(stopped, Err(ProxyError::UpstreamClosed)),
        "{stopped:?}"
    );
}

#[tokio::test]
async fn a_request_the_server_withdraws_is_withdrawn_under_the_id_the_client_knows() {
    // The TypeScript SDK the npm servers are built on, beside them.
    let everything = crate::npm_server("server-everything", "AIRLOCK_TEST_MCP_EVERYTHING");
    let packages = everything
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/withdrawing_server.mjs");
    let command = Command {
        program: "node".into(),
        args: vec![
            fixture.display().to_string(),
            packages.join("sdk").display().to_string(),
        ],
    };
    let mut client = RawClient::start("withdrawing", command, TestGate::default());
    client.initialize_with(json!({"elicitation": {}})).await;

    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "ask", "arguments": {}}}))
        .await;
    let (mut asked, mut withdrawn, mut answer) = (None, Vec::new(), None);
    // The answer and the withdrawal travel apart: read until both came.
    while answer.is_none() || withdrawn.is_empty() {
        let message = client.next().await.expect("the proxy answers");
        match message["method"].as_str() {
            // The question stays unanswered: the server gives up on it.
            Some("elicitation/create") => asked = Some(message["id"].clone()),
            Some("notifications/cancelled") => withdrawn.push(message["params"].clone()),
            _ if message["id"] == 1 => answer = Some(message),
            _ => {}
        }
    }
    let answer = answer.unwrap();
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("gave up"),
        "{answer}"
    );
    let asked = asked.expect("the server's question reached the client");
    assert_eq!(
        withdrawn,
        [json!({"requestId": asked, "reason": airlock_mcp::upstream::SERVER_WITHDREW})]
    );
    client.finish().await.unwrap();
}
