//! The client leg: reaches the real MCP server (a child process over stdio, or a
//! Streamable HTTP server by URL) and speaks to it as the MCP client would, relaying what
//! the server asks of its client (sampling, roots, elicitation, pings) and what it
//! notifies (progress, logging, list changes) back to the real MCP client. A change of
//! the server's tool list also empties the proxy's [`Catalog`] of tool annotations.

use crate::catalog::Catalog;
use rmcp::model::{
    ClientConfig, ClientNotification, ClientResult, ServerNotification, ServerRequest,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ErrorData as McpError, Peer, RoleClient, RoleServer, Service, ServiceExt};
use std::process::Stdio;
use std::sync::Arc;

/// The running client leg; dropping it stops the real server.
pub type Upstream = RunningService<RoleClient, Relay>;

/// Where the real server is.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// A child process speaking MCP over stdio; the proxy starts and stops it.
    Stdio(Command),
    /// A Streamable HTTP MCP server already running at `url` (`http://…/mcp`).
    StreamableHttp { url: String },
}

/// The real server's command line.
#[derive(Debug, Clone)]
pub struct Command {
    pub program: String,
    pub args: Vec<String>,
}

/// Relays the real server's requests and notifications to the MCP client (`downstream`),
/// and introduces itself with the MCP client's own `initialize` parameters, so the real
/// server sees the client's capabilities and does not hide capability-gated tools.
pub struct Relay {
    client: ClientConfig,
    downstream: Peer<RoleServer>,
    catalog: Arc<Catalog>,
}

/// Starts (or connects to) the real server and completes its `initialize` handshake as
/// `client`; the server's tool-list changes empty `catalog`.
pub async fn start(
    endpoint: &Endpoint,
    client: ClientConfig,
    downstream: Peer<RoleServer>,
    catalog: Arc<Catalog>,
) -> Result<Upstream, String> {
    let relay = Relay {
        client,
        downstream,
        catalog,
    };
    match endpoint {
        Endpoint::Stdio(command) => {
            let mut child = tokio::process::Command::new(&command.program);
            child.args(&command.args);
            // The real server's stderr is its log: keep it on ours, where MCP clients
            // collect it.
            let (transport, _stderr) = TokioChildProcess::builder(child)
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|error| format!("cannot start `{}`: {error}", command.program))?;
            relay.serve(transport).await.map_err(|error| {
                format!(
                    "the MCP server `{}` did not initialize: {error}",
                    command.program
                )
            })
        }
        Endpoint::StreamableHttp { url } => {
            let transport = StreamableHttpClientTransport::from_uri(url.as_str());
            relay
                .serve(transport)
                .await
                .map_err(|error| format!("the MCP server at {url} did not initialize: {error}"))
        }
    }
}

impl Service<RoleClient> for Relay {
    async fn handle_request(
        &self,
        request: ServerRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, McpError> {
        self.downstream
            .send_request(request)
            .await
            .map_err(|error| McpError::internal_error(format!("the MCP client: {error}"), None))
    }

    async fn handle_notification(
        &self,
        notification: ServerNotification,
        _context: NotificationContext<RoleClient>,
    ) -> Result<(), McpError> {
        if matches!(
            notification,
            ServerNotification::ToolListChangedNotification(_)
        ) {
            self.catalog.forget();
        }
        // A client that went away is noticed by the server leg; nothing to do here.
        let _ = self.downstream.send_notification(notification).await;
        Ok(())
    }

    fn get_info(&self) -> ClientConfig {
        self.client.clone()
    }
}

/// A notification from the MCP client that makes sense to the real server as it is.
/// `initialized` is the client leg's own, and a cancellation names the client's request
/// id, which the real server never saw (rmcp cancels the relayed request instead).
pub fn relays(notification: &ClientNotification) -> bool {
    matches!(
        notification,
        ClientNotification::ProgressNotification(_)
            | ClientNotification::RootsListChangedNotification(_)
            | ClientNotification::CustomNotification(_)
    )
}
