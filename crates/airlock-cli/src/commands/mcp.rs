//! `airlock mcp proxy [--server-name NAME] -- COMMAND ARGS…`: put airlock between an MCP
//! client and a stdio MCP server; with `--upstream-url URL --server-name NAME` instead of
//! the command, between the client and a Streamable HTTP MCP server. The MCP client
//! launches this command in place of the real server; [`airlock_mcp`] relays the protocol
//! and asks the [`HttpGate`] below about every `tools/call`, as the agent whose token is
//! given.
//!
//! The gate is the hook's flow ([`super::hook::gate`]): submit, long-poll an asked call,
//! redeem the grant before allowing. Anything that prevents a verdict is a deny with the
//! reason (fail closed, G4): the real server never sees the call.

use super::hook;
use crate::client::{Client, ClientArgs};
use crate::Outcome;
use airlock_mcp::gate::server_name;
use airlock_mcp::upstream::{Command, Endpoint};
use airlock_mcp::{Gate, ProxyConfig, Verdict};
use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{Map, Value};

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
    /// Wait up to this many seconds for a person to decide an asked call, then deny
    /// (an approval that expires earlier ends the wait at its deadline).
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    wait: u64,
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
    let config = match args.upstream_url {
        Some(url) => ProxyConfig {
            server_name: args
                .server_name
                .context("--upstream-url needs --server-name")?,
            upstream: Endpoint::StreamableHttp { url },
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
            }
        }
    };
    let gate = HttpGate {
        client: args.client,
        wait: args.wait,
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(airlock_mcp::run(config, gate))?;
    Ok(Outcome::Ok)
}

/// The gate over airlock's HTTP API, as the agent whose token is in `client`.
struct HttpGate {
    client: ClientArgs,
    wait: u64,
}

impl Gate for HttpGate {
    async fn check(&self, tool: String, arguments: Map<String, Value>) -> Verdict {
        let (args, wait) = (self.client.clone(), self.wait);
        // The client is blocking (ureq): run the whole exchange off the async threads.
        let decided = tokio::task::spawn_blocking(move || {
            hook::gate(
                &Client::new(&args),
                &args.url,
                &tool,
                Value::Object(arguments),
                wait,
            )
        })
        .await;
        match decided {
            Ok(Ok((true, _))) => Verdict::Allow,
            Ok(Ok((false, reason))) => Verdict::Deny { reason },
            Ok(Err(error)) => Verdict::Deny {
                reason: format!("airlock is unreachable: {error:#}"),
            },
            Err(error) => Verdict::Deny {
                reason: format!("airlock is unreachable: {error}"),
            },
        }
    }
}
