//! The one error type of the HTTP API and its one status table (DESIGN.md §6).
//!
//! Every failure leaves as `application/problem+json` — the protocol's [`Problem`]
//! `{type, title, status, detail}` with a stable `type` slug that clients branch on. A
//! policy that does not load adds `errors: [{line, column, message}]`. Server trouble
//! (`unavailable`, `internal`) says nothing internal in its body; it is logged once, here,
//! where it is turned into a response.

use airlock_gate::GateError;
use airlock_policy::LoadErrors;
use airlock_protocol::{ApprovalStatus, Problem};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// The media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Everything a request can end in other than success.
#[derive(Debug)]
pub enum ApiError {
    /// No bearer token, a malformed one, or one nobody holds.
    Unauthorized(String),
    /// The principal may not do this (G6).
    Forbidden(String),
    /// No such object here — or a route that does not exist.
    NotFound(String),
    /// Well-formed but meaningless: wrong types, missing or unknown fields, bad query.
    Invalid(String),
    /// A policy text that does not load; the one in force stays.
    PolicyInvalid(LoadErrors),
    /// The body is not JSON at all.
    MalformedJson(String),
    /// The body is over [`crate::body::MAX_BODY`].
    PayloadTooLarge,
    /// A JSON endpoint was sent something that says it is not JSON.
    UnsupportedMediaType(String),
    /// The route exists, the method does not.
    MethodNotAllowed,
    BindingMismatch,
    AlreadyDecided(ApprovalStatus),
    Expired,
    StalePolicy,
    /// Under the two-person rule: this person already voted on the approval.
    AlreadyVoted,
    /// A person's edit the policy denies (DESIGN.md §11.6): the reason.
    EditDenied(String),
    GrantSpent,
    /// A name that must be unique is taken.
    Conflict(String),
    /// The store failed; the client may retry. The message is for the log only.
    Unavailable(String),
    /// A handler panicked (caught by the panic layer, which logs it).
    Internal,
}

impl From<GateError> for ApiError {
    fn from(error: GateError) -> ApiError {
        match error {
            GateError::Unauthorized => {
                ApiError::Unauthorized("the bearer token is unknown or revoked".into())
            }
            GateError::Forbidden(message) => ApiError::Forbidden(message),
            GateError::NotFound(what) => ApiError::NotFound(format!("no such {what}")),
            GateError::Invalid(message) => ApiError::Invalid(message),
            GateError::PolicyInvalid(errors) => ApiError::PolicyInvalid(errors),
            GateError::BindingMismatch => ApiError::BindingMismatch,
            // The sweeper may have expired the approval a moment before the decision
            // arrived: for the decider that is still "too late", so it reads `expired`
            // whichever of the two got there first.
            GateError::AlreadyDecided(ApprovalStatus::Expired) | GateError::Expired => {
                ApiError::Expired
            }
            GateError::AlreadyDecided(status) => ApiError::AlreadyDecided(status),
            GateError::StalePolicy => ApiError::StalePolicy,
            GateError::AlreadyVoted => ApiError::AlreadyVoted,
            GateError::EditDenied(reason) => ApiError::EditDenied(reason),
            GateError::GrantSpent => ApiError::GrantSpent,
            GateError::Conflict(message) => ApiError::Conflict(message),
            GateError::Unavailable(message) => ApiError::Unavailable(message),
        }
    }
}

impl ApiError {
    /// The status table: HTTP status, problem `type` and `title` of every variant.
    fn status(&self) -> (StatusCode, &'static str, &'static str) {
        match self {
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized", "Unauthorized"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden", "Forbidden"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found", "Not found"),
            ApiError::Invalid(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                "Invalid request",
            ),
            ApiError::PolicyInvalid(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                "The policy does not load",
            ),
            ApiError::MalformedJson(_) => (StatusCode::BAD_REQUEST, "invalid", "Malformed JSON"),
            ApiError::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "Payload too large",
            ),
            ApiError::UnsupportedMediaType(_) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "Unsupported media type",
            ),
            ApiError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "Method not allowed",
            ),
            ApiError::BindingMismatch => (
                StatusCode::CONFLICT,
                "binding_mismatch",
                "Binding digest mismatch",
            ),
            ApiError::AlreadyDecided(_) => {
                (StatusCode::CONFLICT, "already_decided", "Already decided")
            }
            ApiError::Expired => (StatusCode::CONFLICT, "expired", "Expired"),
            ApiError::StalePolicy => (StatusCode::CONFLICT, "stale_policy", "Stale policy"),
            ApiError::AlreadyVoted => (StatusCode::CONFLICT, "already_voted", "Already voted"),
            ApiError::EditDenied(_) => (StatusCode::CONFLICT, "edit_denied", "Edit denied"),
            ApiError::GrantSpent => (
                StatusCode::CONFLICT,
                "grant_spent",
                "Grant already consumed",
            ),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict", "Conflict"),
            ApiError::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Service unavailable",
            ),
            ApiError::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal error",
            ),
        }
    }

    /// What the client reads in `detail` (also the reason a hook's deny gives).
    pub(crate) fn detail(&self) -> String {
        match self {
            ApiError::Unauthorized(message)
            | ApiError::Forbidden(message)
            | ApiError::NotFound(message)
            | ApiError::Invalid(message)
            | ApiError::MalformedJson(message)
            | ApiError::UnsupportedMediaType(message)
            | ApiError::Conflict(message) => message.clone(),
            ApiError::PolicyInvalid(errors) => format!(
                "the policy does not load ({} error{}); the policy in force is unchanged: {errors}",
                errors.0.len(),
                if errors.0.len() == 1 { "" } else { "s" }
            ),
            ApiError::PayloadTooLarge => format!(
                "request bodies are limited to {} bytes",
                crate::body::MAX_BODY
            ),
            ApiError::MethodNotAllowed => "this route does not take that method".into(),
            ApiError::BindingMismatch => {
                "the binding digest does not match the approval; nothing was changed".into()
            }
            ApiError::AlreadyDecided(status) => {
                format!("the approval is already {status}; nothing was changed")
            }
            ApiError::Expired => {
                "the approval's deadline has passed; it is expired and cannot be decided".into()
            }
            ApiError::StalePolicy => {
                "the policy changed while the approval was pending; it cannot be decided".into()
            }
            ApiError::AlreadyVoted => {
                "you already voted on this approval; it needs another person's vote, and nothing was changed"
                    .into()
            }
            ApiError::EditDenied(reason) => {
                format!("the policy denies the edited call: {reason}; nothing was changed")
            }
            ApiError::GrantSpent => "the call's grant was already consumed".into(),
            ApiError::Unavailable(_) => {
                "the service cannot complete the request right now; retry later".into()
            }
            ApiError::Internal => "the server failed to handle the request".into(),
        }
    }

    /// The problem body this error answers (without a policy's load errors), also what
    /// one refused item of a batch of decisions carries.
    pub(crate) fn problem(&self) -> Problem {
        let (status, kind, title) = self.status();
        Problem {
            kind: kind.to_owned(),
            title: title.to_owned(),
            status: status.as_u16(),
            detail: self.detail(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Unavailable(message) = &self {
            tracing::error!(error = %message, "request failed: storage unavailable");
        }
        let status = self.status().0;
        let problem = self.problem();
        let mut body = serde_json::to_value(&problem).unwrap_or(Value::Null);
        if let (ApiError::PolicyInvalid(errors), Some(object)) = (&self, body.as_object_mut()) {
            let errors: Vec<Value> = errors
                .0
                .iter()
                .map(|e| json!({"line": e.line, "column": e.column, "message": e.message}))
                .collect();
            object.insert("errors".into(), errors.into());
        }
        let mut response = (status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_already_expired_reads_as_expired() {
        let error = ApiError::from(GateError::AlreadyDecided(ApprovalStatus::Expired));
        assert_eq!(error.status().1, "expired");
        let error = ApiError::from(GateError::AlreadyDecided(ApprovalStatus::Approved));
        assert_eq!(error.status().1, "already_decided");
    }

    #[test]
    fn unavailable_says_nothing_internal() {
        let error = ApiError::from(GateError::Unavailable(
            "disk I/O error at /secret/path".into(),
        ));
        assert!(!error.detail().contains("/secret/path"));
        assert_eq!(error.status().0, StatusCode::SERVICE_UNAVAILABLE);
    }
}
