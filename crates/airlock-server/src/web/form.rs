//! Form and query extractors of the pages, refusing as pages do ([`WebError`]).
//!
//! [`Posted`] is the only way a page handler reads a form, so every form POST of a
//! signed-in page passes the same checks, in this order: the browser does not say the
//! request came from another site (`Sec-Fetch-Site`), there is a live session (else a 303
//! to the sign-in page), the body is a small urlencoded form, and its `csrf` field is the
//! session's token (constant-time). A refusal happens before the handler runs, so nothing
//! changes.

use crate::web::error::WebError;
use crate::web::session::{same_secret, WebUser};
use crate::AppState;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// The largest form a page posts: the policy form carries a whole policy, as large as
/// the API takes one (`PUT /v1/policy`, 1 MiB), urlencoded; every other form is small.
pub const MAX_FORM: usize = 3 * 1024 * 1024;

/// A form posted by a signed-in user, CSRF-checked.
#[derive(Debug)]
pub struct Posted<T> {
    pub user: WebUser,
    pub form: T,
}

#[derive(Deserialize)]
struct CsrfField {
    #[serde(default)]
    csrf: Option<String>,
}

impl<T: DeserializeOwned> FromRequest<AppState> for Posted<T> {
    type Rejection = WebError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, WebError> {
        let (mut parts, body) = request.into_parts();
        refuse_cross_site(&parts.headers)?;
        let user = WebUser::from_request_parts(&mut parts, state).await?;
        let bytes = read_form(body).await?;
        let given: CsrfField = serde_urlencoded::from_bytes(&bytes).map_err(bad_form)?;
        if !given
            .csrf
            .as_deref()
            .is_some_and(|csrf| same_secret(csrf, &user.csrf))
        {
            return Err(WebError::Csrf);
        }
        let form = serde_urlencoded::from_bytes(&bytes).map_err(bad_form)?;
        Ok(Posted { user, form })
    }
}

/// A form posted without a session (the sign-in form).
#[derive(Debug)]
pub struct AnonymousForm<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for AnonymousForm<T> {
    type Rejection = WebError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, WebError> {
        let (parts, body) = request.into_parts();
        refuse_cross_site(&parts.headers)?;
        let bytes = read_form(body).await?;
        serde_urlencoded::from_bytes(&bytes)
            .map(AnonymousForm)
            .map_err(bad_form)
    }
}

/// Query parameters of a page.
#[derive(Debug)]
pub struct PageQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for PageQuery<T> {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, WebError> {
        serde_urlencoded::from_str(parts.uri.query().unwrap_or(""))
            .map(PageQuery)
            .map_err(|error| {
                WebError::BadRequest(format!("the address is not understood: {error}"))
            })
    }
}

/// Browsers say where a request comes from (`Sec-Fetch-Site`); a form posted from
/// another site is refused whatever it carries. This also covers the sign-in form, which
/// has no session to hold a CSRF token yet. Clients that send no such header (scripts,
/// old browsers) rely on the CSRF token alone.
fn refuse_cross_site(headers: &HeaderMap) -> Result<(), WebError> {
    match headers
        .get("sec-fetch-site")
        .and_then(|value| value.to_str().ok())
    {
        Some("cross-site" | "same-site") => Err(WebError::Csrf),
        _ => Ok(()),
    }
}

async fn read_form(body: axum::body::Body) -> Result<axum::body::Bytes, WebError> {
    axum::body::to_bytes(body, MAX_FORM)
        .await
        .map_err(|_| WebError::TooLarge(format!("forms are limited to {MAX_FORM} bytes")))
}

fn bad_form(error: serde_urlencoded::de::Error) -> WebError {
    WebError::BadRequest(format!("the form is not understood: {error}"))
}

/// An optional text field: empty or blank means absent.
pub fn filled(field: Option<String>) -> Option<String> {
    field
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
}
