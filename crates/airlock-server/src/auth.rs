//! Authentication as an extractor: `Authorization: Bearer <token>` → the [`Principal`] the
//! gate resolves it to. A missing header, another scheme, or a token nobody holds is 401
//! `unauthorized`; what the principal may then do is the gate's question (G6), not this
//! file's.

use crate::error::ApiError;
use crate::AppState;
use airlock_protocol::Principal;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

/// The caller, authenticated.
#[derive(Debug, Clone)]
pub struct Auth(pub Principal);

impl FromRequestParts<AppState> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer_token(parts)?;
        Ok(Auth(state.gate.authenticate(token).await?))
    }
}

fn bearer_token(parts: &Parts) -> Result<&str, ApiError> {
    let refuse = |why: &str| ApiError::Unauthorized(why.to_owned());
    let header = parts
        .headers
        .get(AUTHORIZATION)
        .ok_or_else(|| refuse("an `Authorization: Bearer <token>` header is required"))?;
    let value = header
        .to_str()
        .map_err(|_| refuse("the Authorization header is not readable text"))?;
    match value.trim().split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            Ok(token.trim())
        }
        _ => Err(refuse("the Authorization header must be `Bearer <token>`")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parts(header: Option<&str>) -> Parts {
        let mut builder = axum::http::Request::builder().uri("/");
        if let Some(header) = header {
            builder = builder.header(AUTHORIZATION, header);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[test]
    fn only_bearer_tokens_are_read() {
        assert_eq!(bearer_token(&parts(Some("Bearer abc"))).unwrap(), "abc");
        assert_eq!(bearer_token(&parts(Some("bearer  abc "))).unwrap(), "abc");
        assert!(bearer_token(&parts(Some("Basic abc"))).is_err());
        assert!(bearer_token(&parts(Some("Bearer "))).is_err());
        assert!(bearer_token(&parts(Some("abc"))).is_err());
        assert!(bearer_token(&parts(None)).is_err());
    }
}
