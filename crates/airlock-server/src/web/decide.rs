//! Deciding from the web: the decision form every card and approval page carries, and
//! `POST /approvals/{id}/decision`.
//!
//! The form carries the binding digest the page showed. The handler turns it into the
//! same [`DecisionRequest`] as `POST /v1/approvals/{id}/decision` and calls the same
//! [`airlock_gate::Gate::decide`], so the role check, binding and policy digests, "decide
//! once", deadline and audit are exactly the API's. A stale page — the approval decided,
//! expired or cancelled meanwhile, the policy changed, the call not the one shown — gets
//! a 409 page that says which, and nothing changes.
//!
//! The approval page also offers "approve with edits" (`edit_form`): the same decision
//! with `arguments`, judged by the gate exactly as the API's.
//!
//! In the form, the reason field and Reject come before Approve: pressing Enter in the
//! reason submits the first button, and someone who typed a reason means to reject.

use crate::web::error::{see_other, WebError};
use crate::web::form::{filled, Posted};
use crate::web::layout::{self, People};
use crate::web::session::WebUser;
use crate::AppState;
use airlock_gate::decide::{DecisionRequest, ExpiresIn, Remember, Verdict};
use airlock_gate::GateError;
use airlock_policy::visible;
use airlock_protocol::{Approval, ApprovalStatus, RuleScope};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

/// The expiries offered for "approve and remember": (value, label).
const REMEMBER_FOR: &[(&str, &str)] = &[
    ("", "until revoked"),
    ("1h", "for 1 hour"),
    ("1d", "for 1 day"),
    ("7d", "for 7 days"),
    ("30d", "for 30 days"),
];

/// What redaction leaves where a secret was (`[REDACTED:<kind>]`).
const REDACTED: &str = "[REDACTED:";

/// The fields of the decision form.
#[derive(Debug, Deserialize)]
pub struct DecisionForm {
    /// `approve`, `reject` or `remember` (approve and mint a standing rule).
    decision: String,
    binding_digest: String,
    #[serde(default)]
    reason: Option<String>,
    /// `session` or `agent`, with `remember`.
    #[serde(default)]
    scope: Option<String>,
    /// `1h`, `7d`…; empty for a rule that does not expire.
    #[serde(default)]
    expires_in: Option<String>,
    /// With `edit`: the whole arguments object to run instead of the asked one (JSON).
    #[serde(default)]
    arguments: Option<String>,
}

/// "Approve with edits" (DESIGN.md §11.6): the asked arguments as JSON to change, the
/// change shown as it is typed (by the page's script), and one button that approves the
/// edited call. Not offered where each of several people approves the call as asked, nor
/// for arguments that hold a redacted secret.
pub fn edit_form(approval: &Approval, csrf: &str) -> Markup {
    if approval.approvals_required.is_some() {
        return html! {};
    }
    // Invisible and reordering characters as JSON escapes: shown, and the same value.
    let asked = visible::json_pretty_visible(&approval.preview.arguments);
    // The gate refuses any edit that keeps a placeholder of a redacted secret (it never
    // kept the secret), so such a call is not offered for editing.
    if asked.contains(REDACTED) {
        return html! {
            p.hint #no-edit { "Its arguments hold redacted secrets, so it cannot be approved with edits." }
        };
    }
    html! {
        details.edit #edit {
            summary { "Approve with edits…" }
            form.edit-form method="post" action=(format!("/approvals/{}/decision", approval.id)) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="binding_digest" value=(approval.binding_digest);
                label for="edit-arguments" {
                    "The arguments to run (JSON); the policy judges the edit, and the grant binds to exactly it."
                }
                textarea #edit-arguments name="arguments" rows="10" spellcheck="false"
                    data-original=(asked) { (asked) }
                div #edit-diff .edit-diff aria-live="polite" { "No change yet." }
                div.decide-row {
                    input.reason type="text" name="reason" maxlength="2000" autocomplete="off"
                        placeholder="Reason (recorded)" aria-label="Reason for the edit";
                    button.approve type="submit" name="decision" value="edit" {
                        "Approve with these arguments"
                    }
                }
            }
        }
    }
}

/// What a decision form offers, by how much of the call the page around it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Approve, reject, approve and remember: the page shows the whole call.
    Everything,
    /// Reject, and a link to the approval's page to approve: the page shows only part of
    /// the call (an inbox card of a long one), and what is approved must have been shown
    /// whole (G2).
    RejectOnly,
}

/// The decision form of a pending approval (for users who may decide).
pub fn form(approval: &Approval, agent: &str, csrf: &str, offer: Offer) -> Markup {
    html! {
        form.decide method="post" action=(format!("/approvals/{}/decision", approval.id)) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="binding_digest" value=(approval.binding_digest);
            div.decide-row {
                input.reason type="text" name="reason" maxlength="2000" autocomplete="off"
                    placeholder="Reason (the agent is told)" aria-label="Reason";
                button.reject type="submit" name="decision" value="reject" { "Reject" }
                @match offer {
                    Offer::Everything => {
                        button.approve type="submit" name="decision" value="approve" { "Approve" }
                    }
                    Offer::RejectOnly => {
                        a.read-all href=(format!("/approvals/{}", approval.id)) {
                            "Read it all to approve"
                        }
                    }
                }
            }
            // A standing rule would let one person allow what the rule gives to several
            // (the gate refuses it): not offered under the two-person rule.
            @if let (Some(target), Offer::Everything, None) =
                (&approval.standing_target, offer, approval.approvals_required)
            {
                details.remember {
                    summary { "Approve and remember…" }
                    div.remember-row {
                        p {
                            "Allow " code { (visible::show_hidden(&approval.tool)) }
                            " on " code { (visible::show_hidden(target)) }
                            " without asking again:"
                        }
                        label {
                            "in "
                            select name="scope" {
                                @if approval.session_id.is_some() {
                                    option value="session" selected { "this session" }
                                }
                                option value="agent" { "every session of " (agent) }
                            }
                        }
                        label {
                            select name="expires_in" {
                                @for (value, label) in REMEMBER_FOR {
                                    option value=(value) { (label) }
                                }
                            }
                        }
                        button.approve type="submit" name="decision" value="remember" {
                            "Approve and remember"
                        }
                    }
                }
            }
        }
    }
}

/// `POST /approvals/{id}/decision`.
pub async fn decide(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Posted { user, form }: Posted<DecisionForm>,
) -> Result<Response, WebError> {
    let edited = match (form.decision.as_str(), filled(form.arguments)) {
        ("edit", Some(text)) => Some(serde_json::from_str::<serde_json::Value>(&text).map_err(
            |error| WebError::BadRequest(format!("the edited arguments are not JSON: {error}")),
        )?),
        ("edit", None) => {
            return Err(WebError::BadRequest(
                "an approval with edits needs the arguments to run".into(),
            ))
        }
        _ => None,
    };
    let (decision, remember) = match form.decision.as_str() {
        "approve" | "edit" => (Verdict::Approve, None),
        "reject" => (Verdict::Reject, None),
        "remember" => {
            let scope = match filled(form.scope).as_deref() {
                Some("session") | None => RuleScope::Session,
                Some("agent") => RuleScope::Agent,
                Some(other) => {
                    return Err(WebError::BadRequest(format!(
                        "a rule is remembered for a session or an agent, not `{other}`"
                    )))
                }
            };
            let expires_in = filled(form.expires_in).map(ExpiresIn::Text);
            (Verdict::Approve, Some(Remember { scope, expires_in }))
        }
        other => {
            return Err(WebError::BadRequest(format!(
                "the decision is approve or reject, not `{other}`"
            )))
        }
    };
    let request = DecisionRequest {
        decision,
        binding_digest: form.binding_digest,
        reason: filled(form.reason),
        remember,
        arguments: edited,
    };
    match state.gate.decide(&user.principal, &id, request).await {
        Ok(approval) => {
            crate::telemetry::decided(&state, &approval).await;
            Ok(see_other(&format!("/?decided={}", approval.id)))
        }
        Err(error) => refused(&state, &user, &id, error).await,
    }
}

/// The page of a decision the gate refused because the page was stale.
async fn refused(
    state: &AppState,
    user: &WebUser,
    id: &str,
    error: GateError,
) -> Result<Response, WebError> {
    if !matches!(
        error,
        GateError::AlreadyDecided(_)
            | GateError::Expired
            | GateError::StalePolicy
            | GateError::BindingMismatch
            | GateError::AlreadyVoted
    ) {
        return Err(error.into());
    }
    // The approval as it is now says who got there first.
    let approval = state.gate.get_approval(&user.principal, id).await?;
    let people = People::load(state, user).await?;
    let message = explain(&error, &approval, &people);
    let body = html! {
        section.panel.refusal #refusal {
            h1 { "Nothing was changed" }
            p.message { (message) }
            p.links {
                a href="/" { "Back to the inbox" }
                " · "
                a href=(format!("/approvals/{}", approval.id)) { "See the approval" }
            }
        }
    };
    Ok(layout::respond(
        StatusCode::CONFLICT,
        layout::page("Decision refused", Some((user, "/")), body),
    ))
}

/// Why a stale page's decision was refused, in words.
fn explain(error: &GateError, approval: &Approval, people: &People) -> String {
    let by = approval
        .decided_by
        .as_deref()
        .map(|actor| people.actor(actor))
        .unwrap_or_else(|| "someone".into());
    let at = approval
        .decided_at
        .map(|at| format!(" at {}", at.strftime("%Y-%m-%d %H:%M:%S UTC")))
        .unwrap_or_default();
    let reason = approval
        .decision_reason
        .as_deref()
        .map(|reason| format!(" (“{reason}”)"))
        .unwrap_or_default();
    match (error, approval.status) {
        (GateError::AlreadyVoted, _) => "You already voted on this approval: it needs \
            another person's vote, and a second one of yours does not count. Nothing was \
            changed."
            .to_owned(),
        (GateError::Expired, _) | (_, ApprovalStatus::Expired) => format!(
            "This approval expired: its deadline, {}, passed before your decision arrived, \
             and the agent was told so. Your decision was not recorded.",
            approval.deadline.strftime("%Y-%m-%d %H:%M:%S UTC")
        ),
        (GateError::StalePolicy, _) => "The policy changed while this approval was pending, \
            so it can no longer be decided; the agent was told. Your decision was not recorded."
            .to_owned(),
        (_, ApprovalStatus::Approved) => format!(
            "This approval was already approved by {by}{at}{reason}. The first decision \
             counts; yours was not recorded."
        ),
        (_, ApprovalStatus::Rejected) => format!(
            "This approval was already rejected by {by}{at}{reason}. The first decision \
             counts; yours was not recorded."
        ),
        (_, ApprovalStatus::Cancelled) => format!(
            "This approval was cancelled{at}{reason} and can no longer be decided. Your \
             decision was not recorded."
        ),
        (GateError::BindingMismatch, _) | (_, ApprovalStatus::Pending) => format!(
            "The page you decided from does not match this approval any more (its binding \
             digest is {}). Open the approval again, check what it asks, then decide.",
            approval.binding_digest
        ),
    }
}
