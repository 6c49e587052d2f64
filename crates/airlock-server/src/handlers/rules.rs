//! Standing rules: list, mint (201 new, 200 when an identical live one exists), revoke.

use super::Items;
use crate::auth::Auth;
use crate::body::{JsonBody, NoBody, PathId};
use crate::error::ApiError;
use crate::AppState;
use airlock_protocol::{NewRule, Problem, StandingRule};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

/// Every standing rule of the workspace, newest first (revoked and expired included).
#[utoipa::path(get, path = "/v1/rules", operation_id = "list_rules", tag = "rules",
    responses((status = 200, description = "Standing rules", body = Items<StandingRule>)))]
pub async fn list(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Json<Items<StandingRule>>, ApiError> {
    Ok(Json(Items::new(state.gate.list_rules(&principal).await?)))
}

/// Mints a standing rule (users with role ≥ approver; never agents).
#[utoipa::path(post, path = "/v1/rules", operation_id = "create_rule", tag = "rules", request_body = NewRule,
    responses(
        (status = 201, description = "A new rule", body = StandingRule),
        (status = 200, description = "The identical live rule that already exists", body = StandingRule),
        (status = 403, description = "Agents and viewers do not mint rules", body = Problem),
        (status = 422, description = "Empty target or a tool that is not eligible", body = Problem)))]
pub async fn create(
    State(state): State<AppState>,
    Auth(principal): Auth,
    JsonBody(rule): JsonBody<NewRule>,
) -> Result<(StatusCode, Json<StandingRule>), ApiError> {
    let (rule, created) = state.gate.create_rule(&principal, rule).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(rule)))
}

/// Revokes a standing rule.
#[utoipa::path(delete, path = "/v1/rules/{id}", operation_id = "revoke_rule", tag = "rules",
    params(("id" = String, Path, description = "Rule id")),
    responses(
        (status = 200, description = "The revoked rule", body = StandingRule),
        (status = 404, description = "No live rule with this id here", body = Problem),
        (status = 422, description = "A body was sent: this endpoint takes none (or `{}`)", body = Problem)))]
pub async fn revoke(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    _body: NoBody,
) -> Result<Json<StandingRule>, ApiError> {
    Ok(Json(state.gate.revoke_rule(&principal, &id).await?))
}
