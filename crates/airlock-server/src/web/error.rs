//! How a page request ends when it does not succeed: a page that says what happened and
//! what to do, with the right status — or, with no session, a 303 to the sign-in page.
//!
//! The API answers problem+json ([`crate::ApiError`]); a person gets HTML. Server trouble
//! says nothing internal on the page and is logged once, here.

use crate::web::layout;
use airlock_gate::GateError;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::html;

/// Everything a page request can end in other than its page.
#[derive(Debug)]
pub enum WebError {
    /// No live session: sign in, then come back to `next` (a local path).
    SignedOut {
        next: String,
    },
    /// No session cookie on a navigation that started on another site, which a browser
    /// never sends a `SameSite=Strict` cookie with: go on to `next` from this site
    /// ([`continue_page`]).
    FromAnotherSite {
        next: String,
    },
    /// A form without this session's CSRF token, or posted from another site.
    Csrf,
    /// The user may not do this (G6).
    Forbidden(String),
    NotFound(String),
    /// A form or query that makes no sense.
    BadRequest(String),
    /// A change refused as things stand (the API's 409s): nothing was changed.
    Conflict(String),
    /// A form larger than any page posts (413, as the API's `payload_too_large`).
    TooLarge(String),
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
            // The API's status decides between "cannot do that" and "refused as things
            // stand" (an edit the policy denies, a call already reconciled: 409, as G3).
            other => {
                let problem = crate::ApiError::from(other).problem();
                if problem.status == StatusCode::CONFLICT.as_u16() {
                    WebError::Conflict(problem.detail)
                } else {
                    WebError::BadRequest(problem.detail)
                }
            }
        }
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let (status, title, message) = match self {
            WebError::SignedOut { next } => return see_other(&sign_in_url(&next)),
            WebError::FromAnotherSite { next } => return continue_page(&next),
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
            WebError::Conflict(message) => (
                StatusCode::CONFLICT,
                "Nothing was changed",
                sentence(&message),
            ),
            WebError::TooLarge(message) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "Too large",
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

/// A page that goes on to `next` (a local path) at once, by a navigation that starts on
/// this site, so that the browser sends its `SameSite=Strict` session cookie; a link for
/// a browser that does not follow `refresh`. The arrival from another site (a link in a
/// mail or a chat) lands here; a browser without a session then meets the sign-in page
/// as usual.
pub fn continue_page(next: &str) -> Response {
    let body = html! {
        section.panel {
            h1 { "Opening…" }
            p { a #continue href=(next) { "Continue to airlock" } }
        }
    };
    let mut response = layout::respond(StatusCode::OK, layout::page("Opening", None, body));
    if let Ok(value) = HeaderValue::from_str(&format!("0; url={next}")) {
        response
            .headers_mut()
            .insert(HeaderName::from_static("refresh"), value);
    }
    response
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
