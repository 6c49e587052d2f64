//! After the grant (DESIGN.md §11.8): the outcome a call's agent reports, the ambiguous
//! calls nobody reported on, and a person's reconciliation of one.

use crate::auth::Auth;
use crate::body::{JsonBody, PathId};
use crate::error::ApiError;
use crate::AppState;
use airlock_protocol::{Call, OutcomeReport, Problem, ReconcileRequest};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;

/// The header a redeem is made idempotent with.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The request's `Idempotency-Key`, if it sent one; a value that is not text is refused
/// like an oversized one (422), never ignored.
pub fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ApiError::Invalid(
            "send one Idempotency-Key header, not several".into(),
        ));
    }
    let key = value.to_str().map_err(|_| {
        ApiError::Invalid("Idempotency-Key must be visible ASCII characters".into())
    })?;
    airlock_gate::outcomes::check_idempotency_key(key)?;
    Ok(Some(key))
}

/// Records what happened when the call's agent ran it. Stored once: the same report
/// again answers the call unchanged; a different one is refused (409) and the first
/// stands. Another agent's call is not found (404).
#[utoipa::path(post, path = "/v1/calls/{id}/outcome", operation_id = "report_outcome", tag = "calls",
    params(("id" = String, Path, description = "Call id")),
    request_body = OutcomeReport,
    responses(
        (status = 200, description = "The call, showing the stored outcome", body = Call),
        (status = 403, description = "Not an agent token", body = Problem),
        (status = 404, description = "No such call of this agent", body = Problem),
        (status = 409, description = "conflict: the call was not redeemed, or a different outcome was reported before", body = Problem),
        (status = 422, description = "A detail over 2,000 characters, or an unknown status", body = Problem)))]
pub async fn report(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    JsonBody(report): JsonBody<OutcomeReport>,
) -> Result<Json<Call>, ApiError> {
    Ok(Json(
        state.gate.report_outcome(&principal, &id, &report).await?,
    ))
}

/// Ambiguous calls: redeemed, and no outcome reported within the policy's
/// `outcome_timeout`, not reconciled yet; oldest first (any person).
#[utoipa::path(get, path = "/v1/calls/ambiguous", operation_id = "list_ambiguous_calls", tag = "calls",
    responses(
        (status = 200, description = "The ambiguous calls waiting for a person", body = [Call]),
        (status = 403, description = "Not a user token", body = Problem)))]
pub async fn ambiguous(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Json<Vec<Call>>, ApiError> {
    Ok(Json(state.gate.ambiguous_calls(&principal).await?))
}

/// A person settles an ambiguous call (approver role or higher): `ran` records that it
/// ran; `did_not_run` that it never did. Either way the old grant stays spent, and the
/// agent's next identical call is a new call, asked afresh.
#[utoipa::path(post, path = "/v1/calls/{id}/reconcile", operation_id = "reconcile_call", tag = "calls",
    params(("id" = String, Path, description = "Call id")),
    request_body = ReconcileRequest,
    responses(
        (status = 200, description = "The call, showing the reconciliation", body = Call),
        (status = 403, description = "Not an approver's token", body = Problem),
        (status = 404, description = "No such call", body = Problem),
        (status = 409, description = "conflict: the call is not ambiguous, or was reconciled before", body = Problem)))]
pub async fn reconcile(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    JsonBody(request): JsonBody<ReconcileRequest>,
) -> Result<Json<Call>, ApiError> {
    Ok(Json(state.gate.reconcile(&principal, &id, &request).await?))
}
