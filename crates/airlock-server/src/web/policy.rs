//! The policy in force (`GET /policy`): its version, digest, when it took effect, and its
//! text. Changing it stays an API and CLI operation (`PUT /v1/policy`), which checks and
//! reports errors by line and column.

use crate::web::error::WebError;
use crate::web::layout::{self, when};
use crate::web::session::WebUser;
use crate::AppState;
use axum::extract::State;
use axum::response::Response;
use maud::html;

/// `GET /policy`.
pub async fn page(State(state): State<AppState>, user: WebUser) -> Result<Response, WebError> {
    let policy = state.gate.policy(&user.principal).await?;
    let body = html! {
        section.policy {
            h1 { "Policy " small { "version " (policy.version) } }
            dl.facts {
                dt { "Version" } dd #policy-version { (policy.version) }
                dt { "Digest" } dd { code.digest #policy-digest { (policy.digest) } }
                dt { "In force since" } dd { (when(policy.updated_at)) }
            }
            p.hint {
                "Pending approvals carry the digest of the policy they were asked under; when "
                "the policy changes they are cancelled, and the agent is told. Replace the policy with "
                code { "PUT /v1/policy" } " (owners and admins)."
            }
            pre.block.source { (policy.source) }
        }
    };
    Ok(layout::ok(layout::page(
        "Policy",
        Some((&user, "/policy")),
        body,
    )))
}
