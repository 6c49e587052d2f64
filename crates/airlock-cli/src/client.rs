//! The blocking HTTP client (ureq, `http://` and `https://`) the client commands share.
//! Its options, its token and how a failed request becomes a message and an exit code are
//! `airlock-client`'s ([`ClientArgs`], [`airlock_client::errors`]), which the front binary
//! shares for `airlock hook`.

pub use airlock_client::args::ClientArgs;
pub use airlock_client::errors::{NotSent, Refused, Transient};

use airlock_client::errors::from_status;
use airlock_client::hook::{Post, Posted};
use airlock_hooks::place::UNDECIDED_HEADER;
use anyhow::Context;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// The size of each of a connection's two buffers (the response headers must fit in one).
const BUFFER_SIZE: usize = 16 * 1024;

/// How long to wait for the response headers. Long polls hold a request for up to 60 s.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(90);

pub struct Client {
    base: String,
    /// `base` as messages show it: without a user and password (G9).
    shown: String,
    token: Option<String>,
    agent: ureq::Agent,
    /// Whether a non-2xx answer's error carries its [`HttpStatus`].
    naming_status: bool,
}

/// The status of a non-2xx answer, on the errors of a client made with
/// [`Client::naming_status`] (as the error's context: downcasting to [`Refused`] or
/// [`Transient`] still works). Its `{:#}` reads `airlock answered 404 Not Found: …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpStatus(pub u16);

impl std::fmt::Display for HttpStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "airlock answered {}", self.0)?;
        let reason = ureq::http::StatusCode::from_u16(self.0)
            .ok()
            .and_then(|status| status.canonical_reason());
        match reason {
            Some(reason) => write!(f, " {reason}"),
            None => Ok(()),
        }
    }
}

pub use airlock_client::url::{hide_userinfo, without_userinfo};

impl Client {
    pub fn new(args: &ClientArgs) -> Client {
        let token = args.resolve_token();
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // Zeroed on every connection: ureq's 128 KiB default (twice) was a measurable
            // part of a hook's process (a new one per tool call); a body larger than this
            // streams through it in pieces.
            .input_buffer_size(BUFFER_SIZE)
            .output_buffer_size(BUFFER_SIZE)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_recv_response(Some(RESPONSE_TIMEOUT))
            .build()
            .into();
        let base = args.base();
        Client {
            shown: without_userinfo(&base),
            base,
            token,
            agent,
            naming_status: false,
        }
    }

    /// The same client, whose errors for non-2xx answers carry their [`HttpStatus`].
    pub fn naming_status(mut self) -> Client {
        self.naming_status = true;
        self
    }

    /// `GET path` (path includes any query string), as JSON.
    pub fn get(&self, path: &str) -> anyhow::Result<Value> {
        let mut response = self.get_raw(path)?;
        read_json(&mut response)
    }

    /// `POST path` with a JSON body, as JSON.
    pub fn post(&self, path: &str, body: &impl Serialize) -> anyhow::Result<Value> {
        self.post_with(path, body, &[])
    }

    /// `POST path` with a JSON body and extra headers, as JSON. A body that breaks off
    /// is [`Transient`], like a connection that does.
    pub fn post_with(
        &self,
        path: &str,
        body: &impl Serialize,
        headers: &[(&str, String)],
    ) -> anyhow::Result<Value> {
        let mut request = self.agent.post(format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request
            .send_json(body)
            .map_err(|error| self.unreachable(error))?;
        let mut response = self.check(response)?;
        read_json(&mut response).map_err(|error| Transient(format!("{error:#}")).into())
    }

    /// `POST path` with a body that is already JSON text, and extra headers; returns the
    /// successful response for the caller to read (its headers too).
    pub fn post_text(
        &self,
        path: &str,
        body: &str,
        headers: &[(&str, String)],
    ) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        let mut request = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/json");
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request
            .send(body)
            .map_err(|error| self.unreachable(error))?;
        self.check(response)
    }

    /// `PUT path` with a text body of `content_type`, as JSON.
    pub fn put_text(&self, path: &str, body: &str, content_type: &str) -> anyhow::Result<Value> {
        let mut request = self
            .agent
            .put(format!("{}{path}", self.base))
            .header("Content-Type", content_type);
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let response = request
            .send(body)
            .map_err(|error| self.unreachable(error))?;
        let mut response = self.check(response)?;
        read_json(&mut response)
    }

    /// `GET path`, returning the successful response for the caller to stream.
    pub fn get_raw(&self, path: &str) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        let mut request = self.agent.get(format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let response = request.call().map_err(|error| self.unreachable(error))?;
        self.check(response)
    }

    fn unreachable(&self, error: ureq::Error) -> anyhow::Error {
        // The error may quote the URL it was given: never its password.
        let reason = hide_userinfo(&error.to_string(), &self.base);
        let message = format!("cannot reach airlock at {}: {reason}", self.shown);
        let refused = match &error {
            ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::ConnectionRefused,
            ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => true,
            _ => false,
        };
        if refused {
            NotSent(message).into()
        } else {
            Transient(message).into()
        }
    }

    /// Turns a non-2xx response into the error its problem body describes.
    fn check(
        &self,
        mut response: ureq::http::Response<ureq::Body>,
    ) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let text = response.body_mut().read_to_string().unwrap_or_default();
        let error = from_status(status, &text, self.token.is_some());
        if self.naming_status {
            return Err(error.context(HttpStatus(status)));
        }
        Err(error)
    }
}

/// The hook's request, for `https://` gateways (the front binary takes `http://` ones).
impl Post for Client {
    fn post_text(
        &self,
        path: &str,
        body: &str,
        headers: &[(&str, String)],
    ) -> anyhow::Result<Posted> {
        let mut response = Client::post_text(self, path, body, headers)?;
        let undecided = response.headers().contains_key(UNDECIDED_HEADER);
        let body = response
            .body_mut()
            .with_config()
            .limit(16 * 1024 * 1024)
            .read_to_vec()
            .map_err(|error| Transient(format!("the server's answer broke off: {error}")))?;
        Ok(Posted { undecided, body })
    }
}

pub fn read_json(response: &mut ureq::http::Response<ureq::Body>) -> anyhow::Result<Value> {
    response
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_json()
        .context("the server's answer is not JSON")
}

/// Reads a typed object out of an API answer (kept as `Value` for `--json`).
pub fn parse<T: DeserializeOwned>(value: &Value, what: &str) -> anyhow::Result<T> {
    serde_json::from_value(value.clone())
        .with_context(|| format!("the server's answer is not {what}"))
}

/// Percent-encodes one path segment or query value.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(byte))
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// Prints a JSON answer for `--json`.
#[allow(clippy::print_stdout)]
pub fn print_json(value: &Value) -> anyhow::Result<()> {
    crate::table::write_stdout(&format!("{}\n", serde_json::to_string_pretty(value)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_names_its_code_and_reason() {
        assert_eq!(
            HttpStatus(413).to_string(),
            "airlock answered 413 Payload Too Large"
        );
        assert_eq!(HttpStatus(599).to_string(), "airlock answered 599");
        let error = anyhow::Error::from(Refused("no".into())).context(HttpStatus(409));
        assert!(error.downcast_ref::<Refused>().is_some());
        assert_eq!(error.downcast_ref::<HttpStatus>(), Some(&HttpStatus(409)));
        assert_eq!(format!("{error:#}"), "airlock answered 409 Conflict: no");
    }
}
