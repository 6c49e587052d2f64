//! One approval (`GET /approvals/{id}`): everything a person needs to decide it.
//!
//! The full redacted arguments, pretty-printed; for edit-style tools the written content
//! as a block and a line diff of `old_string` → `new_string`; the rule that asked and why;
//! the last messages of the agent's session; the binding digest the decision will carry;
//! and the decision form. The page's script shows a banner when the approval is decided
//! elsewhere meanwhile — the form stays, and the gate refuses a click on it.

use crate::web::diff::{self, Line};
use crate::web::error::WebError;
use crate::web::layout::{self, risk_badge, shorten, status_badge, time_left, when, People};
use crate::web::session::WebUser;
use crate::web::{decide, turn};
use crate::AppState;
use airlock_policy::visible;
use airlock_protocol::{Approval, ApprovalStatus, Message};
use axum::extract::{Path, State};
use axum::response::Response;
use maud::{html, Markup};
use serde_json::Value;

/// Messages of the session shown for context.
const CONTEXT_MESSAGES: usize = 8;

/// `GET /approvals/{id}`.
pub async fn page(
    State(state): State<AppState>,
    user: WebUser,
    Path(id): Path<String>,
) -> Result<Response, WebError> {
    let principal = &user.principal;
    let after = state.gate.last_event_id(principal).await?;
    let approval = state.gate.get_approval(principal, &id).await?;
    let people = People::load(&state, &user).await?;
    let messages = match &approval.session_id {
        Some(session_id) => match state.runtime.messages(principal, session_id).await {
            Ok((_, messages)) => messages,
            Err(error) => {
                tracing::debug!(%error, "no session context for the approval page");
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    let now = state.gate.now();
    let agent = people.agent(&approval.agent_id);
    let pending = approval.status == ApprovalStatus::Pending;
    let turn_form = if pending && user.may_decide() {
        turn::form(&state, &user, &approval).await
    } else {
        maud::html! {}
    };
    let arguments = &approval.preview.arguments;
    let body = html! {
        article #approval .approval data-approval-id=(approval.id) data-after=(after) {
            div #live-banner .notice.warn hidden role="alert" {}
            div.card-head {
                (risk_badge(approval.risk))
                (status_badge(approval.status))
                span.tool { (visible::show_hidden(&approval.tool)) }
                span.agent { "by " strong { (agent) } }
                @if pending {
                    span.left data-deadline=(approval.deadline.to_string()) {
                        (time_left(approval.deadline, now))
                    }
                }
            }
            h1.summary { (visible::show_hidden(&approval.preview.summary)) }
            (outcome(&approval, &people))
            (layout::votes(&approval, &people))
            @if pending {
                @if user.may_decide() {
                    section.panel {
                        (decide::form(&approval, agent, &user.csrf, decide::Offer::Everything))
                        (decide::edit_form(&approval, &user.csrf))
                        (turn_form)
                    }
                } @else {
                    p.notice.info { "You can see this approval; deciding needs the approver role." }
                }
            }
            section {
                h2 { "Why it asks" }
                dl.facts {
                    dt { "Rule" }
                    dd { (approval.rule.as_deref().unwrap_or("none matched: the policy's default")) }
                    @if let Some(reason) = &approval.reason {
                        dt { "Reason" } dd { (reason) }
                    }
                    dt { "Asked" } dd { (when(approval.created_at)) }
                    dt { "Deadline" } dd { (when(approval.deadline)) }
                    @if let Some(session_id) = &approval.session_id {
                        dt { "Session" }
                        dd { a href=(format!("/sessions/{session_id}")) { code { (session_id) } } }
                    }
                }
            }
            @if let Some(body) = &approval.preview.body {
                section { h2 { "Preview" } pre.block { (visible::show_hidden_in_block(body)) } }
            }
            (changes(arguments))
            section {
                h2 { "Arguments" small { " (secrets redacted)" } }
                pre.block.json { (pretty(arguments)) }
            }
            section {
                h2 { "What the decision is bound to" }
                dl.facts {
                    dt { "Binding digest" } dd { code.digest #binding-digest { (approval.binding_digest) } }
                    dt { "Policy digest" } dd { code.digest { (approval.policy_digest) } }
                    @if let Some(target) = &approval.standing_target {
                        dt { "Standing-rule target" } dd { code { (visible::show_hidden(target)) } }
                    }
                }
                p.hint { "A decision carries the binding digest shown here; if the call is not exactly this one, it is refused." }
            }
            @if !messages.is_empty() {
                (context(&messages))
            }
        }
    };
    let title = shorten(&visible::show_hidden(&approval.preview.summary), 60);
    Ok(layout::ok(layout::page(&title, Some((&user, "/")), body)))
}

/// Who decided, when and why, once it is no longer pending.
fn outcome(approval: &Approval, people: &People) -> Markup {
    let Some(decided_at) = approval.decided_at else {
        return html! {};
    };
    let by = approval
        .decided_by
        .as_deref()
        .map(|actor| people.actor(actor))
        .unwrap_or_default();
    html! {
        p.notice.info.outcome {
            (approval.status.as_str()) " by " (by) " at " (when(decided_at))
            @if let Some(reason) = &approval.decision_reason { " — “" (reason) "”" }
        }
    }
}

/// What an edit-style call writes: the content, and the diff of a replacement. Hidden and
/// reordering characters are written out here as in the arguments (G2): this is the part
/// of an edit a person reads, so it must not read differently from what runs.
fn changes(arguments: &Value) -> Markup {
    let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    let path = text(arguments, "path")
        .or_else(|| text(arguments, "file_path"))
        .or_else(|| text(arguments, "filename"));
    let mut replacements: Vec<(String, String)> = Vec::new();
    if let (Some(old), Some(new)) = (text(arguments, "old_string"), text(arguments, "new_string")) {
        replacements.push((old, new));
    }
    if let Some(edits) = arguments.get("edits").and_then(Value::as_array) {
        for edit in edits {
            if let (Some(old), Some(new)) = (text(edit, "old_string"), text(edit, "new_string")) {
                replacements.push((old, new));
            }
        }
    }
    let content = text(arguments, "content");
    if replacements.is_empty() && content.is_none() {
        return html! {};
    }
    html! {
        section.changes {
            h2 {
                "Changes"
                @if let Some(path) = &path { " to " code { (visible::show_hidden(path)) } }
            }
            @for (old, new) in &replacements {
                div.diff role="table" aria-label="Line diff" {
                    @for line in diff::lines(old, new) {
                        @match line {
                            Line::Kept(text) => div.kept { span.sign { " " } span { (visible::show_hidden_in_block(text)) } },
                            Line::Removed(text) => div.removed { span.sign { "−" } span { (visible::show_hidden_in_block(text)) } },
                            Line::Added(text) => div.added { span.sign { "+" } span { (visible::show_hidden_in_block(text)) } },
                        }
                    }
                }
            }
            @if let Some(content) = &content {
                h3 { "Content written" }
                pre.block.content { (visible::show_hidden_in_block(content)) }
            }
        }
    }
}

/// The last messages of the agent's session.
fn context(messages: &[Message]) -> Markup {
    let start = messages.len().saturating_sub(CONTEXT_MESSAGES);
    html! {
        section.context {
            h2 { "Session context" small { " (last " (messages.len() - start) " messages)" } }
            ol.messages {
                @for message in &messages[start..] {
                    li class=(format!("message role-{}", message.role)) {
                        span.role { (message.role) }
                        @if let Some(text) = &message.text {
                            span.text { (shorten(text, 600)) }
                        }
                        @for call in &message.tool_calls {
                            span.tool-call {
                                "calls " code { (call.get("tool").and_then(Value::as_str).unwrap_or("a tool")) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The exact arguments: invisible and reordering characters as JSON escapes (G2).
fn pretty(value: &Value) -> String {
    visible::json_pretty_visible(value)
}
