//! Changing the policy from the web (DESIGN.md §11.5): the policy page's edit form posts to
//! `POST /policy/preview`, which shows what the new text would change over the calls of
//! the last 7 days (the same gate replay as `PUT /v1/policy?dry_run=true`) and only then
//! offers the save button, `POST /policy/save` (the same gate call as `PUT /v1/policy`).
//!
//! Both go through the gate as the signed-in user, so only owners and admins get past
//! them; a text that does not load is shown with its errors and nothing is saved.

use crate::web::error::{see_other, WebError};
use crate::web::form::Posted;
use crate::web::layout;
use crate::web::session::WebUser;
use crate::AppState;
use airlock_gate::GateError;
use airlock_protocol::{ReplayReport, Role};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

/// How far back the preview replays.
const PREVIEW_DAYS: i64 = 7;

/// The edit form's one field.
#[derive(Debug, Deserialize)]
pub struct SourceForm {
    source: String,
}

impl SourceForm {
    /// The text as typed: browsers send a textarea's line breaks as CRLF.
    fn text(&self) -> String {
        self.source.replace("\r\n", "\n")
    }
}

/// Whether the user may change the policy (the gate checks again on every post).
pub fn may_change(user: &WebUser) -> bool {
    user.name_and_role().1 >= Role::Admin
}

/// The edit form of the policy page, holding `source`.
pub fn edit_form(source: &str, csrf: &str) -> Markup {
    html! {
        form.policy-edit method="post" action="/policy/preview" {
            input type="hidden" name="csrf" value=(csrf);
            label for="policy-source" { "Change the policy" }
            // HTML drops one newline right after `<textarea>`: this one, so a text that
            // starts with a newline keeps it.
            textarea #policy-source name="source" rows="18" spellcheck="false" { "\n" (source) }
            button type="submit" #policy-preview { "See what would change" }
        }
    }
}

/// `POST /policy/preview`: the replay report of the posted text, and the save button.
pub async fn preview(
    State(state): State<AppState>,
    Posted { user, form }: Posted<SourceForm>,
) -> Result<Response, WebError> {
    let source = form.text();
    let now = state.gate.now();
    let since = now
        .checked_sub(jiff::SignedDuration::from_hours(24 * PREVIEW_DAYS))
        .unwrap_or(jiff::Timestamp::MIN);
    match state
        .gate
        .replay_policy(&user.principal, &source, Some(since))
        .await
    {
        Ok(report) => Ok(layout::ok(layout::page(
            "Policy change",
            Some((&user, "/policy")),
            preview_body(&source, &report, &user.csrf),
        ))),
        Err(GateError::PolicyInvalid(errors)) => Ok(invalid(&user, &source, &errors)),
        Err(error) => Err(error.into()),
    }
}

/// `POST /policy/save`: replaces the policy, then back to the policy page.
pub async fn save(
    State(state): State<AppState>,
    Posted { user, form }: Posted<SourceForm>,
) -> Result<Response, WebError> {
    let source = form.text();
    match state.gate.put_policy(&user.principal, &source).await {
        Ok(_) => Ok(see_other("/policy")),
        Err(GateError::PolicyInvalid(errors)) => Ok(invalid(&user, &source, &errors)),
        Err(error) => Err(error.into()),
    }
}

/// A text that does not load: its errors, the form again, nothing saved.
fn invalid(user: &WebUser, source: &str, errors: &airlock_policy::LoadErrors) -> Response {
    let body = html! {
        section.policy {
            h1 { "Policy change" }
            p.notice.warn role="alert" #policy-errors {
                "The policy does not load; nothing was saved."
            }
            ul.errors {
                @for error in &errors.0 {
                    li { code { (error.line) ":" (error.column) } " " (error.message) }
                }
            }
            (edit_form(source, &user.csrf))
        }
    };
    layout::respond(
        StatusCode::UNPROCESSABLE_ENTITY,
        layout::page("Policy change", Some((user, "/policy")), body),
    )
}

fn preview_body(source: &str, report: &ReplayReport, csrf: &str) -> Markup {
    html! {
        section.policy #policy-replay {
            h1 { "What would change over the last " (PREVIEW_DAYS) " days" }
            p #replay-summary {
                (report.calls) " recorded " (if report.calls == 1 { "call" } else { "calls" }) " replayed: "
                strong #replay-changed { (report.changed) } " would change, "
                strong #replay-loosened { (report.toward_allow) } " of them toward allow. "
                "Prompts per 100 calls: " (format!("{:.2}", report.prompts_per_100_before))
                " now, " (format!("{:.2}", report.prompts_per_100_after)) " after."
            }
            @if report.toward_allow > 0 {
                p.notice.warn role="status" {
                    "This change lets through calls that were asked about or denied. Read them before saving."
                }
            }
            @if !report.transitions.is_empty() {
                table.transitions {
                    thead { tr { th { "From" } th { "To" } th { "Calls" } } }
                    tbody {
                        @for t in &report.transitions {
                            tr { td { (t.from.as_str()) } td { (t.to.as_str()) } td { (t.count) } }
                        }
                    }
                }
            }
            @if !report.changes.is_empty() {
                div.table-wrap { table.changes #replay-changes {
                    thead { tr { th { "Call" } th { "Tool" } th { "Change" } th { "Decided by" } } }
                    tbody {
                        @for change in &report.changes {
                            tr data-call=(change.id) {
                                td { code { (change.id) } }
                                td { (change.tool) }
                                td { (change.from.as_str()) " → " (change.to.as_str()) }
                                td { (change.rule_after.as_deref().unwrap_or("the policy default")) }
                            }
                        }
                    }
                } }
                @if report.truncated { p.more { "Only the first " (report.changes.len()) " are listed." } }
            }
            form.policy-save method="post" action="/policy/save" {
                input type="hidden" name="csrf" value=(csrf);
                textarea hidden name="source" { "\n" (source) }
                button type="submit" #policy-save { "Save this policy" }
                " "
                a href="/policy" { "Cancel" }
            }
        }
    }
}
