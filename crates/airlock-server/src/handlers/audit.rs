//! The audit log (G8): a page of records, online verification of the whole chain, and an
//! NDJSON export streamed page by page.
//!
//! The export ends each record with a newline. If reading a page fails halfway, the
//! response is aborted rather than finished, so the client holds a torn last line that
//! `airlock audit verify --file` reports, never a short export that looks whole.

use super::Items;
use crate::auth::Auth;
use crate::body::Query;
use crate::error::ApiError;
use crate::AppState;
use airlock_gate::Gate;
use airlock_protocol::{AuditRecord, Principal, Problem, VerifyReport};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

/// Records per page of the list and of the export.
const PAGE: u32 = 1000;
const DEFAULT_LIMIT: u32 = 100;

/// `?after=SEQ&limit=N`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only records with a higher seq (default 0: from the start).
    #[serde(default)]
    pub after: Option<u64>,
    /// At most this many, 1 to 1000 (default 100).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Audit records in chain order.
#[utoipa::path(get, path = "/v1/audit", operation_id = "list_audit", tag = "audit", params(AuditQuery),
    responses(
        (status = 200, description = "Records with seq > after, in order", body = Items<AuditRecord>),
        (status = 422, description = "Bad after or limit", body = Problem)))]
pub async fn list(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Query(query): Query<AuditQuery>,
) -> Result<Json<Items<AuditRecord>>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=PAGE).contains(&limit) {
        return Err(ApiError::Invalid(format!("limit must be 1 to {PAGE}")));
    }
    let records = state
        .gate
        .audit_after(&principal, query.after.unwrap_or(0), limit)
        .await?;
    Ok(Json(Items::new(records)))
}

/// Verifies the workspace's whole chain.
#[utoipa::path(get, path = "/v1/audit/verify", operation_id = "verify_audit", tag = "audit",
    responses((status = 200, description = "The verification; `ok` false names the first bad seq", body = VerifyReport)))]
pub async fn verify(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Json<VerifyReport>, ApiError> {
    Ok(Json(state.gate.verify_audit(&principal).await?))
}

/// The whole chain as NDJSON, one record a line.
#[utoipa::path(get, path = "/v1/audit/export", operation_id = "export_audit", tag = "audit",
    responses((status = 200, description = "Every record, one JSON object a line", body = AuditRecord, content_type = "application/x-ndjson")))]
pub async fn export(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> Result<Response, ApiError> {
    // The first page is read before answering, so that a refusal is still a problem.
    let first = state.gate.audit_after(&principal, 0, PAGE).await?;
    let pages = Pages {
        gate: state.gate.clone(),
        principal,
        first: Some(first),
        after: Some(0),
    };
    let stream = futures::stream::unfold(pages, Pages::next);
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"audit.ndjson\"",
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// Where the export stands: the next page starts after `after`; `None` when done.
struct Pages {
    gate: Gate,
    principal: Principal,
    first: Option<Vec<AuditRecord>>,
    after: Option<u64>,
}

impl Pages {
    async fn next(mut self) -> Option<(Result<Bytes, std::io::Error>, Pages)> {
        let after = self.after?;
        let page = match self.first.take() {
            Some(page) => page,
            None => match self.gate.audit_after(&self.principal, after, PAGE).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::error!(%error, after, "audit export aborted");
                    self.after = None;
                    return Some((Err(std::io::Error::other("audit export aborted")), self));
                }
            },
        };
        let last = page.last()?.seq;
        let mut bytes = Vec::with_capacity(page.len() * 512);
        for record in &page {
            if let Err(error) = serde_json::to_writer(&mut bytes, record) {
                tracing::error!(%error, seq = record.seq, "audit export aborted");
                self.after = None;
                return Some((Err(std::io::Error::other("audit export aborted")), self));
            }
            bytes.push(b'\n');
        }
        self.after = (page.len() == PAGE as usize).then_some(last);
        Some((Ok(Bytes::from(bytes)), self))
    }
}
