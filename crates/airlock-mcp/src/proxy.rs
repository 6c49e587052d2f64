//! The server leg, facing the MCP client: relays every request and notification to the
//! real server (the [`upstream`](crate::upstream) leg), except `initialize`, which starts
//! (or connects to) the real server with the client's own parameters, and `tools/call`,
//! which the [`Gate`] decides first.
//!
//! A `tools/call` the gate does not allow becomes a tool result with `isError: true` and
//! the text `Denied: <reason>`: the model reads it and the session goes on. It never
//! reaches the real server (fail closed, G4).
//!
//! Protocol eras. The client leg takes both: the `initialize` era (up to 2025-11-25), and
//! 2026-07-28, where a client may open with `server/discover` and every request carries
//! its own protocol version, client info and capabilities in `_meta`. There an asked call
//! is answered at once with an input-required result and retried with its request state
//! ([`stateless`](crate::stateless)); in the older era the request stays open, with
//! progress notifications, until a person decides ([`asked`](crate::asked)). The upstream
//! leg speaks 2026-07-28 to a real server that offers it (`server/discover`), else the
//! `initialize` era (2025-11-25 at most), with the client's capabilities, whatever era the
//! client speaks.
//!
//! Request ids, progress and cancellation across the legs: rmcp gives each relayed
//! request its own id and progress token; the real server's progress is relayed under the
//! client's token ([`Progress`]), and a request the client cancels is cancelled upstream.
//!
//! Every `tools/call` is gated, including one rmcp cannot read as a `tools/call` (a
//! malformed one lands among the requests rmcp does not know): that one is refused, never
//! relayed. When the real server goes away, so does the proxy: the client's session ends,
//! as it would with the real server itself.

use crate::asked::{self, CLIENT_CANCELLED};
use crate::catalog::Catalog;
use crate::disconnect::WatchEof;
use crate::gate::{tool_name, Gate, GateCall, Hints, Pending, Submitted, Verdict, Waited};
use crate::stateless::{HeldCalls, Step};
use crate::upstream::{self, Downstream, Endpoint, Progress, Upstream};
use crate::ProxyError;
use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolResult, ClientNotification, ClientRequest,
    ConstString, ContentBlock, DiscoverResult, Implementation, InitializeRequestParams,
    ProtocolVersion, ResultType, ServerConfig, ServerPeerInfo, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{ErrorData as McpError, RoleServer, Service, ServiceExt};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{watch, OnceCell};

/// The newest protocol version the proxy speaks to the client.
const NEWEST_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// How long an answer waits for the progress the real server sent just before it.
const PROGRESS_SETTLES: std::time::Duration = std::time::Duration::from_millis(100);

/// How long the requests in flight when the real server went away have to answer (they
/// fail at once: the connection is closed) before the client's session ends.
const SERVER_GONE_ANSWERS: std::time::Duration = std::time::Duration::from_millis(200);

/// Why a forwarded call that the real server answered with input required failed.
const INPUT_NOT_RELAYED: &str = "the MCP server asked for more input (2026-07-28 input \
                                 required), which the airlock proxy does not relay yet";

/// The newest protocol version the proxy speaks to the real server (`initialize` era).
const NEWEST_UPSTREAM: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// What the proxy runs and how the gate names its tools.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// `<server>` in `mcp__<server>__<tool>`.
    pub server_name: String,
    /// The real server: a command over stdio, or a Streamable HTTP URL.
    pub upstream: Endpoint,
    /// Variables a stdio server must not inherit whatever they hold (the person's token of
    /// `--approver-token-env`, say), besides those it never does: `AIRLOCK_TOKEN` and any
    /// that holds an airlock token.
    pub hidden_variables: Vec<String>,
}

/// Serves the MCP client on stdin/stdout until it disconnects, the real server goes away,
/// or `shutdown` completes (a signal, say), then cancels the approvals still waiting for a
/// person (nobody will use their verdict) and stops the real server (or ends the session
/// with it).
pub async fn run<G: Gate>(
    config: ProxyConfig,
    gate: G,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ProxyError> {
    run_on(
        config,
        gate,
        shutdown,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )
    .await
}

/// [`run`], serving the MCP client on `input` and `output` instead of stdin and stdout.
pub async fn run_on<G: Gate>(
    config: ProxyConfig,
    gate: G,
    shutdown: impl Future<Output = ()> + Send,
    input: impl AsyncRead + Send + Unpin + 'static,
    output: impl AsyncWrite + Send + Unpin + 'static,
) -> Result<(), ProxyError> {
    let gate = Arc::new(gate);
    let waiting = Arc::new(Waiting::default());
    let (gone, client_gone) = watch::channel(false);
    let gone = Arc::new(gone);
    let (upstream_gone, mut upstream_left) = watch::channel(false);
    let held = Arc::new(HeldCalls::default());
    let proxy = Proxy {
        config,
        gate: gate.clone(),
        upstream: OnceCell::new(),
        catalog: Arc::new(Catalog::default()),
        downstream: Arc::new(Downstream::default()),
        progress: Arc::new(Progress::default()),
        waiting: waiting.clone(),
        held: held.clone(),
        client_gone,
        upstream_gone: Arc::new(upstream_gone),
    };
    let input = WatchEof::new(input, gone.clone());
    let running = proxy
        .serve((input, output))
        .await
        .map_err(|error| ProxyError::Initialize(Box::new(error)))?;
    let end_session = running.cancellation_token();
    let serving = running.waiting();
    tokio::pin!(serving);
    let stopped = tokio::select! {
        stopped = &mut serving => stopped.map(|_| ()).map_err(ProxyError::from),
        () = shutdown => {
            gone.send_replace(true);
            Ok(())
        }
        () = ended(&mut upstream_left) => {
            // Nothing can run anymore: the asked calls are withdrawn (their handlers see
            // the client leave), the calls in flight get their answer (the server's
            // failure), and then the client sees its server end.
            gone.send_replace(true);
            tokio::time::sleep(SERVER_GONE_ANSWERS).await;
            end_session.cancel();
            let _ = serving.await;
            Err(ProxyError::UpstreamClosed)
        }
    };
    // Normally each call cancels its own approval when the client goes; these are the
    // ones whose handler was stopped before it could.
    // And the 2026-07-28 client's asked calls: nobody retries them anymore.
    for call_id in waiting.drain().into_iter().chain(held.drain()) {
        gate.cancel(call_id).await;
    }
    stopped
}

/// Completes once `flag` is set; never when its sender is gone unset.
async fn ended(flag: &mut watch::Receiver<bool>) {
    if flag.wait_for(|ended| *ended).await.is_err() {
        std::future::pending::<()>().await;
    }
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
    /// The way back to the client, for the real server's requests and notifications.
    downstream: Arc<Downstream>,
    /// The client's progress tokens of the requests in flight upstream.
    progress: Arc<Progress>,
    waiting: Arc<Waiting>,
    /// The asked calls of a 2026-07-28 client, until it retries them decided.
    held: Arc<HeldCalls>,
    /// Becomes `true` when the client closed stdin (or the proxy is shutting down).
    client_gone: watch::Receiver<bool>,
    /// Set when the connection to the real server ended (it exited, say).
    upstream_gone: Arc<watch::Sender<bool>>,
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
        client: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        self.downstream.reach(&context.peer);
        let started = self.start_upstream(client).await?;
        let info = started.peer_info().map(|info| server_config(&info));
        self.upstream
            .set(started)
            .map_err(|_| McpError::invalid_request("the client initialized twice", None))?;
        let info = info.ok_or_else(|| {
            McpError::internal_error("the MCP server sent no initialize result", None)
        })?;
        Ok(ServerResult::InitializeResult(info))
    }

    /// Starts (or connects to) the real server, introducing the proxy with the client's
    /// own capabilities and identity.
    async fn start_upstream(
        &self,
        mut client: InitializeRequestParams,
    ) -> Result<Upstream, McpError> {
        if client.protocol_version.as_str() > NEWEST_UPSTREAM.as_str() {
            client.protocol_version = NEWEST_UPSTREAM;
        }
        let started = upstream::start(
            &self.config.upstream,
            &self.config.hidden_variables,
            client,
            self.downstream.clone(),
            self.catalog.clone(),
            self.progress.clone(),
        )
        .await
        .map_err(|error| McpError::internal_error(error, None))?;
        // Only a server that started can go away: one that failed to start was answered
        // with the error, and the client may try again.
        let (mut ended_here, gone) = (started.ended, self.upstream_gone.clone());
        tokio::spawn(async move {
            if ended_here.wait_for(|ended| *ended).await.is_ok() {
                gone.send_replace(true);
            }
        });
        Ok(started.upstream)
    }

    /// The real server for a 2026-07-28 request: started on the client's first request,
    /// with the capabilities and identity that request carries.
    async fn upstream_for(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<&Upstream, McpError> {
        if !is_2026(context) {
            return self.upstream();
        }
        self.upstream
            .get_or_try_init(|| async {
                let capabilities = context.client_capabilities().unwrap_or_default();
                let info = context
                    .client_info()
                    .unwrap_or_else(Implementation::from_build_env);
                self.start_upstream(InitializeRequestParams::new(capabilities, info))
                    .await
            })
            .await
    }

    /// `server/discover`: the real server's capabilities and identity, and the versions
    /// the proxy speaks to the client.
    async fn discover(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let upstream = self.upstream_for(context).await?;
        let info = upstream.peer_info().ok_or_else(|| {
            McpError::internal_error("the MCP server sent no initialize result", None)
        })?;
        Ok(ServerResult::DiscoverResult(
            DiscoverResult::from_server_info(
                self.supported_protocol_versions().into_owned(),
                server_config(&info),
            ),
        ))
    }

    /// Relays one request to the real server: the client's progress token stands for
    /// rmcp's own there, and the client cancelling the request cancels it upstream.
    async fn forward(
        &self,
        upstream: &Upstream,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let mut meta = context.meta.clone();
        let theirs = meta.get_progress_token();
        // The client's own lifecycle keys (2026-07-28) are not the real server's business:
        // the client leg sends its own.
        meta.0 .0.retain(|key, _| {
            key != "progressToken" && !key.starts_with("io.modelcontextprotocol/")
        });
        let mut options = PeerRequestOptions::no_options();
        if !meta.0 .0.is_empty() {
            options = options.with_meta(meta);
        }
        let mut handle = upstream
            .send_request_with_option(request, options)
            .await
            .map_err(relay_error)?;
        let relayed =
            theirs.map(|theirs| self.progress.relay(handle.progress_token.clone(), theirs));
        tokio::select! {
            answer = &mut handle.rx => {
                if relayed.is_some() {
                    // rmcp hands each notification of the real server to a task of its own,
                    // and the answer straight to us: give the progress sent just before the
                    // answer the moment it needs to reach the client first (a client drops
                    // progress on a request it has its answer to).
                    tokio::time::sleep(PROGRESS_SETTLES).await;
                }
                drop(relayed);
                match answer {
                    Ok(answer) => answer.map_err(relay_error),
                    Err(_) => Err(relay_error(ServiceError::TransportClosed)),
                }
            }
            () = context.ct.cancelled() => {
                let _ = handle.cancel(Some(CLIENT_CANCELLED.into())).await;
                Err(McpError::invalid_request(CLIENT_CANCELLED, None))
            }
        }
    }

    /// Gates the call, then forwards it or answers `Denied: …` (or, to a 2026-07-28
    /// client while a person decides, that input is still required).
    async fn call_tool(
        &self,
        mut request: CallToolRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let upstream = self.upstream_for(&context).await?;
        let tool = tool_name(&self.config.server_name, &request.params.name);
        let arguments = request.params.arguments.clone().unwrap_or_default();
        // The state and answers are ours: the real server never sees them.
        let state = request.params.request_state.take();
        let answers = request.params.input_responses.take();
        // The call whose grant an allow redeemed, to report the real server's result on.
        let (verdict, redeemed) = match state {
            Some(state) => {
                let step = self
                    .held
                    .resume(&*self.gate, &state, &tool, &arguments, answers.as_ref())
                    .await;
                match step {
                    Step::Ask(asking) => return Ok(ServerResult::InputRequiredResult(asking)),
                    Step::Done(verdict) => (verdict, None),
                    Step::Redeemed { call_id, verdict } => (verdict, Some(call_id)),
                }
            }
            None => {
                let call = GateCall {
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                    hints: self.hints(upstream, &request.params.name).await,
                };
                match self.gate.submit(call).await {
                    Submitted::Denied { reason } => (Verdict::Deny { reason }, None),
                    Submitted::Allowed { call_id } => {
                        (self.gate.redeem(call_id.clone()).await, Some(call_id))
                    }
                    Submitted::Pending(pending) if is_2026(&context) => {
                        let asking = self
                            .held
                            .ask(&*self.gate, pending, &tool, arguments, &context)
                            .await;
                        return Ok(ServerResult::InputRequiredResult(asking));
                    }
                    Submitted::Pending(pending) => {
                        let call_id = pending.call_id.clone();
                        (self.ask(&pending, &context).await, Some(call_id))
                    }
                }
            }
        };
        // INVARIANT: nothing is forwarded once the client gave up on the call; an unused
        // grant executes nothing (G1).
        if context.ct.is_cancelled() {
            return Err(McpError::invalid_request(CLIENT_CANCELLED, None));
        }
        match verdict {
            Verdict::Allow { edited } => {
                // A person's edit is what runs: the real server gets the edited arguments.
                let asked = request.params.arguments.clone();
                if let Some(edited) = &edited {
                    request.params.arguments = Some(edited.clone());
                }
                let forwarded = self
                    .forward(upstream, ClientRequest::CallToolRequest(request), &context)
                    .await;
                if let Some(call_id) = redeemed {
                    let (succeeded, detail) = outcome_of(&forwarded);
                    self.gate.report(call_id, succeeded, detail).await;
                }
                let result = forwarded?;
                // A 2026-07-28 real server asking for input: its retry would be another
                // call to gate, so nothing of it is relayed yet (see docs).
                if matches!(result, ServerResult::InputRequiredResult(_)) {
                    return Err(McpError::internal_error(INPUT_NOT_RELAYED, None));
                }
                Ok(match (edited, result) {
                    (Some(edited), ServerResult::CallToolResult(mut result)) => {
                        result
                            .content
                            .push(ContentBlock::text(edit_note(asked, edited)));
                        ServerResult::CallToolResult(result)
                    }
                    (_, result) => result,
                })
            }
            Verdict::Deny { reason } => {
                Ok(ServerResult::CallToolResult(CallToolResult::error(vec![
                    ContentBlock::text(format!("Denied: {reason}")),
                ])))
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

impl<G: Gate> Proxy<G> {
    async fn dispatch(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        match request {
            ClientRequest::InitializeRequest(request) => {
                self.initialize(request.params, context).await
            }
            ClientRequest::DiscoverRequest(_) => self.discover(&context).await,
            ClientRequest::CallToolRequest(request) => self.call_tool(request, context).await,
            // rmcp could not read it as a `tools/call` (its params do not fit the schema),
            // but the real server might: it is gated like any call, so refused here.
            ClientRequest::CustomRequest(request)
                if request.method == CallToolRequestMethod::VALUE =>
            {
                Err(McpError::invalid_params(
                    "this tools/call does not fit the MCP schema (name, arguments, \
                     _meta, requestState, inputResponses), so airlock cannot gate it; \
                     it was not forwarded",
                    None,
                ))
            }
            ClientRequest::ListToolsRequest(request) => {
                let upstream = self.upstream_for(&context).await?;
                let listed = self
                    .forward(upstream, ClientRequest::ListToolsRequest(request), &context)
                    .await?;
                if let ServerResult::ListToolsResult(list) = &listed {
                    self.catalog.record(&list.tools);
                }
                Ok(listed)
            }
            other => {
                let upstream = self.upstream_for(&context).await?;
                self.forward(upstream, other, &context).await
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
        let modern = !matches!(request, ClientRequest::InitializeRequest(_)) && is_2026(&context);
        // A 2026-07-28 `server/discover` comes before there is a way back to the client.
        if modern && !matches!(request, ClientRequest::DiscoverRequest(_)) {
            self.downstream.reach(&context.peer);
        }
        let mut result = self.dispatch(request, context).await?;
        // Each era's shape, as rmcp's own servers answer: 2026-07-28 wants caching hints
        // on lists, older clients know no `resultType`.
        if modern {
            mark_complete(&mut result);
            result.fill_missing_cache_hints();
        } else {
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
        }
        Ok(result)
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

/// A result relayed from a real server of the older era, in the 2026-07-28 shape: a
/// complete result says so (`resultType: "complete"`).
fn mark_complete(result: &mut ServerResult) {
    let result_type = match result {
        ServerResult::CompleteResult(r) => &mut r.result_type,
        ServerResult::GetPromptResult(r) => &mut r.result_type,
        ServerResult::ListPromptsResult(r) => &mut r.result_type,
        ServerResult::ListResourcesResult(r) => &mut r.result_type,
        ServerResult::ListResourceTemplatesResult(r) => &mut r.result_type,
        ServerResult::ReadResourceResult(r) => &mut r.result_type,
        ServerResult::ListToolsResult(r) => &mut r.result_type,
        ServerResult::CallToolResult(r) => &mut r.result_type,
        _ => return,
    };
    result_type.get_or_insert(ResultType::COMPLETE);
}

/// Whether this request speaks the 2026-07-28 protocol (or newer).
fn is_2026(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
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

/// What the real server's answer to a forwarded `tools/call` says about the call: a
/// result without `isError` succeeded; an error result or a failed request did not (the
/// call may still have run: `failed` says so, where silence would leave it ambiguous).
fn outcome_of(forwarded: &Result<ServerResult, McpError>) -> (bool, Option<String>) {
    match forwarded {
        Ok(ServerResult::CallToolResult(result)) if result.is_error == Some(true) => {
            let text: String = result
                .content
                .iter()
                .filter_map(|block| block.as_text().map(|text| text.text.clone()))
                .collect::<Vec<_>>()
                .join("\n");
            (
                false,
                Some(text.chars().take(500).collect()).filter(|t: &String| !t.is_empty()),
            )
        }
        // The tool stopped to ask for input the proxy does not relay: it did not complete.
        Ok(ServerResult::InputRequiredResult(_)) => (false, Some(INPUT_NOT_RELAYED.into())),
        Ok(_) => (true, None),
        Err(error) => (false, Some(error.message.chars().take(500).collect())),
    }
}

/// What the model is told when a person edited its call before approving it: what it
/// asked for and what ran instead (DESIGN.md §11.6).
fn edit_note(asked: Option<Map<String, Value>>, ran: Map<String, Value>) -> String {
    let asked = Value::Object(asked.unwrap_or_default());
    let ran = Value::Object(ran);
    format!(
        "airlock: a person edited this call's arguments before approving it; the tool ran \
         with {ran}, not with the arguments you sent ({asked})"
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use rmcp::model::InputRequiredResult;

    #[test]
    fn outcomes_say_whether_the_tool_completed() {
        let done = Ok(ServerResult::CallToolResult(CallToolResult::success(
            vec![],
        )));
        assert_eq!(outcome_of(&done), (true, None));
        let failed = Ok(ServerResult::CallToolResult(CallToolResult::error(vec![
            ContentBlock::text("disk full"),
        ])));
        assert_eq!(outcome_of(&failed), (false, Some("disk full".into())));
        // A tool that stopped to ask for input did not complete.
        let asking = Ok(ServerResult::InputRequiredResult(
            InputRequiredResult::from_request_state("state"),
        ));
        assert_eq!(outcome_of(&asking), (false, Some(INPUT_NOT_RELAYED.into())));
        let broken = Err(McpError::internal_error("the MCP server: gone", None));
        assert_eq!(
            outcome_of(&broken),
            (false, Some("the MCP server: gone".into()))
        );
    }
}
