//! `airlock mcp proxy` between real peers: the `mcp` Python SDK as the MCP client
//! (tests/fixtures/mcp/client.py), `@modelcontextprotocol/server-filesystem` and
//! `@modelcontextprotocol/server-everything` from npm as real servers (over stdio, and
//! over Streamable HTTP with `--upstream-url`), against a real `airlock serve`.
//! scripts/test.sh installs them all.
//!
//! One folder per filesystem test; the files in it tell whether a call reached the real
//! server.

use crate::support::{eventually, stderr, wait_exit, KillOnDrop, Server};
use serde_json::Value;
use std::io::Read;
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
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/client.py");
    let folder = folder.to_str().unwrap();
    let mut client = KillOnDrop(
        Command::new("python3")
            .arg(&fixture)
            .args([scenario, folder, "--", env!("CARGO_BIN_EXE_airlock")])
            .args(["mcp", "proxy", "--url", url])
            .args(upstream)
            .env("AIRLOCK_TOKEN", token)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs (pip install mcp, see scripts/test.sh)"),
    );
    while_running();
    let status = wait_exit(&mut client.0, Duration::from_secs(60));
    let (mut out, mut err) = (String::new(), String::new());
    client
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    client
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        status.success(),
        "the MCP client failed ({status}):\n{out}\n{err}"
    );
    out.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
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
    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
    let agent = server.create_agent("desktop");
    let folder = folder_with_hello();
    let root = folder.path().canonicalize().unwrap();

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
    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, EVERYTHING_POLICY).unwrap();
    let server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
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
