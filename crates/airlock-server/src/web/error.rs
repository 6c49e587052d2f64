//! How a page request ends when it does not succeed: a page that says what happened and
//! what to do, with the right status — or, with no session, a 303 to the sign-in page.
//!
//! The API answers problem+json ([`crate::ApiError`]); a person gets HTML. Server trouble
//! says nothing internal on the page and is logged once, here.

use crate::web::layout;
use airlock_gate::GateError;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::html;

/// Everything a page request can end in other than its page.
#[derive(Debug)]
pub enum WebError {
    /// No live session: sign in, then come back to `next` (a local path).
    SignedOut {
        next: String,
    },
    /// A form without this session's CSRF token, or posted from another site.
    Csrf,
    /// The user may not do this (G6).
    Forbidden(String),
    NotFound(String),
    /// A form or query that makes no sense.
    BadRequest(String),
    /// The store failed; the message is for the log only.
    Unavailable(String),
}

impl From<GateError> for WebError {
    fn from(error: GateError) -> WebError {
        match error {
            GateError::Unauthorized => WebError::SignedOut { next: "/".into() },
            GateError::Forbidden(message) => WebError::Forbidden(message),
            GateError::NotFound(what) => {
                WebError::NotFound(format!("There is no such {what} here."))
            }
            GateError::Unavailable(message) => WebError::Unavailable(message),
            other => WebError::BadRequest(crate::ApiError::from(other).detail()),
        }
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let (status, title, message) = match self {
            WebError::SignedOut { next } => return see_other(&sign_in_url(&next)),
            WebError::Csrf => (
                StatusCode::FORBIDDEN,
                "Form refused",
                "This form did not carry this session's security token (it may come from \
                 another site, or from a page opened before you signed in again). Nothing \
                 was changed. Go back, reload the page and try again."
                    .to_owned(),
            ),
            WebError::Forbidden(message) => {
                (StatusCode::FORBIDDEN, "Not allowed", sentence(&message))
            }
            WebError::NotFound(message) => (StatusCode::NOT_FOUND, "Not found", message),
            WebError::BadRequest(message) => (
                StatusCode::BAD_REQUEST,
                "Cannot do that",
                sentence(&message),
            ),
            WebError::Unavailable(message) => {
                tracing::error!(error = %message, "page failed: storage unavailable");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Try again shortly",
                    "The server cannot complete this right now. Nothing was changed; try \
                     again in a moment."
                        .to_owned(),
                )
            }
        };
        let body = html! {
            section.panel.refusal {
                h1 { (title) }
                p.message { (message) }
                p { a href="/" { "Back to the inbox" } }
            }
        };
        layout::respond(status, layout::page(title, None, body))
    }
}

/// `/login?next=…`, or `/login` when the target is the inbox.
pub fn sign_in_url(next: &str) -> String {
    if next == "/" {
        "/login".to_owned()
    } else {
        let encoded = serde_urlencoded::to_string([("next", next)]).unwrap_or_default();
        format!("/login?{encoded}")
    }
}

/// A 303 to `location` (a local path).
pub fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// The gate's lower-case messages as a sentence.
pub fn sentence(message: &str) -> String {
    let mut chars = message.chars();
    let mut text = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    };
    if !text.ends_with('.') {
        text.push('.');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_as_sentences_and_sign_in_comes_back() {
        assert_eq!(
            sentence("decide approvals needs the approver role"),
            "Decide approvals needs the approver role."
        );
        assert_eq!(sign_in_url("/"), "/login");
        assert_eq!(
            sign_in_url("/approvals/apr_1?x=1"),
            "/login?next=%2Fapprovals%2Fapr_1%3Fx%3D1"
        );
    }
}
