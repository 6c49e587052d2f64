//! The client leg: reaches the real MCP server (a child process over stdio, or a
//! Streamable HTTP server by URL), in 2026-07-28 when it offers it and else with the
//! `initialize` handshake, and speaks to it as the MCP client would, relaying what
//! the server asks of its client (sampling, roots, elicitation, pings) and what it
//! notifies (progress, logging, list changes) back to the real MCP client. A change of
//! the server's tool list also empties the proxy's [`Catalog`] of tool annotations.

use crate::catalog::Catalog;
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    ClientConfig, ClientNotification, ClientResult, ProgressToken, ServerNotification,
    ServerRequest,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RunningService,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ErrorData as McpError, Peer, RoleClient, RoleServer, Service};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, RwLock};

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
    downstream: Arc<Downstream>,
    catalog: Arc<Catalog>,
    progress: Arc<Progress>,
}

/// The progress tokens of relayed requests. rmcp gives each request it sends its own
/// progress token, so the real server reports progress under ours; the client knows only
/// its own. Ours → the client's, while the request is in flight.
#[derive(Debug, Default)]
pub struct Progress(Mutex<HashMap<ProgressToken, ProgressToken>>);

impl Progress {
    /// Relays the real server's progress on `ours` to the client as `theirs` until the
    /// returned guard is dropped.
    pub fn relay(self: &Arc<Self>, ours: ProgressToken, theirs: ProgressToken) -> ProgressGuard {
        self.lock().insert(ours.clone(), theirs);
        ProgressGuard {
            progress: self.clone(),
            ours,
        }
    }

    fn theirs(&self, ours: &ProgressToken) -> Option<ProgressToken> {
        self.lock().get(ours).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressToken>> {
        // Every operation leaves the map whole, so a poisoned lock still holds a good map.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Ends the relay of one request's progress.
pub struct ProgressGuard {
    progress: Arc<Progress>,
    ours: ProgressToken,
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.progress.lock().remove(&self.ours);
    }
}

/// The MCP client, as the real server's requests and notifications reach it. Unknown
/// until the client's first request that can be answered with a message of our own: a
/// 2026-07-28 client's `server/discover` comes before any way back to it.
#[derive(Default)]
pub struct Downstream(RwLock<Option<Peer<RoleServer>>>);

impl Downstream {
    /// Remembers the way to the client (the first one stays).
    pub fn reach(&self, peer: &Peer<RoleServer>) {
        let mut slot = self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(peer.clone());
        }
    }

    fn peer(&self) -> Option<Peer<RoleServer>> {
        // A poisoned lock still holds a whole `Option`.
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Starts (or connects to) the real server and completes its `initialize` handshake as
/// `client`; the server's tool-list changes empty `catalog`.
pub async fn start(
    endpoint: &Endpoint,
    client: ClientConfig,
    downstream: Arc<Downstream>,
    catalog: Arc<Catalog>,
    progress: Arc<Progress>,
) -> Result<Upstream, String> {
    let relay = Relay {
        client,
        downstream,
        catalog,
        progress,
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
            relay
                .serve_with_lifecycle(transport, lifecycle())
                .await
                .map_err(|error| {
                    format!(
                        "the MCP server `{}` did not initialize: {error}",
                        command.program
                    )
                })
        }
        Endpoint::StreamableHttp { url } => {
            let transport = StreamableHttpClientTransport::from_uri(url.as_str());
            relay
                .serve_with_lifecycle(transport, lifecycle())
                .await
                .map_err(|error| format!("the MCP server at {url} did not initialize: {error}"))
        }
    }
}

/// 2026-07-28 when the real server offers it (`server/discover`), else the `initialize`
/// handshake with the client's own parameters.
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    }
}

impl Service<RoleClient> for Relay {
    async fn handle_request(
        &self,
        request: ServerRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, McpError> {
        let downstream = self.downstream.peer().ok_or_else(|| {
            McpError::internal_error("the MCP client cannot be reached yet", None)
        })?;
        // On 2026-07-28 the client takes no requests from a server: rmcp refuses to send
        // them, and the real server gets that error as the answer.
        downstream
            .send_request(request)
            .await
            .map_err(|error| McpError::internal_error(format!("the MCP client: {error}"), None))
    }

    async fn handle_notification(
        &self,
        mut notification: ServerNotification,
        _context: NotificationContext<RoleClient>,
    ) -> Result<(), McpError> {
        match &mut notification {
            ServerNotification::ToolListChangedNotification(_) => self.catalog.forget(),
            // Progress on a request the client asked progress for, under the client's
            // token; any other (a finished request, one without a token) is dropped.
            ServerNotification::ProgressNotification(progress) => {
                match self.progress.theirs(&progress.params.progress_token) {
                    Some(theirs) => progress.params.progress_token = theirs,
                    None => return Ok(()),
                }
            }
            _ => {}
        }
        // A client that went away is noticed by the server leg; nothing to do here.
        if let Some(downstream) = self.downstream.peer() {
            let _ = downstream.send_notification(notification).await;
        }
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
