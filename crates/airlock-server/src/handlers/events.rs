//! The workspace event stream (DESIGN.md §6.4) as Server-Sent Events.
//!
//! Each event goes out as `id:` its id, `event:` its kind, `data:` the JSON of the whole
//! event. A client that reconnects with `Last-Event-ID` gets everything after that id
//! replayed from the store, then the live tail; without it, the stream starts at the
//! newest event.
//!
//! INVARIANT: the stream subscribes to the gate's pokes *before* it reads anything, and
//! after every poke for its workspace reads the store from the last id it sent. So an
//! event committed at any moment is either in a read or announced by a poke still queued
//! in the receiver: none is lost, none is sent twice. A lagging receiver just re-reads.

use crate::auth::Auth;
use crate::error::ApiError;
use crate::metrics::StreamGuard;
use crate::AppState;
use airlock_gate::Gate;
use airlock_protocol::Principal;
use airlock_protocol::{Problem, WorkspaceEvent};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;

/// Events read from the store at a time.
const PAGE: u32 = 500;
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Streams the workspace's events (users only).
#[utoipa::path(get, path = "/v1/events", operation_id = "stream_events", tag = "events",
    params(("Last-Event-ID" = Option<u64>, Header, description = "Replay every event after this id")),
    responses(
        (status = 200, description = "SSE: `id:` the event id, `event:` its kind, `data:` the event as JSON", body = WorkspaceEvent, content_type = "text/event-stream"),
        (status = 403, description = "Agent tokens do not stream events", body = Problem)))]
pub async fn stream(
    State(state): State<AppState>,
    Auth(principal): Auth,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let pokes = state.gate.subscribe();
    let after = match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .ok_or_else(|| ApiError::Invalid("Last-Event-ID must be an event id".into()))?,
        None => state.gate.last_event_id(&principal).await?,
    };
    // Read once before answering: a refusal is still a problem, not a broken stream.
    let first = state.gate.events_after(&principal, after, PAGE).await?;
    let tail = Tail {
        more: first.len() == PAGE as usize,
        after: first.last().map_or(after, |event| event.id),
        buffer: first.into(),
        gate: state.gate.clone(),
        principal,
        pokes,
        shutdown: state.shutdown.clone(),
        _open: state.metrics.event_stream(),
    };
    let stream = futures::stream::unfold(tail, Tail::next);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// One client's position in the stream.
struct Tail {
    gate: Gate,
    principal: Principal,
    pokes: broadcast::Receiver<String>,
    shutdown: CancellationToken,
    /// Read from the store, not sent yet.
    buffer: VecDeque<WorkspaceEvent>,
    /// The id of the last event read.
    after: u64,
    /// The last read was a full page: read again before waiting.
    more: bool,
    _open: StreamGuard,
}

impl Tail {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Tail)> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                return Some((Ok(sse_event(&event)), self));
            }
            if !self.more && !self.wait_for_poke().await {
                return None;
            }
            match self
                .gate
                .events_after(&self.principal, self.after, PAGE)
                .await
            {
                Ok(page) => {
                    self.more = page.len() == PAGE as usize;
                    if let Some(last) = page.last() {
                        self.after = last.id;
                    }
                    self.buffer.extend(page);
                }
                Err(error) => {
                    // The client reconnects with Last-Event-ID and misses nothing.
                    tracing::warn!(%error, "event stream read failed; closing the stream");
                    return None;
                }
            }
        }
    }

    /// Waits until this workspace may have new events; false when the stream should end.
    async fn wait_for_poke(&mut self) -> bool {
        loop {
            tokio::select! {
                _ = self.shutdown.cancelled() => return false,
                received = self.pokes.recv() => match received {
                    Ok(workspace) if workspace == self.principal.workspace => return true,
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => return true,
                    Err(RecvError::Closed) => return false,
                },
            }
        }
    }
}

fn sse_event(event: &WorkspaceEvent) -> Event {
    let data = serde_json::to_string(event).unwrap_or_else(|_| "null".into());
    let sse = Event::default().id(event.id.to_string()).data(data);
    // Kinds are the gate's fixed names; a line break would corrupt the framing.
    if event.kind.contains(['\n', '\r']) {
        sse
    } else {
        sse.event(&event.kind)
    }
}
