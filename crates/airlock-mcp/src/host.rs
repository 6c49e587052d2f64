//! The MCP tool host of airlock's own agent runtime: starts the MCP servers an agent is
//! configured with (stdio child processes, one rmcp client each), lists their tools under
//! the names the gate sees (`mcp__<server>__<tool>`) and calls them. A server found dead
//! when a call is about to go to it is started again first (a crash, an OOM kill).
//!
//! The host decides nothing: the runtime gates every call (submit, wait, redeem) before it
//! calls [`McpHost::call`], exactly as the [proxy](crate::proxy) does before it forwards.
//! A server that cannot start costs its own tools only; the others still work, and the
//! reason is in [`McpHost::errors`] for the runtime to log or show.
//!
//! The client leg speaks the `initialize` era (up to 2025-11-25) with no client
//! capabilities: no sampling, roots or elicitation, so a server never waits on a person
//! the runtime cannot reach. The tool list is read once at start; `list_changed`
//! notifications are not followed.
//!
//! A child gets only the environment variables the MCP SDKs pass by default
//! ([`PASSED_ENVIRONMENT`]), never the rest of airlock's (database URLs, LLM API keys).

use crate::gate::tool_name;
use airlock_protocol::McpServerConfig;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, ProtocolVersion, ResourceContents, Tool,
};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;

/// How long a server may take to start, initialize and list its tools.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`McpHost::shutdown`] waits for a server to stop; rmcp closes its stdin, then
/// sends SIGTERM, then kills it, a few seconds apart.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// How many of a server's last stderr lines a start failure quotes.
const STDERR_TAIL: usize = 5;

/// The environment a server inherits: what the MCP SDKs pass to stdio servers by default
/// (the TypeScript SDK's `getDefaultEnvironment`), enough to find and run an interpreter.
#[cfg(not(windows))]
pub const PASSED_ENVIRONMENT: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];
#[cfg(windows)]
pub const PASSED_ENVIRONMENT: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// The running MCP servers of one agent. Cloning is cheap and shares the sessions;
/// [`shutdown`](McpHost::shutdown) on any clone stops them for all, and dropping the last
/// clone stops them too (in the background).
#[derive(Clone)]
pub struct McpHost {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Vec<Server>,
    tools: Vec<HostedTool>,
    /// Hosted name → where the call goes.
    routes: HashMap<String, Route>,
    errors: Vec<String>,
    /// Set by `shutdown`: a server stopped on purpose is never started again.
    stopped: AtomicBool,
}

struct Server {
    name: String,
    /// How it was started, to start it again when it died.
    config: McpServerConfig,
    /// Its session; replaced when the server died and was started again. Held across a
    /// restart, so concurrent callers start it once.
    live: tokio::sync::Mutex<Live>,
}

/// A running server's session.
struct Live {
    peer: Peer<RoleClient>,
    /// Taken by `shutdown`; its drop guard also stops the server when the host is dropped
    /// (or when the session is replaced).
    running: Option<RunningService<RoleClient, ClientConfig>>,
}

struct Route {
    /// Index into `Inner::servers`.
    server: usize,
    /// The tool's own name on its server.
    tool: String,
}

/// One tool as the runtime offers it to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct HostedTool {
    /// `mcp__<server>__<tool>`: the name the model calls and the gate's policy matches.
    pub name: String,
    /// The server's description (or title), empty when it gave none.
    pub description: String,
    /// The tool's JSON Schema for its arguments, as the server gave it (an object).
    pub input_schema: Value,
    /// The server's `readOnlyHint`: a hint from the server, never a reason to skip the gate.
    pub read_only_hint: Option<bool>,
    /// The server's `destructiveHint`, likewise only a hint.
    pub destructive_hint: Option<bool>,
}

/// What a tool call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct HostedResult {
    /// The server's `isError`: the tool ran and failed (bad path, refused, …).
    pub is_error: bool,
    /// The text contents joined with `"\n"`; other contents as `[image: <mime>]`,
    /// `[audio: <mime>]`, `[resource: <uri>]`; an embedded text resource as its text.
    pub text: String,
    /// The server's `structuredContent`, when it sent one.
    pub structured: Option<Value>,
}

/// Why a call did not produce a [`HostedResult`].
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// No running server offers a tool by this hosted name.
    #[error("no MCP tool is named `{tool}`")]
    UnknownTool { tool: String },
    /// MCP tool arguments are a JSON object (or nothing).
    #[error("the arguments of `{tool}` must be a JSON object")]
    InvalidArguments { tool: String },
    /// The server did not answer in time; the request was cancelled.
    #[error("`{tool}` did not answer within {}", humanize(*after))]
    Timeout { tool: String, after: Duration },
    /// The server answered with a JSON-RPC error instead of a result (unknown tool on its
    /// side, invalid parameters, an internal error).
    #[error("the MCP server `{server}` refused `{tool}`: {message} (code {code})")]
    Refused {
        server: String,
        tool: String,
        code: i32,
        message: String,
    },
    /// The server is gone or its connection broke (it exited, or the host was shut down).
    #[error("the MCP server `{server}` is unreachable: {message}")]
    Transport { server: String, message: String },
}

impl McpHost {
    /// Starts each configured server (stdio child process, rmcp client), initializes it
    /// and lists its tools, all servers at once. A server that fails to start is reported
    /// in [`errors`](Self::errors) and contributes no tools; the others still work.
    ///
    /// Refused before anything starts: a name other than `[a-z0-9_-]+`, and a name used
    /// twice. A tool whose hosted name is not `[A-Za-z0-9_-]+` (what model APIs accept
    /// as a tool name) or collides with another's is left out and reported.
    pub async fn start(servers: &[McpServerConfig]) -> McpHost {
        let mut errors = Vec::new();
        let mut names = HashSet::new();
        let mut accepted = Vec::new();
        for config in servers {
            if !is_server_name(&config.name) {
                errors.push(format!(
                    "mcp server `{}`: the name must be lower-case letters, digits, `_` and `-`",
                    config.name
                ));
            } else if !names.insert(config.name.as_str()) {
                errors.push(format!(
                    "mcp server `{}`: the name is configured twice",
                    config.name
                ));
            } else {
                accepted.push(config);
            }
        }

        let started = futures::future::join_all(accepted.into_iter().map(|config| async move {
            let (live, tools) = start_server(config).await?;
            let server = Server {
                name: config.name.clone(),
                config: config.clone(),
                live: tokio::sync::Mutex::new(live),
            };
            Ok::<_, String>((server, tools))
        }))
        .await;
        let mut inner = Inner {
            servers: Vec::new(),
            tools: Vec::new(),
            routes: HashMap::new(),
            errors,
            stopped: AtomicBool::new(false),
        };
        for outcome in started {
            let (server, tools) = match outcome {
                Ok(started) => started,
                Err(message) => {
                    inner.errors.push(message);
                    continue;
                }
            };
            let index = inner.servers.len();
            for tool in tools {
                let hosted = tool_name(&server.name, &tool.name);
                if !is_tool_name(&hosted) {
                    inner.errors.push(format!(
                        "mcp server `{}`: tool `{}` is left out: a tool name must be letters, \
                         digits, `_` and `-`",
                        server.name, tool.name
                    ));
                    continue;
                }
                if inner.routes.contains_key(&hosted) {
                    inner.errors.push(format!(
                        "mcp server `{}`: tool `{}` is left out: `{hosted}` is already taken",
                        server.name, tool.name
                    ));
                    continue;
                }
                inner.routes.insert(
                    hosted.clone(),
                    Route {
                        server: index,
                        tool: tool.name.to_string(),
                    },
                );
                inner.tools.push(hosted_tool(hosted, tool));
            }
            inner.servers.push(server);
        }
        McpHost {
            inner: Arc::new(inner),
        }
    }

    /// Tools of every server, named `mcp__<server>__<tool>`, servers in configuration
    /// order, each server's tools in its own order.
    pub fn tools(&self) -> Vec<HostedTool> {
        self.inner.tools.clone()
    }

    /// Why servers or tools are missing, one line each, starting with `mcp server `<name>``.
    pub fn errors(&self) -> Vec<String> {
        self.inner.errors.clone()
    }

    /// Calls a tool by its hosted name. A tool that ran and failed (`isError`) is
    /// `Ok(HostedResult { is_error: true, .. })`; an unknown name, non-object arguments,
    /// a JSON-RPC error, a broken connection and a timeout are `Err`. On timeout the
    /// request is cancelled at the server (`notifications/cancelled`).
    ///
    /// A server found dead before the request is sent (it crashed, or was killed, since
    /// its last call) is started again first, once, and the call goes to the new one:
    /// nothing was sent to the dead one, so the call still runs at most once. A server
    /// that dies while it handles the call is a `Transport` error, never a retry.
    pub async fn call(
        &self,
        hosted_name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<HostedResult, HostError> {
        let (server, route) = self
            .inner
            .routes
            .get(hosted_name)
            .and_then(|route| Some((self.inner.servers.get(route.server)?, route)))
            .ok_or_else(|| HostError::UnknownTool {
                tool: hosted_name.to_owned(),
            })?;
        let mut params = CallToolRequestParams::new(route.tool.clone());
        match arguments {
            Value::Object(arguments) => params = params.with_arguments(arguments),
            Value::Null => {}
            _ => {
                return Err(HostError::InvalidArguments {
                    tool: hosted_name.to_owned(),
                })
            }
        }
        let peer = self.live_peer(server).await?;
        // Dropping the request on timeout makes rmcp send `notifications/cancelled`.
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(hosted_result(result)),
            Ok(Err(ServiceError::McpError(error))) => Err(HostError::Refused {
                server: server.name.clone(),
                tool: hosted_name.to_owned(),
                code: error.code.0,
                message: error.message.into_owned(),
            }),
            Ok(Err(error)) => Err(HostError::Transport {
                server: server.name.clone(),
                message: error.to_string(),
            }),
            Err(_elapsed) => Err(HostError::Timeout {
                tool: hosted_name.to_owned(),
                after: timeout,
            }),
        }
    }

    /// The servers whose process is gone (a crash, a kill) and that were not started
    /// again yet: the next call to one of their tools starts it first. A server that dies
    /// is listed once the host has read the end of its output; a call sent before that
    /// fails (`Transport`) and is not retried, since it may have reached the server.
    pub async fn dead_servers(&self) -> Vec<String> {
        let mut dead = Vec::new();
        for server in &self.inner.servers {
            if server.live.lock().await.peer.is_transport_closed() {
                dead.push(server.name.clone());
            }
        }
        dead
    }

    /// The session of `server`, started again first when its process is gone (its
    /// transport closed) and the host was not shut down.
    async fn live_peer(&self, server: &Server) -> Result<Peer<RoleClient>, HostError> {
        let mut live = server.live.lock().await;
        if !live.peer.is_transport_closed() || self.inner.stopped.load(Ordering::SeqCst) {
            return Ok(live.peer.clone());
        }
        tracing::warn!(server = %server.name, "the MCP server is gone; starting it again");
        match start_server(&server.config).await {
            Ok((restarted, _tools)) => {
                // The old session's drop guard reaps what is left of the old process.
                *live = restarted;
                Ok(live.peer.clone())
            }
            Err(message) => Err(HostError::Transport {
                server: server.name.clone(),
                message: format!("it stopped, and starting it again failed: {message}"),
            }),
        }
    }

    /// Stops every child process (for every clone of this host) and waits for them to
    /// exit: stdin closed first, then SIGTERM, then a kill. None is started again.
    pub async fn shutdown(self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        futures::future::join_all(self.inner.servers.iter().map(|server| async move {
            let running = server.live.lock().await.running.take();
            if let Some(mut running) = running {
                if let Ok(None) = running.close_with_timeout(STOP_TIMEOUT).await {
                    tracing::warn!(server = %server.name, "the MCP server did not stop in time");
                }
            }
        }))
        .await;
    }
}

impl fmt::Debug for McpHost {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("McpHost")
            .field(
                "servers",
                &self
                    .inner
                    .servers
                    .iter()
                    .map(|s| &s.name)
                    .collect::<Vec<_>>(),
            )
            .field("tools", &self.inner.tools.len())
            .field("errors", &self.inner.errors)
            .finish()
    }
}

/// Spawns one server, initializes it and lists its tools; the error is one line for
/// [`McpHost::errors`], with the server's last stderr lines when it died.
async fn start_server(config: &McpServerConfig) -> Result<(Live, Vec<Tool>), String> {
    let name = &config.name;
    let mut command = tokio::process::Command::new(&config.command);
    command.args(&config.args).env_clear();
    for variable in PASSED_ENVIRONMENT {
        if let Some(value) = std::env::var_os(variable) {
            command.env(variable, value);
        }
    }
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| {
            format!(
                "mcp server `{name}`: cannot start `{}`: {error}",
                config.command
            )
        })?;
    let stderr = stderr.map(|stderr| tokio::spawn(follow_stderr(name.clone(), stderr)));

    let handshake = async {
        let running = client_config()
            .serve(transport)
            .await
            .map_err(|error| format!("did not initialize: {error}"))?;
        let tools = running
            .peer()
            .list_all_tools()
            .await
            .map_err(|error| format!("did not list its tools: {error}"))?;
        Ok::<_, String>((running, tools))
    };
    let failure = match tokio::time::timeout(START_TIMEOUT, handshake).await {
        Ok(Ok((running, tools))) => {
            let live = Live {
                peer: running.peer().clone(),
                running: Some(running),
            };
            return Ok((live, tools));
        }
        Ok(Err(failure)) => failure,
        Err(_elapsed) => format!("did not initialize within {}", humanize(START_TIMEOUT)),
    };
    // The transport is dropped by now, so the child is being killed and its stderr ends.
    let tail = match stderr {
        Some(task) => tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let mut message = format!("mcp server `{name}`: `{}` {failure}", config.command);
    if !tail.is_empty() {
        message.push_str(&format!(" (stderr: {})", tail.join(" | ")));
    }
    Err(message)
}

/// Logs a server's stderr line by line; returns its last lines once it closes.
async fn follow_stderr(server: String, stderr: ChildStderr) -> Vec<String> {
    let mut lines = BufReader::new(stderr).lines();
    let mut tail = VecDeque::with_capacity(STDERR_TAIL);
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %server, "{line}");
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }
    tail.into()
}

/// Who the host is to a server: airlock, with no client capabilities, in the newest
/// protocol version that still has the `initialize` handshake.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("airlock", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// Whether `name` may name an MCP server of an agent: lower-case letters, digits, `_` and
/// `-` (its tools are offered as `mcp__<name>__<tool>`).
pub fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn is_tool_name(name: &str) -> bool {
    name.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn hosted_tool(name: String, tool: Tool) -> HostedTool {
    let annotations = tool.annotations.as_ref();
    HostedTool {
        name,
        description: tool
            .description
            .map(|description| description.into_owned())
            .or(tool.title)
            .unwrap_or_default(),
        input_schema: Value::Object(tool.input_schema.as_ref().clone()),
        read_only_hint: annotations.and_then(|a| a.read_only_hint),
        destructive_hint: annotations.and_then(|a| a.destructive_hint),
    }
}

fn hosted_result(result: CallToolResult) -> HostedResult {
    let text: Vec<String> = result
        .content
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text,
            ContentBlock::Image(image) => format!("[image: {}]", image.mime_type),
            ContentBlock::Audio(audio) => format!("[audio: {}]", audio.mime_type),
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => text,
                ResourceContents::BlobResourceContents { uri, .. } => format!("[resource: {uri}]"),
                _ => "[resource]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => format!("[resource: {}]", link.uri),
            _ => "[unsupported content]".to_owned(),
        })
        .collect();
    HostedResult {
        is_error: result.is_error.unwrap_or(false),
        text: text.join("\n"),
        structured: result.structured_content,
    }
}

/// `1.5s`, `30s`: durations in messages.
fn humanize(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_are_lower_case_words() {
        for good in ["fs", "git-hub", "a_1"] {
            assert!(is_server_name(good), "{good}");
        }
        for bad in ["", "Fs", "a.b", "a b", "é"] {
            assert!(!is_server_name(bad), "{bad}");
        }
    }

    #[test]
    fn results_keep_text_and_summarise_the_rest() {
        let mut result = CallToolResult::error(vec![
            ContentBlock::text("first"),
            ContentBlock::image("aGk=", "image/png"),
            ContentBlock::resource(ResourceContents::text("inside", "file:///a")),
            ContentBlock::text("last"),
        ]);
        result.structured_content = Some(serde_json::json!({"n": 1}));
        assert_eq!(
            hosted_result(result),
            HostedResult {
                is_error: true,
                text: "first\n[image: image/png]\ninside\nlast".into(),
                structured: Some(serde_json::json!({"n": 1})),
            }
        );
    }

    #[test]
    fn the_host_can_be_shared_between_tasks() {
        fn shareable<T: Send + Sync + Clone + 'static>() {}
        shareable::<McpHost>();
    }

    #[test]
    fn durations_read_as_seconds() {
        assert_eq!(humanize(Duration::from_millis(1500)), "1.5s");
        assert_eq!(humanize(Duration::from_secs(30)), "30s");
    }
}
