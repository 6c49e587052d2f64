//! Users, agents and sessions. Creating a user or an agent returns its token once; only
//! its hash is kept.

use super::Items;
use crate::auth::Auth;
use crate::body::{JsonBody, PathId};
use crate::error::ApiError;
use crate::AppState;
use airlock_protocol::{
    Agent, AgentCreated, AgentPatch, AgentSpec, NewSession, NewUser, Problem, Session,
    SessionPatch, SessionSnapshot, User, UserCreated,
};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

/// Creates a user (owner or admin; only an owner creates owners).
#[utoipa::path(post, path = "/v1/users", tag = "identity", request_body = NewUser,
    responses(
        (status = 201, description = "The user and its token, shown once", body = UserCreated),
        (status = 403, description = "Not an owner or admin", body = Problem),
        (status = 409, description = "A user of that name exists", body = Problem),
        (status = 422, description = "Bad name or role", body = Problem)))]
pub async fn create_user(
    State(state): State<AppState>,
    Auth(principal): Auth,
    JsonBody(body): JsonBody<NewUser>,
) -> Result<(StatusCode, Json<UserCreated>), ApiError> {
    let (user, token) = state
        .gate
        .create_user(&principal, &body.name, body.role)
        .await?;
    Ok((StatusCode::CREATED, Json(UserCreated { user, token })))
}

/// The users of the workspace.
#[utoipa::path(get, path = "/v1/users", tag = "identity",
    responses((status = 200, description = "Every user", body = Items<User>)))]
pub async fn list_users(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Json<Items<User>>, ApiError> {
    Ok(Json(Items::new(state.gate.list_users(&principal).await?)))
}

/// Creates an agent (owner or admin).
#[utoipa::path(post, path = "/v1/agents", tag = "identity", request_body = AgentSpec,
    responses(
        (status = 201, description = "The agent and its token, shown once", body = AgentCreated),
        (status = 409, description = "An agent of that name exists", body = Problem)))]
pub async fn create_agent(
    State(state): State<AppState>,
    Auth(principal): Auth,
    JsonBody(spec): JsonBody<AgentSpec>,
) -> Result<(StatusCode, Json<AgentCreated>), ApiError> {
    let (agent, token) = state.gate.create_agent(&principal, spec).await?;
    Ok((StatusCode::CREATED, Json(AgentCreated { agent, token })))
}

/// The agents of the workspace.
#[utoipa::path(get, path = "/v1/agents", tag = "identity",
    responses((status = 200, description = "Every agent", body = Items<Agent>)))]
pub async fn list_agents(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Json<Items<Agent>>, ApiError> {
    Ok(Json(Items::new(state.gate.list_agents(&principal).await?)))
}

/// The agent an agent token belongs to (so a proxy or hook can check whom it acts as).
#[utoipa::path(get, path = "/v1/agents/me", operation_id = "get_own_agent", tag = "identity",
    responses(
        (status = 200, description = "The token's agent", body = Agent),
        (status = 403, description = "Not an agent token", body = Problem)))]
pub async fn get_own_agent(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Json<Agent>, ApiError> {
    let (id, _) = airlock_gate::identity::require_agent(&principal, "have an own agent")?;
    Ok(Json(state.gate.get_agent(&principal, id).await?))
}

/// One agent (an agent token may read itself).
#[utoipa::path(get, path = "/v1/agents/{id}", tag = "identity",
    params(("id" = String, Path, description = "Agent id")),
    responses(
        (status = 200, description = "The agent", body = Agent),
        (status = 404, description = "No such agent here", body = Problem)))]
pub async fn get_agent(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
) -> Result<Json<Agent>, ApiError> {
    Ok(Json(state.gate.get_agent(&principal, &id).await?))
}

/// Changes an agent's settings; absent fields stay (owner or admin).
#[utoipa::path(patch, path = "/v1/agents/{id}", tag = "identity", request_body = AgentPatch,
    params(("id" = String, Path, description = "Agent id")),
    responses(
        (status = 200, description = "The agent as changed", body = Agent),
        (status = 404, description = "No such agent here", body = Problem)))]
pub async fn update_agent(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    JsonBody(patch): JsonBody<AgentPatch>,
) -> Result<Json<Agent>, ApiError> {
    Ok(Json(state.gate.update_agent(&principal, &id, patch).await?))
}

/// Opens a session (an agent token opens one for itself).
#[utoipa::path(post, path = "/v1/sessions", tag = "sessions", request_body = NewSession,
    responses(
        (status = 201, description = "The session", body = Session),
        (status = 200, description = "The agent's existing session with this `external_id`", body = Session),
        (status = 404, description = "No such agent here", body = Problem)))]
pub async fn create_session(
    State(state): State<AppState>,
    Auth(principal): Auth,
    JsonBody(body): JsonBody<NewSession>,
) -> Result<(StatusCode, Json<Session>), ApiError> {
    if let Some(external_id) = &body.external_id {
        if body.agent_id.is_some() {
            return Err(ApiError::Invalid(
                "external_id goes with an agent token and no agent_id".into(),
            ));
        }
        let (session, created) = state
            .gate
            .session_for_external(&principal, external_id, body.title)
            .await?;
        let status = if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        return Ok((status, Json(session)));
    }
    let session = state
        .gate
        .create_session(&principal, body.agent_id, body.title)
        .await?;
    Ok((StatusCode::CREATED, Json(session)))
}

/// A session with its runs and pending approvals.
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The session snapshot", body = SessionSnapshot),
        (status = 404, description = "No such session here", body = Problem)))]
pub async fn get_session(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
) -> Result<Json<SessionSnapshot>, ApiError> {
    let session = state.gate.get_session(&principal, &id).await?;
    let pending_approvals = state.gate.session_approvals(&principal, &id).await?;
    let runs = state.runtime.session_runs(&principal, &id).await?;
    Ok(Json(SessionSnapshot {
        session,
        runs,
        pending_approvals,
    }))
}

/// Overrides the mode of one session's calls, instead of its agent's (DESIGN.md §4.4);
/// `{"mode": null}` goes back to the agent's mode (owner or admin).
#[utoipa::path(patch, path = "/v1/sessions/{id}", operation_id = "update_session", tag = "sessions",
    request_body = SessionPatch,
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The session as changed", body = Session),
        (status = 403, description = "Only owners and admins change a session's mode", body = Problem),
        (status = 404, description = "No such session here", body = Problem),
        (status = 422, description = "An unknown mode or field", body = Problem)))]
pub async fn update_session(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    JsonBody(patch): JsonBody<SessionPatch>,
) -> Result<Json<Session>, ApiError> {
    Ok(Json(
        state
            .gate
            .set_session_mode(&principal, &id, patch.mode)
            .await?,
    ))
}
