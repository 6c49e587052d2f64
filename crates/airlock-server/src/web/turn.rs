//! "Approve all of this turn" (DESIGN.md §11.6): where an approval is one of several
//! pending calls of the same model turn, its page offers one form listing them all, each
//! with its arguments and a checkbox (checked when the arguments are shown whole;
//! unchecking one leaves it pending), posted to `POST
//! /turns/decision`, which decides the checked ones through the gate's batch call (the
//! same as `POST /v1/approvals/decisions`) and shows each one's outcome.
//!
//! Which calls make a turn: approvals do not record their model turn. A run's leg puts
//! every call of the model's turn to the gate, then suspends until none is pending, and
//! only then asks the model again; so the pending approvals of one run are always calls of
//! its current turn. The form lists exactly those (`Gate::run_approvals`).
//!
//! Without JavaScript the form works as is: a plain POST with the session's CSRF token.
//! Each checkbox carries the approval's id and the binding digest the page showed, so a
//! call that changed meanwhile is refused alone and the others are still decided.

use crate::error::ApiError;
use crate::web::error::WebError;
use crate::web::form::{filled, Posted};
use crate::web::layout::{self, status_badge};
use crate::web::session::WebUser;
use crate::AppState;
use airlock_gate::GateError;
use airlock_policy::visible;
use airlock_protocol::{Approval, ApprovalStatus, BatchItem, DecisionVerdict};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};

/// The most calls listed in one turn's form.
const MAX_TURN: u32 = 100;

/// The longest arguments (as pretty JSON) the form shows whole: a longer call is listed
/// unchecked, to be read on its page first.
const TURN_ARGUMENTS: usize = 2000;

/// The turn form for `approval`'s page, or nothing when it has no pending sibling (or is
/// no run's call). Only for users who may decide.
pub async fn form(state: &AppState, user: &WebUser, approval: &Approval) -> Markup {
    let siblings = match siblings(state, user, approval).await {
        Ok(siblings) => siblings,
        Err(error) => {
            // The page stays useful without the turn form.
            tracing::debug!(%error, approval = %approval.id, "no turn form");
            return html! {};
        }
    };
    if siblings.len() < 2 {
        return html! {};
    }
    html! {
        details.turn #turn open {
            summary { "Approve all of this turn (" (siblings.len()) " calls)" }
            form.turn-form method="post" action="/turns/decision" {
                input type="hidden" name="csrf" value=(user.csrf);
                p.hint { "The model asked for these calls together; each is shown with its arguments. Uncheck any to leave it pending." }
                ul.turn-items {
                    @for sibling in &siblings {
                        // INVARIANT: a call is checked only when its arguments are shown
                        // here whole, hidden characters written out (G2).
                        @let arguments = visible::json_pretty_visible(&sibling.preview.arguments);
                        @let whole = arguments.chars().count() <= TURN_ARGUMENTS;
                        li data-approval-id=(sibling.id) {
                            label {
                                input type="checkbox" name="item" checked[whole]
                                    value=(format!("{} {}", sibling.id, sibling.binding_digest));
                                " "
                                (layout::risk_badge(sibling.risk))
                                " "
                                strong { (visible::show_hidden(&sibling.preview.summary)) }
                                @if sibling.id == approval.id { " (this one)" }
                            }
                            " "
                            a href=(format!("/approvals/{}", sibling.id)) { "details" }
                            pre.card-arguments aria-label="Arguments" {
                                (layout::shorten(&arguments, TURN_ARGUMENTS))
                            }
                            @if !whole {
                                p.hint { "Too long to show here in full, so not checked: read it on its page first." }
                            }
                        }
                    }
                }
                div.decide-row {
                    input.reason type="text" name="reason" maxlength="2000" autocomplete="off"
                        placeholder="Reason (recorded)" aria-label="Reason for the turn";
                    button.approve type="submit" name="decision" value="approve" {
                        "Approve the checked calls"
                    }
                }
            }
        }
    }
}

/// The pending approvals of the run `approval`'s call belongs to, oldest first.
async fn siblings(
    state: &AppState,
    user: &WebUser,
    approval: &Approval,
) -> Result<Vec<Approval>, GateError> {
    let principal = &user.principal;
    let run = state
        .gate
        .runs()
        .run_of_call(&principal.workspace, &approval.call_id)
        .await
        .map_err(GateError::from)?;
    let Some(run_id) = run else {
        return Ok(Vec::new());
    };
    let mut pending = state
        .gate
        .run_approvals(
            principal,
            &run_id,
            Some(ApprovalStatus::Pending),
            MAX_TURN,
            None,
        )
        .await?;
    pending.reverse();
    Ok(pending)
}

/// `POST /turns/decision`: `item` (repeated: `ID DIGEST`), `reason`, `decision`.
pub async fn decide(
    State(state): State<AppState>,
    Posted { user, form }: Posted<Vec<(String, String)>>,
) -> Result<Response, WebError> {
    let mut reason = None;
    let mut items = Vec::new();
    for (name, value) in form {
        match name.as_str() {
            "item" => {
                let (id, digest) = value.split_once(' ').ok_or_else(|| {
                    WebError::BadRequest(format!("`{value}` is not an approval and its digest"))
                })?;
                items.push((id.to_owned(), digest.to_owned()));
            }
            "reason" => reason = filled(Some(value)),
            "decision" if value == "approve" => {}
            "decision" => {
                return Err(WebError::BadRequest(format!(
                    "a turn is approved here, not `{value}`"
                )))
            }
            _ => {}
        }
    }
    if items.is_empty() {
        return Err(WebError::BadRequest(
            "no call was checked: check the calls to approve".into(),
        ));
    }
    let batch = items
        .into_iter()
        .map(|(id, binding_digest)| BatchItem {
            id,
            binding_digest,
            decision: DecisionVerdict::Approve,
            reason: reason.clone(),
            arguments: None,
        })
        .collect();
    let outcomes = state.gate.decide_batch(&user.principal, batch).await?;
    let mut decided = 0;
    let mut rows = Vec::with_capacity(outcomes.len());
    for (id, outcome) in outcomes {
        match outcome {
            Ok(approval) => {
                crate::telemetry::decided(&state, &approval).await;
                decided += 1;
                rows.push(html! {
                    li.turn-result.ok data-approval-id=(id) {
                        (status_badge(approval.status)) " "
                        a href=(format!("/approvals/{id}")) { (visible::show_hidden(&approval.preview.summary)) }
                    }
                });
            }
            Err(error) => {
                let problem = ApiError::from(error).problem();
                rows.push(html! {
                    li.turn-result.refused data-approval-id=(id) data-problem=(problem.kind) {
                        strong { (problem.title) } ": " (problem.detail) " "
                        a href=(format!("/approvals/{id}")) { "see it" }
                    }
                });
            }
        }
    }
    let total = rows.len();
    let body = html! {
        section.panel #turn-results {
            h1 { "Decided " (decided) " of " (total) }
            p { "Each call stands alone: one that could not be decided changed nothing else." }
            ul.turn-results { @for row in rows { (row) } }
            p.links { a href="/" { "Back to the inbox" } }
        }
    };
    Ok(layout::respond(
        StatusCode::OK,
        layout::page("Turn decided", Some((&user, "/")), body),
    ))
}
