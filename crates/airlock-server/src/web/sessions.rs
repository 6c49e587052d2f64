//! A session's timeline (`GET /sessions/{id}`): each run of the session with its journal
//! (DESIGN.md §6.4), oldest first, as a person reads it — what the model said, which
//! tools it called, what the gate and the people decided, how the run ended.
//!
//! Consecutive `text_delta` events are shown as one text; every other event is one line.

use crate::web::error::WebError;
use crate::web::layout::{self, shorten, when, People};
use crate::web::session::WebUser;
use crate::AppState;
use airlock_protocol::{Run, RunEvent, RunEventData};
use axum::extract::{Path, State};
use axum::response::Response;
use maud::{html, Markup};
use serde_json::Value;

/// Journal events read per run (the newest beyond it are left out, with a note).
const EVENTS_PER_RUN: u32 = 1000;

/// `GET /sessions/{id}`.
pub async fn page(
    State(state): State<AppState>,
    user: WebUser,
    Path(id): Path<String>,
) -> Result<Response, WebError> {
    let principal = &user.principal;
    let session = state.gate.get_session(principal, &id).await?;
    let runs = state.runtime.session_runs(principal, &id).await?;
    let mut journals = Vec::with_capacity(runs.len());
    for run in &runs {
        let events = state
            .runtime
            .run_events(principal, &run.id, 0, EVENTS_PER_RUN)
            .await?;
        journals.push(events);
    }
    let people = People::load(&state, &user).await?;
    let title = session.title.clone().unwrap_or_else(|| session.id.clone());
    let body = html! {
        article.session {
            h1 { "Session " small { (title) } }
            dl.facts {
                dt { "Id" } dd { code { (session.id) } }
                @if let Some(agent) = &session.agent_id {
                    dt { "Agent" } dd { (people.agent(agent)) }
                }
                dt { "Opened" } dd { (when(session.created_at)) }
                @if let Some(task) = &session.task_id {
                    dt { "Task" } dd { code { (task) } }
                }
            }
            @if runs.is_empty() {
                p.empty { "No run yet: this session's calls came through the API, not the built-in runtime." }
            }
            @for (run, events) in runs.iter().zip(&journals) {
                (run_timeline(run, events))
            }
        }
    };
    Ok(layout::ok(layout::page(
        &format!("Session {}", shorten(&title, 40)),
        Some((&user, "")),
        body,
    )))
}

fn run_timeline(run: &Run, events: &[RunEvent]) -> Markup {
    let state_class = format!("badge run-{}", run.state.as_str());
    html! {
        section.run {
            h2 {
                "Run " code { (run.id) } " "
                span class=(state_class) { (run.state.as_str()) }
            }
            @if let Some(error) = &run.error { p.notice.error { (error) } }
            ol.timeline {
                @for entry in coalesce(events) {
                    li class=(format!("event kind-{}", entry.kind)) {
                        span.seq { "#" (entry.seq) }
                        span.when { (when(entry.at)) }
                        span.kind { (entry.kind.replace('_', " ")) }
                        span.detail { (entry.detail) }
                    }
                }
            }
            @if events.len() == EVENTS_PER_RUN as usize {
                p.more { "Showing the first " (EVENTS_PER_RUN) " events of this run." }
            }
        }
    }
}

/// One line of the timeline.
struct Entry {
    seq: u64,
    at: jiff::Timestamp,
    kind: String,
    detail: Markup,
}

/// The journal as lines, with runs of `text_delta` merged into one `text` line.
fn coalesce(events: &[RunEvent]) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut text = String::new();
    let mut text_start: Option<(u64, jiff::Timestamp)> = None;
    let flush = |entries: &mut Vec<Entry>,
                 text: &mut String,
                 start: &mut Option<(u64, jiff::Timestamp)>| {
        if let Some((seq, at)) = start.take() {
            entries.push(Entry {
                seq,
                at,
                kind: "text".into(),
                detail: html! { span.said { (shorten(text, 1200)) } },
            });
            text.clear();
        }
    };
    for event in events {
        // A kind this build does not know (or data of another shape) reads as `None`
        // and is shown raw.
        let typed = RunEventData::from_parts(&event.kind, event.data.clone()).ok();
        if let Some(RunEventData::TextDelta(delta)) = &typed {
            text_start.get_or_insert((event.seq, event.at));
            text.push_str(&delta.text);
            continue;
        }
        flush(&mut entries, &mut text, &mut text_start);
        entries.push(Entry {
            seq: event.seq,
            at: event.at,
            kind: event.kind.clone(),
            detail: detail(typed, &event.data),
        });
    }
    flush(&mut entries, &mut text, &mut text_start);
    entries
}

/// What one journal event says, in a line.
fn detail(event: Option<RunEventData>, data: &Value) -> Markup {
    let nonempty = |text: Option<String>| text.filter(|text| !text.is_empty());
    match event {
        Some(RunEventData::ToolCall(call)) => html! {
            code { (call.tool) } " "
            span.args { (shorten(&call.arguments.to_string(), 200)) }
        },
        Some(RunEventData::ToolDecided(decided)) => html! {
            strong { (decided.status.as_str()) }
            @if let Some(rule) = nonempty(decided.rule) { " by rule " code { (rule) } }
            @if let Some(reason) = nonempty(decided.reason) { " — " (reason) }
        },
        Some(RunEventData::ApprovalRequired(required)) => html! {
            a href=(format!("/approvals/{}", required.approval_id)) { (required.preview.summary) }
        },
        Some(RunEventData::ToolStarted(started)) => html! { code { (started.tool) } },
        Some(RunEventData::ToolFinished(finished)) => html! {
            code { (finished.tool) } " " strong { (finished.status.as_str()) } " "
            span.args { (shorten(&finished.output.to_string(), 200)) }
        },
        Some(RunEventData::RunCompleted(completed)) => html! {
            span.said { (shorten(completed.text.as_deref().unwrap_or(""), 600)) }
        },
        Some(RunEventData::RunFailed(failed)) => html! { span.error { (failed.error) } },
        _ => html! { span.args { (shorten(&data.to_string(), 200)) } },
    }
}
