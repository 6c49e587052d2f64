//! Scheduled tasks (create with permissions, list, read, change or revoke, run now) and
//! the "fewer prompts" report.

use super::Items;
use crate::auth::Auth;
use crate::body::{JsonBody, NoBody, PathId};
use crate::error::ApiError;
use crate::AppState;
use airlock_protocol::{NewTask, Problem, Run, Task, TaskPatch};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::Value;

/// Creates a task (users with role ≥ approver); its permissions become task rules.
#[utoipa::path(post, path = "/v1/tasks", operation_id = "create_task", tag = "tasks", request_body = NewTask,
    responses(
        (status = 201, description = "`{task, rules, dropped}`: the task, the rules minted from its permissions, and the permissions dropped with the reason", body = Object),
        (status = 403, description = "Viewers cannot create tasks; agents cannot give permissions", body = Problem),
        (status = 422, description = "Bad cron, time zone, title or instructions", body = Problem)))]
pub async fn create(
    State(state): State<AppState>,
    Auth(principal): Auth,
    JsonBody(task): JsonBody<NewTask>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let created = state.gate.create_task(&principal, task).await?;
    let body = serde_json::to_value(created).map_err(|_| ApiError::Internal)?;
    Ok((StatusCode::CREATED, Json(body)))
}

/// Every task, newest first.
#[utoipa::path(get, path = "/v1/tasks", operation_id = "list_tasks", tag = "tasks",
    responses((status = 200, description = "Tasks", body = Items<Task>)))]
pub async fn list(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Json<Items<Task>>, ApiError> {
    Ok(Json(Items::new(state.gate.list_tasks(&principal).await?)))
}

#[utoipa::path(get, path = "/v1/tasks/{id}", operation_id = "get_task", tag = "tasks",
    params(("id" = String, Path, description = "Task id")),
    responses(
        (status = 200, description = "The task", body = Task),
        (status = 404, description = "No such task here", body = Problem)))]
pub async fn get(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
) -> Result<Json<Task>, ApiError> {
    Ok(Json(state.gate.get_task(&principal, &id).await?))
}

/// Changes a task, or revokes it (`{"revoke": true}`) with its rules.
#[utoipa::path(patch, path = "/v1/tasks/{id}", operation_id = "update_task", tag = "tasks", request_body = TaskPatch,
    params(("id" = String, Path, description = "Task id")),
    responses(
        (status = 200, description = "The task as changed", body = Task),
        (status = 409, description = "The task was revoked", body = Problem),
        (status = 422, description = "Bad cron or time zone", body = Problem)))]
pub async fn update(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    JsonBody(patch): JsonBody<TaskPatch>,
) -> Result<Json<Task>, ApiError> {
    Ok(Json(state.gate.update_task(&principal, &id, patch).await?))
}

/// Starts a run of the task now, whatever its schedule.
#[utoipa::path(post, path = "/v1/tasks/{id}/run", operation_id = "run_task", tag = "tasks",
    params(("id" = String, Path, description = "Task id")),
    responses(
        (status = 202, description = "The run started", body = Run),
        (status = 409, description = "A run of the task is in progress, or the task is disabled or revoked", body = Problem),
        (status = 422, description = "A body was sent: this endpoint takes none (or `{}`)", body = Problem)))]
pub async fn run(
    State(state): State<AppState>,
    Auth(principal): Auth,
    PathId(id): PathId,
    _body: NoBody,
) -> Result<(StatusCode, Json<Run>), ApiError> {
    let run = state.runtime.run_task_now(&principal, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(run)))
}

/// Per tool and target: how often people were asked and what they decided, and the
/// standing rules that would have removed the most prompts (suggestions only).
#[utoipa::path(get, path = "/v1/insights/prompts", operation_id = "prompt_insights", tag = "rules",
    responses((status = 200, description = "`{items: [{tool, target, asked, approved, rejected, expired, cancelled, pending}], suggestions: [{tool, target, scope, scope_id, would_remove, reason}]}`", body = Object)))]
pub async fn insights(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Json<Value>, ApiError> {
    let report = state.gate.prompt_insights(&principal).await?;
    Ok(Json(
        serde_json::to_value(report).map_err(|_| ApiError::Internal)?,
    ))
}

/// Narrow policy rules learned from repeated approvals of calls standing rules cannot
/// cover, each with the replay report of the policy in force plus the rule (dropped when
/// any past deny or rejection would flip to allow), and the tools approved every time in
/// a median of under 3 s (DESIGN.md §11.5). Suggestions only.
#[utoipa::path(get, path = "/v1/insights", operation_id = "learned_insights", tag = "rules",
    responses((status = 200, description = "`{rules: [{tool, prefix, approved, rule, replay}], rubber_stamping: [{tool, approved, median_decision_seconds, suggestion}]}`; `replay` is a ReplayReport", body = Object)))]
pub async fn learned(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Json<Value>, ApiError> {
    let report = state.gate.learn(&principal).await?;
    Ok(Json(
        serde_json::to_value(report).map_err(|_| ApiError::Internal)?,
    ))
}
