//! `airlock mcp proxy [--agent NAME] [--server-name NAME] -- COMMAND ARGS…`: put airlock
//! between an MCP client and a stdio MCP server; with `--upstream-url URL --server-name
//! NAME` instead of the command, between the client and a Streamable HTTP MCP server. The
//! MCP client launches this command in place of the real server; [`airlock_mcp`] relays
//! the protocol and asks the [`HttpGate`] below about every `tools/call`, as the agent
//! whose token is given.
//!
//! The gate's steps are the client flow every airlock client shares ([`crate::flow`]) —
//! submit, long-poll an asked call, redeem the grant before allowing — plus what only an MCP client can do: cancel
//! the approval of a call the client gave up on, look at an asked call without waiting
//! (a 2026-07-28 client's retry), and record a person's inline answer with the person's
//! own token (`--approver-token-env`). Anything that prevents a verdict is a
//! deny with the reason (fail closed, G4): the real server never sees the call.
//!
//! Checked before the real server starts (exit 2 otherwise): `--agent NAME` is the token's
//! agent, and the approver token is not an agent's.
//!
//! Logs (rmcp's and the proxy's warnings: a message too long to relay, say) go to stderr,
//! at `warn` unless `RUST_LOG` says otherwise, with their secrets redacted; stdout is the
//! MCP stream. Other libraries' events below `warn` are never written, whatever `RUST_LOG`
//! says (G9): rmcp's print whole messages (a call's arguments, a tool's result) in Rust's
//! debug notation, where redaction cannot tell a secret's key, and ureq's trace the bytes
//! sent, the agent's token in hex among them.

use crate::client::{encode, parse, without_userinfo, Client, ClientArgs, HttpStatus, Refused};
use crate::flow::{self, verdict, Answer};
use crate::Outcome;
use airlock_client::errors::{is_not_sent, is_transient};
use airlock_mcp::gate::server_name;
use airlock_mcp::upstream::{Command, Endpoint};
use airlock_mcp::{
    ApprovalPrompt, Gate, GateCall, InlineDecision, Pending, ProxyConfig, Submitted, Verdict,
    Waited,
};
use airlock_policy::secrets::redact_text;
use airlock_protocol::{Agent, Approval, Call, CallStatus};
use airlock_server::body::MAX_BODY;
use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Run an MCP server (stdio, or Streamable HTTP) behind airlock: every tool call is
    /// gated first.
    Proxy(ProxyArgs),
}

#[derive(Debug, Args)]
struct ProxyArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// Refuse to start unless the token is this agent's (checked before the real server
    /// starts).
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// `<server>` in the gated tool name `mcp__<server>__<tool>` [default: the basename
    /// of COMMAND, other characters than letters and digits as `_`; required with
    /// --upstream-url].
    #[arg(long, value_name = "NAME")]
    server_name: Option<String>,
    /// Relay to the Streamable HTTP MCP server at this URL instead of starting COMMAND.
    #[arg(
        long,
        value_name = "URL",
        requires = "server_name",
        value_parser = http_url
    )]
    upstream_url: Option<String>,
    /// Wait up to this many seconds for a person to decide an asked call, then deny and
    /// withdraw the approval (an approval that expires earlier ends the wait at its
    /// deadline).
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    wait: u64,
    /// The environment variable that holds a person's token (role approver or above):
    /// with it, an asked call is also put to the person in the MCP client (elicitation),
    /// and their answer is recorded as their decision. Never the token itself: command
    /// lines are visible to every local user.
    #[arg(long, value_name = "VAR")]
    approver_token_env: Option<String>,
    /// The real MCP server's command line, after `--` (or --upstream-url).
    #[arg(
        last = true,
        value_name = "COMMAND",
        required_unless_present = "upstream_url",
        conflicts_with = "upstream_url"
    )]
    command: Vec<String>,
}

/// An `http://` or `https://` URL, checked before anything starts.
fn http_url(value: &str) -> Result<String, String> {
    let rest = value
        .strip_prefix("http://")
        .or_else(|| value.strip_prefix("https://"))
        .ok_or("the URL must start with http:// or https://")?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err("the URL names no host".into());
    }
    Ok(value.to_owned())
}

pub fn run(args: McpArgs) -> anyhow::Result<Outcome> {
    let McpCommand::Proxy(args) = args.command;
    crate::commands::serve::init_logging("warn", RedactedStderr);
    // The person's token never reaches the real server, whatever it looks like.
    let hidden_variables = args.approver_token_env.iter().cloned().collect();
    let config = match args.upstream_url {
        Some(url) => ProxyConfig {
            server_name: args
                .server_name
                .context("--upstream-url needs --server-name")?,
            upstream: Endpoint::StreamableHttp { url },
            hidden_variables,
        },
        None => {
            let mut command = args.command.into_iter();
            let program = command
                .next()
                .context("no MCP server command was given after `--`")?;
            ProxyConfig {
                server_name: args.server_name.unwrap_or_else(|| server_name(&program)),
                upstream: Endpoint::Stdio(Command {
                    program,
                    args: command.collect(),
                }),
                hidden_variables,
            }
        }
    };
    let agent = Client::new(&args.client).naming_status();
    if let Some(name) = &args.agent {
        check_agent(&agent, name)?;
    }
    let approver = match &args.approver_token_env {
        Some(variable) => Some(Arc::new(approver(&args.client, variable)?)),
        None => None,
    };
    let gate = HttpGate {
        agent: Arc::new(agent),
        approver,
        url: without_userinfo(&args.client.base()),
        wait: args.wait,
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let served = runtime.block_on(airlock_mcp::run(config, gate, terminated()));
    // A read of stdin cannot be interrupted: after a signal, do not wait for it.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served?;
    Ok(Outcome::Ok)
}

/// The proxy's log: each event's lines go to stderr with their secrets redacted, and no
/// other library's below `warn` (see the module's notes; G9).
struct RedactedStderr;

impl tracing_subscriber::fmt::MakeWriter<'_> for RedactedStderr {
    type Writer = RedactedEvent;

    fn make_writer(&self) -> RedactedEvent {
        RedactedEvent {
            text: Vec::new(),
            kept: true,
        }
    }

    fn make_writer_for(&self, event: &tracing::Metadata<'_>) -> RedactedEvent {
        RedactedEvent {
            text: Vec::new(),
            kept: event.target().starts_with("airlock") || *event.level() <= tracing::Level::WARN,
        }
    }
}

/// One event as it is formatted: written out, redacted, when the event is done with it.
struct RedactedEvent {
    text: Vec<u8>,
    /// Whether it is written at all.
    kept: bool,
}

impl Write for RedactedEvent {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.kept {
            self.text.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactedEvent {
    fn drop(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let text = redact_text(&String::from_utf8_lossy(&self.text));
        // Nowhere to report a failed write of the log.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

/// `--agent NAME`: the token must be that agent's. Every failure is exit 2 (not a
/// refusal): the proxy cannot run as asked.
fn check_agent(client: &Client, name: &str) -> anyhow::Result<()> {
    let me = match client.get("/v1/agents/me") {
        Ok(me) => me,
        Err(error) if error.downcast_ref::<Refused>().is_some() => {
            return Err(anyhow!(
                "--agent {name}: the token is not an agent's token (a person's token cannot \
                 make tool calls through the MCP proxy); give the token of agent `{name}`"
            ))
        }
        Err(error) => return Err(anyhow!("--agent {name}: cannot check the token: {error:#}")),
    };
    let agent: Agent = parse(&me, "an agent").map_err(|error| anyhow!("{error:#}"))?;
    if agent.name != name {
        return Err(anyhow!(
            "--agent {name}: the token belongs to agent `{}`, not `{name}`",
            agent.name
        ));
    }
    Ok(())
}

/// The client of `--approver-token-env VAR`: the person's token from the environment,
/// checked not to be an agent's (an agent never decides, G6).
fn approver(args: &ClientArgs, variable: &str) -> anyhow::Result<Client> {
    let token = std::env::var(variable)
        .ok()
        .filter(|token| !token.trim().is_empty())
        .ok_or_else(|| {
            anyhow!("--approver-token-env {variable}: the variable is not set or empty")
        })?;
    let client = Client::new(&ClientArgs {
        token: Some(token),
        ..args.clone()
    })
    .naming_status();
    match client.get("/v1/agents/me") {
        // Only an agent's token has an agent.
        Ok(_) => Err(anyhow!(
            "--approver-token-env {variable}: this is an agent's token; an agent must not \
             approve its own calls, give a person's token (role approver or above)"
        )),
        Err(error) if error.downcast_ref::<Refused>().is_some() => Ok(client),
        Err(error) => Err(anyhow!(
            "--approver-token-env {variable}: cannot check the token: {error:#}"
        )),
    }
}

/// Completes on SIGTERM or Ctrl-C: the proxy then withdraws the approvals it waits for.
async fn terminated() {
    let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    let terminate = async {
        match terminate {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// The gate over airlock's HTTP API: calls as the agent, inline decisions as the person.
struct HttpGate {
    agent: Arc<Client>,
    /// The person of `--approver-token-env`.
    approver: Option<Arc<Client>>,
    /// The server, as named in reasons (without a user and password).
    url: String,
    wait: u64,
}

/// Runs a blocking (ureq) exchange off the async threads.
async fn blocking<T: Send + 'static>(
    exchange: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(exchange)
        .await
        .map_err(|error| anyhow!("{error}"))?
}

/// A decided (or closed) call: approved, or why not.
fn settled(call: &Call) -> Waited {
    match verdict(call) {
        Answer::RedeemThenAllow { .. } => Waited::Approved,
        Answer::Deny { reason } => Waited::Closed {
            reason,
            gave_up: false,
        },
    }
}

/// Why no verdict came, for the model: the call is denied (fail closed, G4). `sent` is the
/// size of the request's body, when it had one.
fn no_verdict(error: &anyhow::Error, sent: Option<usize>) -> String {
    match error.downcast_ref::<HttpStatus>() {
        Some(HttpStatus(413)) => too_large(),
        // `airlock answered 404 Not Found: …`
        Some(_) => format!("{error:#}"),
        // A body over the limit may be cut off while it is sent: the server answers 413
        // and closes the connection (a broken pipe, a reset) before reading it all.
        None if sent.is_some_and(|size| size > MAX_BODY) && !is_not_sent(error) => too_large(),
        None if is_transient(error) => format!("airlock is unreachable: {error:#}"),
        None => format!("airlock's answer could not be read: {error:#}"),
    }
}

fn too_large() -> String {
    format!(
        "the call's arguments are too large for airlock to judge (its API takes requests of \
         up to {MAX_BODY} bytes), so the call is denied"
    )
}

impl HttpGate {
    fn approver(&self) -> Result<Arc<Client>, String> {
        self.approver
            .clone()
            .ok_or_else(|| "no approver token (--approver-token-env)".to_owned())
    }
}

impl Gate for HttpGate {
    async fn submit(&self, call: GateCall) -> Submitted {
        let mut body = json!({"tool": call.tool, "arguments": call.arguments});
        if let Some(hints) = call.hints.filter(|hints| !hints.is_empty()) {
            let mut annotations = serde_json::Map::new();
            if let Some(read_only) = hints.read_only {
                annotations.insert("read_only_hint".into(), read_only.into());
            }
            if let Some(destructive) = hints.destructive {
                annotations.insert("destructive_hint".into(), destructive.into());
            }
            body["annotations"] = Value::Object(annotations);
        }
        let client = self.agent.clone();
        let sent = serde_json::to_vec(&body).map(|text| text.len()).ok();
        let submitted = blocking(move || Ok(flow::submit(&client, &body)?.call)).await;
        let call = match submitted {
            Ok(call) => call,
            Err(error) => {
                return Submitted::Denied {
                    reason: no_verdict(&error, sent),
                }
            }
        };
        match (call.status, call.approval_id.clone()) {
            (CallStatus::Pending, Some(approval_id)) => Submitted::Pending(Pending {
                call_id: call.id,
                approval_id,
            }),
            _ => match verdict(&call) {
                Answer::RedeemThenAllow { .. } => Submitted::Allowed { call_id: call.id },
                Answer::Deny { reason } => Submitted::Denied { reason },
            },
        }
    }

    async fn wait(&self, call_id: String) -> Waited {
        let (client, wait) = (self.agent.clone(), self.wait);
        let waited = blocking(move || {
            let until = Instant::now() + Duration::from_secs(wait);
            Ok(flow::wait_for(&client, &call_id, until)?.call)
        })
        .await;
        let call = match waited {
            Ok(call) => call,
            Err(error) => {
                return Waited::Closed {
                    reason: no_verdict(&error, None),
                    gave_up: true,
                }
            }
        };
        if call.status == CallStatus::Pending {
            let approval = call.approval_id.as_deref().unwrap_or("(unknown)");
            return Waited::Closed {
                reason: format!(
                    "nobody decided within {} s, so the airlock approval {approval} was \
                     withdrawn (airlock at {}); try the call again to ask again",
                    self.wait, self.url
                ),
                gave_up: true,
            };
        }
        settled(&call)
    }

    async fn check(&self, call_id: String) -> Option<Waited> {
        let client = self.agent.clone();
        match blocking(move || flow::look(&client, &call_id)).await {
            Ok(call) if call.status == CallStatus::Pending => None,
            Ok(call) => Some(settled(&call)),
            Err(error) => Some(Waited::Closed {
                reason: no_verdict(&error, None),
                gave_up: true,
            }),
        }
    }

    fn wait_limit(&self) -> Duration {
        Duration::from_secs(self.wait)
    }

    async fn redeem(&self, call_id: String) -> Verdict {
        let client = self.agent.clone();
        // One key per call, kept across the retries of a lost answer (DESIGN.md §11.8).
        match blocking(move || flow::redeem(&client, &call_id)).await {
            Ok(redeemed) => Verdict::Allow {
                edited: match redeemed.arguments {
                    Some(Value::Object(edited)) => Some(edited),
                    // The gate only stores an object; anything else is not run.
                    Some(_) => {
                        return Verdict::Deny {
                            reason: "the edited arguments are not a JSON object".into(),
                        }
                    }
                    None => None,
                },
            },
            Err(error) => Verdict::Deny {
                reason: format!("the call's grant could not be redeemed: {error:#}"),
            },
        }
    }

    async fn report(&self, call_id: String, succeeded: bool, detail: Option<String>) {
        let client = self.agent.clone();
        let id = call_id.clone();
        if let Err(error) = blocking(move || flow::report(&client, &id, succeeded, detail)).await {
            // The MCP server's stderr is its log; the call turns ambiguous in the inbox.
            eprintln!("airlock mcp proxy: cannot report the outcome of {call_id}: {error:#}");
        }
    }

    async fn cancel(&self, call_id: String) {
        let client = self.agent.clone();
        let path = format!("/v1/calls/{}/cancel", encode(&call_id));
        match blocking(move || client.post(&path, &json!({}))).await {
            Ok(_) => {}
            // Decided first, or not waiting for a person: nothing to withdraw.
            Err(error) if error.downcast_ref::<Refused>().is_some() => {}
            // The MCP server's stderr is its log, which MCP clients keep.
            Err(error) => eprintln!("airlock mcp proxy: cannot cancel call {call_id}: {error:#}"),
        }
    }

    fn decides_inline(&self) -> bool {
        self.approver.is_some()
    }

    async fn prompt(&self, approval_id: String) -> Result<ApprovalPrompt, String> {
        let client = self.approver()?;
        let path = format!("/v1/approvals/{}", encode(&approval_id));
        let approval = blocking(move || parse::<Approval>(&client.get(&path)?, "an approval"))
            .await
            .map_err(|error| format!("{error:#}"))?;
        Ok(ApprovalPrompt {
            approval_id: approval.id,
            summary: approval.preview.summary,
            body: approval.preview.body,
            binding_digest: approval.binding_digest,
        })
    }

    async fn decide(&self, prompt: ApprovalPrompt, decision: InlineDecision) -> Result<(), String> {
        let client = self.approver()?;
        let mut body = json!({"binding_digest": prompt.binding_digest});
        match decision {
            InlineDecision::Approve => body["decision"] = "approve".into(),
            InlineDecision::Reject => {
                body["decision"] = "reject".into();
                body["reason"] = InlineDecision::REJECT_REASON.into();
            }
        }
        let path = format!("/v1/approvals/{}/decision", encode(&prompt.approval_id));
        let decided = blocking(move || client.post(&path, &body)).await;
        decided.map(|_| ()).map_err(|error| {
            // The MCP server's stderr is its log: a refused inline answer (decided first
            // in the inbox, or a token below approver) shows there.
            eprintln!(
                "airlock mcp proxy: the inline decision on {} was not recorded: {error:#}",
                prompt.approval_id
            );
            format!("{error:#}")
        })
    }
}
