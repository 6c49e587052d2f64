//! MCP servers configured on an agent give it tools named `mcp__<server>__<tool>`, gated
//! like every other (their answers capped like built-in output): here the real
//! `@modelcontextprotocol/server-filesystem` (npm).

use super::support::*;
use serde_json::json;

fn filesystem_server() -> String {
    let package = std::env::var("AIRLOCK_TEST_MCP_FILESYSTEM").expect(
        "AIRLOCK_TEST_MCP_FILESYSTEM must name the installed @modelcontextprotocol/server-filesystem package (scripts/test.sh installs it)",
    );
    format!("{package}/dist/index.js")
}

/// An asked MCP write runs once after approval, through the agent's own MCP server; a
/// rejected one never reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_of_an_agent_are_gated_and_run_once() {
    let server = runtime_server().await;
    let files = server.data_dir().join("shared-files");
    std::fs::create_dir_all(&files).unwrap();
    let target = files.join("note.txt");
    let rejected = files.join("rejected.txt");
    let scenarios = server.data_dir().join("mcp.toml");
    std::fs::write(
        &scenarios,
        format!(
            r##"
[[scenario]]
marker = "#write"
[[scenario.turn]]
events = [{{ type = "tool_use", name = "mcp__files__write_file", arguments = {{ path = "{}", content = "written once" }} }}]
[[scenario.turn]]
events = [{{ type = "text", text = "Wrote it." }}]

[[scenario]]
marker = "#reject"
[[scenario.turn]]
events = [{{ type = "tool_use", name = "mcp__files__write_file", arguments = {{ path = "{}", content = "never" }} }}]
[[scenario.turn]]
events = [{{ type = "text", text = "Fine." }}]
"##,
            target.display(),
            rejected.display()
        ),
    )
    .unwrap();
    let (agent_id, _) = create_agent(
        &server,
        &json!({
            "name": "filer",
            "tools": [],
            "llm": {"base_url": format!("scripted:{}", scenarios.display()), "model": "script"},
            "mcp_servers": [{"name": "files", "command": "node", "args": [filesystem_server(), files.display().to_string()]}],
        }),
    )
    .await;

    let session = new_session(&server, &agent_id).await;
    let run_id = say(&server, &session, "#write").await;
    let events = journal_until(&server, &run_id, "run_suspended").await;
    let approval_id = approvals_required(&events).remove(0);
    assert_eq!(approval(&server, &approval_id).await["risk"], "exec");
    assert!(!target.exists(), "ran before approval");
    assert_eq!(decide(&server, &approval_id, "approve", "ok").await, 200);
    until_state(&server, &run_id, "completed").await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written once");
    let step = reply(&server, &session, &run_id).await["steps"][0].clone();
    assert_eq!(step["status"], "ok", "{step}");
    assert_eq!(step["tool"], "mcp__files__write_file");

    let session = new_session(&server, &agent_id).await;
    let run_id = say(&server, &session, "#reject").await;
    let events = journal_until(&server, &run_id, "run_suspended").await;
    let approval_id = approvals_required(&events).remove(0);
    assert_eq!(decide(&server, &approval_id, "reject", "no").await, 200);
    until_state(&server, &run_id, "completed").await;
    assert!(!rejected.exists(), "a rejected MCP call reached the server");
}

/// F10: an MCP tool's answer is capped like the built-in tools' output (1 MiB, text and
/// structured content together, `truncated: true`), so a huge read is not stored twice
/// over nor sent to the model on every later turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_mcp_answer_is_capped_like_built_in_output() {
    let server = runtime_server().await;
    server
        .put_policy(&format!(
            "{RUNTIME_POLICY}\n[[rules]]\ntool = \"mcp__files__read_text_file\"\ndecision = \"allow\"\n"
        ))
        .await
        .unwrap();
    let files = server.data_dir().join("big-files");
    std::fs::create_dir_all(&files).unwrap();
    let big = files.join("big.txt");
    std::fs::write(&big, "0123456789abcdef\n".repeat(180_000)).unwrap();
    let scenarios = server.data_dir().join("big.toml");
    std::fs::write(
        &scenarios,
        format!(
            r##"
[[scenario]]
marker = "#big"
[[scenario.turn]]
events = [{{ type = "tool_use", name = "mcp__files__read_text_file", arguments = {{ path = "{}" }} }}]
[[scenario.turn]]
events = [{{ type = "text", text = "Read it." }}]
"##,
            big.display()
        ),
    )
    .unwrap();
    let (agent_id, _) = create_agent(
        &server,
        &json!({
            "name": "reader",
            "tools": [],
            "llm": {"base_url": format!("scripted:{}", scenarios.display()), "model": "script"},
            "mcp_servers": [{"name": "files", "command": "node", "args": [filesystem_server(), files.display().to_string()]}],
        }),
    )
    .await;
    let session = new_session(&server, &agent_id).await;
    let run_id = say(&server, &session, "#big").await;
    until_state(&server, &run_id, "completed").await;
    let step = reply(&server, &session, &run_id).await["steps"][0].clone();
    assert_eq!(step["status"], "ok", "{}", &step.to_string()[..300]);
    let output = &step["output"];
    assert_eq!(output["truncated"], true);
    let text = output["text"].as_str().unwrap();
    assert!(text.len() <= 1024 * 1024, "{}", text.len());
    assert!(text.starts_with("0123456789abcdef\n"));
    assert!(
        output.get("structured").is_none(),
        "left out: it repeats the text"
    );
}
