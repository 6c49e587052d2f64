//! Every route of the API in one table (DESIGN.md §6.1), the web pages merged in from
//! [`crate::web::routes`], with the layers all of them share:
//! tracing, panic → 500 problem, response metrics, and problem+json for unknown routes
//! (404) and wrong methods (405).

use crate::error::ApiError;
use crate::handlers::{
    approvals, audit, calls, events, hooks, identity, outcomes, policy, rules, runs, system, tasks,
};
use crate::{metrics, query, web, AppState};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{middleware, Router};
use std::any::Any;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

/// The API, ready to serve.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(system::healthz))
        .route("/metrics", get(system::metrics))
        .route("/openapi.json", get(system::openapi))
        .route(
            "/v1/users",
            post(identity::create_user).get(identity::list_users),
        )
        .route(
            "/v1/agents",
            post(identity::create_agent).get(identity::list_agents),
        )
        .route("/v1/agents/me", get(identity::get_own_agent))
        .route(
            "/v1/agents/{id}",
            get(identity::get_agent).patch(identity::update_agent),
        )
        .route("/v1/sessions", post(identity::create_session))
        .route(
            "/v1/sessions/{id}",
            get(identity::get_session).patch(identity::update_session),
        )
        .route(
            "/v1/policy",
            get(policy::get_policy).put(policy::put_policy),
        )
        .route("/v1/policy/evaluate", post(policy::evaluate))
        .route("/v1/calls", post(calls::submit))
        .route("/v1/calls/{id}", get(calls::get_call))
        .route("/v1/calls/ambiguous", get(outcomes::ambiguous))
        .route("/v1/calls/{id}/redeem", post(calls::redeem))
        .route("/v1/calls/{id}/outcome", post(outcomes::report))
        .route("/v1/calls/{id}/reconcile", post(outcomes::reconcile))
        .route("/v1/calls/{id}/cancel", post(runs::cancel_call))
        .route(
            "/v1/sessions/{id}/messages",
            post(runs::post_message).get(runs::list_messages),
        )
        .route("/v1/runs/{id}", get(runs::get_run))
        .route("/v1/runs/{id}/events", get(runs::stream_events))
        .route("/v1/runs/{id}/cancel", post(runs::cancel_run))
        .route("/v1/runs/{id}/pause", post(runs::pause_run))
        .route("/v1/runs/{id}/resume", post(runs::resume_run))
        .route("/v1/outbox", get(runs::list_outbox))
        .route("/v1/tasks", post(tasks::create).get(tasks::list))
        .route("/v1/tasks/{id}", get(tasks::get).patch(tasks::update))
        .route("/v1/tasks/{id}/run", post(tasks::run))
        .route("/v1/insights", get(tasks::learned))
        .route("/v1/insights/prompts", get(tasks::insights))
        .route("/v1/approvals", get(approvals::list))
        .route("/v1/approvals/decisions", post(approvals::decide_many))
        .route("/v1/approvals/{id}", get(approvals::get))
        .route("/v1/approvals/{id}/decision", post(approvals::decide))
        .route("/v1/rules", get(rules::list).post(rules::create))
        .route("/v1/rules/{id}", delete(rules::revoke))
        .route("/v1/audit", get(audit::list))
        .route("/v1/audit/verify", get(audit::verify))
        .route("/v1/audit/export", get(audit::export))
        .route("/v1/events", get(events::stream))
        .route("/v1/hooks/claude-code", post(hooks::claude_code))
        .route("/v1/hooks/codex", post(hooks::codex))
        .route("/v1/hooks/gemini", post(hooks::gemini))
        // Only the API routes above: the web pages read their own queries.
        .route_layer(middleware::from_fn(query::refuse_unknown))
        .route(
            "/v1/integrations/slack/actions",
            post(crate::notify::slack::actions::actions),
        )
        // The web inbox: `/`, `/login`, `/approvals/{id}`, … (see `web::routes`).
        .merge(web::routes())
        .fallback(unknown_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(CatchPanicLayer::custom(panicked))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

async fn unknown_route() -> ApiError {
    ApiError::NotFound("no such route".into())
}

async fn wrong_method() -> ApiError {
    ApiError::MethodNotAllowed
}

fn panicked(panic: Box<dyn Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(%message, "a request handler panicked");
    ApiError::Internal.into_response()
}
