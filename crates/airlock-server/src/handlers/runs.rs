//! The built-in runtime over HTTP: a user's message starts a run, the run and its journal
//! (SSE, resumable) can be read, a run can be cancelled, the outbox listed.
//!
//! The run journal stream follows the workspace stream's rule (see `events`): subscribe
//! to the runtime's journal pokes first, then read the store from the last `seq` sent, so
//! nothing is lost and nothing is sent twice. A run driven by another node does not poke
//! this one, so the stream also re-reads every second while the run is live.

use crate::auth::Auth;
use crate::body::{JsonBody, NoBody, PathId, Query};
use crate::error::ApiError;
use crate::handlers::Items;
use crate::AppState;
use airlock_agent::Runtime;
use airlock_protocol::Principal;
use airlock_protocol::{Call, Message, NewMessage, OutboxItem, Problem, Run, RunEvent, Started};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Json;
use futures::Stream;
use serde::Deserialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;
use utoipa::IntoParams;

const PAGE: u32 = 500;
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How often a live run's stream re-reads without a poke (runs driven by another node).
const REREAD: Duration = Duration::from_secs(1);

/// `?after=SEQ`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AfterQuery {
    /// Replay the journal from after this `seq` (0: from the start).
    #[serde(default)]
    pub after: Option<u64>,
}

/// `?limit=N`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LimitQuery {
    /// At most this many (default 100, at most 1000).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Sends a user's message to the session's agent, which starts a run (built-in runtime).
#[utoipa::path(post, path = "/v1/sessions/{id}/messages", operation_id = "post_message", tag = "runs",
    params(("id" = String, Path, description = "Session id")), request_body = NewMessage,
    responses(
        (status = 202, description = "The run started; follow it at /v1/runs/{run_id}/events", body = Started),
        (status = 403, description = "Viewers cannot talk to agents", body = Problem),
        (status = 404, description = "No such session here", body = Problem),
        (status = 409, description = "The session already has a run in progress", body = Problem),
        (status = 422, description = "Empty text, or an agent airlock cannot run", body = Problem)))]
pub async fn post_message(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    JsonBody(body): JsonBody<NewMessage>,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let run = state
        .runtime
        .post_message(&principal, &id, &body.text)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(Started { run_id: run.id })))
}

/// A session's conversation: the people's messages and the agent's; a run's final reply
/// carries `steps[]`, the trace of its tool calls.
#[utoipa::path(get, path = "/v1/sessions/{id}/messages", operation_id = "list_messages", tag = "runs",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "Messages, oldest first", body = Items<Message>),
        (status = 404, description = "No such session here", body = Problem)))]
pub async fn list_messages(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
) -> Result<Json<Items<Message>>, ApiError> {
    let (_, messages) = state.runtime.messages(&principal, &id).await?;
    // Tool results are in the steps of the reply; the history shows the conversation.
    let messages = messages
        .into_iter()
        .filter(|message| message.role != "tool")
        .collect();
    Ok(Json(Items::new(messages)))
}

/// A run with its steps and the approvals it waits for.
#[utoipa::path(get, path = "/v1/runs/{id}", operation_id = "get_run", tag = "runs",
    params(("id" = String, Path, description = "Run id")),
    responses(
        (status = 200, description = "The run, its `steps` and `pending_approvals`", body = Run),
        (status = 404, description = "No such run here", body = Problem)))]
pub async fn get_run(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(state.runtime.run_view(&principal, &id).await?))
}

/// Cancels a live run; its pending approvals are closed, so a later decision is refused.
#[utoipa::path(post, path = "/v1/runs/{id}/cancel", operation_id = "cancel_run", tag = "runs",
    params(("id" = String, Path, description = "Run id")),
    responses(
        (status = 200, description = "The run, cancelled", body = Run),
        (status = 403, description = "Viewers cannot cancel runs", body = Problem),
        (status = 404, description = "No such run here", body = Problem),
        (status = 409, description = "The run already ended", body = Problem),
        (status = 422, description = "A body was sent: this endpoint takes none (or `{}`)", body = Problem)))]
pub async fn cancel_run(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    _body: NoBody,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(state.runtime.cancel_run(&principal, &id).await?))
}

/// Pauses a running or suspended run: it does not advance, and its pending approvals are
/// cancelled in the same transaction, so a later decision is refused (DESIGN.md §11.6).
#[utoipa::path(post, path = "/v1/runs/{id}/pause", operation_id = "pause_run", tag = "runs",
    params(("id" = String, Path, description = "Run id")),
    responses(
        (status = 200, description = "The run, paused", body = Run),
        (status = 403, description = "Viewers cannot pause runs", body = Problem),
        (status = 404, description = "No such run here", body = Problem),
        (status = 409, description = "The run is neither running nor awaiting approval", body = Problem),
        (status = 422, description = "A body was sent: this endpoint takes none (or `{}`)", body = Problem)))]
pub async fn pause_run(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    _body: NoBody,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(state.runtime.pause_run(&principal, &id).await?))
}

/// Resumes a paused run from its journal; a call whose approval the pause cancelled is
/// asked again, as a new approval.
#[utoipa::path(post, path = "/v1/runs/{id}/resume", operation_id = "resume_run", tag = "runs",
    params(("id" = String, Path, description = "Run id")),
    responses(
        (status = 200, description = "The run, resumed", body = Run),
        (status = 403, description = "Viewers cannot resume runs", body = Problem),
        (status = 404, description = "No such run here", body = Problem),
        (status = 409, description = "The run is not paused, or the step it was in when paused is still finishing", body = Problem),
        (status = 422, description = "A body was sent: this endpoint takes none (or `{}`)", body = Problem)))]
pub async fn resume_run(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    _body: NoBody,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(state.runtime.resume_run(&principal, &id).await?))
}

/// Closes a pending call's approval without a decision (its agent gave up on it, e.g. an
/// MCP client cancelled the request). The call's agent, or a user with role ≥ approver.
#[utoipa::path(post, path = "/v1/calls/{id}/cancel", operation_id = "cancel_call", tag = "calls",
    params(("id" = String, Path, description = "Call id")),
    responses(
        (status = 200, description = "The call, cancelled", body = Call),
        (status = 404, description = "No such call here", body = Problem),
        (status = 409, description = "The approval was already decided", body = Problem),
        (status = 422, description = "The call never waited for a person; or a body (this endpoint takes none)", body = Problem)))]
pub async fn cancel_call(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    _body: NoBody,
) -> Result<Json<Call>, ApiError> {
    Ok(Json(
        state
            .gate
            .cancel_call(&principal, &id, "the caller cancelled it")
            .await?,
    ))
}

/// Effects of built-in tools that left or will leave the system, newest first.
#[utoipa::path(get, path = "/v1/outbox", operation_id = "list_outbox", tag = "runs",
    params(LimitQuery),
    responses(
        (status = 200, description = "Outbox items", body = Items<OutboxItem>),
        (status = 403, description = "Agent tokens do not read the outbox", body = Problem)))]
pub async fn list_outbox(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Query(query): Query<LimitQuery>,
) -> Result<Json<Items<OutboxItem>>, ApiError> {
    let limit = query.limit.unwrap_or(100);
    if limit == 0 || limit > 1000 {
        return Err(ApiError::Invalid("limit must be 1 to 1000".into()));
    }
    Ok(Json(Items::new(
        state.runtime.outbox(&principal, limit).await?,
    )))
}

/// The run's journal as Server-Sent Events from `after` (or `Last-Event-ID`): `id:` the
/// `seq`, `event:` the kind, `data:` the event as JSON. The stream ends after the run's
/// last event (`run_completed`, `run_failed`, `run_cancelled`); resumed at or after that
/// event it ends at once, with no event. An `after` past the run's last `seq` is 422.
#[utoipa::path(get, path = "/v1/runs/{id}/events", operation_id = "stream_run_events", tag = "runs",
    params(("id" = String, Path, description = "Run id"), AfterQuery,
        ("Last-Event-ID" = Option<u64>, Header, description = "Replay every event after this seq")),
    responses(
        (status = 200, description = "SSE of the run journal", body = RunEvent, content_type = "text/event-stream"),
        (status = 404, description = "No such run here", body = Problem),
        (status = 422, description = "`after` (or `Last-Event-ID`) is past the run's last event", body = Problem)))]
pub async fn stream_events(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    Query(query): Query<AfterQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let pokes = state.runtime.subscribe_journal();
    let after = match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .ok_or_else(|| ApiError::Invalid("Last-Event-ID must be a journal seq".into()))?,
        None => query.after.unwrap_or(0),
    };
    let run = state.runtime.get_run(&principal, &id).await?;
    if after > run.last_seq {
        return Err(ApiError::Invalid(format!(
            "after {after} is past the run's last event (seq {})",
            run.last_seq
        )));
    }
    let first = state
        .runtime
        .run_events(&principal, &id, after, PAGE)
        .await?;
    let tail = Tail {
        runtime: state.runtime.clone(),
        principal,
        run_id: id,
        pokes,
        shutdown: state.shutdown.clone(),
        after: first.last().map_or(after, |event| event.seq),
        more: first.len() == PAGE as usize,
        buffer: first.into(),
        ended: false,
    };
    let stream = futures::stream::unfold(tail, Tail::next);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

struct Tail {
    runtime: Runtime,
    principal: Principal,
    run_id: String,
    pokes: broadcast::Receiver<String>,
    shutdown: CancellationToken,
    buffer: VecDeque<RunEvent>,
    after: u64,
    more: bool,
    /// The run's last event was sent.
    ended: bool,
}

impl Tail {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Tail)> {
        loop {
            if self.ended {
                return None;
            }
            if let Some(event) = self.buffer.pop_front() {
                self.ended = airlock_protocol::RunEventData::is_terminal_kind(&event.kind);
                let data = serde_json::to_string(&event).unwrap_or_else(|_| "null".into());
                let sse = Event::default()
                    .id(event.seq.to_string())
                    .event(&event.kind)
                    .data(data);
                return Some((Ok(sse), self));
            }
            if !self.more {
                match self.runtime.get_run(&self.principal, &self.run_id).await {
                    // INVARIANT: a run's state and `last_seq` are written in the transaction
                    // that appends its events, so an ended run read here has every event
                    // it will ever have, and none is past `last_seq` (but for the result of
                    // a tool that was running when a person cancelled the run: it follows
                    // `run_cancelled`, and a stream opened after it still sends it). Resumed
                    // at or after its last event, the stream has nothing left to send.
                    Ok(run) if !run.state.is_live() && run.last_seq <= self.after => return None,
                    Ok(run) if run.last_seq > self.after => {}
                    Ok(_) => {
                        if !self.wait().await {
                            return None;
                        }
                        continue;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "run event stream read failed; closing the stream");
                        return None;
                    }
                }
            }
            match self
                .runtime
                .run_events(&self.principal, &self.run_id, self.after, PAGE)
                .await
            {
                Ok(page) => {
                    self.more = page.len() == PAGE as usize;
                    if let Some(last) = page.last() {
                        self.after = last.seq;
                    }
                    self.buffer.extend(page);
                }
                Err(error) => {
                    tracing::warn!(%error, "run event stream read failed; closing the stream");
                    return None;
                }
            }
        }
    }

    /// Waits for a poke for this run, or the re-read interval; false on shutdown.
    async fn wait(&mut self) -> bool {
        let timeout = tokio::time::sleep(REREAD);
        tokio::pin!(timeout);
        loop {
            tokio::select! {
                _ = self.shutdown.cancelled() => return false,
                _ = &mut timeout => return true,
                received = self.pokes.recv() => match received {
                    Ok(run_id) if run_id == self.run_id => return true,
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => return true,
                    Err(RecvError::Closed) => return false,
                },
            }
        }
    }
}
