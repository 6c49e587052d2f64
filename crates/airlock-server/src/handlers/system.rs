//! The unauthenticated endpoints: liveness, Prometheus metrics and the OpenAPI document.
//! (`GET /`, the page `airlock serve` points people at, is the web inbox: [`crate::web`].)

use crate::openapi::ApiDoc;
use crate::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};

/// `{"status": "ok"}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

/// Liveness: the process serves requests.
#[utoipa::path(get, path = "/healthz", tag = "system",
    responses((status = 200, description = "The server is up", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "system",
    responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        {
            let mut text = state.metrics.render(state.gate.waiting());
            // Only a server with channels configured has notifications to count.
            if let Some(notifier) = &state.notifier {
                notifier.counters().render(&mut text);
            }
            text
        },
    )
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "system",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", body = Object)))]
pub async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
