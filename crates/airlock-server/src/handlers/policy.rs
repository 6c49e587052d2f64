//! The policy in force: read it, replace it (TOML text, any content type) or replay a
//! candidate over the recorded calls without saving it (`?dry_run=true`, DESIGN.md §11.5),
//! dry-run a call.

use crate::auth::Auth;
use crate::body::{JsonBody, Query, TextBody};
use crate::error::ApiError;
use crate::AppState;
use airlock_protocol::{
    EvaluateRequest, PolicyInfo, PolicyUpdated, Problem, ReplayReport, Verdict,
};
use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

/// How far back a dry run replays when `since` is not given.
pub const DRY_RUN_SINCE: &str = "7d";

/// `PUT /v1/policy`'s answer, for the OpenAPI document: the new version, or with
/// `dry_run=true` the replay report.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum PutAnswer {
    Updated(PolicyUpdated),
    DryRun(ReplayReport),
}

/// `PUT /v1/policy`'s query.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PutQuery {
    /// `true`: save nothing; answer what the policy would change on the recorded calls.
    #[serde(default)]
    pub dry_run: bool,
    /// With `dry_run`: replay the calls recorded in this last span (`7d`, `12h`; default
    /// `7d`), with the standing rules live at each call's time.
    #[serde(default)]
    pub since: Option<String>,
}

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
/// cancelled. A text that does not load changes nothing. With `?dry_run=true` nothing is
/// saved: the answer is the replay report of the text over the recorded calls.
#[utoipa::path(put, path = "/v1/policy", tag = "policy", params(PutQuery),
    request_body(content = String, content_type = "application/toml", description = "The policy, TOML"),
    responses(
        (status = 200, description = "The policy now in force; with `dry_run=true`, the replay report and nothing saved", body = PutAnswer),
        (status = 422, description = "The policy does not load (`errors` lists line, column and message of each problem), or a bad query parameter", body = Problem)))]
pub async fn put_policy(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Query(query): Query<PutQuery>,
    TextBody(source): TextBody,
) -> Result<Json<PutAnswer>, ApiError> {
    if query.dry_run {
        let span = query.since.as_deref().unwrap_or(DRY_RUN_SINCE);
        let since = since_of(state.gate.now(), span)?;
        let report = state
            .gate
            .replay_policy(&principal, &source, Some(since))
            .await?;
        return Ok(Json(PutAnswer::DryRun(report)));
    }
    if query.since.is_some() {
        return Err(ApiError::Invalid(
            "query parameter `since` only applies with `dry_run=true`".into(),
        ));
    }
    let info = state.gate.put_policy(&principal, &source).await?;
    Ok(Json(PutAnswer::Updated(PolicyUpdated {
        version: info.version,
        digest: info.digest,
    })))
}

/// `now` minus a span such as `7d`; a span that does not read, or reaches before the
/// epoch, is 422.
fn since_of(now: jiff::Timestamp, span: &str) -> Result<jiff::Timestamp, ApiError> {
    let refuse = |why: String| {
        ApiError::Invalid(format!(
            "query parameter `since`: {why} (a span such as `7d` or `12h`)"
        ))
    };
    let duration = humantime::parse_duration(span).map_err(|e| refuse(e.to_string()))?;
    let signed = jiff::SignedDuration::try_from(duration).map_err(|e| refuse(e.to_string()))?;
    now.checked_sub(signed)
        .map_err(|_| refuse(format!("`{span}` reaches too far back")))
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
