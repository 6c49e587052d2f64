//! Native tool calls → airlock's canonical vocabulary (DESIGN.md §11.1), so that one policy
//! written on `shell.exec`, `fs.read`, `fs.edit`… governs every agent.
//!
//! | canonical | arguments | Claude Code | Codex | Gemini CLI |
//! |---|---|---|---|---|
//! | `shell.exec` | `command`, `cwd` | Bash, PowerShell (`shell: "powershell"`), Monitor (its `command`) | Bash (`workdir`/`cwd` → `cwd`), shell, exec_command, local_shell | run_shell_command |
//! | `fs.read` | `path` or `paths` | Read, LSP (its `filePath`), NotebookRead | read_file, view_image | read_file, read_many_files |
//! | `fs.list` | `path`, `pattern?` | Glob, LS | list_dir | list_directory, glob |
//! | `fs.search` | `pattern`, `path` | Grep | grep_files | grep_search, search_file_content |
//! | `fs.write` | `path`, `content` | Write | – | write_file, save_memory (its file) |
//! | `fs.edit` | `path` or `paths`, `old?`, `new?`, `patch?` | Edit, MultiEdit, NotebookEdit | apply_patch | replace |
//! | `http.fetch` | `url` | WebFetch, Monitor (its `ws.url`) | – | web_fetch (the URLs in its prompt) |
//! | `web.search` | `query` | WebSearch | web_search | google_web_search |
//! | `agent.internal` | as given | [`CLAUDE_CODE_INTERNAL`] | [`CODEX_INTERNAL`], write_stdin with empty `chars` (a poll) or only Ctrl-C/Ctrl-D | [`GEMINI_INTERNAL`] |
//!
//! Claude Code's `PreSkillShellCommand` names its shell tool (`Bash` or `PowerShell`) and
//! the command in `tool_input.command`, so it translates as that tool's call does.
//!
//! Native arguments the canonical form does not name are kept beside it (a person sees
//! them in the preview; a rule may test them). A tool not in the table keeps its name and
//! its arguments (`mcp__github__create_issue` stays as it is), except a Gemini CLI MCP tool
//! (`mcp_<server>_<tool>`), which is named `mcp__<server>__<tool>` from its `mcp_context`
//! as Claude Code and Codex name MCP tools, so that one rule governs the three; without an
//! `mcp_context` its name is kept, never split by guess. Where the native call leaves
//! the folder implicit (a `Glob` or `Grep` with no `path`), the agent's `cwd` is written
//! in, so that project anchors judge the folder the tool really reads; a shell call that
//! names its own folder (Codex's `workdir`, Gemini's `dir_path`) has it as `cwd`.
//!
//! Tools these agents ship that are none of the above keep their names, and the policy's
//! default (ask) decides them: they send data off the machine (Claude Code's `Artifact`,
//! `SendUserFile`, `SendFeedback`, `PushNotification`, `RemoteTrigger`), schedule or run
//! work of their own (`CronCreate`, `CronDelete`, `ScheduleWakeup`, `Workflow`), change the
//! git work trees (`EnterWorktree`, `ExitWorktree`), or are services and set-ups of their
//! own (`ClaudeDesign`, `Projects`, `OfferChromeSetup`, `ShareOnboardingGuide`,
//! `ShowOnboardingRolePicker`, `propose_skills`; Gemini CLI's `take_snapshot`).
//!
//! Fail closed: a patch that cannot be read is an error (the call is denied), and a value
//! of the wrong type is passed on as it is, where an allow rule cannot match it.

use crate::patch;
use crate::payload::{Agent, HookCall};

mod heredoc;
use serde_json::{Map, Value};

/// Claude Code's tools that are its own bookkeeping (`agent.internal`): plans, to-do
/// lists and tasks, sub-agents and teammates, its MCP resource listings, questions and
/// messages to its own user. Current names first, then the names older releases sent.
pub const CLAUDE_CODE_INTERNAL: &[&str] = &[
    "Agent",
    "AskUserQuestion",
    "CronList",
    "EndConversation",
    "EnterPlanMode",
    "ExitPlanMode",
    "ListAgents",
    "ListMcpResourcesTool",
    "ReadMcpResourceDirTool",
    "ReadMcpResourceTool",
    "ReadNotifications",
    "ReportFindings",
    "SendMessage",
    "SendUserMessage",
    "SetGoal",
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
    // Older names (Claude Code now reports them under the names above).
    "BashOutput",
    "Brief",
    "KillBash",
    "KillShell",
    "ListPeers",
    "MCPSearch",
    "ProposeGoal",
    "SlashCommand",
    "Task",
    "TaskOutput",
    "exit_plan_mode",
];

/// Codex's tools that are its own bookkeeping (`agent.internal`): its plan, its questions to
/// its user, its sub-agents (spawned, sent input, waited for, resumed, closed), which run
/// under the same session's settings and whose own tool calls pass through the hook like
/// the parent's, and its listings and reads of its MCP servers' resources (as Gemini CLI's).
pub const CODEX_INTERNAL: &[&str] = &[
    "update_plan",
    "list_mcp_resources",
    "list_mcp_resource_templates",
    "read_mcp_resource",
    "request_user_input",
    "spawn_agent",
    "send_input",
    "wait",
    "wait_agent",
    "resume_agent",
    "close_agent",
];

/// Gemini CLI's tools that are its own bookkeeping (`agent.internal`), as of 0.61: plans,
/// to-dos and its task tracker, topics, sub-agents, skills, questions to its user, its MCP
/// resource listings, its own documentation, and the listing and output of the commands
/// it runs in the background.
pub const GEMINI_INTERNAL: &[&str] = &[
    "activate_skill",
    "ask_user",
    "cli_help",
    "codebase_investigator",
    "complete_task",
    "enter_plan_mode",
    "exit_plan_mode",
    "get_internal_docs",
    "invoke_agent",
    "list_background_processes",
    "list_mcp_resources",
    "read_background_output",
    "read_mcp_resource",
    "tracker_add_dependency",
    "tracker_create_task",
    "tracker_get_task",
    "tracker_list_tasks",
    "tracker_update_task",
    "tracker_visualize",
    "update_topic",
    "write_todos",
    // Qwen Code, a fork of Gemini CLI that sends its payloads, names its plan list, its
    // questions to its user and its skills so.
    "todo_write",
    "ask_user_question",
    "skill",
];

/// A call in the canonical vocabulary.
#[derive(Debug, Clone, PartialEq)]
pub struct Canonical {
    /// `shell.exec`, `fs.read`…, or the native name for tools outside the table.
    pub tool: String,
    pub arguments: Value,
    /// The name the agent used (`Bash`, `apply_patch`…).
    pub native_tool: String,
}

/// Why a native call cannot be translated: the call is denied with this reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslateError(pub String);

impl std::fmt::Display for TranslateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TranslateError {}

/// Translates one hook call.
pub fn canonical(call: &HookCall) -> Result<Canonical, TranslateError> {
    let native = call.native_tool.as_str();
    let mut args = Args::new(&call.input);
    let cwd = call.cwd.as_deref();
    let tool = match (call.agent, native) {
        // ---- shell
        (Agent::ClaudeCode, "Bash") => shell(&mut args, &["command"], &[], cwd),
        (Agent::ClaudeCode, "PowerShell") => {
            // Judged by the same classes as any shell's command; `shell` lets a rule tell.
            args.put("shell", Value::String("powershell".into()));
            shell(&mut args, &["command"], &[], cwd)
        }
        // A watch: a command whose output lines are events, or a WebSocket to read.
        (Agent::ClaudeCode, "Monitor") => {
            let ws_url = call.input.get("ws").and_then(|ws| ws.get("url"));
            match (call.input.get("command"), ws_url) {
                (Some(_), None) => shell(&mut args, &["command"], &[], cwd),
                (None, Some(url)) => {
                    args.put("url", url.clone());
                    "http.fetch"
                }
                // Both, or neither: Claude Code refuses it; nothing is guessed.
                _ => return Ok(kept(call)),
            }
        }
        // Codex sends every shell tool as `Bash`; the folder, when the input names one,
        // is where the command runs (else it would be judged in the session's folder).
        (Agent::Codex, "Bash") => {
            if let Some(patch) = heredoc::codex_script_patch(&call.input, &["command"]) {
                return apply_patch(native, &patch.body, args, cwd, patch.folder.as_deref());
            }
            shell(&mut args, &["command"], &["workdir", "cwd"], cwd)
        }
        (Agent::Codex, "shell" | "local_shell" | "container.exec" | "shell_command") => {
            if let Some(patch) = codex_argv_patch(&call.input) {
                return apply_patch(native, &patch, args, cwd, None);
            }
            if let Some(patch) = heredoc::codex_script_patch(&call.input, &["command", "cmd"]) {
                return apply_patch(native, &patch.body, args, cwd, patch.folder.as_deref());
            }
            shell(&mut args, &["command", "cmd"], &["workdir", "cwd"], cwd)
        }
        (Agent::Codex, "exec_command" | "unified_exec") => {
            if let Some(patch) = heredoc::codex_script_patch(&call.input, &["cmd", "command"]) {
                return apply_patch(native, &patch.body, args, cwd, patch.folder.as_deref());
            }
            shell(&mut args, &["cmd", "command"], &["workdir", "cwd"], cwd)
        }
        (Agent::Gemini, "run_shell_command") => {
            shell(&mut args, &["command"], &["directory", "dir_path"], cwd)
        }
        // ---- reads
        (Agent::ClaudeCode, "Read") => path_tool("fs.read", &mut args, &["file_path", "path"]),
        // Language-server navigation (definitions, references, hover…) in one file.
        (Agent::ClaudeCode, "LSP") => path_tool("fs.read", &mut args, &["filePath"]),
        (Agent::ClaudeCode, "NotebookRead") => {
            path_tool("fs.read", &mut args, &["notebook_path", "path"])
        }
        (Agent::Codex, "read_file" | "view_image") => {
            path_tool("fs.read", &mut args, &["path", "file_path"])
        }
        (Agent::Gemini, "read_file") => path_tool(
            "fs.read",
            &mut args,
            &["absolute_path", "file_path", "path"],
        ),
        (Agent::Gemini, "read_many_files") => {
            if let Some(paths) = args.take(&["paths", "include"]) {
                args.put("paths", paths);
            }
            "fs.read"
        }
        // ---- listings and searches
        (Agent::ClaudeCode, "LS")
        | (Agent::Codex, "list_dir")
        | (Agent::Gemini, "list_directory") => {
            folder(&mut args, &["path", "dir_path"], cwd);
            "fs.list"
        }
        (Agent::ClaudeCode, "Glob") | (Agent::Gemini, "glob") => {
            folder(&mut args, &["path", "dir_path"], cwd);
            "fs.list"
        }
        (Agent::ClaudeCode, "Grep")
        | (Agent::Codex, "grep_files")
        | (Agent::Gemini, "search_file_content" | "grep_search") => {
            folder(&mut args, &["path", "dir_path"], cwd);
            // Gemini CLI's newer search names its file filter `include_pattern`.
            if call.agent == Agent::Gemini {
                rename(&mut args, "include_pattern", "include");
            }
            "fs.search"
        }
        // ---- writes and edits
        (Agent::ClaudeCode, "Write") | (Agent::Gemini, "write_file") => {
            path_tool("fs.write", &mut args, &["file_path", "path"])
        }
        // (Qwen Code, Gemini CLI's fork, calls `replace` `edit`.)
        (Agent::ClaudeCode, "Edit" | "MultiEdit") | (Agent::Gemini, "replace" | "edit") => {
            let tool = path_tool("fs.edit", &mut args, &["file_path", "path"]);
            rename(&mut args, "old_string", "old");
            rename(&mut args, "new_string", "new");
            tool
        }
        (Agent::ClaudeCode, "NotebookEdit") => {
            let tool = path_tool("fs.edit", &mut args, &["notebook_path", "path"]);
            rename(&mut args, "new_source", "new");
            tool
        }
        (Agent::Codex, "apply_patch") => {
            let text = match args.take(&["command", "input", "patch"]) {
                Some(Value::String(text)) => text,
                Some(Value::Array(argv)) => argv_patch(&argv).ok_or_else(|| {
                    TranslateError("the apply_patch call holds no patch text".into())
                })?,
                _ => {
                    return Err(TranslateError(
                        "the apply_patch call holds no patch text".into(),
                    ))
                }
            };
            return apply_patch(native, &text, args, cwd, None);
        }
        (Agent::Gemini, "save_memory") => {
            // Gemini keeps memories in its global context file.
            let home = call
                .transcript_path
                .as_deref()
                .and_then(crate::payload::home_from_transcript)
                .unwrap_or_else(|| "~".to_owned());
            args.put("path", Value::String(format!("{home}/.gemini/GEMINI.md")));
            rename(&mut args, "fact", "content");
            "fs.write"
        }
        // ---- the web
        (Agent::ClaudeCode, "WebFetch") => {
            rename(&mut args, "url", "url");
            "http.fetch"
        }
        (Agent::Gemini, "web_fetch") => {
            let urls = match call.input.get("prompt").and_then(Value::as_str) {
                Some(prompt) => urls_in(prompt),
                None => Vec::new(),
            };
            // Every URL the tool would fetch is judged: one is a string, several an array
            // (an allow must cover each), none leaves `url` out (no allow rule can match).
            match urls.len() {
                0 => {}
                1 => args.put("url", Value::String(urls[0].clone())),
                _ => args.put("url", urls.into_iter().map(Value::String).collect()),
            }
            "http.fetch"
        }
        (Agent::ClaudeCode, "WebSearch")
        | (Agent::Codex, "web_search")
        | (Agent::Gemini, "google_web_search") => {
            rename(&mut args, "query", "query");
            "web.search"
        }
        // ---- the agent's own bookkeeping
        (Agent::ClaudeCode, name) if CLAUDE_CODE_INTERNAL.contains(&name) => "agent.internal",
        (Agent::Gemini, name) if GEMINI_INTERNAL.contains(&name) => "agent.internal",
        (Agent::Codex, name) if CODEX_INTERNAL.contains(&name) => "agent.internal",
        // A poll of a command Codex already runs (`write_stdin` with nothing to write)
        // reads its output, and an interrupt or end of input (Ctrl-C, Ctrl-D, Ctrl-\)
        // stops it: its own command, nothing else. Text typed into it is kept as the
        // tool's own call (asked): what reads it is not known.
        (Agent::Codex, "write_stdin")
            if call
                .input
                .get("chars")
                .and_then(Value::as_str)
                .is_some_and(|chars| {
                    chars
                        .chars()
                        .all(|c| matches!(c, '\u{3}' | '\u{4}' | '\u{1c}'))
                }) =>
        {
            "agent.internal"
        }
        // ---- MCP tools: one name for every agent. Gemini CLI names an MCP tool
        // `mcp_<server>_<tool>`, or by the tool's own name where no other tool has it; its
        // `mcp_context` says which server's tool it is either way.
        (Agent::Gemini, name) if name.starts_with("mcp_") || call.mcp_context.is_some() => {
            return Ok(match &call.mcp_context {
                Some(mcp) => Canonical {
                    tool: format!("mcp__{}__{}", mcp.server, mcp.tool),
                    arguments: call.input.clone(),
                    native_tool: native.to_owned(),
                },
                None => kept(call),
            })
        }
        // Anything else keeps its name: MCP tools, new tools, canonical names sent as is.
        _ => return Ok(kept(call)),
    };
    Ok(Canonical {
        tool: tool.to_owned(),
        arguments: args.finish(),
        native_tool: native.to_owned(),
    })
}

/// A call outside the table: its own name and arguments.
fn kept(call: &HookCall) -> Canonical {
    Canonical {
        tool: call.native_tool.clone(),
        arguments: call.input.clone(),
        native_tool: call.native_tool.clone(),
    }
}

/// The canonical arguments being built from the native ones: keys taken are renamed or
/// dropped, the rest are copied over at the end.
struct Args<'a> {
    native: &'a Map<String, Value>,
    taken: Vec<&'static str>,
    out: Map<String, Value>,
}

impl<'a> Args<'a> {
    fn new(input: &'a Value) -> Args<'a> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        Args {
            native: input
                .as_object()
                .unwrap_or_else(|| EMPTY.get_or_init(Map::new)),
            taken: Vec::new(),
            out: Map::new(),
        }
    }

    /// The first of `keys` that is present (and not null), taking all of them.
    fn take(&mut self, keys: &[&'static str]) -> Option<Value> {
        self.taken.extend_from_slice(keys);
        keys.iter()
            .filter_map(|key| self.native.get(*key))
            .find(|value| !value.is_null())
            .cloned()
    }

    fn put(&mut self, key: &str, value: Value) {
        self.out.insert(key.to_owned(), value);
    }

    fn finish(self) -> Value {
        let mut out = self.out;
        for (key, value) in self.native {
            if !self.taken.contains(&key.as_str()) && !out.contains_key(key) {
                out.insert(key.clone(), value.clone());
            }
        }
        Value::Object(out)
    }
}

fn rename(args: &mut Args<'_>, from: &'static str, to: &str) {
    if let Some(value) = args.take(&[from]) {
        args.put(to, value);
    }
}

/// `shell.exec {command, cwd}`: the command from the first of `command_keys`, the folder
/// from the first of `folder_keys` resolved against the agent's `cwd`, else the `cwd`.
fn shell(
    args: &mut Args<'_>,
    command_keys: &[&'static str],
    folder_keys: &[&'static str],
    cwd: Option<&str>,
) -> &'static str {
    if let Some(command) = args.take(command_keys) {
        let command = match command {
            Value::Array(argv) => match powershell_argv_script(&argv) {
                // Judged as the PowerShell script it is, as Claude Code's PowerShell tool is.
                Some(script) => {
                    args.put("shell", Value::String("powershell".into()));
                    Value::String(script)
                }
                None => argv_command(&argv).map_or(Value::Array(argv), Value::String),
            },
            other => other,
        };
        args.put("command", command);
    }
    let folder = args.take(folder_keys);
    let folder = match (folder, cwd) {
        (Some(Value::String(folder)), Some(cwd)) if !rooted(&folder) => {
            Some(Value::String(join(cwd, &folder)))
        }
        (Some(folder), _) => Some(folder),
        (None, Some(cwd)) => Some(Value::String(cwd.to_owned())),
        (None, None) => None,
    };
    if let Some(folder) = folder {
        args.put("cwd", folder);
    }
    "shell.exec"
}

fn path_tool(tool: &'static str, args: &mut Args<'_>, keys: &[&'static str]) -> &'static str {
    match args.take(keys) {
        Some(Value::Array(paths)) => args.put("paths", Value::Array(paths)),
        Some(path) => args.put("path", path),
        None => {}
    }
    tool
}

/// `path` from the first of `keys`, or the agent's `cwd` when the tool reads its folder.
fn folder(args: &mut Args<'_>, keys: &[&'static str], cwd: Option<&str>) {
    match args.take(keys) {
        Some(path) => args.put("path", path),
        None => {
            if let Some(cwd) = cwd {
                args.put("path", Value::String(cwd.to_owned()));
            }
        }
    }
}

/// A patch as the edit it makes. `moved_to` is the folder a `cd` before the patch moved
/// to (`cd DIR && apply_patch <<'EOF'`), relative to the call's folder.
fn apply_patch(
    native: &str,
    text: &str,
    mut args: Args<'_>,
    cwd: Option<&str>,
    moved_to: Option<&str>,
) -> Result<Canonical, TranslateError> {
    let changes = patch::parse(text)
        .map_err(|error| TranslateError(format!("the patch cannot be read ({error})")))?;
    // Codex applies the patch in the call's `workdir` when it names one, or where a `cd`
    // before it moved: relative paths are written out against it, so that the policy
    // judges the files really touched (a relative folder with none to hold it leaves them
    // as written, which no allow places).
    let workdir = match (args.native.get("workdir").and_then(Value::as_str), cwd) {
        (Some(dir), _) if rooted(dir) => Some(dir.to_owned()),
        (Some(dir), Some(cwd)) => Some(join(cwd, dir)),
        _ => None,
    };
    let base = match (moved_to, workdir.as_deref().or(cwd)) {
        (Some(dir), _) if rooted(dir) => Some(dir.to_owned()),
        (Some(dir), Some(from)) => Some(join(from, dir)),
        (Some(_), None) => None,
        (None, _) => workdir,
    };
    let mut paths: Vec<Value> = Vec::new();
    for change in &changes {
        for path in change.paths() {
            let path = match &base {
                Some(base) if !rooted(path) && Some(base.as_str()) != cwd => join(base, path),
                _ => path.to_owned(),
            };
            let path = Value::String(path);
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    // Drop whatever key held the patch text; what remains (a workdir…) is kept.
    args.take(&["command", "input", "patch", "cmd"]);
    if paths.len() == 1 {
        args.put("path", paths[0].clone());
    }
    args.put("paths", Value::Array(paths));
    args.put("patch", Value::String(text.to_owned()));
    Ok(Canonical {
        tool: "fs.edit".into(),
        arguments: args.finish(),
        native_tool: native.to_owned(),
    })
}

/// Codex's `shell` tool with `["apply_patch", PATCH]`: a patch, not a command.
fn codex_argv_patch(input: &Value) -> Option<String> {
    let argv = input.get("command")?.as_array()?;
    argv_patch(argv)
}

fn argv_patch(argv: &[Value]) -> Option<String> {
    match argv {
        [program, patch] if matches!(program.as_str(), Some("apply_patch" | "applypatch")) => {
            patch.as_str().map(str::to_owned)
        }
        _ => None,
    }
}

/// `["powershell", "-NoProfile", "-Command", SCRIPT]` (also `pwsh`, `powershell.exe`, any
/// case): the script PowerShell runs, its words after `-Command` joined as PowerShell joins
/// them. Only when every option before `-Command` just quiets the shell or sets its script
/// policy; anything else (`-EncodedCommand`, `-File`, a window style) is left to be judged
/// as the whole command line. No agent's shell reads that argv (it is started as it is), so
/// quoting it for a POSIX shell and reading it back would mix two quoting rules.
fn powershell_argv_script(argv: &[Value]) -> Option<String> {
    let words: Vec<&str> = argv.iter().map(Value::as_str).collect::<Option<_>>()?;
    let (program, rest) = words.split_first()?;
    let name = program.rsplit(['/', '\\']).next()?.to_ascii_lowercase();
    if !matches!(
        name.strip_suffix(".exe").unwrap_or(&name),
        "powershell" | "pwsh"
    ) {
        return None;
    }
    let mut index = 0;
    while let Some(word) = rest.get(index) {
        index += 1;
        match word.to_ascii_lowercase().as_str() {
            "-noprofile" | "-nop" | "-nologo" | "-noninteractive" | "-noni" => {}
            "-executionpolicy" | "-ep" | "-exec" => index += 1,
            "-command" | "-c" => {
                let script = rest.get(index..).filter(|script| !script.is_empty())?;
                return Some(script.join(" "));
            }
            _ => return None,
        }
    }
    None
}

/// An argv as the shell command line it runs: `["bash", "-lc", SCRIPT]` is the script
/// itself, anything else is its words quoted for a POSIX shell. `None` when an element is
/// not a string (the array is then judged as it is, which no allow rule matches).
fn argv_command(argv: &[Value]) -> Option<String> {
    let words: Vec<&str> = argv.iter().map(Value::as_str).collect::<Option<_>>()?;
    if let [shell, flag, script] = words.as_slice() {
        let shell = shell.rsplit('/').next().unwrap_or(shell);
        if matches!(shell, "bash" | "sh" | "zsh" | "dash")
            && flag.starts_with('-')
            && flag.ends_with('c')
            && flag[1..].chars().all(|c| matches!(c, 'l' | 'i' | 'c'))
        {
            return Some((*script).to_owned());
        }
    }
    Some(
        words
            .iter()
            .map(|word| quote(word))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Whether a folder or path is written from a root, not relative to the agent's folder:
/// POSIX `/…`, a Windows drive (`D:\work`, `D:/work`) or a share (`\\server\x`).
fn rooted(path: &str) -> bool {
    path.starts_with('/') || path.starts_with("\\\\") || crate::payload::is_drive_path(path)
}

fn join(base: &str, relative: &str) -> String {
    let relative = relative.strip_prefix("./").unwrap_or(relative);
    if relative.is_empty() || relative == "." {
        return base.to_owned();
    }
    format!("{}/{}", base.trim_end_matches('/'), relative)
}

/// The http(s) URLs written in a prompt, in order, without trailing punctuation. The
/// scheme is found in any case (`HTTP://`). Where a quote or backtick inside a URL could end
/// it or belong to it (`https://a.test'@169.254.169.254/`: the fetcher may read `a.test'` as
/// user info), both readings are kept, so the policy judges each.
fn urls_in(text: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    let mut urls: Vec<String> = Vec::new();
    let mut from = 0;
    while let Some(at) = ["http://", "https://"]
        .iter()
        .filter_map(|scheme| lower[from..].find(scheme))
        .min()
        .map(|at| at + from)
    {
        let tail = &text[at..];
        let trim = |url: &str| {
            url.trim_end_matches(|c: char| ".,;:!?)]}'\"`".contains(c))
                .to_owned()
        };
        let short_end = tail
            .find(|c: char| c.is_whitespace() || "\"'<>`".contains(c))
            .unwrap_or(tail.len());
        let long_end = tail
            .find(|c: char| c.is_whitespace() || "<>".contains(c))
            .unwrap_or(tail.len());
        for end in [short_end, long_end] {
            let url = trim(&tail[..end]);
            if url.len() > "https://".len() && !urls.contains(&url) {
                urls.push(url);
            }
        }
        from = at + short_end.max(1);
    }
    urls
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
