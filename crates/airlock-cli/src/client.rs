//! The small blocking HTTP client the client commands share: where the server is, which
//! token to send, and how a failed request becomes a message and an exit code.
//!
//! Errors come back as `application/problem+json` (DESIGN.md §6). A refusal the person
//! can act on (403 forbidden, 409 already decided / binding mismatch / stale, 422 invalid)
//! is a [`Refused`] and exits 1; anything else (unreachable server, 401, 404, 5xx) is a
//! plain error and exits 2.

use anyhow::{anyhow, Context};
use clap::Args;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The options every client command takes (after the command name, anywhere).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Client options")]
pub struct ClientArgs {
    /// The airlock server to talk to.
    #[arg(
        long,
        global = true,
        env = "AIRLOCK_URL",
        default_value = "http://127.0.0.1:7070"
    )]
    pub url: String,
    /// Bearer token [default: the contents of DATA_DIR/owner.token when present].
    #[arg(long, global = true, env = "AIRLOCK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The data folder of a local `airlock serve`, whose owner.token is the default token.
    #[arg(long, global = true, default_value = "airlock-data")]
    pub data_dir: PathBuf,
    /// Print the API's JSON as it is, instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
}

/// A request the server refused on its merits (403, 409, 422): the command exits 1.
#[derive(Debug)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// A request whose answer never came: the server was unreachable, the connection broke,
/// or the server failed (5xx). The same request may be sent again; a redeem only under
/// the same `Idempotency-Key` (DESIGN.md §11.8).
#[derive(Debug)]
pub struct Transient(pub String);

impl fmt::Display for Transient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Transient {}

/// A [`Transient`] failure before anything was sent: no connection could be opened, so
/// the server cannot have acted on the request.
#[derive(Debug)]
pub struct NotSent(pub String);

impl fmt::Display for NotSent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotSent {}

/// Whether `error` is a [`Transient`] or [`NotSent`] failure.
pub fn is_transient(error: &anyhow::Error) -> bool {
    error.downcast_ref::<Transient>().is_some() || is_not_sent(error)
}

/// Whether `error` is a [`NotSent`] failure.
pub fn is_not_sent(error: &anyhow::Error) -> bool {
    error.downcast_ref::<NotSent>().is_some()
}

/// The size of each of a connection's two buffers (the response headers must fit in one).
const BUFFER_SIZE: usize = 16 * 1024;

/// How long to wait for the response headers. Long polls hold a request for up to 60 s.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(90);

pub struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Client {
    pub fn new(args: &ClientArgs) -> Client {
        // An explicit token (flag or environment) wins; an empty one counts as none.
        let token = args
            .token
            .clone()
            .filter(|token| !token.trim().is_empty())
            .or_else(|| std::fs::read_to_string(args.data_dir.join("owner.token")).ok())
            .map(|token| token.trim().to_owned())
            .filter(|token| !token.is_empty());
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
        Client {
            base: args.url.trim_end_matches('/').to_owned(),
            token,
            agent,
        }
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
        let message = format!("cannot reach airlock at {}: {error}", self.base);
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
        if status == 401 {
            let hint = if self.token.is_none() {
                " (no token was given and no owner.token was found)"
            } else {
                ""
            };
            return Err(anyhow!("unauthorized: check --token/AIRLOCK_TOKEN{hint}"));
        }
        let text = response.body_mut().read_to_string().unwrap_or_default();
        let message = match serde_json::from_str::<airlock_protocol::Problem>(&text) {
            Ok(problem) if problem.detail.is_empty() => problem.title,
            Ok(problem) => format!("{}: {}", problem.title, problem.detail),
            Err(_) if text.trim().is_empty() => format!("the server answered {status}"),
            Err(_) => format!("the server answered {status}: {}", text.trim()),
        };
        if matches!(status, 403 | 409 | 422) {
            Err(Refused(message).into())
        } else if status >= 500 {
            Err(Transient(message).into())
        } else {
            Err(anyhow!(message))
        }
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
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
