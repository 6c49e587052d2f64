//! The server leg, facing the MCP client: relays every request and notification to the
//! real server (the [`upstream`](crate::upstream) leg), except `initialize`, which starts
//! (or connects to) the real server with the client's own parameters, and `tools/call`,
//! which the [`Gate`] decides first.
//!
//! A `tools/call` the gate does not allow becomes a tool result with `isError: true` and
//! the text `Denied: <reason>`: the model reads it and the session goes on. It never
//! reaches the real server (fail closed, G4).
//!
//! Both legs speak the protocol up to 2025-11-25 (the `initialize` era); the 2026-07-28
//! stateless lifecycle is not offered yet, so clients negotiate down to it.

use crate::asked::{self, CLIENT_CANCELLED};
use crate::catalog::Catalog;
use crate::disconnect::WatchEof;
use crate::gate::{tool_name, Gate, GateCall, Hints, Pending, Submitted, Verdict, Waited};
use crate::upstream::{self, Endpoint, Upstream};
use crate::ProxyError;
use rmcp::model::{
    CallToolRequest, CallToolResult, ClientNotification, ClientRequest, ContentBlock,
    Implementation, InitializeRequestParams, ProtocolVersion, ServerConfig, ServerPeerInfo,
    ServerResult,
};
use rmcp::service::{NotificationContext, RequestContext, ServiceError};
use rmcp::{ErrorData as McpError, RoleServer, Service, ServiceExt};
use std::borrow::Cow;
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::{watch, OnceCell};

/// The newest protocol version the proxy speaks on either leg.
const NEWEST_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// What the proxy runs and how the gate names its tools.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// `<server>` in `mcp__<server>__<tool>`.
    pub server_name: String,
    /// The real server: a command over stdio, or a Streamable HTTP URL.
    pub upstream: Endpoint,
}

/// Serves the MCP client on stdin/stdout until it disconnects or `shutdown` completes (a
/// signal, say), then cancels the approvals still waiting for a person (nobody will use
/// their verdict) and stops the real server (or ends the session with it).
pub async fn run<G: Gate>(
    config: ProxyConfig,
    gate: G,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ProxyError> {
    let gate = Arc::new(gate);
    let waiting = Arc::new(Waiting::default());
    let (gone, client_gone) = watch::channel(false);
    let gone = Arc::new(gone);
    let proxy = Proxy {
        config,
        gate: gate.clone(),
        upstream: OnceCell::new(),
        catalog: Arc::new(Catalog::default()),
        waiting: waiting.clone(),
        client_gone,
    };
    let stdin = WatchEof::new(tokio::io::stdin(), gone.clone());
    let running = proxy
        .serve((stdin, tokio::io::stdout()))
        .await
        .map_err(|error| ProxyError::Initialize(Box::new(error)))?;
    let stopped = tokio::select! {
        stopped = running.waiting() => stopped.map(|_| ()),
        () = shutdown => {
            gone.send_replace(true);
            Ok(())
        }
    };
    // Normally each call cancels its own approval when the client goes; these are the
    // ones whose handler was stopped before it could.
    for call_id in waiting.drain() {
        gate.cancel(call_id).await;
    }
    stopped?;
    Ok(())
}

/// The calls waiting for a person, by call id.
#[derive(Debug, Default)]
struct Waiting(Mutex<HashSet<String>>);

impl Waiting {
    fn insert(&self, call_id: &str) {
        self.lock().insert(call_id.to_owned());
    }

    fn remove(&self, call_id: &str) {
        self.lock().remove(call_id);
    }

    fn drain(&self) -> Vec<String> {
        self.lock().drain().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // Every operation leaves the set whole, so a poisoned lock still holds a good set.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

struct Proxy<G> {
    config: ProxyConfig,
    gate: Arc<G>,
    /// Set once, when the client initializes.
    upstream: OnceCell<Upstream>,
    /// The real server's tool annotations.
    catalog: Arc<Catalog>,
    waiting: Arc<Waiting>,
    /// Becomes `true` when the client closed stdin (or the proxy is shutting down).
    client_gone: watch::Receiver<bool>,
}

impl<G: Gate> Proxy<G> {
    fn upstream(&self) -> Result<&Upstream, McpError> {
        self.upstream
            .get()
            .ok_or_else(|| McpError::invalid_request("the client has not initialized", None))
    }

    /// Starts the real server as the client, and answers with the real server's info.
    async fn initialize(
        &self,
        mut client: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        if client.protocol_version.as_str() > NEWEST_PROTOCOL.as_str() {
            client.protocol_version = NEWEST_PROTOCOL;
        }
        let started = upstream::start(
            &self.config.upstream,
            client,
            context.peer,
            self.catalog.clone(),
        )
        .await
        .map_err(|error| McpError::internal_error(error, None))?;
        let info = started.peer_info().map(|info| server_config(&info));
        self.upstream
            .set(started)
            .map_err(|_| McpError::invalid_request("the client initialized twice", None))?;
        let info = info.ok_or_else(|| {
            McpError::internal_error("the MCP server sent no initialize result", None)
        })?;
        Ok(ServerResult::InitializeResult(info))
    }

    /// Gates the call, then forwards it or answers `Denied: …`.
    async fn call_tool(
        &self,
        request: CallToolRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let upstream = self.upstream()?;
        let call = GateCall {
            tool: tool_name(&self.config.server_name, &request.params.name),
            arguments: request.params.arguments.clone().unwrap_or_default(),
            hints: self.hints(upstream, &request.params.name).await,
        };
        let verdict = match self.gate.submit(call).await {
            Submitted::Denied { reason } => Verdict::Deny { reason },
            Submitted::Allowed { call_id } => self.gate.redeem(call_id).await,
            Submitted::Pending(pending) => self.ask(&pending, &context).await,
        };
        // INVARIANT: nothing is forwarded once the client gave up on the call; an unused
        // grant executes nothing (G1).
        if context.ct.is_cancelled() {
            return Err(McpError::invalid_request(CLIENT_CANCELLED, None));
        }
        match verdict {
            Verdict::Allow => upstream
                .send_request(ClientRequest::CallToolRequest(request))
                .await
                .map_err(relay_error),
            Verdict::Deny { reason } => {
                let mut result =
                    CallToolResult::error(vec![ContentBlock::text(format!("Denied: {reason}"))]);
                // The `resultType` field belongs to 2026-07-28, which we do not speak.
                result.result_type = None;
                Ok(ServerResult::CallToolResult(result))
            }
        }
    }

    /// What the server says about `tool`: from the catalog, or, for a tool it has not
    /// listed yet, from a fresh `tools/list`. `None` when the server does not list it.
    async fn hints(&self, upstream: &Upstream, tool: &str) -> Option<Hints> {
        if let Some(hints) = self.catalog.hints(tool) {
            return Some(hints);
        }
        match upstream.list_all_tools().await {
            Ok(tools) => self.catalog.record(&tools),
            Err(error) => tracing::warn!(%error, "cannot list the MCP server's tools"),
        }
        self.catalog.hints(tool)
    }

    /// Waits for a person; redeems an approved call's grant unless the client gave up,
    /// and cancels the approval when nobody waits for it anymore.
    async fn ask(&self, pending: &Pending, context: &RequestContext<RoleServer>) -> Verdict {
        self.waiting.insert(&pending.call_id);
        let waited =
            asked::wait_for_person(&*self.gate, pending, context, self.client_gone.clone()).await;
        let verdict = match waited {
            Waited::Approved if context.ct.is_cancelled() => Verdict::Deny {
                reason: CLIENT_CANCELLED.into(),
            },
            Waited::Approved => self.gate.redeem(pending.call_id.clone()).await,
            Waited::Closed { reason, gave_up } => {
                if gave_up {
                    self.gate.cancel(pending.call_id.clone()).await;
                }
                Verdict::Deny { reason }
            }
        };
        self.waiting.remove(&pending.call_id);
        verdict
    }
}

impl<G: Gate> Service<RoleServer> for Proxy<G> {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        match request {
            ClientRequest::InitializeRequest(request) => {
                self.initialize(request.params, context).await
            }
            ClientRequest::CallToolRequest(request) => self.call_tool(request, context).await,
            ClientRequest::ListToolsRequest(request) => {
                let listed = self
                    .upstream()?
                    .send_request(ClientRequest::ListToolsRequest(request))
                    .await
                    .map_err(relay_error)?;
                if let ServerResult::ListToolsResult(list) = &listed {
                    self.catalog.record(&list.tools);
                }
                Ok(listed)
            }
            other => self
                .upstream()?
                .send_request(other)
                .await
                .map_err(relay_error),
        }
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        _context: NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        if let (Some(upstream), true) = (self.upstream.get(), upstream::relays(&notification)) {
            let _ = upstream.send_notification(notification).await;
        }
        Ok(())
    }

    fn get_info(&self) -> ServerConfig {
        self.upstream
            .get()
            .and_then(|upstream| upstream.peer_info())
            .map(|info| server_config(&info))
            .unwrap_or_default()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST_PROTOCOL))
    }
}

/// The real server's own error passes through as it is; a broken leg is an internal error.
fn relay_error(error: ServiceError) -> McpError {
    match error {
        ServiceError::McpError(error) => error,
        other => McpError::internal_error(format!("the MCP server: {other}"), None),
    }
}

/// The real server's `initialize` answer, as ours: the client sees the real server.
fn server_config(info: &ServerPeerInfo) -> ServerConfig {
    let mut config = ServerConfig::new(info.capabilities.clone());
    config.protocol_version = info.protocol_version.clone();
    config.server_info = info
        .server_info
        .clone()
        .unwrap_or_else(Implementation::from_build_env);
    config.instructions = info.instructions.clone();
    config.meta = info.meta.clone();
    config
}
