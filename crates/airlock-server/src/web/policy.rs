//! The policy in force (`GET /policy`): its version, digest, when it took effect, its
//! text, and the versions before it (`?version=N` shows an older one's text). Owners and
//! admins also get an edit form, which first shows what the change would do over the last
//! 7 days and only then saves (`policy_change.rs`).

use crate::web::error::WebError;
use crate::web::form::PageQuery;
use crate::web::layout::{self, shorten, when};
use crate::web::policy_change::{edit_form, may_change};
use crate::web::session::WebUser;
use crate::AppState;
use airlock_protocol::PolicyInfo;
use axum::extract::State;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

/// Versions listed in the history.
const HISTORY: u32 = 50;

/// `?version=N`: an older version to show.
#[derive(Debug, Default, Deserialize)]
pub struct PolicyQuery {
    #[serde(default)]
    version: Option<u64>,
}

/// `GET /policy`.
pub async fn page(
    State(state): State<AppState>,
    user: WebUser,
    PageQuery(query): PageQuery<PolicyQuery>,
) -> Result<Response, WebError> {
    // Both reads check the principal's role in the gate.
    let policy = state.gate.policy(&user.principal).await?;
    let history = state.gate.policy_history(&user.principal, HISTORY).await?;
    let shown = match query.version {
        None => &policy,
        Some(version) if version == policy.version => &policy,
        Some(version) => history
            .iter()
            .find(|old| old.version == version)
            .ok_or_else(|| {
                WebError::NotFound(format!(
                    "There is no policy version {version} among the last {HISTORY}."
                ))
            })?,
    };
    let in_force = shown.version == policy.version;
    let body = html! {
        section.policy {
            h1 { "Policy " small { "version " (shown.version) } }
            @if !in_force {
                p.notice.warn role="status" {
                    "This is version " (shown.version) ", no longer in force. "
                    a href="/policy" { "See the policy in force (version " (policy.version) ")" }
                }
            }
            dl.facts {
                dt { "Version" } dd #policy-version { (shown.version) }
                dt { "Digest" } dd { code.digest #policy-digest { (shown.digest) } }
                dt { @if in_force { "In force since" } @else { "Stored" } } dd { (when(shown.updated_at)) }
            }
            p.hint {
                "Pending approvals carry the digest of the policy they were asked under; when "
                "the policy changes they are cancelled, and the agent is told. Replace the policy with "
                code { "PUT /v1/policy" } " (owners and admins)."
            }
            pre.block.source { (shown.source) }
            @if in_force && may_change(&user) {
                (edit_form(&shown.source, &user.csrf))
            }
            (versions(&history, shown.version, policy.version))
        }
    };
    Ok(layout::ok(layout::page(
        "Policy",
        Some((&user, "/policy")),
        body,
    )))
}

/// The version history, newest first, the shown one marked.
fn versions(history: &[PolicyInfo], shown: u64, in_force: u64) -> Markup {
    html! {
        section.history {
            h2 { "Version history" }
            ol.versions #policy-history {
                @for version in history {
                    li data-version=(version.version) {
                        @if version.version == shown {
                            strong { "version " (version.version) }
                        } @else {
                            a href=(format!("/policy?version={}", version.version)) {
                                "version " (version.version)
                            }
                        }
                        " " code.digest title=(version.digest) { (shorten(&version.digest, 13)) }
                        " " (when(version.updated_at))
                        @if version.version == in_force { " " span.badge.status-approved { "in force" } }
                    }
                }
            }
            @if history.len() == HISTORY as usize {
                p.more { "Showing the newest " (HISTORY) " versions." }
            }
        }
    }
}
