//! `airlock mcp proxy` between two real peers: the `mcp` Python SDK as the MCP client
//! (tests/fixtures/mcp/client.py) and `@modelcontextprotocol/server-filesystem` from npm
//! as the real server, against a real `airlock serve`. scripts/test.sh installs both.
//!
//! One folder per test; the files in it tell whether a call reached the real server.

use crate::support::{eventually, stderr, wait_exit, KillOnDrop, Server};
use serde_json::Value;
use std::io::Read;
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

/// `dist/index.js` of the installed filesystem server: `AIRLOCK_TEST_MCP_FILESYSTEM`, or
/// where scripts/test.sh installs it.
fn filesystem_server() -> PathBuf {
    let package = std::env::var_os("AIRLOCK_TEST_MCP_FILESYSTEM")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
                "../../target/test-peers/node_modules/@modelcontextprotocol/server-filesystem",
            )
        });
    let script = package.join("dist/index.js");
    assert!(
        script.is_file(),
        "the MCP filesystem server is not installed at {}: run scripts/test.sh, or \
         `npm install --prefix target/test-peers @modelcontextprotocol/server-filesystem` \
         and/or set AIRLOCK_TEST_MCP_FILESYSTEM to the package folder",
        package.display()
    );
    script
}

/// Runs the Python client on `scenario` through `airlock mcp proxy --url URL` with
/// `token`, serving `folder`; `while_running` is called once the client has started.
fn run_client(
    url: &str,
    token: &str,
    scenario: &str,
    folder: &Path,
    while_running: impl FnOnce(),
) -> Vec<Value> {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/client.py");
    let folder = folder.to_str().unwrap();
    let mut client = KillOnDrop(
        Command::new("python3")
            .arg(&fixture)
            .args([scenario, folder, "--", env!("CARGO_BIN_EXE_airlock")])
            .args(["mcp", "proxy", "--server-name", "filesystem", "--url", url])
            .args(["--", "node", filesystem_server().to_str().unwrap(), folder])
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

    let steps = run_client(&server.url, &agent, "gated", &root, || {
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
    let steps = run_client("http://127.0.0.1:1", "any-token", "down", &root, || {});
    assert!(step(&steps, "list")["tools"].as_array().unwrap().len() > 3);
    let read = step(&steps, "read");
    assert_eq!(read["is_error"], true, "{read}");
    let text = read["text"].as_str().unwrap();
    assert!(
        text.starts_with("Denied: airlock is unreachable: "),
        "{text}"
    );
}
