//! Standing rules (`GET /rules`): every "allow every time" people made, live ones first,
//! each live one with a revoke button (approvers and above; CSRF-checked) that goes
//! through the same `Gate::revoke_rule` as `DELETE /v1/rules/{id}`.

use crate::web::error::{see_other, WebError};
use crate::web::form::{PageQuery, Posted};
use crate::web::layout::{self, when, People};
use crate::web::session::WebUser;
use crate::AppState;
use airlock_protocol::{RuleScope, StandingRule};
use axum::extract::{Path, State};
use axum::response::Response;
use jiff::Timestamp;
use maud::{html, Markup};
use serde::Deserialize;

/// `?revoked=<rule id>`: the revocation just made, to confirm it.
#[derive(Debug, Default, Deserialize)]
pub struct RulesQuery {
    #[serde(default)]
    revoked: Option<String>,
}

/// `GET /rules`.
pub async fn page(
    State(state): State<AppState>,
    user: WebUser,
    PageQuery(query): PageQuery<RulesQuery>,
) -> Result<Response, WebError> {
    let mut rules = state.gate.list_rules(&user.principal).await?;
    let people = People::load(&state, &user).await?;
    let now = state.gate.now();
    // Live rules first; within each group the store's order (newest first) stays.
    rules.sort_by_key(|rule| !is_live(rule, now));
    let body = html! {
        section.rules {
            h1 { "Standing rules" }
            p.hint {
                "A standing rule lets one tool act on one target without asking again, in one "
                "session, for one agent or for one task. People make them with “Approve and "
                "remember”; revoking one makes the next such call ask again."
            }
            @if let Some(id) = &query.revoked {
                p.notice.ok role="status" { "Revoked " code { (id) } "." }
            }
            @if rules.is_empty() {
                p.empty { "No standing rules yet." }
            } @else {
                div.table-wrap {
                    table.records {
                        thead { tr { th { "Tool" } th { "Target" } th { "Scope" } th { "Made by" } th { "State" } th {} } }
                        tbody {
                            @for rule in &rules { (row(rule, &user, &people, now)) }
                        }
                    }
                }
            }
        }
    };
    Ok(layout::ok(layout::page(
        "Rules",
        Some((&user, "/rules")),
        body,
    )))
}

/// `POST /rules/{id}/revoke`.
pub async fn revoke(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Posted { user, .. }: Posted<serde::de::IgnoredAny>,
) -> Result<Response, WebError> {
    let rule = state.gate.revoke_rule(&user.principal, &id).await?;
    let target = serde_urlencoded::to_string([("revoked", rule.id.as_str())]).unwrap_or_default();
    Ok(see_other(&format!("/rules?{target}")))
}

fn is_live(rule: &StandingRule, now: Timestamp) -> bool {
    rule.revoked_at.is_none() && rule.expires_at.is_none_or(|expires| expires > now)
}

fn row(rule: &StandingRule, user: &WebUser, people: &People, now: Timestamp) -> Markup {
    let scope = match rule.scope {
        RuleScope::Session => html! {
            "session " a href=(format!("/sessions/{}", rule.scope_id)) { code { (rule.scope_id) } }
        },
        RuleScope::Agent => html! { "agent " strong { (people.agent(&rule.scope_id)) } },
        RuleScope::Task => html! { "task " code { (rule.scope_id) } },
    };
    let live = is_live(rule, now);
    html! {
        tr class=(if live { "rule-live" } else { "ended" }) {
            td { code { (rule.tool) } }
            td { code { (airlock_policy::visible::show_hidden(&rule.target)) } }
            td { (scope) }
            td { (people.actor(&rule.created_by)) br; small { (when(rule.created_at)) } }
            td {
                @if let Some(revoked) = rule.revoked_at {
                    "revoked " (when(revoked))
                } @else if let Some(expires) = rule.expires_at {
                    @if live { "live until " } @else { "expired " }
                    (when(expires))
                } @else {
                    "live"
                }
            }
            td {
                @if live && user.may_decide() {
                    form.inline method="post" action=(format!("/rules/{}/revoke", rule.id)) {
                        input type="hidden" name="csrf" value=(user.csrf);
                        button.reject.small type="submit" { "Revoke" }
                    }
                }
            }
        }
    }
}
