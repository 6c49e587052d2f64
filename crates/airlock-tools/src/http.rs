//! `http.fetch`: one GET to an allowed host, with a time limit and a size cap.
//!
//! The host allowlist is checked before any connection is made, and again for every
//! redirect, which is therefore followed by hand (at most [`MAX_REDIRECTS`]). Hosts are
//! matched exactly like the policy's `domain` matcher (`airlock_policy::matcher::domain`):
//! WHATWG URL parsing, lower-case punycode, whole labels, `*.example.com` for any
//! subdomain. Proxies from the environment are ignored, so the host checked is the host
//! connected to.

use airlock_policy::matcher::domain::{host_of, DomainPattern};
use serde_json::{json, Value};
use url::Url;

use crate::execute::{utf8_text, ToolContext};

/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 3;

/// `url` parsed, provided it is an `http` or `https` URL with a host.
pub(crate) fn parse_url(url: &str) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|error| format!("is not a URL: {error}"))?;
    match parsed.scheme() {
        "http" | "https" => {}
        scheme => {
            return Err(format!(
                "has scheme `{scheme}`: only http and https can be fetched"
            ))
        }
    }
    if parsed.host().is_none() {
        return Err("has no host".to_string());
    }
    Ok(parsed)
}

/// `http.fetch`: `{status, content_type, body, truncated}`.
pub(crate) async fn fetch(url: &str, context: &ToolContext) -> Result<Value, String> {
    let allow = context
        .http_allow
        .iter()
        .map(|pattern| {
            DomainPattern::compile(pattern).map_err(|error| format!("http_allow: {error}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut url = parse_url(url).map_err(|reason| format!("url {reason}"))?;
    check_host(&url, &allow)?;

    let timeout = context.limits.http_timeout;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(timeout)
        .build()
        .map_err(|error| format!("cannot build the HTTP client: {}", describe(error)))?;
    let max_bytes = context.limits.http_max_bytes;
    let fetching = async {
        let mut redirects = 0;
        loop {
            let response = client
                .get(url.clone())
                .send()
                .await
                .map_err(|error| format!("GET {url} failed: {}", describe(error)))?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|location| location.to_str().ok());
            let redirect = matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308);
            match location {
                Some(location) if redirect => {
                    if redirects == MAX_REDIRECTS {
                        return Err(format!("more than {MAX_REDIRECTS} redirects"));
                    }
                    redirects += 1;
                    let next = url
                        .join(location)
                        .map_err(|error| format!("redirect to an invalid URL: {error}"))
                        .and_then(|next| {
                            parse_url(next.as_str()).map_err(|reason| {
                                format!("redirect to {next} refused: the URL {reason}")
                            })
                        })?;
                    check_host(&next, &allow)
                        .map_err(|reason| format!("redirect to {next} refused: {reason}"))?;
                    url = next;
                }
                _ => return read_body(response, max_bytes).await,
            }
        }
    };
    match tokio::time::timeout(timeout, fetching).await {
        Ok(result) => result,
        Err(_) => Err(format!("timed out after {} ms", timeout.as_millis())),
    }
}

/// Refuses a URL whose host no pattern of the allowlist matches.
fn check_host(url: &Url, allow: &[DomainPattern]) -> Result<(), String> {
    let host = host_of(url.as_str()).ok_or_else(|| format!("{url} has no host"))?;
    if allow.iter().any(|pattern| pattern.is_match(&host)) {
        Ok(())
    } else {
        Err(format!(
            "host {host} is not in the allowed hosts (http_allow)"
        ))
    }
}

/// Reads the body up to `max_bytes`, then stops reading.
async fn read_body(mut response: reqwest::Response, max_bytes: usize) -> Result<Value, String> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| format!("reading the body failed: {}", describe(error)))?
    {
        let room = max_bytes.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let body = utf8_text(body, truncated).ok_or_else(|| {
        let content_type = content_type.as_deref().unwrap_or("none");
        format!("the body is not UTF-8 text (status {status}, content type {content_type})")
    })?;
    Ok(json!({
        "status": status,
        "content_type": content_type,
        "body": body,
        "truncated": truncated,
    }))
}

/// A reqwest error with its causes: its own message alone ("error sending request") does
/// not say what went wrong.
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
