//! [`McpHost`] against `@modelcontextprotocol/server-filesystem`, serving a temp folder.

use airlock_mcp::{HostError, McpHost};
use airlock_protocol::McpServerConfig;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(20);

/// `dist/index.js` of the filesystem server.
fn filesystem_server() -> PathBuf {
    crate::npm_server("server-filesystem", "AIRLOCK_TEST_MCP_FILESYSTEM")
}

fn filesystem(name: &str, folder: &Path) -> McpServerConfig {
    McpServerConfig {
        name: name.into(),
        command: "node".into(),
        args: vec![
            filesystem_server().display().to_string(),
            folder.display().to_string(),
        ],
    }
}

/// A temp folder with `hello.txt`, canonical (macOS temp paths are symlinks).
fn folder_with_hello() -> (tempfile::TempDir, PathBuf) {
    let folder = tempfile::tempdir().unwrap();
    let root = folder.path().canonicalize().unwrap();
    std::fs::write(root.join("hello.txt"), "hello from the real server").unwrap();
    (folder, root)
}

#[tokio::test]
async fn lists_tools_under_hosted_names_with_schemas_and_hints() {
    let (_folder, root) = folder_with_hello();
    let host = McpHost::start(&[filesystem("fs", &root)]).await;
    assert_eq!(host.errors(), Vec::<String>::new());

    let tools = host.tools();
    let read = tools
        .iter()
        .find(|tool| tool.name == "mcp__fs__read_text_file")
        .unwrap_or_else(|| panic!("no read_text_file in {tools:#?}"));
    assert!(!read.description.is_empty());
    assert_eq!(read.input_schema["type"], "object", "{}", read.input_schema);
    assert!(
        read.input_schema["properties"]["path"].is_object(),
        "{}",
        read.input_schema
    );
    assert_eq!(read.read_only_hint, Some(true));
    let write = tools
        .iter()
        .find(|tool| tool.name == "mcp__fs__write_file")
        .unwrap();
    assert_eq!(write.destructive_hint, Some(true));
    assert!(tools.iter().all(|tool| tool.name.starts_with("mcp__fs__")));
    host.shutdown().await;
}

#[tokio::test]
async fn calls_reach_the_server_and_its_errors_come_back_as_results() {
    let (_folder, root) = folder_with_hello();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "not yours").unwrap();
    let host = McpHost::start(&[filesystem("fs", &root)]).await;

    let path = root.join("hello.txt").display().to_string();
    for tool in ["mcp__fs__read_text_file", "mcp__fs__read_file"] {
        let read = host
            .call(tool, json!({"path": path}), PATIENCE)
            .await
            .unwrap();
        assert!(!read.is_error, "{tool}: {read:?}");
        assert_eq!(read.text, "hello from the real server", "{tool}");
    }

    let outside = outside.path().join("secret.txt").display().to_string();
    let refused = host
        .call(
            "mcp__fs__read_text_file",
            json!({"path": outside}),
            PATIENCE,
        )
        .await
        .unwrap();
    assert!(refused.is_error, "{refused:?}");
    assert!(!refused.text.contains("not yours"), "{refused:?}");
    assert!(refused.text.contains("ccess denied"), "{refused:?}");
    host.shutdown().await;
}

#[tokio::test]
async fn unknown_tools_bad_arguments_and_timeouts_are_errors() {
    let (_folder, root) = folder_with_hello();
    let host = McpHost::start(&[filesystem("fs", &root)]).await;

    let unknown = host.call("mcp__fs__format_disk", json!({}), PATIENCE).await;
    assert!(
        matches!(&unknown, Err(HostError::UnknownTool { tool }) if tool == "mcp__fs__format_disk"),
        "{unknown:?}"
    );
    assert_eq!(
        unknown.unwrap_err().to_string(),
        "no MCP tool is named `mcp__fs__format_disk`"
    );
    let bad = host
        .call("mcp__fs__read_text_file", json!(["x"]), PATIENCE)
        .await;
    assert!(
        matches!(bad, Err(HostError::InvalidArguments { .. })),
        "{bad:?}"
    );

    // A zero timeout elapses before any answer can arrive: the request is sent, then
    // given up (and cancelled at the server).
    let path = root.join("hello.txt").display().to_string();
    let late = host
        .call(
            "mcp__fs__read_text_file",
            json!({"path": path}),
            Duration::ZERO,
        )
        .await;
    assert!(matches!(late, Err(HostError::Timeout { .. })), "{late:?}");
    // The session survives a cancelled call.
    let read = host
        .call("mcp__fs__read_text_file", json!({"path": path}), PATIENCE)
        .await
        .unwrap();
    assert_eq!(read.text, "hello from the real server");
    host.shutdown().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_is_reported_and_the_others_still_work() {
    let (_folder, root) = folder_with_hello();
    let missing = McpServerConfig {
        name: "ghost".into(),
        command: "/nonexistent/mcp-server".into(),
        args: vec![],
    };
    let dies = McpServerConfig {
        name: "dies".into(),
        command: "node".into(),
        args: vec![
            "-e".into(),
            "console.error('no such luck'); process.exit(3)".into(),
        ],
    };
    let badly_named = McpServerConfig {
        name: "Bad.Name".into(),
        ..filesystem("x", &root)
    };
    let host = McpHost::start(&[
        missing,
        filesystem("fs", &root),
        dies,
        badly_named,
        filesystem("fs", &root),
    ])
    .await;

    let errors = host.errors();
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(
        errors[0].starts_with("mcp server `Bad.Name`: the name must be"),
        "{errors:#?}"
    );
    assert_eq!(
        errors[1], "mcp server `fs`: the name is configured twice",
        "{errors:#?}"
    );
    assert!(
        errors[2].starts_with("mcp server `ghost`: cannot start `/nonexistent/mcp-server`: "),
        "{errors:#?}"
    );
    assert!(
        errors[3].starts_with("mcp server `dies`: `node` did not initialize")
            && errors[3].contains("no such luck"),
        "{errors:#?}"
    );
    assert!(host
        .tools()
        .iter()
        .all(|tool| tool.name.starts_with("mcp__fs__")));

    let path = root.join("hello.txt").display().to_string();
    let read = host
        .call("mcp__fs__read_text_file", json!({"path": path}), PATIENCE)
        .await
        .unwrap();
    assert_eq!(read.text, "hello from the real server");
    host.shutdown().await;
}

#[tokio::test]
async fn shutdown_stops_the_servers_for_every_clone() {
    let (_folder, root) = folder_with_hello();
    let host = McpHost::start(&[filesystem("fs", &root)]).await;
    let shared = host.clone();
    assert_ne!(servers_serving(&root), Some(0));
    host.shutdown().await;
    assert_eq!(
        servers_serving(&root).unwrap_or(0),
        0,
        "shutdown waits for the child to exit"
    );

    let path = root.join("hello.txt").display().to_string();
    let after = shared
        .call("mcp__fs__read_text_file", json!({"path": path}), PATIENCE)
        .await;
    assert!(
        matches!(&after, Err(HostError::Transport { server, .. }) if server == "fs"),
        "{after:?}"
    );
}

/// How many processes have `folder` on their command line; `None` where there is no
/// `/proc` to ask.
fn servers_serving(folder: &Path) -> Option<usize> {
    let folder = folder.display().to_string();
    let processes = std::fs::read_dir("/proc").ok()?;
    let count = processes
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(&folder))
        .count();
    Some(count)
}

/// F7: a server that died (a crash, an OOM kill) is started again when a call is about
/// to go to it, and the call runs on the new one; the agent's tools keep working without
/// a restart of airlock.
#[tokio::test]
async fn a_server_that_died_is_started_again_for_the_next_call() {
    let (_folder, root) = folder_with_hello();
    let host = McpHost::start(&[filesystem("fs", &root)]).await;
    let path = root.join("hello.txt").display().to_string();
    let read = || host.call("mcp__fs__read_text_file", json!({"path": path}), PATIENCE);
    assert_eq!(read().await.unwrap().text, "hello from the real server");

    let pids = server_pids(&root);
    assert_eq!(pids.len(), 1, "{pids:?}");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pids[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // The host learns of the death when it reads the end of the server's output.
    let start = std::time::Instant::now();
    while host.dead_servers().await.is_empty() {
        assert!(
            start.elapsed() < PATIENCE,
            "the host never saw the server die"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(host.dead_servers().await, ["fs"]);
    assert!(!is_alive(pids[0]));

    let again = read().await;
    assert_eq!(
        again.map(|result| result.text).unwrap(),
        "hello from the real server"
    );
    let now = server_pids(&root);
    assert_eq!(now.len(), 1, "one new server: {now:?}");
    assert_ne!(now, pids);
    assert!(host.dead_servers().await.is_empty());
    host.shutdown().await;
}

/// The ids of the processes with `folder` on their command line (Linux: `/proc`).
fn server_pids(folder: &Path) -> Vec<u32> {
    let folder = folder.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            (String::from_utf8_lossy(&cmdline).contains(&folder) && is_alive(pid)).then_some(pid)
        })
        .collect()
}

/// Whether the process runs (neither gone nor a zombie waiting to be reaped).
fn is_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .next()?
                .to_owned();
            Some(state != "Z" && state != "X")
        })
        .unwrap_or(false)
}
