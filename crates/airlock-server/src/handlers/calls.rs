//! Calls: submit (optionally waiting for the verdict), long-poll, redeem the grant.
//!
//! A long-poll is woken by the decision itself (the gate's per-call notify), not by a
//! timer; on shutdown it answers at once with the call as it stands.

use super::hooks::place::project_of;
use crate::auth::Auth;
use crate::body::{JsonBody, NoBody, PathId, Query};
use crate::error::ApiError;
use crate::AppState;
use airlock_gate::calls::{CallContext, Submission, MAX_WAIT};
use airlock_protocol::{Annotations, Call, CallStatus, Principal, Problem, Redeemed, SubmitCall};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde::Deserialize;
use std::time::Duration;
use utoipa::IntoParams;

/// What a call's annotations declare: only a tool that says it is read-only and not
/// destructive is `read`; without a declaration the tool stays `exec`.
fn declared(annotations: &Annotations) -> Option<airlock_policy::CompiledTool> {
    {
        let read_only =
            annotations.read_only_hint == Some(true) && annotations.destructive_hint != Some(true);
        read_only
            .then(|| {
                airlock_policy::CompiledTool::declare(
                    airlock_protocol::Risk::Read,
                    None,
                    None,
                    None,
                )
                .ok()
            })
            .flatten()
    }
}

/// `?wait_s=N`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// Seconds to wait while the call is pending (at most 60).
    #[serde(default)]
    pub wait_s: Option<u64>,
}

fn wait_duration(wait_s: Option<u64>) -> Result<Duration, ApiError> {
    let wait = Duration::from_secs(wait_s.unwrap_or(0));
    if wait > MAX_WAIT {
        return Err(ApiError::Invalid(format!(
            "wait_s must be at most {}",
            MAX_WAIT.as_secs()
        )));
    }
    Ok(wait)
}

/// Waits for the call's verdict, or answers with the call as it is on shutdown.
async fn wait_for(
    state: &AppState,
    principal: &Principal,
    id: &str,
    wait: Duration,
) -> Result<Call, ApiError> {
    tokio::select! {
        call = state.gate.wait_call(principal, id, wait) => Ok(call?),
        _ = state.shutdown.cancelled() => Ok(state.gate.get_call(principal, id).await?),
    }
}

/// Submits a call (agent tokens). Returns it decided, or pending with its approval id;
/// with `wait_s`, a pending call is held until decided or until `wait_s` passes.
#[utoipa::path(post, path = "/v1/calls", operation_id = "submit_call", tag = "calls", request_body = SubmitCall,
    responses(
        (status = 201, description = "The call: allowed, denied, or pending (or decided while waiting)", body = Call),
        (status = 403, description = "Not an agent token", body = Problem),
        (status = 422, description = "Bad tool, arguments or wait_s", body = Problem)))]
pub async fn submit(
    State(state): State<AppState>,
    Auth(principal): Auth,
    headers: HeaderMap,
    JsonBody(body): JsonBody<SubmitCall>,
) -> Result<(StatusCode, Json<Call>), ApiError> {
    let wait = wait_duration(body.wait_s)?;
    let span = state.telemetry.call_span(&headers);
    let call = state
        .gate
        .submit_call(
            &principal,
            Submission {
                tool: body.tool,
                arguments: body.arguments,
                session_id: body.session_id,
                declared: body.annotations.as_ref().and_then(declared),
                context: CallContext {
                    project: body.cwd.as_deref().and_then(project_of),
                    cwd: body.cwd,
                    ..CallContext::default()
                },
            },
        )
        .await?;
    state.metrics.call(call.status);
    let call = if call.status == CallStatus::Pending && !wait.is_zero() {
        wait_for(&state, &principal, &call.id, wait).await?
    } else {
        call
    };
    state.telemetry.finish(span, &state.gate, &call).await;
    Ok((StatusCode::CREATED, Json(call)))
}

/// A call; with `wait_s`, held until it is no longer pending or `wait_s` passes.
#[utoipa::path(get, path = "/v1/calls/{id}", tag = "calls",
    params(("id" = String, Path, description = "Call id"), WaitQuery),
    responses(
        (status = 200, description = "The call", body = Call),
        (status = 404, description = "No such call here", body = Problem),
        (status = 422, description = "wait_s over 60", body = Problem)))]
pub async fn get_call(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    Query(query): Query<WaitQuery>,
) -> Result<Json<Call>, ApiError> {
    let wait = wait_duration(query.wait_s)?;
    let call = if wait.is_zero() {
        state.gate.get_call(&principal, &id).await?
    } else {
        wait_for(&state, &principal, &id, wait).await?
    };
    Ok(Json(call))
}

/// Consumes the call's grant (the call's agent only): succeeds once, ever (G1). Under an
/// `Idempotency-Key`, a retry by the same agent with the same key answers the same `200`
/// with `"replayed": true` (an answer lost to a crash or a network failure is not a lost
/// call); any other key, or none, is `409 grant_spent` (DESIGN.md §11.8).
#[utoipa::path(post, path = "/v1/calls/{id}/redeem", operation_id = "redeem_grant", tag = "calls",
    params(("id" = String, Path, description = "Call id"),
        ("Idempotency-Key" = Option<String>, Header, description = "1 to 255 visible ASCII characters; send the same key when retrying a redeem whose answer was lost")),
    responses(
        (status = 200, description = "The grant, now consumed: execute the call (once, also when `replayed`), with `arguments` instead of the submitted ones when a person edited them", body = Redeemed),
        (status = 403, description = "The call has no grant, or not an agent token", body = Problem),
        (status = 409, description = "grant_spent: consumed before, under another key or none", body = Problem),
        (status = 422, description = "An Idempotency-Key that is empty, over 255 characters, or not visible ASCII; or a body (this endpoint takes none)", body = Problem)))]
pub async fn redeem(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    headers: HeaderMap,
    _body: NoBody,
) -> Result<Json<Redeemed>, ApiError> {
    let key = super::outcomes::idempotency_key(&headers)?;
    let redemption = state.gate.redeem_keyed(&principal, &id, key).await?;
    let grant = redemption.grant;
    Ok(Json(Redeemed {
        grant_id: grant.id,
        call_id: grant.call_id,
        consumed_at: grant.consumed_at,
        replayed: redemption.replayed,
        arguments: redemption.arguments,
    }))
}
