//! The unauthenticated endpoints: liveness, Prometheus metrics and the OpenAPI document.

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
        state.metrics.render(state.gate.waiting()),
    )
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "system",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", body = Object)))]
pub async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

/// The page `airlock serve` points people at. The web inbox (sign-in, approve from a
/// browser) is a later release; until then this page says how to decide today.
pub async fn home() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        HOME_PAGE,
    )
}

const HOME_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>airlock</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; line-height: 1.5">
<h1>airlock is running</h1>
<p>The browser inbox is not part of this release yet. Decide pending calls from a terminal:</p>
<pre>airlock approvals list
airlock approvals show --latest
airlock approvals approve --latest    # or: reject --latest --reason "…"</pre>
<p>or over HTTP: <code>GET /v1/approvals?status=pending</code> and
<code>POST /v1/approvals/{id}/decision</code>. The whole API is described at
<a href="/openapi.json">/openapi.json</a>.</p>
</body></html>
"#;
