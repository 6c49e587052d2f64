//! The client leg: reaches the real MCP server (a child process over stdio, or a
//! Streamable HTTP server by URL), in 2026-07-28 when it offers it and else with the
//! `initialize` handshake, and speaks to it as the MCP client would, relaying what
//! the server asks of its client (sampling, roots, elicitation, pings) and what it
//! notifies (progress, logging, list changes) back to the real MCP client. A change of
//! the server's tool list also empties the proxy's [`Catalog`] of tool annotations. Ids
//! differ on the two legs: the server withdrawing its request is relayed as the proxy
//! withdrawing the request it sent the client.
//!
//! The real server is a separate program with its own trust: it never gets airlock's
//! credentials from the proxy's environment (a person's approver token there would let it
//! approve its own calls), and the end of its connection is reported, so the proxy can end
//! the MCP client's session instead of serving a dead server.

use crate::catalog::Catalog;
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    ClientConfig, ClientNotification, ClientResult, ProgressToken, ServerNotification,
    ServerRequest,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, PeerRequestOptions, RequestContext,
    RunningService, ServiceError,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport, TokioChildProcess, Transport};
use rmcp::{ErrorData as McpError, Peer, RoleClient, RoleServer, Service};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::future::Future;
use std::process::Stdio;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::watch;

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

/// The running client leg, and whether its connection to the real server has ended (the
/// server exited, crashed or closed its output; the HTTP session ended): `true` then.
pub struct Started {
    pub upstream: Upstream,
    pub ended: watch::Receiver<bool>,
}

/// Starts (or connects to) the real server and completes its `initialize` handshake as
/// `client`; the server's tool-list changes empty `catalog`. A stdio server inherits the
/// environment without airlock's credentials and without the variables named in `hidden`.
pub async fn start(
    endpoint: &Endpoint,
    hidden: &[String],
    client: ClientConfig,
    downstream: Arc<Downstream>,
    catalog: Arc<Catalog>,
    progress: Arc<Progress>,
) -> Result<Started, String> {
    let relay = Relay {
        client,
        downstream,
        catalog,
        progress,
    };
    let (ends, ended) = watch::channel(false);
    let upstream = match endpoint {
        Endpoint::Stdio(command) => {
            let mut child = tokio::process::Command::new(&command.program);
            child.args(&command.args);
            for name in airlock_credentials(std::env::vars_os(), hidden) {
                child.env_remove(name);
            }
            // The real server's stderr is its log: keep it on ours, where MCP clients
            // collect it.
            let (transport, _stderr) = TokioChildProcess::builder(child)
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|error| format!("cannot start `{}`: {error}", command.program))?;
            relay
                .serve_with_lifecycle(Watched::new(transport, ends), lifecycle())
                .await
                .map_err(|error| {
                    format!(
                        "the MCP server `{}` did not initialize: {error}",
                        command.program
                    )
                })?
        }
        Endpoint::StreamableHttp { url } => {
            let transport = IntoTransport::<RoleClient, _, _>::into_transport(
                StreamableHttpClientTransport::from_uri(url.as_str()),
            );
            relay
                .serve_with_lifecycle(Watched::new(transport, ends), lifecycle())
                .await
                .map_err(|error| format!("the MCP server at {url} did not initialize: {error}"))?
        }
    };
    Ok(Started { upstream, ended })
}

/// Why a request the real server sent the client was withdrawn.
pub const SERVER_WITHDREW: &str = "the MCP server withdrew its request";

/// The name of the variable that holds the agent's token for airlock clients.
const AGENT_TOKEN_VARIABLE: &str = "AIRLOCK_TOKEN";

/// The variables of `environment` the real server must not inherit: `AIRLOCK_TOKEN`, those
/// named in `hidden` (the person's token of `--approver-token-env`, whatever it holds), and
/// any variable that holds an airlock token (`alk_` and hex digits), whatever its name.
/// With the agent's token a server could submit and redeem calls as the agent; with a
/// person's, approve its own.
fn airlock_credentials(
    environment: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    hidden: &[String],
) -> Vec<std::ffi::OsString> {
    environment
        .filter(|(name, value)| {
            name == AGENT_TOKEN_VARIABLE
                || hidden.iter().any(|hidden| name == hidden.as_str())
                || is_airlock_token(value)
        })
        .map(|(name, _)| name)
        .collect()
}

/// Whether `value` looks like an airlock token (`alk_` followed by hex digits; airlock
/// issues 64 of them).
fn is_airlock_token(value: &OsStr) -> bool {
    value
        .to_str()
        .and_then(|value| value.trim().strip_prefix("alk_"))
        .is_some_and(|rest| rest.len() >= 16 && rest.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A transport to the real server that says when the server's side of it ended.
struct Watched<T> {
    inner: T,
    ended: watch::Sender<bool>,
}

impl<T> Watched<T> {
    fn new(inner: T, ended: watch::Sender<bool>) -> Watched<T> {
        Watched { inner, ended }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    /// The transport's own name, which rmcp's errors quote.
    fn name() -> std::borrow::Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let received = self.inner.receive().await;
        if received.is_none() {
            // rmcp's service loop ends at the first `None`: the server is gone for good.
            self.ended.send_replace(true);
        }
        received
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
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
        context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, McpError> {
        let downstream = self.downstream.peer().ok_or_else(|| {
            McpError::internal_error("the MCP client cannot be reached yet", None)
        })?;
        // On 2026-07-28 the client takes no requests from a server: rmcp refuses to send
        // them, and the real server gets that error as the answer.
        let client_error =
            |error| McpError::internal_error(format!("the MCP client: {error}"), None);
        let mut handle = downstream
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(client_error)?;
        // The client knows the request under the id the proxy gave it: when the server
        // withdraws its own, the proxy withdraws that one (the server's cancellation,
        // naming the server's id, is not relayed).
        tokio::select! {
            answer = &mut handle.rx => answer
                .unwrap_or(Err(ServiceError::TransportClosed))
                .map_err(client_error),
            () = context.ct.cancelled() => {
                let _ = handle.cancel(Some(SERVER_WITHDREW.into())).await;
                Err(McpError::internal_error(SERVER_WITHDREW, None))
            }
        }
    }

    async fn handle_notification(
        &self,
        mut notification: ServerNotification,
        _context: NotificationContext<RoleClient>,
    ) -> Result<(), McpError> {
        match &mut notification {
            ServerNotification::ToolListChangedNotification(_) => self.catalog.forget(),
            // It names the server's id of its request; `handle_request` withdraws the one
            // the client knows.
            ServerNotification::CancelledNotification(_) => return Ok(()),
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
/// id, which the real server never saw (rmcp cancels the relayed request instead). Of the
/// notifications rmcp does not know, only those named as notifications
/// (`notifications/…`) pass: anything else, such as a `tools/call` without an id, is a
/// request in disguise that a lax server might run ungated.
pub fn relays(notification: &ClientNotification) -> bool {
    match notification {
        ClientNotification::ProgressNotification(_)
        | ClientNotification::RootsListChangedNotification(_) => true,
        ClientNotification::CustomNotification(custom) => {
            custom.method.starts_with("notifications/")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use rmcp::model::CustomNotification;
    use std::ffi::OsString;

    #[test]
    fn airlock_tokens_are_found_whatever_the_variable_is_called() {
        let token = format!("alk_{}", "0123456789abcdef".repeat(4));
        let environment = [
            ("AIRLOCK_TOKEN", "anything at all"),
            ("MY_APPROVER", token.as_str()),
            ("AIRLOCK_URL", "http://127.0.0.1:7070"),
            ("GITHUB_TOKEN", "ghp_not_ours"),
            ("SHORT", "alk_12"),
            ("WORDS", "alk_is_not_hex_at_all_really"),
        ]
        .map(|(name, value)| (OsString::from(name), OsString::from(value)));
        assert_eq!(
            airlock_credentials(environment.into_iter(), &[]),
            ["AIRLOCK_TOKEN", "MY_APPROVER"].map(OsString::from)
        );
    }

    #[test]
    fn variables_named_hidden_are_removed_whatever_they_hold() {
        let environment = [
            ("AIRLOCK_TOKEN", "anything at all"),
            ("PERSON", "not shaped like a token"),
            ("PERSONS", "kept: only the exact name is hidden"),
            ("PATH", "/usr/bin"),
        ]
        .map(|(name, value)| (OsString::from(name), OsString::from(value)));
        assert_eq!(
            airlock_credentials(environment.into_iter(), &["PERSON".to_owned()]),
            ["AIRLOCK_TOKEN", "PERSON"].map(OsString::from)
        );
    }

    #[test]
    fn only_notifications_named_so_are_relayed() {
        let custom = |method: &str| {
            ClientNotification::CustomNotification(CustomNotification::new(method, None))
        };
        assert!(relays(&custom("notifications/anything")));
        assert!(!relays(&custom("tools/call")));
        assert!(!relays(&custom("resources/read")));
    }
}
