//! Reading a coding agent's hook payload: which agent, which event, which tool with which
//! arguments, in which session and folder.
//!
//! The documented inputs (all three agents put the call in `tool_name` + `tool_input`):
//! - Claude Code `PreToolUse` / `PostToolUse` / `PostToolUseFailure`: `{session_id,
//!   transcript_path, cwd, permission_mode, hook_event_name, tool_name, tool_input,
//!   tool_use_id?, tool_response? (after a success), error?, is_interrupt? (after a
//!   failure)}`; `PreSkillShellCommand` (a `!` shell line of a skill or slash command,
//!   which never reaches `PreToolUse`): `tool_name` `Bash` or `PowerShell`, `tool_input:
//!   {command}`, plus `command_name` and `invoked_by`.
//! - Codex `PreToolUse` / `PermissionRequest` / `PostToolUse`: `{session_id, turn_id?,
//!   transcript_path, cwd, hook_event_name, model, permission_mode, tool_name, tool_input,
//!   tool_use_id?}`.
//! - Gemini CLI `BeforeTool` / `AfterTool`: `{session_id, transcript_path, cwd,
//!   hook_event_name, timestamp, tool_name, tool_input, mcp_context?, tool_response?}`;
//!   an MCP tool's `mcp_context` names its server and the server's own name for the tool
//!   ([`McpContext`]).
//!
//! Unknown fields are accepted (agents add them with their releases; a strict reader would
//! deny every call after an upgrade). What the verdict depends on is never guessed: a
//! missing tool, arguments that are not an object, or an event the agent does not send
//! for tool calls is an error, and the caller denies.

use serde::Deserialize;
use serde_json::Value;
use std::fmt;

/// The coding agents airlock speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
}

impl Agent {
    pub const ALL: [Agent; 3] = [Agent::ClaudeCode, Agent::Codex, Agent::Gemini];

    /// The name in URLs and on the command line: `claude-code`, `codex`, `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    pub fn from_name(name: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|agent| agent.name() == name)
    }

    /// The agent's name for people.
    pub fn display_name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Gemini => "Gemini CLI",
        }
    }

    /// The event this agent sends before a tool runs when the payload names none: the one
    /// each integration guide configures.
    pub fn default_event(self) -> HookEvent {
        match self {
            Agent::ClaudeCode => HookEvent::PreToolUse,
            Agent::Codex => HookEvent::PermissionRequest,
            Agent::Gemini => HookEvent::BeforeTool,
        }
    }

    /// Reads the event named in `hook_event_name`, if this agent sends it for tool calls.
    pub fn event(self, name: &str) -> Option<HookEvent> {
        HookEvent::ALL
            .into_iter()
            .find(|event| event.name() == name && self.sends(*event))
    }

    fn sends(self, event: HookEvent) -> bool {
        use HookEvent::*;
        matches!(
            (self, event),
            (
                Agent::ClaudeCode,
                PreToolUse | PreSkillShellCommand | PostToolUse | PostToolUseFailure
            ) | (Agent::Codex, PreToolUse | PermissionRequest | PostToolUse)
                | (Agent::Gemini, BeforeTool | AfterTool)
        )
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A hook event that concerns one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// Claude Code and Codex, before every tool call.
    PreToolUse,
    /// Claude Code, before each shell line (`!` command) of a skill or slash command runs:
    /// those run through no tool call, so `PreToolUse` never sees them.
    PreSkillShellCommand,
    /// Codex, when it would ask its user (an escalation out of its sandbox).
    PermissionRequest,
    /// Gemini CLI, before every tool call.
    BeforeTool,
    /// Claude Code and Codex, after a tool ran (Claude Code: and succeeded).
    PostToolUse,
    /// Claude Code, after a tool ran and failed (or was interrupted).
    PostToolUseFailure,
    /// Gemini CLI, after a tool ran.
    AfterTool,
}

impl HookEvent {
    pub const ALL: [HookEvent; 7] = [
        HookEvent::PreToolUse,
        HookEvent::PreSkillShellCommand,
        HookEvent::PermissionRequest,
        HookEvent::BeforeTool,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::AfterTool,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PreSkillShellCommand => "PreSkillShellCommand",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::BeforeTool => "BeforeTool",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::AfterTool => "AfterTool",
        }
    }

    /// Whether the event asks before the tool runs (as opposed to reporting after).
    pub fn is_before(self) -> bool {
        match self {
            HookEvent::PreToolUse
            | HookEvent::PreSkillShellCommand
            | HookEvent::PermissionRequest
            | HookEvent::BeforeTool => true,
            HookEvent::PostToolUse | HookEvent::PostToolUseFailure | HookEvent::AfterTool => false,
        }
    }
}

/// One tool call as an agent's hook reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    pub agent: Agent,
    pub event: HookEvent,
    /// As the agent names it (`Bash`, `apply_patch`, `run_shell_command`, `mcp__srv__t`…).
    pub native_tool: String,
    /// The tool's arguments as the agent sent them: always a JSON object.
    pub input: Value,
    /// The agent's own session id: its calls share one airlock session.
    pub session_id: Option<String>,
    /// The agent's working folder, as sent (not checked to be absolute here).
    pub cwd: Option<String>,
    /// Where the agent keeps the session's transcript (under the user's home folder).
    pub transcript_path: Option<String>,
    /// The agent's id for this tool call, when it gives one.
    pub tool_use_id: Option<String>,
    /// Codex's turn: its `PermissionRequest` has no `tool_use_id`, so the turn (with the
    /// exact call) is what pairs it with the `PreToolUse` of the same call.
    pub turn_id: Option<String>,
    /// Gemini CLI's MCP tools: the server and the tool, as the server names it.
    pub mcp_context: Option<McpContext>,
}

/// Which MCP server's tool a call is, as Gemini CLI's `mcp_context` says: its tool names
/// (`mcp_<server>_<tool>`, with characters it does not allow replaced) cannot be split back
/// into the two, since either may hold `_`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpContext {
    pub server: String,
    pub tool: String,
}

/// Why a payload cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadError(pub String);

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PayloadError {}

/// The fields read from every agent's payload; others are ignored.
#[derive(Debug, Deserialize)]
struct Fields {
    tool_name: Option<String>,
    tool_input: Option<Value>,
    /// Accepted in place of `tool_input` (older or third-party emitters of these shapes).
    #[serde(alias = "tool_args")]
    arguments: Option<Value>,
    hook_event_name: Option<String>,
    session_id: Option<Value>,
    cwd: Option<String>,
    transcript_path: Option<String>,
    tool_use_id: Option<String>,
    turn_id: Option<Value>,
    mcp_context: Option<Value>,
}

impl Agent {
    /// Reads a hook payload from its JSON text.
    pub fn parse(self, text: &str) -> Result<HookCall, PayloadError> {
        // The fields straight from the text: no tree of the whole payload is built only to
        // be taken apart (a replay reads a million payloads). An object the direct read
        // refuses (a repeated key, which a tree keeps the last of) takes the tree's route,
        // so both routes accept and word errors alike.
        if text.trim_start().starts_with('{') {
            if let Ok(fields) = serde_json::from_str::<Fields>(text) {
                return self.call_of(fields);
            }
        }
        let value: Value = serde_json::from_str(text).map_err(|error| {
            PayloadError(format!("the hook input is not the expected JSON: {error}"))
        })?;
        self.read(value)
    }

    /// Reads a hook payload already parsed as JSON.
    pub fn read(self, value: Value) -> Result<HookCall, PayloadError> {
        if !value.is_object() {
            return Err(PayloadError(
                "the hook input is not the expected JSON: not an object".into(),
            ));
        }
        let fields: Fields = serde_json::from_value(value).map_err(|error| {
            PayloadError(format!("the hook input is not the expected JSON: {error}"))
        })?;
        self.call_of(fields)
    }

    fn call_of(self, fields: Fields) -> Result<HookCall, PayloadError> {
        let event = match fields.hook_event_name.as_deref() {
            None => self.default_event(),
            Some(name) => self.event(name).ok_or_else(|| {
                PayloadError(format!(
                    "{} sends no tool-call hook named `{name}` (airlock gates {})",
                    self.display_name(),
                    self.events_listed()
                ))
            })?,
        };
        let native_tool = fields
            .tool_name
            .filter(|tool| !tool.trim().is_empty())
            .ok_or_else(|| PayloadError("the hook input has no `tool_name`".into()))?;
        let input = match fields.tool_input.or(fields.arguments) {
            // Judging a call without its arguments would judge a different call.
            None | Some(Value::Null) => {
                return Err(PayloadError("the hook input has no `tool_input`".into()))
            }
            Some(Value::Object(input)) => Value::Object(input),
            Some(_) => {
                return Err(PayloadError(
                    "the hook input's `tool_input` is not a JSON object".into(),
                ))
            }
        };
        // Session ids are strings for every agent today; a number is read as its text.
        let session_id = match fields.session_id {
            Some(Value::String(id)) => Some(id),
            Some(Value::Number(id)) => Some(id.to_string()),
            _ => None,
        }
        .filter(|id| !id.trim().is_empty());
        Ok(HookCall {
            agent: self,
            event,
            native_tool,
            input,
            session_id,
            cwd: fields.cwd.filter(|cwd| !cwd.is_empty()),
            transcript_path: fields.transcript_path.filter(|path| !path.is_empty()),
            tool_use_id: fields.tool_use_id.filter(|id| !id.is_empty()),
            turn_id: match fields.turn_id {
                Some(Value::String(id)) => Some(id),
                Some(Value::Number(id)) => Some(id.to_string()),
                _ => None,
            }
            .filter(|id| !id.trim().is_empty()),
            mcp_context: fields.mcp_context.as_ref().and_then(mcp_context),
        })
    }

    fn events_listed(self) -> String {
        let names: Vec<&str> = HookEvent::ALL
            .into_iter()
            .filter(|event| self.sends(*event))
            .map(HookEvent::name)
            .collect();
        names.join(", ")
    }

    /// The event a payload names, read without judging the rest of it: what a caller that
    /// must fail closed needs to answer in the right shape.
    pub fn event_of(self, text: &str) -> HookEvent {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => self.event_in(&value),
            Err(_) => self.default_event(),
        }
    }

    /// [`Agent::event_of`] for a payload already parsed as JSON.
    pub fn event_in(self, payload: &Value) -> HookEvent {
        payload
            .get("hook_event_name")
            .and_then(Value::as_str)
            .and_then(|name| self.event(name))
            .unwrap_or_else(|| self.default_event())
    }
}

/// An `mcp_context` that names both a server and a tool; anything else is none (the call
/// then keeps its native name, which no rule written for MCP tools matches: it is asked).
fn mcp_context(value: &Value) -> Option<McpContext> {
    let text = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty())
            .map(str::to_owned)
    };
    Some(McpContext {
        server: text("server_name")?,
        tool: text("tool_name")?,
    })
}

mod transcript;

pub(crate) use transcript::is_drive_path;
pub use transcript::{home_from_transcript, home_from_transcript_at, launch_folder};

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reading_the_text_and_reading_its_tree_agree() {
        let texts = [
            r#"{"session_id":"s1","transcript_path":"/home/a/.claude/projects/-home-a-p/s1.jsonl",
                "cwd":"/home/a/p","hook_event_name":"PreToolUse","tool_name":"Bash",
                "tool_input":{"command":"ls -la","timeout":1.5e3},"tool_use_id":"toolu_1","extra":[1,{"x":null}]}"#,
            // A repeated key: the tree keeps the last one.
            r#"{"tool_name":"Bash","tool_name":"Read","tool_input":{"file_path":"/etc/hosts"}}"#,
            r#"{"tool_name":"Bash","tool_args":{"command":"ls"},"arguments":{"command":"rm"}}"#,
            r#" {"tool_name":"run_shell_command","tool_input":{"command":"ls"},"session_id":42,"turn_id":7}"#,
            r#"{"tool_name":"Bash","tool_input":null}"#,
            r#"{"tool_name":"Bash","tool_input":"ls"}"#,
            r#"{"tool_name":"  ","tool_input":{}}"#,
            r#"{"tool_name":"Bash","tool_input":{}} trailing"#,
            r#"{"tool_name":"Bash","hook_event_name":"Stop","tool_input":{}}"#,
            r#"{"tool_name":7,"tool_input":{}}"#,
            r#"["Bash",{"command":"ls"}]"#,
            "",
        ];
        for agent in [Agent::ClaudeCode, Agent::Codex, Agent::Gemini] {
            for text in texts {
                let through_tree = serde_json::from_str::<Value>(text)
                    .map_err(|error| {
                        PayloadError(format!("the hook input is not the expected JSON: {error}"))
                    })
                    .and_then(|value| agent.read(value));
                assert_eq!(agent.parse(text), through_tree, "{agent:?}: {text}");
            }
        }
    }

    #[test]
    fn each_agent_reads_its_documented_payloads() {
        let claude = r#"{"session_id":"abc123","transcript_path":"/home/ana/.claude/projects/demo/abc123.jsonl",
            "cwd":"/home/ana/demo","permission_mode":"default","hook_event_name":"PreToolUse",
            "tool_name":"Bash","tool_input":{"command":"git push","description":"Push"},"tool_use_id":"toolu_01"}"#;
        let call = Agent::ClaudeCode.parse(claude).unwrap();
        assert_eq!(call.event, HookEvent::PreToolUse);
        assert_eq!(call.native_tool, "Bash");
        assert_eq!(call.input["command"], "git push");
        assert_eq!(call.session_id.as_deref(), Some("abc123"));
        assert_eq!(call.cwd.as_deref(), Some("/home/ana/demo"));
        assert_eq!(call.tool_use_id.as_deref(), Some("toolu_01"));

        let codex_pre = r#"{"session_id":"0199","turn_id":"1","transcript_path":null,"cwd":"/w",
            "hook_event_name":"PreToolUse","model":"gpt-5","permission_mode":"default",
            "tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"call_1","brand_new":[1]}"#;
        let pre = Agent::Codex.parse(codex_pre).unwrap();
        assert_eq!(pre.event, HookEvent::PreToolUse);
        assert_eq!(pre.turn_id.as_deref(), Some("1"));
        let codex_permission = r#"{"session_id":"0199","cwd":"/w","hook_event_name":"PermissionRequest",
            "model":"gpt-5","permission_mode":"default","tool_name":"Bash",
            "tool_input":{"command":"curl example.com","description":"network-access example.com"}}"#;
        assert_eq!(
            Agent::Codex.parse(codex_permission).unwrap().event,
            HookEvent::PermissionRequest
        );

        let gemini = r#"{"session_id":"s","transcript_path":"/home/bo/.gemini/tmp/x/chats/s.json","cwd":"/w",
            "hook_event_name":"BeforeTool","timestamp":"2026-01-01T00:00:00Z",
            "tool_name":"run_shell_command","tool_input":{"command":"ls"},"mcp_context":null}"#;
        let call = Agent::Gemini.parse(gemini).unwrap();
        assert_eq!(call.event, HookEvent::BeforeTool);
        assert_eq!(
            home_from_transcript(call.transcript_path.as_deref().unwrap()).as_deref(),
            Some("/home/bo")
        );
    }

    #[test]
    fn doubtful_payloads_are_errors() {
        for (agent, text, says) in [
            (Agent::ClaudeCode, "", "not the expected JSON"),
            (Agent::ClaudeCode, "[1]", "not an object"),
            (Agent::ClaudeCode, r#"{"tool_input":{}}"#, "no `tool_name`"),
            (
                Agent::ClaudeCode,
                r#"{"tool_name":" ","tool_input":{}}"#,
                "no `tool_name`",
            ),
            (
                Agent::ClaudeCode,
                r#"{"tool_name":"Bash"}"#,
                "no `tool_input`",
            ),
            (
                Agent::ClaudeCode,
                r#"{"tool_name":"Bash","tool_input":null}"#,
                "no `tool_input`",
            ),
            (
                Agent::ClaudeCode,
                r#"{"tool_name":"Bash","tool_input":"ls"}"#,
                "not a JSON object",
            ),
            (
                Agent::ClaudeCode,
                r#"{"tool_name":7,"tool_input":{}}"#,
                "not the expected JSON",
            ),
            // An event the agent never sends for a tool call, or another agent's event.
            (
                Agent::ClaudeCode,
                r#"{"hook_event_name":"Stop","tool_name":"Bash","tool_input":{}}"#,
                "`Stop`",
            ),
            (
                Agent::Codex,
                r#"{"hook_event_name":"BeforeTool","tool_name":"Bash","tool_input":{}}"#,
                "`BeforeTool`",
            ),
            (
                Agent::Gemini,
                r#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}"#,
                "`PreToolUse`",
            ),
        ] {
            let error = agent.parse(text).unwrap_err();
            assert!(error.0.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn claude_codes_skill_lines_and_failures_and_geminis_mcp_context_are_read() {
        let skill = r#"{"session_id":"s1","cwd":"/w","hook_event_name":"PreSkillShellCommand",
            "tool_name":"Bash","tool_input":{"command":"git log -1"},"tool_use_id":"skillcmd_1",
            "command_name":"deploy","invoked_by":"claude"}"#;
        let call = Agent::ClaudeCode.parse(skill).unwrap();
        assert_eq!(call.event, HookEvent::PreSkillShellCommand);
        assert!(call.event.is_before());
        let failure = r#"{"hook_event_name":"PostToolUseFailure","tool_name":"Bash",
            "tool_input":{"command":"ls x"},"tool_use_id":"toolu_1","error":"Exit code 1",
            "is_interrupt":false,"duration_ms":12}"#;
        let call = Agent::ClaudeCode.parse(failure).unwrap();
        assert_eq!(call.event, HookEvent::PostToolUseFailure);
        assert!(!call.event.is_before());
        // Claude Code's events only.
        for agent in [Agent::Codex, Agent::Gemini] {
            assert!(agent.parse(skill).is_err(), "{agent}");
            assert!(agent.parse(failure).is_err(), "{agent}");
        }
        let gemini = r#"{"hook_event_name":"BeforeTool","tool_name":"mcp_github_list_issues",
            "tool_input":{"repo":"a/b"},"mcp_context":{"server_name":"github",
            "tool_name":"list_issues","command":"npx","args":["gh-mcp"]}}"#;
        assert_eq!(
            Agent::Gemini.parse(gemini).unwrap().mcp_context,
            Some(McpContext {
                server: "github".into(),
                tool: "list_issues".into()
            })
        );
        // A context that does not name both is no context.
        for context in [
            r#"null"#,
            r#"{"server_name":"github"}"#,
            r#"{"server_name":"","tool_name":"x"}"#,
        ] {
            let text = format!(
                r#"{{"tool_name":"mcp_github_x","tool_input":{{}},"mcp_context":{context}}}"#
            );
            assert_eq!(
                Agent::Gemini.parse(&text).unwrap().mcp_context,
                None,
                "{context}"
            );
        }
    }

    #[test]
    fn the_launch_folder_of_a_claude_code_session_is_found_among_the_cwds_ancestors() {
        let transcript = "/Users/mi/.claude/projects/-Users-mi-Projects-oss-graph-monitor/s.jsonl";
        assert_eq!(
            launch_folder(
                transcript,
                "/Users/mi/Projects/oss/graph-monitor/data-capture"
            )
            .as_deref(),
            Some("/Users/mi/Projects/oss/graph-monitor")
        );
        assert_eq!(
            launch_folder(transcript, "/Users/mi/Projects/oss/graph-monitor").as_deref(),
            Some("/Users/mi/Projects/oss/graph-monitor")
        );
        // Dots and underscores are written as dashes.
        let dotted = "/home/c/.claude/projects/-home-c-dev-my-app-v2/s.jsonl";
        assert_eq!(
            launch_folder(dotted, "/home/c/dev/my_app.v2/src").as_deref(),
            Some("/home/c/dev/my_app.v2")
        );
        // A folder that does not hold the cwd, or no Claude Code transcript: nothing.
        assert_eq!(launch_folder(transcript, "/srv/other"), None);
        assert_eq!(
            launch_folder("/home/c/.gemini/tmp/x/s.json", "/home/c"),
            None
        );
        assert_eq!(
            launch_folder("/home/c/.claude/projects/-/s.jsonl", "/etc"),
            None
        );
        // Windows: backslashes, the drive's colon as a dash, the drive letter in any case.
        let windows = r"C:\Users\y\.claude\projects\c--Users-y-Coding-polydot\s.jsonl";
        assert_eq!(
            launch_folder(windows, r"C:\Users\y\Coding\polydot\contracts").as_deref(),
            Some(r"C:\Users\y\Coding\polydot")
        );
        assert_eq!(
            launch_folder(windows, r"C:\Users\y\Coding\polydot").as_deref(),
            Some(r"C:\Users\y\Coding\polydot")
        );
        assert_eq!(launch_folder(windows, r"C:\Users\y\Coding\other"), None);
        // Other characters are a dash for each UTF-16 unit they take, as Claude Code writes
        // them: `搜索` is `--`, `😀` is `--`; the count must agree.
        let named = r"C:\Users\ASUS\.claude\projects\c--Users-ASUS-Desktop---\s.jsonl";
        assert_eq!(
            launch_folder(named, r"C:\Users\ASUS\Desktop\搜索\frontend").as_deref(),
            Some(r"C:\Users\ASUS\Desktop\搜索")
        );
        assert_eq!(
            launch_folder(named, r"C:\Users\ASUS\Desktop\搜\frontend"),
            None
        );
        assert_eq!(
            launch_folder(
                "/home/c/.claude/projects/-home-c-a---b/s.jsonl",
                "/home/c/a-😀b/x"
            )
            .as_deref(),
            Some("/home/c/a-😀b")
        );
        // On a POSIX path the case still counts.
        assert_eq!(
            launch_folder(
                "/home/c/.claude/projects/-home-c-App/s.jsonl",
                "/home/c/app"
            ),
            None
        );
    }

    #[test]
    fn the_home_shows_in_posix_and_windows_transcript_paths() {
        assert_eq!(
            home_from_transcript(r"C:\Users\Y\.codex\sessions\2026\04\r.jsonl").as_deref(),
            Some(r"C:\Users\Y")
        );
        assert_eq!(
            home_from_transcript("c:/Users/y/.claude/projects/x/s.jsonl").as_deref(),
            Some("c:/Users/y")
        );
        assert_eq!(
            home_from_transcript("/home/a/.gemini/tmp/h/chats/s.json").as_deref(),
            Some("/home/a")
        );
        // Qwen Code, Gemini CLI's fork, keeps its chats in `~/.qwen`.
        assert_eq!(
            home_from_transcript(r"C:\Users\minh\.qwen\tmp\7d38\chats\s.json").as_deref(),
            Some(r"C:\Users\minh")
        );
        // The marker must be a whole folder name, under a folder.
        assert_eq!(home_from_transcript("/home/a/x.claude/s.jsonl"), None);
        assert_eq!(home_from_transcript(r"C:\.codex\s.jsonl"), None);
        // An agent folder kept in a project below the home: the home is the user's.
        assert_eq!(
            home_from_transcript("/home/a/course/lab2/.codex/sessions/r.jsonl").as_deref(),
            Some("/home/a")
        );
        assert_eq!(
            home_from_transcript("/Users/a/src/app/.gemini/tmp/app/chats/s.json").as_deref(),
            Some("/Users/a")
        );
        assert_eq!(
            home_from_transcript(r"c:\Users\a\app\.codex\sessions\r.jsonl").as_deref(),
            Some(r"c:\Users\a")
        );
        // Where no system puts a home, an agent folder shows none.
        for project in [
            "/workspaces/app/.codex/sessions/r.jsonl",
            "/workspace/app/.claude/projects/x/s.jsonl",
            "/Volumes/SSD/dev/app/.codex/sessions/r.jsonl",
            "/mnt/c/src/app/.gemini/tmp/app/chats/s.json",
            r"e:\app\.codex\sessions\r.jsonl",
            r"C:\beta\app\.claude\projects\x\s.jsonl",
        ] {
            assert_eq!(home_from_transcript(project), None, "{project}");
        }
        // Elsewhere there is no telling: the folder holding the agent's stays the home.
        assert_eq!(
            home_from_transcript("/mnt/data/me/.claude/projects/x/s.jsonl").as_deref(),
            Some("/mnt/data/me")
        );
        assert_eq!(
            home_from_transcript("/srv/team/me/.claude/projects/x/s.jsonl").as_deref(),
            Some("/srv/team/me")
        );
        assert_eq!(home_from_transcript(".claude/projects/s.jsonl"), None);
        // An agent folder kept in the folder the session works in lies in the project,
        // unless that folder is a home.
        let kept = "/per/dev/shell-ws/.codex/sessions/2026/03/18/rollout-x.jsonl";
        assert_eq!(
            home_from_transcript(kept).as_deref(),
            Some("/per/dev/shell-ws")
        );
        assert_eq!(
            home_from_transcript_at(kept, Some("/per/dev/shell-ws")),
            None
        );
        assert_eq!(
            home_from_transcript_at(kept, Some("/per/dev/shell-ws/ui")).as_deref(),
            Some("/per/dev/shell-ws")
        );
        for (transcript, cwd) in [
            ("/home/me/.codex/sessions/r.jsonl", "/home/me"),
            ("/Users/me/.claude/projects/-Users-me/s.jsonl", "/Users/me/"),
            ("/root/.claude/projects/-root/s.jsonl", "/root"),
            (r"C:\Users\me\.codex\sessions\r.jsonl", r"C:\Users\me"),
            (
                "/data/data/com.termux/files/home/.claude/projects/x/s.jsonl",
                "/data/data/com.termux/files/home",
            ),
        ] {
            assert!(
                home_from_transcript_at(transcript, Some(cwd)).is_some(),
                "{transcript}"
            );
        }
        // An agent folder kept in a project below root's home: the home is `/root`.
        assert_eq!(
            home_from_transcript("/root/capsule/.claude/projects/-root-capsule/s.jsonl").as_deref(),
            Some("/root")
        );
        assert_eq!(
            home_from_transcript("/root/.claude/projects/-root/s.jsonl").as_deref(),
            Some("/root")
        );
    }

    #[test]
    fn the_event_of_an_unreadable_payload_is_the_agents_default() {
        assert_eq!(Agent::Codex.event_of("{"), HookEvent::PermissionRequest);
        assert_eq!(
            Agent::Codex.event_of(r#"{"hook_event_name":"PreToolUse"}"#),
            HookEvent::PreToolUse
        );
        assert_eq!(
            Agent::Gemini.event_of(r#"{"hook_event_name":"PreToolUse"}"#),
            HookEvent::BeforeTool
        );
        assert_eq!(Agent::from_name("codex"), Some(Agent::Codex));
        assert_eq!(Agent::from_name("cursor"), None);
        assert_eq!(home_from_transcript("/tmp/t.jsonl"), None);
        assert_eq!(
            home_from_transcript("/root/.codex/sessions/2026/r.jsonl").as_deref(),
            Some("/root")
        );
    }
}
