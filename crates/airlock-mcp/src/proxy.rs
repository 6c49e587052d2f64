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

use crate::gate::{tool_name, Gate, Verdict};
use crate::upstream::{self, Endpoint, Upstream};
use crate::ProxyError;
use rmcp::model::{
    CallToolRequest, CallToolResult, ClientNotification, ClientRequest, ContentBlock,
    Implementation, InitializeRequestParams, ProgressNotificationParam, ProtocolVersion,
    ServerConfig, ServerPeerInfo, ServerResult,
};
use rmcp::service::{NotificationContext, RequestContext, ServiceError};
use rmcp::{ErrorData as McpError, RoleServer, Service, ServiceExt};
use std::borrow::Cow;
use std::time::Duration;
use tokio::sync::OnceCell;

/// How often a waiting call tells the client it is still alive (when it asked for
/// progress), well inside the usual 60 s request timeouts.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

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

/// Serves the MCP client on stdin/stdout until it disconnects, then stops the real server
/// (or ends the session with it).
pub async fn run<G: Gate>(config: ProxyConfig, gate: G) -> Result<(), ProxyError> {
    let proxy = Proxy {
        config,
        gate,
        upstream: OnceCell::new(),
    };
    let running = proxy
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| ProxyError::Initialize(Box::new(error)))?;
    running.waiting().await?;
    Ok(())
}

struct Proxy<G> {
    config: ProxyConfig,
    gate: G,
    /// Set once, when the client initializes.
    upstream: OnceCell<Upstream>,
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
        let started = upstream::start(&self.config.upstream, client, context.peer)
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
        let tool = tool_name(&self.config.server_name, &request.params.name);
        let arguments = request.params.arguments.clone().unwrap_or_default();
        match self.wait_for_verdict(tool, arguments, &context).await {
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

    /// Waits for the gate, sending progress notifications meanwhile when the client gave
    /// a progress token, so its request timeout does not fire while a person decides.
    async fn wait_for_verdict(
        &self,
        tool: String,
        arguments: serde_json::Map<String, serde_json::Value>,
        context: &RequestContext<RoleServer>,
    ) -> Verdict {
        let progress_token = context.meta.get_progress_token();
        let check = self.gate.check(tool, arguments);
        tokio::pin!(check);
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        let mut progress = 0.0;
        loop {
            tokio::select! {
                verdict = &mut check => return verdict,
                () = context.ct.cancelled() => {
                    return Verdict::Deny { reason: "the MCP client cancelled the call".into() };
                }
                _ = ticks.tick() => {
                    let Some(token) = progress_token.clone() else { continue };
                    progress += 1.0;
                    let mut notification = ProgressNotificationParam::new(token, progress);
                    notification.message = Some("waiting for approval in airlock".into());
                    // A client that cannot take it will cancel or disconnect; keep waiting.
                    let _ = context.peer.notify_progress(notification).await;
                }
            }
        }
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
