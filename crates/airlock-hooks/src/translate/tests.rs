//! The translation of each agent's native tools, table by table, with their own payloads.

use super::*;
use crate::payload::HookEvent;
use serde_json::json;

mod codex;

fn call(agent: Agent, tool: &str, input: Value) -> HookCall {
    HookCall {
        agent,
        event: agent.default_event(),
        native_tool: tool.into(),
        input,
        session_id: None,
        cwd: Some("/home/ana/demo".into()),
        transcript_path: Some("/home/ana/.gemini/tmp/x/s.json".into()),
        tool_use_id: None,
        turn_id: None,
        mcp_context: None,
    }
}

/// One row: agent, native tool, native input → canonical tool and arguments.
fn check(agent: Agent, tool: &str, input: Value, want_tool: &str, want: Value) {
    let got = canonical(&call(agent, tool, input.clone())).unwrap();
    assert_eq!(got.tool, want_tool, "{agent} {tool} {input}");
    assert_eq!(got.arguments, want, "{agent} {tool} {input}");
    assert_eq!(got.native_tool, tool);
}

#[test]
fn claude_code_tools() {
    use Agent::ClaudeCode as C;
    check(
        C,
        "Bash",
        json!({"command": "cargo test", "description": "Run tests", "timeout": 60000}),
        "shell.exec",
        json!({"command": "cargo test", "cwd": "/home/ana/demo", "description": "Run tests", "timeout": 60000}),
    );
    check(
        C,
        "Read",
        json!({"file_path": "/home/ana/demo/src/main.rs", "offset": 10, "limit": 20}),
        "fs.read",
        json!({"path": "/home/ana/demo/src/main.rs", "offset": 10, "limit": 20}),
    );
    check(
        C,
        "NotebookRead",
        json!({"notebook_path": "a.ipynb"}),
        "fs.read",
        json!({"path": "a.ipynb"}),
    );
    check(
        C,
        "LS",
        json!({"path": "/home/ana/demo", "ignore": ["target"]}),
        "fs.list",
        json!({"path": "/home/ana/demo", "ignore": ["target"]}),
    );
    check(
        C,
        "Glob",
        json!({"pattern": "**/*.rs"}),
        "fs.list",
        json!({"path": "/home/ana/demo", "pattern": "**/*.rs"}),
    );
    check(
        C,
        "Grep",
        json!({"pattern": "fn main", "path": "src", "output_mode": "content"}),
        "fs.search",
        json!({"pattern": "fn main", "path": "src", "output_mode": "content"}),
    );
    check(
        C,
        "Write",
        json!({"file_path": "/home/ana/demo/a.txt", "content": "x"}),
        "fs.write",
        json!({"path": "/home/ana/demo/a.txt", "content": "x"}),
    );
    check(
        C,
        "Edit",
        json!({"file_path": "a.rs", "old_string": "a", "new_string": "b", "replace_all": false}),
        "fs.edit",
        json!({"path": "a.rs", "old": "a", "new": "b", "replace_all": false}),
    );
    check(
        C,
        "MultiEdit",
        json!({"file_path": "a.rs", "edits": [{"old_string": "a", "new_string": "b"}]}),
        "fs.edit",
        json!({"path": "a.rs", "edits": [{"old_string": "a", "new_string": "b"}]}),
    );
    check(
        C,
        "NotebookEdit",
        json!({"notebook_path": "n.ipynb", "new_source": "print(1)", "cell_id": "c1"}),
        "fs.edit",
        json!({"path": "n.ipynb", "new": "print(1)", "cell_id": "c1"}),
    );
    check(
        C,
        "WebFetch",
        json!({"url": "https://docs.rs/serde", "prompt": "summarise"}),
        "http.fetch",
        json!({"url": "https://docs.rs/serde", "prompt": "summarise"}),
    );
    check(
        C,
        "WebSearch",
        json!({"query": "tokio select"}),
        "web.search",
        json!({"query": "tokio select"}),
    );
    for internal in [
        "TodoWrite",
        "Task",
        "BashOutput",
        "KillShell",
        "ExitPlanMode",
        "ToolSearch",
        "MCPSearch",
        "TaskStop",
    ] {
        check(
            C,
            internal,
            json!({"todos": []}),
            "agent.internal",
            json!({"todos": []}),
        );
    }
    // MCP tools and tools unknown today keep their names and arguments.
    check(
        C,
        "mcp__github__create_issue",
        json!({"title": "x"}),
        "mcp__github__create_issue",
        json!({"title": "x"}),
    );
    check(
        C,
        "FutureTool",
        json!({"a": 1}),
        "FutureTool",
        json!({"a": 1}),
    );
}

#[test]
fn gemini_tools() {
    use Agent::Gemini as G;
    check(
        G,
        "run_shell_command",
        json!({"command": "npm test", "description": "tests", "directory": "web"}),
        "shell.exec",
        json!({"command": "npm test", "cwd": "/home/ana/demo/web", "description": "tests"}),
    );
    check(
        G,
        "read_file",
        json!({"absolute_path": "/home/ana/demo/a.md"}),
        "fs.read",
        json!({"path": "/home/ana/demo/a.md"}),
    );
    check(
        G,
        "read_many_files",
        json!({"paths": ["a.md", "b/**"]}),
        "fs.read",
        json!({"paths": ["a.md", "b/**"]}),
    );
    check(
        G,
        "list_directory",
        json!({"path": "/home/ana/demo"}),
        "fs.list",
        json!({"path": "/home/ana/demo"}),
    );
    check(
        G,
        "glob",
        json!({"pattern": "*.ts"}),
        "fs.list",
        json!({"path": "/home/ana/demo", "pattern": "*.ts"}),
    );
    check(
        G,
        "search_file_content",
        json!({"pattern": "x", "path": "/p"}),
        "fs.search",
        json!({"pattern": "x", "path": "/p"}),
    );
    // The newer search's file filter is the `include` the policy's rules read.
    check(
        G,
        "grep_search",
        json!({"pattern": "ssh", "include_pattern": ".bash_history"}),
        "fs.search",
        json!({"pattern": "ssh", "include": ".bash_history", "path": "/home/ana/demo"}),
    );
    check(
        G,
        "write_file",
        json!({"file_path": "/home/ana/demo/a", "content": "x"}),
        "fs.write",
        json!({"path": "/home/ana/demo/a", "content": "x"}),
    );
    check(
        G,
        "replace",
        json!({"file_path": "/p/a", "old_string": "a", "new_string": "b", "expected_replacements": 2}),
        "fs.edit",
        json!({"path": "/p/a", "old": "a", "new": "b", "expected_replacements": 2}),
    );
    check(
        G,
        "google_web_search",
        json!({"query": "q"}),
        "web.search",
        json!({"query": "q"}),
    );
    check(
        G,
        "save_memory",
        json!({"fact": "likes tabs"}),
        "fs.write",
        json!({"path": "/home/ana/.gemini/GEMINI.md", "content": "likes tabs"}),
    );
    check(
        G,
        "write_todos",
        json!({"todos": []}),
        "agent.internal",
        json!({"todos": []}),
    );
}

#[test]
fn gemini_web_fetch_is_judged_on_every_url_in_its_prompt() {
    use Agent::Gemini as G;
    check(
        G,
        "web_fetch",
        json!({"prompt": "Summarise https://docs.rs/serde."}),
        "http.fetch",
        json!({"url": "https://docs.rs/serde", "prompt": "Summarise https://docs.rs/serde."}),
    );
    let two = "Compare https://a.test/x and (http://b.test/y?q=1), then https://a.test/x";
    check(
        G,
        "web_fetch",
        json!({"prompt": two}),
        "http.fetch",
        json!({"url": ["https://a.test/x", "http://b.test/y?q=1"], "prompt": two}),
    );
    check(
        G,
        "web_fetch",
        json!({"prompt": "no link here"}),
        "http.fetch",
        json!({"prompt": "no link here"}),
    );
    // The scheme in any case; a quote that may be user info keeps both readings.
    let upper = "Read HTTP://169.254.169.254/latest/meta-data/";
    check(
        G,
        "web_fetch",
        json!({"prompt": upper}),
        "http.fetch",
        json!({"url": "HTTP://169.254.169.254/latest/meta-data/", "prompt": upper}),
    );
    let quoted = "Fetch https://a.test'@169.254.169.254/x now";
    check(
        G,
        "web_fetch",
        json!({"prompt": quoted}),
        "http.fetch",
        json!({"url": ["https://a.test", "https://a.test'@169.254.169.254/x"], "prompt": quoted}),
    );
    let plain_quotes = "Summarise 'https://docs.rs/serde' please";
    check(
        G,
        "web_fetch",
        json!({"prompt": plain_quotes}),
        "http.fetch",
        json!({"url": "https://docs.rs/serde", "prompt": plain_quotes}),
    );
}

#[test]
fn the_same_native_name_means_what_its_agent_means() {
    // `read_file` is Codex's and Gemini's; `Bash` is not a Gemini tool.
    let gemini_bash = canonical(&call(Agent::Gemini, "Bash", json!({"command": "ls"}))).unwrap();
    assert_eq!(gemini_bash.tool, "Bash");
    let mut no_cwd = call(Agent::ClaudeCode, "Glob", json!({"pattern": "*"}));
    no_cwd.cwd = None;
    // No folder is invented when the agent gave none.
    assert_eq!(
        canonical(&no_cwd).unwrap().arguments,
        json!({"pattern": "*"})
    );
    assert_eq!(no_cwd.event, HookEvent::PreToolUse);
}

/// Claude Code 2.1.332's built-in tools (the version the agent tests pin), each either in
/// the table or asked on purpose: a name added to this list must be placed in one of them.
const CLAUDE_CODE_2_1_332: &[&str] = &[
    "Agent",
    "Artifact",
    "AskUserQuestion",
    "Bash",
    "ClaudeDesign",
    "CronCreate",
    "CronDelete",
    "CronList",
    "Edit",
    "EndConversation",
    "EnterPlanMode",
    "EnterWorktree",
    "ExitPlanMode",
    "ExitWorktree",
    "Glob",
    "Grep",
    "ListAgents",
    "ListMcpResourcesTool",
    "LSP",
    "Monitor",
    "NotebookEdit",
    "OfferChromeSetup",
    "PowerShell",
    "Projects",
    "propose_skills",
    "PushNotification",
    "Read",
    "ReadMcpResourceDirTool",
    "ReadMcpResourceTool",
    "ReadNotifications",
    "RemoteTrigger",
    "ReportFindings",
    "ScheduleWakeup",
    "SendFeedback",
    "SendMessage",
    "SendUserFile",
    "SendUserMessage",
    "SetGoal",
    "ShareOnboardingGuide",
    "ShowOnboardingRolePicker",
    "Skill",
    "SubagentHandback",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskStop",
    "TaskUpdate",
    "TodoWrite",
    "ToolSearch",
    "WaitForMcpServers",
    "WebFetch",
    "WebSearch",
    "Workflow",
    "Write",
];

/// The tools of that list that keep their names, so that the policy's default (ask)
/// decides them: they send data off the machine, schedule or run work of their own, change
/// git work trees, or set up services.
const CLAUDE_CODE_ASKED: &[&str] = &[
    "Artifact",
    "ClaudeDesign",
    "CronCreate",
    "CronDelete",
    "EnterWorktree",
    "ExitWorktree",
    "OfferChromeSetup",
    "Projects",
    "propose_skills",
    "PushNotification",
    "RemoteTrigger",
    "ScheduleWakeup",
    "SendFeedback",
    "SendUserFile",
    "ShareOnboardingGuide",
    "ShowOnboardingRolePicker",
    "Workflow",
];

#[test]
fn every_current_claude_code_tool_is_translated_or_asked_on_purpose() {
    for tool in CLAUDE_CODE_2_1_332 {
        let input = json!({"command": "ls", "file_path": "/home/ana/demo/a", "filePath": "a"});
        let got = canonical(&call(Agent::ClaudeCode, tool, input)).unwrap();
        let asked = CLAUDE_CODE_ASKED.contains(tool);
        assert_eq!(got.tool == *tool, asked, "{tool} → {}", got.tool);
    }
    // The bookkeeping list holds only tools, current or older, that Claude Code sends.
    for tool in CLAUDE_CODE_INTERNAL {
        let got = canonical(&call(Agent::ClaudeCode, tool, json!({}))).unwrap();
        assert_eq!(got.tool, "agent.internal", "{tool}");
    }
}

#[test]
fn claude_codes_sub_agents_and_shells_by_their_current_names() {
    use Agent::ClaudeCode as C;
    // `Agent` is what `Task` is called now: the same call either way.
    let launch = json!({"description": "find uses", "prompt": "…", "subagent_type": "Explore"});
    check(C, "Agent", launch.clone(), "agent.internal", launch.clone());
    check(C, "Task", launch.clone(), "agent.internal", launch);
    check(
        C,
        "PowerShell",
        json!({"command": "Get-ChildItem", "description": "list"}),
        "shell.exec",
        json!({"command": "Get-ChildItem", "cwd": "/home/ana/demo", "shell": "powershell",
            "description": "list"}),
    );
    check(
        C,
        "Monitor",
        json!({"description": "watch", "timeout_ms": 300000, "command": "tail -f log"}),
        "shell.exec",
        json!({"command": "tail -f log", "cwd": "/home/ana/demo", "description": "watch",
            "timeout_ms": 300000}),
    );
    check(
        C,
        "Monitor",
        json!({"description": "feed", "timeout_ms": 1000, "ws": {"url": "wss://x.test/feed"}}),
        "http.fetch",
        json!({"url": "wss://x.test/feed", "description": "feed", "timeout_ms": 1000,
            "ws": {"url": "wss://x.test/feed"}}),
    );
    // Both at once is refused by Claude Code: nothing is guessed, the name is kept.
    let both = json!({"command": "ls", "ws": {"url": "wss://x.test"}});
    check(C, "Monitor", both.clone(), "Monitor", both);
    check(
        C,
        "LSP",
        json!({"operation": "hover", "filePath": "/home/ana/demo/a.rs", "line": 1, "character": 1}),
        "fs.read",
        json!({"path": "/home/ana/demo/a.rs", "operation": "hover", "line": 1, "character": 1}),
    );
    // A skill's shell line reads as the shell tool it names.
    let mut skill = call(C, "Bash", json!({"command": "cat ~/.ssh/id_rsa"}));
    skill.event = HookEvent::PreSkillShellCommand;
    let got = canonical(&skill).unwrap();
    assert_eq!(got.tool, "shell.exec");
    assert_eq!(got.arguments["command"], "cat ~/.ssh/id_rsa");
}

#[test]
fn gemini_bookkeeping_and_mcp_tools() {
    use Agent::Gemini as G;
    for tool in GEMINI_INTERNAL {
        check(
            G,
            tool,
            json!({"title": "t"}),
            "agent.internal",
            json!({"title": "t"}),
        );
    }
    check(
        G,
        "grep_search",
        json!({"pattern": "x", "dir_path": "/p"}),
        "fs.search",
        json!({"pattern": "x", "path": "/p"}),
    );
    // Qwen Code's names for the same tools.
    let qwen = call(
        G,
        "edit",
        json!({"file_path": "/p/a.rs", "old_string": "a", "new_string": "b"}),
    );
    let got = canonical(&qwen).unwrap();
    assert_eq!(got.tool, "fs.edit");
    assert_eq!(
        got.arguments,
        json!({"path": "/p/a.rs", "old": "a", "new": "b"})
    );
    for (tool, input) in [
        ("todo_write", json!({"todos": []})),
        ("ask_user_question", json!({"questions": "[]"})),
        ("skill", json!({"skill": "qc-helper"})),
    ] {
        assert_eq!(
            canonical(&call(G, tool, input)).unwrap().tool,
            "agent.internal"
        );
    }
    // An MCP tool is named as Claude Code and Codex name it, from its `mcp_context`.
    let mut mcp = call(G, "mcp_github_list_issues", json!({"repo": "a/b"}));
    mcp.mcp_context = Some(crate::payload::McpContext {
        server: "github".into(),
        tool: "list_issues".into(),
    });
    let got = canonical(&mcp).unwrap();
    assert_eq!(got.tool, "mcp__github__list_issues");
    assert_eq!(got.native_tool, "mcp_github_list_issues");
    assert_eq!(got.arguments, json!({"repo": "a/b"}));
    // Underscores in the server's name: only the context can tell where it ends.
    mcp.native_tool = "mcp_my_server_get_x".into();
    mcp.mcp_context = Some(crate::payload::McpContext {
        server: "my_server".into(),
        tool: "get_x".into(),
    });
    assert_eq!(canonical(&mcp).unwrap().tool, "mcp__my_server__get_x");
    // Without it, no split is guessed: the name is kept.
    mcp.mcp_context = None;
    assert_eq!(canonical(&mcp).unwrap().tool, "mcp_my_server_get_x");
    // A tool Gemini CLI calls by its own name (no other tool has it) is named from its
    // context too.
    let mut bare = call(G, "create_issue", json!({"title": "x"}));
    bare.mcp_context = Some(crate::payload::McpContext {
        server: "github".into(),
        tool: "create_issue".into(),
    });
    assert_eq!(canonical(&bare).unwrap().tool, "mcp__github__create_issue");
    assert_eq!(canonical(&bare).unwrap().native_tool, "create_issue");
    // A context on a tool that is not an MCP tool renames nothing.
    let mut shell = call(G, "run_shell_command", json!({"command": "ls"}));
    shell.mcp_context = Some(crate::payload::McpContext {
        server: "s".into(),
        tool: "t".into(),
    });
    assert_eq!(canonical(&shell).unwrap().tool, "shell.exec");
}
