//! `airlock mcp proxy` between real peers: the `mcp` Python SDK as the MCP client
//! (tests/fixtures/mcp/client.py), `@modelcontextprotocol/server-filesystem` and
//! `@modelcontextprotocol/server-everything` from npm as real servers (over stdio, and
//! over Streamable HTTP with `--upstream-url`), against a real `airlock serve`.
//! scripts/test.sh installs them all.
//!
//! One folder per filesystem test; the files in it tell whether a call reached the real
//! server.

#[path = "mcp/asked.rs"]
mod asked;
#[path = "mcp/eras.rs"]
mod eras;
#[path = "mcp/failures.rs"]
mod failures;

use crate::support::{eventually, stderr, wait_exit, Captured, KillOnDrop, Server};
use serde_json::{json, Value};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Reads are allowed, writes denied, anything else (a move) asked.
const POLICY: &str = r#"version = 1
default = "ask"
deadline = "1h"

[[rules]]
name = "reads-are-fine"
tool = "mcp__filesystem__read_text_file"
decision = "allow"

[[rules]]
name = "no-writes"
tool = "mcp__filesystem__write_file"
decision = "deny"
reason = "no writing through MCP"
"#;

/// Echo is allowed, sums are denied.
const EVERYTHING_POLICY: &str = r#"version = 1
default = "ask"
deadline = "1h"

[[rules]]
name = "echo-is-fine"
tool = "mcp__everything__echo"
decision = "allow"

[[rules]]
name = "no-sums"
tool = "mcp__everything__get-sum"
decision = "deny"
reason = "no arithmetic through MCP"
"#;

/// `dist/index.js` of an installed npm MCP server (`server-filesystem`): the package
/// folder in `variable`, or where scripts/test.sh installs it.
fn npm_server(package: &str, variable: &str) -> String {
    let folder = std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/test-peers/node_modules/@modelcontextprotocol")
                .join(package)
        });
    let script = folder.join("dist/index.js");
    assert!(
        script.is_file(),
        "the MCP server {package} is not installed at {}: run scripts/test.sh, or \
         `npm install --prefix target/test-peers @modelcontextprotocol/{package}` \
         and/or set {variable} to the package folder",
        folder.display()
    );
    script.display().to_string()
}

fn filesystem_server() -> String {
    npm_server("server-filesystem", "AIRLOCK_TEST_MCP_FILESYSTEM")
}

fn everything_server() -> String {
    npm_server("server-everything", "AIRLOCK_TEST_MCP_EVERYTHING")
}

/// The proxy's upstream arguments for the filesystem server serving `folder`.
fn filesystem_upstream(folder: &Path) -> Vec<String> {
    let folder = folder.display().to_string();
    ["--server-name", "filesystem", "--", "node"]
        .map(String::from)
        .into_iter()
        .chain([filesystem_server(), folder])
        .collect()
}

/// The Python client (tests/fixtures/mcp/client.py) on one scenario, through
/// `airlock mcp proxy --url URL PROXY_ARGS…`.
struct McpClient {
    command: Command,
}

/// A running client: its stdin (the scenario's go-aheads) and what it printed so far.
struct Running {
    child: KillOnDrop,
    stdout: Captured,
    stderr: Captured,
}

impl McpClient {
    fn new(url: &str, token: &str, scenario: &str, folder: &Path, proxy_args: &[String]) -> Self {
        let fixture =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/client.py");
        let mut command = Command::new("python3");
        command
            .arg(&fixture)
            .args([
                scenario,
                folder.to_str().unwrap(),
                "--",
                env!("CARGO_BIN_EXE_airlock"),
            ])
            .args(["mcp", "proxy", "--url", url])
            .args(proxy_args)
            .env("AIRLOCK_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        McpClient { command }
    }

    fn env(mut self, name: &str, value: &str) -> Self {
        self.command.env(name, value);
        self
    }

    fn start(mut self) -> Running {
        let mut child = KillOnDrop(
            self.command
                .spawn()
                .expect("python3 runs (pip install mcp, see scripts/test.sh)"),
        );
        let (stdout, stderr) = (Captured::default(), Captured::default());
        stdout.collect(child.0.stdout.take().unwrap());
        stderr.collect(child.0.stderr.take().unwrap());
        Running {
            child,
            stdout,
            stderr,
        }
    }

    /// Runs the scenario to its end; `while_running` is called once the client started.
    fn run(self, while_running: impl FnOnce(&mut Running)) -> Vec<Value> {
        let mut running = self.start();
        while_running(&mut running);
        running.finish()
    }
}

impl Running {
    /// The steps printed so far: complete lines only (the reader may hold half a line).
    fn steps(&self) -> Vec<Value> {
        let text = self.stdout.text();
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        complete
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }

    /// Waits until the client printed `name`.
    fn wait_for_step(&self, name: &str) {
        eventually(Duration::from_secs(30), name, || {
            self.steps().iter().any(|step| step["step"] == name)
        });
    }

    /// The scenario's go-ahead: one line on the client's stdin.
    fn go_on(&mut self) {
        let stdin = self.child.0.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }

    fn finish(mut self) -> Vec<Value> {
        let status = wait_exit(&mut self.child.0, Duration::from_secs(60));
        // The steps are read from stdout, which only the client holds: read it to its end.
        self.stdout.drain();
        if !status.success() {
            // The proxy and its upstream inherit stderr and may outlive the client a
            // moment; what they wrote is only for the message.
            self.stderr.drain_within(Duration::from_secs(5));
        }
        assert!(
            status.success(),
            "the MCP client failed ({status}):\n{}\n{}",
            self.stdout.text(),
            self.stderr.text()
        );
        self.steps()
    }
}

/// Runs the Python client on `scenario` (with `folder`) through
/// `airlock mcp proxy --url URL UPSTREAM…` with `token`; `while_running` is called once
/// the client has started.
fn run_client(
    url: &str,
    token: &str,
    scenario: &str,
    folder: &Path,
    upstream: &[String],
    while_running: impl FnOnce(),
) -> Vec<Value> {
    McpClient::new(url, token, scenario, folder, upstream).run(|_| while_running())
}

fn step<'a>(steps: &'a [Value], name: &str) -> &'a Value {
    steps
        .iter()
        .find(|step| step["step"] == name)
        .unwrap_or_else(|| panic!("no step {name} in {steps:?}"))
}

fn folder_with_hello() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(
        folder.path().join("hello.txt"),
        "hello from the real server",
    )
    .unwrap();
    folder
}

#[test]
fn allowed_calls_reach_the_server_denied_never_do_and_asked_ones_wait_for_a_person() {
    let (_work, server, agent, _folder, root) = filesystem_setup();

    let upstream = filesystem_upstream(&root);
    let steps = run_client(&server.url, &agent, "gated", &root, &upstream, || {
        eventually(Duration::from_secs(30), "the move to be asked", || {
            !server.pending().is_empty()
        });
        let output = server.client(&["approvals", "approve", "--latest"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    });

    let tools = step(&steps, "list")["tools"].as_array().unwrap().clone();
    for tool in ["read_text_file", "write_file", "move_file"] {
        assert!(tools.iter().any(|name| name == tool), "{tool} in {tools:?}");
    }
    let read = step(&steps, "read");
    assert_eq!(read["is_error"], false, "{read}");
    assert!(read["text"]
        .as_str()
        .unwrap()
        .contains("hello from the real server"));

    let write = step(&steps, "write");
    assert_eq!(write["is_error"], true, "{write}");
    let text = write["text"].as_str().unwrap();
    assert!(
        text.starts_with("Denied: ") && text.contains("no writing through MCP"),
        "{text}"
    );
    assert!(
        !root.join("evil.txt").exists(),
        "a denied call reached the server"
    );

    // The move ran exactly once: a second run would have failed (no hello.txt left).
    let moved = step(&steps, "move");
    assert_eq!(moved["is_error"], false, "{moved}");
    assert!(root.join("moved.txt").is_file() && !root.join("hello.txt").exists());
    let approved = server.get_json("/v1/approvals?status=approved");
    assert_eq!(approved["items"].as_array().unwrap().len(), 1, "{approved}");
    assert_eq!(
        approved["items"][0]["tool"], "mcp__filesystem__move_file",
        "{approved}"
    );
    // The proxy reported the real server's result on each call it forwarded, once
    // (DESIGN.md §11.8): the read and the move succeeded.
    let moved_call = approved["items"][0]["call_id"].as_str().unwrap();
    let call = server.get_json(&format!("/v1/calls/{moved_call}"));
    assert_eq!(call["outcome"]["status"], "succeeded", "{call}");
    let audit = server.get_json("/v1/audit?limit=1000");
    let outcomes = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|record| record["kind"] == "call.outcome")
        .count();
    assert_eq!(outcomes, 2, "{audit}");
}

#[test]
fn an_unreachable_gateway_denies_and_forwards_nothing() {
    let folder = folder_with_hello();
    let root = folder.path().canonicalize().unwrap();
    // Port 1 is never an airlock server.
    let upstream = filesystem_upstream(&root);
    let steps = run_client(
        "http://127.0.0.1:1",
        "any-token",
        "down",
        &root,
        &upstream,
        || {},
    );
    assert!(step(&steps, "list")["tools"].as_array().unwrap().len() > 3);
    let read = step(&steps, "read");
    assert_eq!(read["is_error"], true, "{read}");
    let text = read["text"].as_str().unwrap();
    assert!(
        text.starts_with("Denied: airlock is unreachable: "),
        "{text}"
    );
}

/// Starts `airlock serve` with the everything policy and runs the `everything` scenario
/// through the proxy with `upstream`; checks what every transport must give.
fn check_everything(upstream: &[String]) {
    let (work, server) = server_with_policy(EVERYTHING_POLICY);
    let agent = server.create_agent("desktop");

    let steps = run_client(
        &server.url,
        &agent,
        "everything",
        work.path(),
        upstream,
        || {},
    );

    let list = step(&steps, "list");
    // The proxy offers the client the newest `initialize`-era version both legs speak.
    assert_eq!(list["protocol"], "2025-11-25", "{list}");
    let tools = list["tools"].as_array().unwrap();
    for tool in ["echo", "get-sum", "get-tiny-image"] {
        assert!(tools.iter().any(|name| name == tool), "{tool} in {tools:?}");
    }
    let echo = step(&steps, "echo");
    assert_eq!(echo["is_error"], false, "{echo}");
    assert_eq!(echo["text"], "Echo: through airlock", "{echo}");
    let sum = step(&steps, "sum");
    assert_eq!(sum["is_error"], true, "{sum}");
    let text = sum["text"].as_str().unwrap();
    assert!(
        text.starts_with("Denied: ") && text.contains("no arithmetic through MCP"),
        "{text}"
    );
}

#[test]
fn the_everything_server_over_stdio_is_gated() {
    let upstream = ["--server-name", "everything", "--", "node"]
        .map(String::from)
        .into_iter()
        .chain([everything_server(), "stdio".into()])
        .collect::<Vec<_>>();
    check_everything(&upstream);
}

#[test]
fn the_everything_server_over_streamable_http_is_gated() {
    let (_everything, port) = start_everything_over_http();
    let upstream = [
        "--server-name".to_string(),
        "everything".into(),
        "--upstream-url".into(),
        format!("http://127.0.0.1:{port}/mcp"),
    ];
    check_everything(&upstream);
}

#[test]
fn an_upstream_url_and_a_command_exclude_each_other() {
    let output = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["mcp", "proxy", "--server-name", "x"])
        .args(["--upstream-url", "http://127.0.0.1:1/mcp", "--", "node"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cannot be used with"),
        "{}",
        stderr(&output)
    );

    let output = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["mcp", "proxy", "--upstream-url", "http://127.0.0.1:1/mcp"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--server-name"),
        "{}",
        stderr(&output)
    );

    let output = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["mcp", "proxy", "--server-name", "x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("<COMMAND>"), "{}", stderr(&output));
}

/// `server-everything streamableHttp` on a free port, killed on drop, once it listens.
fn start_everything_over_http() -> (KillOnDrop, u16) {
    let script = everything_server();
    // A port nobody listened on a moment ago; another process may take it meanwhile, so
    // a start that fails is tried again on another one.
    for _ in 0..5 {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = KillOnDrop(
            Command::new("node")
                .args([script.as_str(), "streamableHttp"])
                .env("PORT", port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("node runs"),
        );
        let mut listening = false;
        eventually(Duration::from_secs(30), "the everything server", || {
            listening = TcpStream::connect(("127.0.0.1", port)).is_ok();
            listening || child.0.try_wait().unwrap().is_some()
        });
        if listening {
            return (child, port);
        }
    }
    panic!("the everything server did not start over HTTP");
}

/// Every tool may run, as far as the rules go: only the agent's mode and the tools' risk
/// decide.
const ALLOW_ALL_POLICY: &str = r#"version = 1
default = "allow"
"#;

/// `POST path` with `token` and a JSON body: the status and the answer.
fn post_json(server: &Server, token: &str, path: &str, body: &Value) -> (u16, Value) {
    let mut response = ureq::post(format!("{}{path}", server.url))
        .config()
        .http_status_as_error(false)
        .build()
        .header("Authorization", format!("Bearer {token}"))
        .send_json(body)
        .unwrap();
    let status = response.status().as_u16();
    (
        status,
        response.body_mut().read_json().unwrap_or(Value::Null),
    )
}

/// Creates an agent in `mode` and returns its token.
fn create_agent_in_mode(server: &Server, name: &str, mode: &str) -> String {
    let (status, created) = post_json(
        server,
        &server.owner_token(),
        "/v1/agents",
        &json!({"name": name, "mode": mode}),
    );
    assert_eq!(status, 201, "{created}");
    created["token"].as_str().unwrap().to_owned()
}

/// Creates a person with role approver: `(user id, token)`.
fn create_approver(server: &Server, name: &str) -> (String, String) {
    let (status, created) = post_json(
        server,
        &server.owner_token(),
        "/v1/users",
        &json!({"name": name, "role": "approver"}),
    );
    assert_eq!(status, 201, "{created}");
    (
        created["user"]["id"].as_str().unwrap().to_owned(),
        created["token"].as_str().unwrap().to_owned(),
    )
}

/// The only approval of the server, in whatever status.
fn only_approval(server: &Server) -> Value {
    let mut all = Vec::new();
    for status in ["pending", "approved", "rejected", "expired", "cancelled"] {
        let page = server.get_json(&format!("/v1/approvals?status={status}"));
        all.extend(page["items"].as_array().unwrap().iter().cloned());
    }
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

fn has_step(steps: &[Value], name: &str) -> bool {
    steps.iter().any(|step| step["step"] == name)
}

#[test]
fn server_annotations_give_unlisted_tools_their_risk() {
    let (work, server) = server_with_policy(ALLOW_ALL_POLICY);
    // Read-only: anything whose risk is not `read` is denied, whatever the rules say.
    let agent = create_agent_in_mode(&server, "desktop", "read_only");
    let proxy_args = [
        "--agent",
        "desktop",
        "--server-name",
        "everything",
        "--",
        "node",
    ]
    .map(String::from)
    .into_iter()
    .chain([everything_server(), "stdio".into()])
    .collect::<Vec<_>>();

    let steps =
        McpClient::new(&server.url, &agent, "annotations", work.path(), &proxy_args).run(|_| {});

    // `echo` says readOnlyHint: the proxy learned it (before the client listed anything)
    // and the gate made the unlisted tool `read`.
    let echo = step(&steps, "echo");
    assert_eq!(echo["is_error"], false, "{echo}");
    assert_eq!(echo["text"], "Echo: read-only", "{echo}");
    // `trigger-elicitation-request` says readOnlyHint: false, so it stays `exec`: denied,
    // and the server never ran it (it would have sent the client an elicitation).
    let tools = step(&steps, "list")["tools"].as_array().unwrap().clone();
    assert!(
        tools
            .iter()
            .any(|tool| tool == "trigger-elicitation-request"),
        "{tools:?}"
    );
    let unhinted = step(&steps, "unhinted");
    assert_eq!(unhinted["is_error"], true, "{unhinted}");
    assert!(
        unhinted["text"].as_str().unwrap().starts_with("Denied: "),
        "{unhinted}"
    );
    assert_eq!(step(&steps, "elicitations")["count"], 0, "{steps:?}");
}

#[test]
fn the_agent_flag_and_the_approver_token_are_checked_before_the_server_starts() {
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path(), &[]);
    let agent = server.create_agent("desktop");
    let started = work.path().join("started");
    // The "real server" leaves a mark when it starts.
    let proxy = |token: &str, flags: &[&str], env: &[(&str, &str)]| {
        let output = crate::support::command(work.path())
            .args(["mcp", "proxy", "--url", &server.url])
            .args(flags)
            .args(["--", "sh", "-c", &format!("touch {}", started.display())])
            .env("AIRLOCK_TOKEN", token)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(!started.exists(), "the real server was started");
        stderr(&output)
    };

    let text = proxy(&agent, &["--agent", "other"], &[]);
    assert!(
        text.contains("belongs to agent `desktop`, not `other`"),
        "{text}"
    );
    let text = proxy(&server.owner_token(), &["--agent", "desktop"], &[]);
    assert!(text.contains("not an agent's token"), "{text}");

    let approver = ["--approver-token-env", "AIRLOCK_APPROVER"];
    let text = proxy(&agent, &approver, &[("AIRLOCK_APPROVER", &agent)]);
    assert!(
        text.contains("an agent's token") && text.contains("must not approve its own calls"),
        "{text}"
    );
    let text = proxy(&agent, &approver, &[]);
    assert!(text.contains("AIRLOCK_APPROVER"), "{text}");
}

/// `airlock serve` in a fresh folder with `policy`; the folder lives as long as the
/// returned guard.
fn server_with_policy(policy: &str) -> (tempfile::TempDir, Server) {
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("policy.toml");
    std::fs::write(&path, policy).unwrap();
    let server = Server::start(work.path(), &["--policy", path.to_str().unwrap()]);
    (work, server)
}

/// A server with the filesystem policy (moves are asked), its agent, and a folder with
/// `hello.txt`.
fn filesystem_setup() -> (
    tempfile::TempDir,
    Server,
    String,
    tempfile::TempDir,
    PathBuf,
) {
    let (work, server) = server_with_policy(POLICY);
    let agent = server.create_agent("desktop");
    let folder = folder_with_hello();
    let root = folder.path().canonicalize().unwrap();
    (work, server, agent, folder, root)
}

fn assert_not_moved(root: &Path) {
    assert!(
        root.join("hello.txt").is_file() && !root.join("moved.txt").exists(),
        "the move reached the server"
    );
}

/// The proxy arguments for inline approval with the filesystem server.
fn inline_upstream(root: &Path) -> Vec<String> {
    ["--approver-token-env", "AIRLOCK_APPROVER"]
        .map(String::from)
        .into_iter()
        .chain(filesystem_upstream(root))
        .collect()
}
