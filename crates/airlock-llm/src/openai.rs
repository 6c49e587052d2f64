//! [`OpenAiClient`]: any OpenAI-compatible `POST {base_url}/chat/completions` with tools,
//! streaming (SSE) or not, with retries and backoff.
//!
//! - `names`: the per-request map between airlock tool names and wire names.
//! - `request`: the request body.
//! - `response`: a non-streaming answer.
//! - `stream`: a streaming answer.
//!
//! The API key is read once, at construction, and only ever leaves as a sensitive
//! `Authorization` header: it is in no `Debug` output, log line or error.

mod names;
mod request;
mod response;
mod stream;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rand::Rng;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};

use crate::{ChatRequest, Completion, LlmConfig, LlmError, Provider};
use names::ToolNames;

/// The longest `Retry-After` the client honours; a server asking for more gets this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How much of an error body an [`LlmError::Status`] keeps.
const MAX_ERROR_BODY_CHARS: usize = 500;

/// How patient the client is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    /// The longest the server may stay silent within one try: until the response headers
    /// arrive, then between two pieces of the body. A model that keeps streaming is never
    /// cut off, however long its answer; one that stops sending is. Default 120 s.
    pub idle_timeout: Duration,
    /// Tries after the first one, for retryable failures. Default 3.
    pub max_retries: u32,
    /// The wait before the first retry; it doubles on each further retry, with jitter. A
    /// `Retry-After: <seconds>` from the server replaces it (capped at 60 s). Default 500 ms.
    pub backoff: Duration,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            idle_timeout: Duration::from_secs(120),
            max_retries: 3,
            backoff: Duration::from_millis(500),
        }
    }
}

/// A client of one OpenAI-compatible endpoint and model.
pub struct OpenAiClient {
    http: reqwest::Client,
    /// `{base_url}/chat/completions`.
    endpoint: url::Url,
    model: String,
    stream: bool,
    /// `Bearer <key>`, marked sensitive.
    authorization: Option<HeaderValue>,
    options: ClientOptions,
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("endpoint", &self.endpoint.as_str())
            .field("model", &self.model)
            .field("stream", &self.stream)
            .field(
                "api_key",
                &self.authorization.as_ref().map(|_| "<redacted>"),
            )
            .field("options", &self.options)
            .finish()
    }
}

impl OpenAiClient {
    /// Checks the configuration and reads the API key from the environment variable named
    /// by `config.api_key_env` (no variable named: no `Authorization` header).
    pub fn new(config: &LlmConfig, options: ClientOptions) -> Result<OpenAiClient, LlmError> {
        let endpoint = endpoint(&config.base_url)?;
        if config.model.trim().is_empty() {
            return Err(LlmError::Config("the model name is empty".into()));
        }
        let authorization = match &config.api_key_env {
            None => None,
            Some(variable) => Some(authorization(variable)?),
        };
        let http = reqwest::Client::builder()
            .build()
            .map_err(|error| LlmError::Config(format!("cannot build the HTTP client: {error}")))?;
        Ok(OpenAiClient {
            http,
            endpoint,
            model: config.model.clone(),
            stream: config.stream.unwrap_or(false),
            authorization,
            options,
        })
    }

    /// Why `base_url` cannot be an endpoint's `/v1` URL, if it cannot (the check
    /// [`OpenAiClient::new`] makes first, for settings checked before they are saved).
    pub fn check_base_url(base_url: &str) -> Result<(), LlmError> {
        endpoint(base_url).map(|_| ())
    }

    /// One try: send, check the status, read the answer.
    async fn attempt(
        &self,
        body: &[u8],
        names: &ToolNames,
        on_delta: &(dyn Fn(&str) + Send + Sync),
        delivered: &AtomicBool,
    ) -> Result<Completion, Failure> {
        let mut builder = self
            .http
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if self.stream {
            builder = builder.header(ACCEPT, "text/event-stream");
        }
        if let Some(authorization) = &self.authorization {
            builder = builder.header(AUTHORIZATION, authorization.clone());
        }
        let idle = self.options.idle_timeout;
        let response = tokio::time::timeout(idle, builder.send())
            .await
            .map_err(|_elapsed| {
                Failure::from(LlmError::Timeout(format!(
                    "no answer within {}",
                    seconds(idle)
                )))
            })?
            .map_err(|error| Failure::from(transport_error(&error)))?;

        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let body = read_body(response, idle).await.unwrap_or_default();
            let error = LlmError::Status {
                status: status.as_u16(),
                body: truncate(&String::from_utf8_lossy(&body)),
            };
            return Err(Failure { error, retry_after });
        }
        // A server may ignore `stream: true` and answer with one JSON object.
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("application/json"));
        if self.stream && !is_json {
            return Ok(stream::read(response, idle, names, on_delta, delivered).await?);
        }
        let bytes = read_body(response, idle).await?;
        let completion = response::parse(&bytes, names)?;
        if let Some(text) = completion.text.as_deref().filter(|text| !text.is_empty()) {
            delivered.store(true, Ordering::SeqCst);
            on_delta(text);
        }
        Ok(completion)
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiClient {
    async fn complete(
        &self,
        request: &ChatRequest,
        on_delta: &(dyn for<'a> Fn(&'a str) + Send + Sync),
    ) -> Result<Completion, LlmError> {
        let names = ToolNames::for_request(request);
        let body = request::encode(&self.model, self.stream, request, &names)?;
        let mut retry = 0;
        loop {
            let delivered = AtomicBool::new(false);
            let failure = match self.attempt(&body, &names, on_delta, &delivered).await {
                Ok(completion) => return Ok(completion),
                Err(failure) => failure,
            };
            // Text the user already saw cannot be taken back: a retry would show it twice.
            if retry >= self.options.max_retries
                || !failure.error.is_retryable()
                || delivered.load(Ordering::SeqCst)
            {
                return Err(failure.error);
            }
            let delay = retry_delay(self.options.backoff, retry, failure.retry_after);
            tracing::warn!(error = %failure.error, retry = retry + 1, ?delay, "retrying the llm request");
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }
}

/// A failed try, with the server's `Retry-After` when it sent one.
struct Failure {
    error: LlmError,
    retry_after: Option<Duration>,
}

impl From<LlmError> for Failure {
    fn from(error: LlmError) -> Failure {
        Failure {
            error,
            retry_after: None,
        }
    }
}

/// A whole (non-streamed) body, read piece by piece: the server may pause up to `idle`
/// between two pieces.
async fn read_body(response: reqwest::Response, idle: Duration) -> Result<Vec<u8>, LlmError> {
    use futures::StreamExt;
    let mut pieces = response.bytes_stream();
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout(idle, pieces.next()).await {
            Err(_elapsed) => return Err(silent(idle)),
            Ok(None) => return Ok(body),
            Ok(Some(Err(error))) => return Err(transport_error(&error)),
            Ok(Some(Ok(piece))) => body.extend_from_slice(&piece),
        }
    }
}

/// The server sent nothing for `idle` in the middle of its answer.
pub(crate) fn silent(idle: Duration) -> LlmError {
    LlmError::Timeout(format!(
        "the server sent nothing for {} in the middle of its answer",
        seconds(idle)
    ))
}

/// `1.5s`, `120s`: durations in messages.
fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

/// `{base_url}/chat/completions`, for an http(s) base URL with or without a trailing slash.
fn endpoint(base_url: &str) -> Result<url::Url, LlmError> {
    let bad = |why: String| LlmError::Config(format!("bad base URL `{base_url}`: {why}"));
    let base = url::Url::parse(base_url.trim()).map_err(|error| bad(error.to_string()))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https".into()));
    }
    if base.query().is_some() || base.fragment().is_some() {
        return Err(bad("it must not have a query or fragment".into()));
    }
    let joined = format!("{}/chat/completions", base.as_str().trim_end_matches('/'));
    url::Url::parse(&joined).map_err(|error| bad(error.to_string()))
}

/// The `Authorization` header from the key in `variable`. The error names the variable,
/// never its value.
fn authorization(variable: &str) -> Result<HeaderValue, LlmError> {
    let key = std::env::var(variable).unwrap_or_default();
    let key = key.trim();
    if key.is_empty() {
        return Err(LlmError::Config(format!(
            "the API key variable {variable} (api_key_env) is not set or empty"
        )));
    }
    let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
        LlmError::Config(format!(
            "the API key in {variable} has characters a header cannot carry"
        ))
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// Describes a reqwest error with its causes (reqwest's own message is often just "error
/// sending request"); a timeout becomes [`LlmError::Timeout`].
pub(crate) fn transport_error(error: &reqwest::Error) -> LlmError {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    if error.is_timeout() {
        LlmError::Timeout(message)
    } else {
        LlmError::Transport(message)
    }
}

/// `Retry-After` in seconds (the HTTP-date form is rare from LLM servers and ignored).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: f64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (seconds.is_finite() && seconds >= 0.0)
        .then(|| Duration::from_secs_f64(seconds.min(MAX_RETRY_AFTER.as_secs_f64())))
}

/// The wait before retry number `retry` (0-based): the server's `Retry-After` when given,
/// else `backoff * 2^retry` scaled by a random factor in [0.5, 1] so clients that failed
/// together do not retry together.
fn retry_delay(backoff: Duration, retry: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(retry_after) = retry_after {
        return retry_after.min(MAX_RETRY_AFTER);
    }
    let doubled = backoff.saturating_mul(1 << retry.min(16));
    doubled
        .mul_f64(rand::rng().random_range(0.5..=1.0))
        .min(MAX_RETRY_AFTER)
}

/// The first [`MAX_ERROR_BODY_CHARS`] characters of an error body.
fn truncate(body: &str) -> String {
    let mut truncated: String = body.chars().take(MAX_ERROR_BODY_CHARS).collect();
    if truncated.len() < body.len() {
        truncated.push('…');
    }
    truncated
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn endpoints_tolerate_a_trailing_slash_and_refuse_odd_urls() {
        for base in ["http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/"] {
            assert_eq!(
                endpoint(base).unwrap().as_str(),
                "http://127.0.0.1:8080/v1/chat/completions"
            );
        }
        assert_eq!(
            endpoint("https://api.openai.com/v1").unwrap().as_str(),
            "https://api.openai.com/v1/chat/completions"
        );
        for bad in ["", "localhost:8080", "ftp://host/v1", "http://host/v1?x=1"] {
            assert!(matches!(endpoint(bad), Err(LlmError::Config(_))), "{bad}");
        }
    }

    #[test]
    fn delays_double_with_jitter_and_honour_retry_after() {
        let backoff = Duration::from_millis(100);
        for retry in 0..4 {
            let full = backoff * 2u32.pow(retry);
            let delay = retry_delay(backoff, retry, None);
            assert!(delay >= full / 2 && delay <= full, "{retry}: {delay:?}");
        }
        assert_eq!(
            retry_delay(backoff, 0, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(
            retry_delay(backoff, 0, Some(Duration::from_secs(3600))),
            MAX_RETRY_AFTER
        );
        assert!(retry_delay(Duration::from_secs(10), 30, None) <= MAX_RETRY_AFTER);
    }

    #[test]
    fn retry_after_reads_seconds_only() {
        let headers = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
            headers
        };
        assert_eq!(retry_after(&headers("2")), Some(Duration::from_secs(2)));
        assert_eq!(
            retry_after(&headers("0.5")),
            Some(Duration::from_millis(500))
        );
        assert_eq!(retry_after(&headers("Wed, 21 Oct 2015 07:28:00 GMT")), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn error_bodies_are_truncated_on_a_character_boundary() {
        let body = "é".repeat(600);
        let truncated = truncate(&body);
        assert_eq!(truncated.chars().count(), MAX_ERROR_BODY_CHARS + 1);
        assert_eq!(truncate("short"), "short");
    }
}
