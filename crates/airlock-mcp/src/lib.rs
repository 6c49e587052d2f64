//! MCP for airlock, in two roles.
//!
//! The proxy: an MCP client launches `airlock mcp proxy -- COMMAND ARGS…` in place of
//! a real MCP server. The proxy starts the real server as a child process over stdio (or,
//! with `--upstream-url`, connects to it over Streamable HTTP), relays every message
//! between the two legs, and sends every `tools/call` to the airlock
//! gate first (through a [`Gate`]): only an allowed call reaches the real server.
//!
//! The tool host: airlock's own agent runtime starts an agent's MCP servers with
//! [`McpHost`], offers their tools to the model and, once the gate allowed a call, calls
//! the tool through the host.
//!
//! - [`gate`]: what the proxy asks the gate ([`Gate`]) and what it gets back ([`Verdict`]).
//! - [`proxy`]: the server leg, facing the MCP client; gates `tools/call`.
//! - `asked`: an asked call while a person decides (progress, inline approval through the
//!   client's elicitation, the client giving up).
//! - [`catalog`]: the real server's tool annotations, sent with each gated call.
//! - `stateless`: an asked call on the 2026-07-28 protocol (input required, request
//!   state, retries), where nothing is held open.
//! - `disconnect`: noticing at once that the client closed stdin.
//! - [`upstream`]: the client leg, facing the real server; relays its requests and
//!   notifications back to the MCP client.
//! - [`host`]: the tool host of the agent runtime ([`McpHost`]).
//!
//! Architecture invariant: this crate is the only one that knows `rmcp`, and it knows
//! nothing of airlock's HTTP API (HTTP here is only rmcp's Streamable HTTP transport to a
//! real server): the binary supplies the [`Gate`] (submit, wait, redeem the grant), and
//! the runtime gates a hosted call before it calls [`McpHost::call`].

mod asked;
pub mod catalog;
mod disconnect;
pub mod gate;
pub mod host;
pub mod proxy;
mod stateless;
pub mod upstream;

pub use gate::{
    tool_name, ApprovalPrompt, Gate, GateCall, Hints, InlineDecision, Pending, Submitted, Verdict,
    Waited,
};
pub use host::{is_server_name, HostError, HostedResult, HostedTool, McpHost};
pub use proxy::{run, run_on, ProxyConfig};

/// Why the proxy could not run.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The MCP client never completed the `initialize` handshake.
    #[error("the MCP client did not initialize: {0}")]
    Initialize(Box<rmcp::service::ServerInitializeError>),
    /// The proxy's service loop ended abnormally.
    #[error("the proxy stopped: {0}")]
    Stopped(#[from] tokio::task::JoinError),
    /// The connection to the real MCP server ended (it exited or crashed): the client's
    /// session ended with it.
    #[error("the MCP server went away (it exited, or closed its connection)")]
    UpstreamClosed,
}
