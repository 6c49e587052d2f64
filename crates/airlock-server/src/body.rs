//! Request extractors with the API's own refusals: JSON and text bodies limited to 1 MiB,
//! query strings and path ids — each failure a problem+json [`ApiError`] instead of axum's
//! plain-text rejections.
//!
//! JSON bodies: over 1 MiB → 413 `payload_too_large` (by `Content-Length` up front, and by
//! counting the streamed bytes, for bodies without one); not JSON → 400 `invalid`; JSON of
//! the wrong shape (a top level that is not an object, wrong types, missing or unknown
//! fields — every request type uses `deny_unknown_fields`) → 422 `invalid` naming the
//! field; JSON that is not I-JSON (a duplicate key at any depth, a number a double does not
//! keep exactly: `airlock_digest::ijson`) → 422 `invalid` naming the path, because serde
//! would silently keep another value than the one sent (G2); a content type that says it
//! is not JSON → 415.
//!
//! Endpoints that take no body ([`NoBody`]: redeem, cancel, pause, resume, run a task,
//! revoke a rule) refuse one that carries anything (422), so that a client never believes
//! it sent something the server ignored (a redeem "with other arguments").

use crate::error::ApiError;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The largest request body accepted (DESIGN.md §6).
pub const MAX_BODY: usize = 1024 * 1024;

/// How much of an oversize body is still read (and dropped) before answering 413, so that
/// the client, still writing, reads the answer instead of a connection reset.
const DRAIN_LIMIT: usize = 8 * MAX_BODY;
const DRAIN_TIME: Duration = Duration::from_secs(2);

/// A JSON request body of type `T`.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, ApiError> {
        check_json_content_type(request.headers())?;
        let bytes = read_limited(request).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// The body of an endpoint that takes none: empty, or the empty JSON object `{}` (what
/// clients that always send JSON send). Anything else, whatever its content type, is 422
/// saying so (and naming the fields of an object), and nothing is done.
#[derive(Debug)]
pub struct NoBody;

impl<S: Send + Sync> FromRequest<S> for NoBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, ApiError> {
        let endpoint = format!("{} {}", request.method(), request.uri().path());
        let bytes = read_limited(request).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(NoBody);
        }
        let what = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(serde_json::Value::Object(members)) if members.is_empty() => return Ok(NoBody),
            Ok(serde_json::Value::Object(members)) => {
                let names: Vec<String> = members
                    .keys()
                    .take(10)
                    .map(|key| format!("`{}`", key.escape_debug()))
                    .collect();
                format!("this one has {}", names.join(", "))
            }
            Ok(_) => "this one is JSON other than `{}`".to_owned(),
            Err(_) => "this one is not even JSON".to_owned(),
        };
        Err(ApiError::Invalid(format!(
            "{endpoint} takes no body (or `{{}}`), and {what}; nothing was done"
        )))
    }
}

/// A UTF-8 text body of any content type (the policy upload).
#[derive(Debug)]
pub struct TextBody(pub String);

impl<S: Send + Sync> FromRequest<S> for TextBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, ApiError> {
        let bytes = read_limited(request).await?;
        String::from_utf8(bytes)
            .map(TextBody)
            .map_err(|e| ApiError::Invalid(format!("the body is not UTF-8 text: {e}")))
    }
}

/// Query parameters of type `T`; anything that does not fit is 422.
#[derive(Debug)]
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        serde_urlencoded::from_str(parts.uri.query().unwrap_or(""))
            .map(Query)
            .map_err(|e| ApiError::Invalid(format!("query parameters: {e}")))
    }
}

/// The one `{id}` of a route.
#[derive(Debug)]
pub struct PathId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(id) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::Invalid(format!("path: {e}")))?;
        // No id holds U+0000, and PostgreSQL text cannot even be compared with one.
        if id.contains('\0') {
            return Err(ApiError::NotFound(
                "no such object: ids never hold U+0000".into(),
            ));
        }
        Ok(PathId(id))
    }
}

/// A JSON endpoint takes `application/json` or any `+json` type, and nothing else.
fn check_json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let refuse = |found: &str| {
        ApiError::UnsupportedMediaType(format!(
            "this endpoint takes a JSON body with Content-Type: application/json; got {found}"
        ))
    };
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Err(refuse("no Content-Type"));
    };
    let text = value
        .to_str()
        .map_err(|_| refuse("an unreadable Content-Type"))?;
    let essence = text
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json" || essence.ends_with("+json") {
        Ok(())
    } else {
        Err(refuse(&format!("`{text}`")))
    }
}

/// Reads the whole body, refusing more than [`MAX_BODY`] bytes.
async fn read_limited(request: Request) -> Result<Vec<u8>, ApiError> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse::<u64>().ok());
    let mut stream = request.into_body().into_data_stream();
    if declared.is_some_and(|length| length > MAX_BODY as u64) {
        drain(stream, 0).await;
        return Err(ApiError::PayloadTooLarge);
    }
    let mut bytes = Vec::with_capacity(declared.map_or(0, |n| n as usize));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::MalformedJson(format!("the request body could not be read: {e}"))
        })?;
        if bytes.len() + chunk.len() > MAX_BODY {
            drain(stream, bytes.len() + chunk.len()).await;
            return Err(ApiError::PayloadTooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Reads and drops what is left of a refused body, within limits of size and time.
async fn drain(mut stream: axum::body::BodyDataStream, mut seen: usize) {
    let reading = async {
        while let Some(Ok(chunk)) = stream.next().await {
            seen += chunk.len();
            if seen > DRAIN_LIMIT {
                return;
            }
        }
    };
    // Past either limit the connection is closed with the body unread; that is fine.
    let _ = tokio::time::timeout(DRAIN_TIME, reading).await;
}

/// Parses JSON, telling a syntax error (400) from a shape error (422, with the path); a
/// body whose top level is not an object, or that is not I-JSON, is 422 too.
/// Public for the fuzz target of request bodies (`fuzz/`).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let first = bytes.iter().find(|byte| !byte.is_ascii_whitespace());
    if first.is_some_and(|byte| *byte != b'{') {
        // serde would read an array as a struct's fields in order, which no client means.
        return Err(
            match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
                Ok(_) => ApiError::Invalid("the body must be a JSON object".into()),
                Err(error) => {
                    ApiError::MalformedJson(format!("the body is not valid JSON: {error}"))
                }
            },
        );
    }
    let value = parse_shape(bytes)?;
    if holds_nul(bytes) {
        return Err(ApiError::Invalid(
            "a string holds U+0000 (`\\u0000`), which airlock does not store".into(),
        ));
    }
    airlock_digest::ijson::check(bytes).map_err(|refusal| match refusal {
        airlock_digest::ijson::Refusal::Malformed { .. } => {
            ApiError::MalformedJson(format!("the body is not valid JSON: {refusal}"))
        }
        _ => ApiError::Invalid(refusal.to_string()),
    })?;
    Ok(value)
}

/// Whether the JSON text holds the escape `\u0000` (JSON has no raw NUL in a string): a
/// backslash, itself not escaped, then `u0000`. PostgreSQL text cannot hold U+0000, so
/// both backends refuse it alike (422) rather than one storing it and the other failing.
fn holds_nul(bytes: &[u8]) -> bool {
    bytes.windows(6).enumerate().any(|(at, window)| {
        window == b"\\u0000"
            && bytes[..at]
                .iter()
                .rev()
                .take_while(|byte| **byte == b'\\')
                .count()
                % 2
                == 0
    })
}

fn parse_shape<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => ApiError::Invalid(if path == "." {
                inner.to_string()
            } else {
                format!("{path}: {inner}")
            }),
            _ => ApiError::MalformedJson(format!("the body is not valid JSON: {inner}")),
        }
    })?;
    deserializer
        .end()
        .map_err(|e| ApiError::MalformedJson(format!("the body is not valid JSON: {e}")))?;
    Ok(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use axum::body::Body;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Shape {
        #[allow(dead_code)]
        name: String,
    }

    fn request_with(content_type: Option<&str>, body: impl Into<Body>) -> Request {
        let mut builder = axum::http::Request::builder().method("POST").uri("/");
        if let Some(content_type) = content_type {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        builder.body(body.into()).unwrap()
    }

    async fn extract(content_type: Option<&str>, body: &str) -> Result<Shape, ApiError> {
        JsonBody::<Shape>::from_request(request_with(content_type, body.to_owned()), &())
            .await
            .map(|JsonBody(shape)| shape)
    }

    #[tokio::test]
    async fn json_errors_are_told_apart() {
        let json = Some("application/json; charset=utf-8");
        assert!(extract(json, r#"{"name":"a"}"#).await.is_ok());
        assert!(matches!(
            extract(json, "{").await,
            Err(ApiError::MalformedJson(_))
        ));
        assert!(matches!(
            extract(json, r#"{"name":"a"} x"#).await,
            Err(ApiError::MalformedJson(_))
        ));
        match extract(json, r#"{"name":"a","colour":1}"#).await {
            Err(ApiError::Invalid(message)) => assert!(message.contains("colour"), "{message}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            extract(json, r#"{"name":1}"#).await,
            Err(ApiError::Invalid(_))
        ));
        assert!(matches!(
            extract(Some("text/plain"), "{}").await,
            Err(ApiError::UnsupportedMediaType(_))
        ));
        assert!(matches!(
            extract(None, "{}").await,
            Err(ApiError::UnsupportedMediaType(_))
        ));
        assert!(
            extract(Some("application/merge-patch+json"), r#"{"name":"a"}"#)
                .await
                .is_ok()
        );
    }

    #[test]
    fn only_an_escaped_nul_is_a_nul() {
        assert!(holds_nul(br#"{"a":"\u0000"}"#));
        assert!(holds_nul(br#"{"a":"x\\\u0000"}"#));
        assert!(!holds_nul(br#"{"a":"\\u0000"}"#));
        assert!(holds_nul(br#"{"a":"\u00001"}"#));
        assert!(!holds_nul(br#"{"a":"u0000 \u0001"}"#));
    }

    #[tokio::test]
    async fn streamed_bodies_over_the_limit_are_refused() {
        let chunks = (0..20).map(|_| Ok::<_, std::io::Error>(vec![b' '; 64 * 1024]));
        let body = Body::from_stream(futures::stream::iter(chunks));
        let result = TextBody::from_request(request_with(None, body), &()).await;
        assert!(matches!(result, Err(ApiError::PayloadTooLarge)));
    }
}
