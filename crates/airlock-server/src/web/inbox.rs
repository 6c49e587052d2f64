//! The inbox (`GET /`): pending approvals, newest first, each as a card with its agent,
//! tool, risk, summary, arguments, time left and — for approvers — the decision buttons
//! (Approve only on a card that shows the whole call); above them,
//! the ambiguous calls a person must reconcile (`ambiguous.rs`).
//!
//! Live updates: the page remembers the id of the newest workspace event at the moment
//! it read the approvals (`data-after`), and its script streams `GET /web/events?after=`
//! from there, so an approval asked between the read and the stream's start is replayed,
//! not missed. On `approval.requested` the script fetches the card, rendered here
//! (`GET /web/cards/{id}`), so a card looks the same however it arrived; on
//! `approval.decided`, `.expired` and `.cancelled` it removes it.

use crate::auth::Auth;
use crate::handlers::events;
use crate::web::error::WebError;
use crate::web::form::PageQuery;
use crate::web::layout::{self, risk_badge, shorten, time_left, People};
use crate::web::session::WebUser;
use crate::web::{ambiguous, decide};
use crate::AppState;
use airlock_policy::visible;
use airlock_protocol::{Approval, ApprovalStatus};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use jiff::Timestamp;
use maud::{html, Markup};
use serde::Deserialize;

/// The most cards the inbox shows on a page; a link leads to the older ones.
const INBOX_LIMIT: u32 = 200;

/// `?decided=<approval id>`: the decision just made, to confirm it; `?before=<approval
/// id>`: the page of the pending approvals older than that one.
#[derive(Debug, Default, Deserialize)]
pub struct InboxQuery {
    #[serde(default)]
    decided: Option<String>,
    #[serde(default)]
    before: Option<String>,
}

/// `GET /`.
pub async fn page(
    State(state): State<AppState>,
    user: WebUser,
    PageQuery(query): PageQuery<InboxQuery>,
) -> Result<Response, WebError> {
    let principal = &user.principal;
    // INVARIANT: the stream position is read before the approvals, so every change after
    // the read reaches the page over the stream (at worst twice; the script dedupes).
    let after = state.gate.last_event_id(principal).await?;
    let pending = state
        .gate
        .list_approvals(
            principal,
            Some(ApprovalStatus::Pending),
            INBOX_LIMIT,
            query.before.as_deref(),
        )
        .await?;
    let ambiguous = state.gate.ambiguous_calls(principal).await?;
    let people = People::load(&state, &user).await?;
    let decided = match &query.decided {
        Some(id) => state.gate.get_approval(principal, id).await.ok(),
        None => None,
    };
    let now = state.gate.now();
    let body = html! {
        // An older page takes no new arrivals: they belong on the first.
        section #inbox data-after=(after) data-older[query.before.is_some()] {
            div.inbox-head {
                h1 { "Inbox " span.count #count { (pending.len()) } }
                @if query.before.is_some() {
                    a.newest href="/" { "← Newest requests" }
                }
                span #live .live data-state="connecting" role="status" { "connecting…" }
            }
            @if let Some(approval) = &decided {
                (decided_notice(approval, &people))
            }
            @if user.may_decide() {
                p.keys { "Keys: " kbd { "j" } " / " kbd { "k" } " move · " kbd { "a" } " approve · "
                    kbd { "r" } " reject (type a reason, then Enter)" }
            } @else {
                p.notice.info { "You can see what waits for a decision; deciding needs the approver role." }
            }
            (ambiguous::section(&ambiguous, &people, &user))
            p.empty #empty hidden[!pending.is_empty()] {
                "Nothing is waiting for a decision. New requests appear here as they arrive."
            }
            div #cards {
                @for approval in &pending {
                    (card_markup(approval, &people, &user, now))
                }
            }
            @if let Some(last) = pending.last().filter(|_| pending.len() == INBOX_LIMIT as usize) {
                p.more {
                    "Showing " (INBOX_LIMIT) " requests. "
                    a #older href={ "/?before=" (last.id) } { "Older requests →" }
                }
            }
        }
    };
    Ok(layout::ok(layout::page("Inbox", Some((&user, "/")), body)))
}

/// `GET /web/cards/{id}`: one pending approval's card, for the page's script; 404 when
/// it is no longer pending.
pub async fn card(
    State(state): State<AppState>,
    user: WebUser,
    Path(id): Path<String>,
) -> Result<Response, WebError> {
    let approval = state.gate.get_approval(&user.principal, &id).await?;
    if approval.status != ApprovalStatus::Pending {
        return Err(WebError::NotFound(format!(
            "The approval is {}.",
            approval.status
        )));
    }
    let people = People::load(&state, &user).await?;
    Ok(layout::ok(card_markup(
        &approval,
        &people,
        &user,
        state.gate.now(),
    )))
}

/// `GET /web/events?after=N`: the workspace event stream of `GET /v1/events`, for a
/// browser signed in with a cookie (an `EventSource` cannot send a bearer token). Only
/// this read-only stream accepts the cookie; `after` stands in for `Last-Event-ID` on the
/// first connection, the header wins on reconnections.
pub async fn events(
    State(state): State<AppState>,
    user: WebUser,
    PageQuery(query): PageQuery<EventsQuery>,
    mut headers: HeaderMap,
) -> Response {
    if let (None, Some(after)) = (headers.get("last-event-id"), query.after) {
        headers.insert("last-event-id", HeaderValue::from(after));
    }
    match events::stream(State(state), Auth(user.principal), headers).await {
        Ok(stream) => stream.into_response(),
        Err(error) => error.into_response(),
    }
}

/// `?after=<event id>`.
#[derive(Debug, Default, Deserialize)]
pub struct EventsQuery {
    #[serde(default)]
    after: Option<u64>,
}

/// The longest preview body a card shows whole.
const CARD_BODY: usize = 280;

/// The longest arguments (as pretty JSON) a card shows whole.
const CARD_ARGUMENTS: usize = 600;

/// One approval as a card: its summary, its preview body and its arguments, hidden
/// characters written out as on its page.
///
/// INVARIANT: a card offers Approve only when it shows the whole call — every argument,
/// nothing cut (G2). A longer call is approved from its page; the card offers Reject and a
/// link there.
fn card_markup(approval: &Approval, people: &People, user: &WebUser, now: Timestamp) -> Markup {
    let agent = people.agent(&approval.agent_id);
    let body = approval
        .preview
        .body
        .as_deref()
        .map(visible::show_hidden_in_block);
    let arguments = visible::json_pretty_visible(&approval.preview.arguments);
    let whole = body
        .as_ref()
        .is_none_or(|body| body.chars().count() <= CARD_BODY)
        && arguments.chars().count() <= CARD_ARGUMENTS;
    let offer = if whole {
        decide::Offer::Everything
    } else {
        decide::Offer::RejectOnly
    };
    html! {
        article.card id=(format!("card-{}", approval.id)) data-approval-id=(approval.id)
            data-whole=(whole) tabindex="-1" {
            div.card-head {
                (risk_badge(approval.risk))
                span.tool { (visible::show_hidden(&approval.tool)) }
                span.agent { "by " strong { (agent) } }
                span.left data-deadline=(approval.deadline.to_string()) title="Time left to decide" {
                    (time_left(approval.deadline, now))
                }
            }
            h2.summary {
                a href=(format!("/approvals/{}", approval.id)) {
                    (visible::show_hidden(&approval.preview.summary))
                }
            }
            @if let Some(body) = &body {
                p.preview { (shorten(body, CARD_BODY)) }
            }
            pre.card-arguments aria-label="Arguments" { (shorten(&arguments, CARD_ARGUMENTS)) }
            @if !whole {
                p.notice.warn.cut {
                    "Too long to show here in full: "
                    a href=(format!("/approvals/{}", approval.id)) { "read all of it" }
                    " before approving."
                }
            }
            @if let Some(reason) = &approval.reason {
                p.why { "Asks because: " (reason) }
            }
            (layout::votes(approval, people))
            @if user.may_decide() {
                (decide::form(approval, agent, &user.csrf, offer))
            }
        }
    }
}

/// The confirmation of the decision just made.
fn decided_notice(approval: &Approval, people: &People) -> Markup {
    let by = approval
        .decided_by
        .as_deref()
        .map(|actor| people.actor(actor))
        .unwrap_or_default();
    let (class, verb) = match approval.status {
        ApprovalStatus::Approved => ("notice ok", "Approved"),
        ApprovalStatus::Rejected => ("notice warn", "Rejected"),
        ApprovalStatus::Expired => ("notice warn", "Expired"),
        ApprovalStatus::Cancelled => ("notice warn", "Cancelled"),
        ApprovalStatus::Pending if approval.approvals_required.is_some() => {
            ("notice ok", "Your vote is counted; still pending")
        }
        ApprovalStatus::Pending => ("notice info", "Still pending"),
    };
    html! {
        p class=(class) role="status" {
            (verb) ": " a href=(format!("/approvals/{}", approval.id)) { (visible::show_hidden(&approval.preview.summary)) }
            @if !by.is_empty() && approval.status != ApprovalStatus::Pending { " — by " (by) }
            @if let Some(reason) = &approval.decision_reason { " (" (reason) ")" }
        }
    }
}
