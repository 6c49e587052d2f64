//! The policy in force: read it, replace it (TOML text, any content type), dry-run a call.

use crate::auth::Auth;
use crate::body::{JsonBody, TextBody};
use crate::error::ApiError;
use crate::AppState;
use airlock_protocol::{EvaluateRequest, PolicyInfo, PolicyUpdated, Problem, Verdict};
use axum::extract::State;
use axum::Json;

/// The policy in force.
#[utoipa::path(get, path = "/v1/policy", tag = "policy",
    responses(
        (status = 200, description = "The policy in force", body = PolicyInfo),
        (status = 404, description = "No policy is in force", body = Problem)))]
pub async fn get_policy(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Json<PolicyInfo>, ApiError> {
    Ok(Json(state.gate.policy(&principal).await?))
}

/// Replaces the policy (owner or admin). Pending approvals made under the old one are
/// cancelled. A text that does not load changes nothing.
#[utoipa::path(put, path = "/v1/policy", tag = "policy",
    request_body(content = String, content_type = "application/toml", description = "The policy, TOML"),
    responses(
        (status = 200, description = "The policy now in force", body = PolicyUpdated),
        (status = 422, description = "The policy does not load; `errors` lists line, column and message of each problem", body = Problem)))]
pub async fn put_policy(
    State(state): State<AppState>,
    Auth(principal): Auth,
    TextBody(source): TextBody,
) -> Result<Json<PolicyUpdated>, ApiError> {
    let info = state.gate.put_policy(&principal, &source).await?;
    Ok(Json(PolicyUpdated {
        version: info.version,
        digest: info.digest,
    }))
}

/// A dry run of the policy in force; nothing is stored.
#[utoipa::path(post, path = "/v1/policy/evaluate", operation_id = "evaluate_policy", tag = "policy", request_body = EvaluateRequest,
    responses((status = 200, description = "The verdict the call would get (standing rules aside)", body = Verdict)))]
pub async fn evaluate(
    State(state): State<AppState>,
    Auth(principal): Auth,
    JsonBody(request): JsonBody<EvaluateRequest>,
) -> Result<Json<Verdict>, ApiError> {
    let verdict = state
        .gate
        .evaluate_dry(
            &principal,
            &request.tool,
            &request.arguments,
            request.agent.as_deref(),
        )
        .await?;
    Ok(Json(verdict))
}
