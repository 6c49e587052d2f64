//! Approvals: the inbox, one approval, the decision on it (G2, G3, G6), and several
//! decisions at once (DESIGN.md §11.6).

use super::Items;
use crate::auth::Auth;
use crate::body::{JsonBody, PathId, Query};
use crate::error::ApiError;
use crate::AppState;
use airlock_protocol::{
    Approval, ApprovalStatus, BatchResult, BatchResults, DecisionBatch, DecisionRequest, Problem,
};
use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

/// The default and the largest page of approvals.
const DEFAULT_LIMIT: u32 = 100;
const MAX_LIMIT: u32 = 1000;

/// `?status=pending&limit=N&before=ID`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only approvals with this status.
    #[serde(default)]
    #[param(value_type = Option<ApprovalStatus>)]
    pub status: Option<ApprovalStatus>,
    /// At most this many, 1 to 1000 (default 100).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Only the approvals of this run's tool calls (its turn).
    #[serde(default)]
    pub run_id: Option<String>,
    /// Only approvals older than this one (an approval id): the next page, after the
    /// last item of the one before.
    #[serde(default)]
    pub before: Option<String>,
}

/// Approvals of the workspace, newest first.
#[utoipa::path(get, path = "/v1/approvals", operation_id = "list_approvals", tag = "approvals", params(ListQuery),
    responses(
        (status = 200, description = "Approvals, newest first", body = Items<Approval>),
        (status = 404, description = "No such run (`run_id`) or approval (`before`) here", body = Problem),
        (status = 422, description = "Unknown status or limit out of range", body = Problem)))]
pub async fn list(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Query(query): Query<ListQuery>,
) -> Result<Json<Items<Approval>>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::Invalid(format!("limit must be 1 to {MAX_LIMIT}")));
    }
    let approvals = match &query.run_id {
        Some(run_id) => {
            state
                .gate
                .run_approvals(
                    &principal,
                    run_id,
                    query.status,
                    limit,
                    query.before.as_deref(),
                )
                .await?
        }
        None => {
            state
                .gate
                .list_approvals(&principal, query.status, limit, query.before.as_deref())
                .await?
        }
    };
    Ok(Json(Items::new(approvals)))
}

/// One approval.
#[utoipa::path(get, path = "/v1/approvals/{id}", operation_id = "get_approval", tag = "approvals",
    params(("id" = String, Path, description = "Approval id")),
    responses(
        (status = 200, description = "The approval", body = Approval),
        (status = 404, description = "No such approval here", body = Problem)))]
pub async fn get(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
) -> Result<Json<Approval>, ApiError> {
    Ok(Json(state.gate.get_approval(&principal, &id).await?))
}

/// Approves or rejects (users with role ≥ approver), optionally approving edited
/// `arguments` instead of the asked ones. The first valid decision wins; every refusal
/// changes nothing.
#[utoipa::path(post, path = "/v1/approvals/{id}/decision", operation_id = "decide_approval", tag = "approvals",
    request_body = DecisionRequest,
    params(("id" = String, Path, description = "Approval id")),
    responses(
        (status = 200, description = "The approval as decided", body = Approval),
        (status = 403, description = "Agents and viewers do not decide", body = Problem),
        (status = 404, description = "No such approval here", body = Problem),
        (status = 409, description = "binding_mismatch, already_decided, expired, stale_policy or edit_denied: nothing changed", body = Problem),
        (status = 422, description = "Bad reason, remember or edited arguments", body = Problem)))]
pub async fn decide(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    JsonBody(request): JsonBody<DecisionRequest>,
) -> Result<Json<Approval>, ApiError> {
    let approval = state.gate.decide(&principal, &id, request).await?;
    crate::telemetry::decided(&state, &approval).await;
    Ok(Json(approval))
}

/// Decides several approvals at once (users with role ≥ approver). Each item stands
/// alone, decided or refused exactly as `POST /v1/approvals/{id}/decision` would in its
/// own transaction: a refused item carries its problem and changed nothing, and never
/// changes another item's outcome. The request is 200 whenever its body is well formed.
#[utoipa::path(post, path = "/v1/approvals/decisions", operation_id = "decide_approvals", tag = "approvals",
    request_body = DecisionBatch,
    responses(
        (status = 200, description = "One result per item, in order: `{id, status}` or `{id, problem}`", body = BatchResults),
        (status = 403, description = "Agents and viewers do not decide", body = Problem),
        (status = 422, description = "No items, more than 1000, or an item that is not a decision", body = Problem)))]
pub async fn decide_many(
    State(state): State<AppState>,
    Auth(principal): Auth,
    JsonBody(batch): JsonBody<DecisionBatch>,
) -> Result<Json<BatchResults>, ApiError> {
    let outcomes = state.gate.decide_batch(&principal, batch.items).await?;
    let mut results = Vec::with_capacity(outcomes.len());
    for (id, outcome) in outcomes {
        let result = match outcome {
            Ok(approval) => {
                crate::telemetry::decided(&state, &approval).await;
                BatchResult {
                    id,
                    status: Some(approval.status),
                    problem: None,
                }
            }
            Err(error) => {
                let error = ApiError::from(error);
                if let ApiError::Unavailable(message) = &error {
                    tracing::error!(error = %message, approval = %id, "a batch decision failed: storage unavailable");
                }
                BatchResult {
                    id,
                    status: None,
                    problem: Some(error.problem()),
                }
            }
        };
        results.push(result);
    }
    Ok(Json(BatchResults { results }))
}
