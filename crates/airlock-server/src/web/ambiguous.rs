//! Ambiguous calls in the inbox (DESIGN.md §11.8): calls that were approved and redeemed
//! but whose outcome nobody reported within the policy's `outcome_timeout`. Each shows
//! with two buttons, "It ran" and "It did not run" (approvers and above; CSRF-checked),
//! which go through the same `Gate::reconcile` as `POST /v1/calls/{id}/reconcile`.

use crate::web::error::{see_other, WebError};
use crate::web::form::{filled, Posted};
use crate::web::layout::{when, People};
use crate::web::session::WebUser;
use crate::AppState;
use airlock_policy::visible;
use airlock_protocol::{Call, ReconcileRequest, Resolution};
use axum::extract::{Path, State};
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

/// The fields of the reconcile form.
#[derive(Debug, Deserialize)]
pub struct ReconcileForm {
    /// `ran` or `did_not_run`.
    resolution: String,
    #[serde(default)]
    reason: Option<String>,
}

/// The inbox's section of ambiguous calls; nothing when there are none.
pub fn section(calls: &[Call], people: &People, user: &WebUser) -> Markup {
    html! {
        @if !calls.is_empty() {
            section #ambiguous .ambiguous {
                h2 { "Ambiguous calls " span.count { (calls.len()) } }
                p.hint {
                    "Approved and redeemed, but the agent never said whether they ran. Check, "
                    "then say what happened: “did not run” lets the agent's next identical "
                    "call be asked afresh."
                }
                @for call in calls {
                    article.card.ambiguous-call id=(format!("ambiguous-{}", call.id)) {
                        div.card-head {
                            span.tool { (visible::show_hidden(&call.tool)) }
                            span.agent { "by " strong { (people.agent(&call.agent_id)) } }
                            @if let Some(at) = call.redeemed_at {
                                span.left { "redeemed " (when(at)) }
                            }
                        }
                        // Hidden and reordering characters written out, as on an approval's page.
                        pre.arguments { (visible::json_pretty_visible(&call.arguments)) }
                        @if user.may_decide() {
                            form.decide method="post" action=(format!("/calls/{}/reconcile", call.id)) {
                                input type="hidden" name="csrf" value=(user.csrf);
                                div.decide-row {
                                    input.reason type="text" name="reason" maxlength="2000"
                                        autocomplete="off" placeholder="What you found" aria-label="Reason";
                                    button.reject type="submit" name="resolution" value="did_not_run" { "It did not run" }
                                    button.approve type="submit" name="resolution" value="ran" { "It ran" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `POST /calls/{id}/reconcile`.
pub async fn reconcile(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Posted { user, form }: Posted<ReconcileForm>,
) -> Result<Response, WebError> {
    let resolution: Resolution = form.resolution.parse().map_err(WebError::BadRequest)?;
    let request = ReconcileRequest {
        resolution,
        reason: filled(form.reason),
    };
    state.gate.reconcile(&user.principal, &id, &request).await?;
    Ok(see_other("/"))
}
