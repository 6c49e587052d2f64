//! Executing a [`Plan::Run`] tool: the context it runs in, its limits, and what it hands
//! back to the model.
//!
//! Every failure — bad arguments, a refused path or host, a timeout — is a
//! [`ToolOutput`] with `ok: false` and `{"error": "..."}`, never a Rust error or a panic:
//! the runtime passes it to the model as the tool result and the run goes on.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::plan::Plan;
use crate::{fs, http, shell, Builtins, ToolError};

/// Where the runtime's tools run and what they may touch.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The directory `fs.*` and `shell.exec` are confined to (and `shell.exec`'s `HOME`).
    pub workspace_dir: PathBuf,
    /// Host globs `http.fetch` may reach (`*.example.com`, `127.0.0.1`), matched like the
    /// policy's `domain` matcher; empty → nothing is allowed.
    pub http_allow: Vec<String>,
    /// Size and time limits.
    pub limits: Limits,
}

/// Size and time limits of the built-in tools.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Whole `http.fetch`, redirects and body included.
    pub http_timeout: Duration,
    /// Bytes of response body kept by `http.fetch`; the rest is not read.
    pub http_max_bytes: usize,
    /// Wall time of one `shell.exec`; then its whole process group is killed.
    pub shell_timeout: Duration,
    /// Bytes kept of `shell.exec`'s stdout, and as many of its stderr.
    pub output_max_bytes: usize,
    /// Bytes `fs.read` returns and `fs.write` accepts.
    pub fs_max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            http_timeout: Duration::from_secs(10),
            http_max_bytes: 1024 * 1024,
            shell_timeout: Duration::from_secs(30),
            output_max_bytes: 64 * 1024,
            fs_max_bytes: 1024 * 1024,
        }
    }
}

/// The outcome of one execution; `output` goes back to the model as the tool result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Whether the tool did what was asked.
    pub ok: bool,
    /// The result, or `{"error": "..."}`.
    pub output: Value,
}

impl ToolOutput {
    /// A failure the model is told about.
    pub fn error(message: impl Into<String>) -> ToolOutput {
        ToolOutput {
            ok: false,
            output: json!({"error": message.into()}),
        }
    }

    /// `Ok` → `ok: true` with the value; `Err` → [`ToolOutput::error`].
    pub(crate) fn from_result(result: Result<Value, String>) -> ToolOutput {
        match result {
            Ok(output) => ToolOutput { ok: true, output },
            Err(message) => ToolOutput::error(message),
        }
    }
}

impl Builtins {
    /// Executes a [`Plan::Run`] tool. Never panics; every failure is
    /// `ToolOutput { ok: false, output: {"error": "..."} }`. The arguments are validated
    /// again here, so a caller that skipped [`Builtins::plan`] gets the same errors.
    pub async fn execute(name: &str, arguments: &Value, context: &ToolContext) -> ToolOutput {
        match Builtins::plan(name, arguments) {
            Err(error) => return ToolOutput::error(error.to_string()),
            Ok(Plan::Outbox(_)) => {
                let error = ToolError::NotRunnable {
                    tool: name.to_string(),
                };
                return ToolOutput::error(error.to_string());
            }
            Ok(Plan::Run) => {}
        }
        // INVARIANT: `plan` checked that every argument is present and a string.
        let text = |argument: &str| {
            arguments
                .get(argument)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match name {
            "clock.now" => ToolOutput {
                ok: true,
                // Whole seconds: the model needs no nanoseconds, and `{:.0}` keeps RFC 3339.
                output: json!({"now": format!("{:.0}", jiff::Timestamp::now())}),
            },
            "http.fetch" => ToolOutput::from_result(http::fetch(&text("url"), context).await),
            "fs.read" => ToolOutput::from_result(fs::read(text("path"), context).await),
            "fs.write" => {
                ToolOutput::from_result(fs::write(text("path"), text("content"), context).await)
            }
            "shell.exec" => shell::exec(&text("command"), context).await,
            _ => ToolOutput::error(format!("{name} has no executor")),
        }
    }
}

/// `bytes` as text. When the bytes were cut at a size limit (`truncated`), an incomplete
/// UTF-8 sequence at the very end is the cut's doing and is dropped; anything else that is
/// not UTF-8 is an error (`None`): binary content is not something to hand a model.
pub(crate) fn utf8_text(mut bytes: Vec<u8>, truncated: bool) -> Option<String> {
    match std::str::from_utf8(&bytes) {
        Ok(_) => {}
        Err(error) if truncated && error.error_len().is_none() => {
            bytes.truncate(error.valid_up_to());
        }
        Err(_) => return None,
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_inside_a_character_is_dropped_only_when_truncated() {
        let text = "héllo".as_bytes();
        // Cut after the first byte of `é`.
        let cut = text[..2].to_vec();
        assert_eq!(utf8_text(cut.clone(), true).as_deref(), Some("h"));
        assert_eq!(utf8_text(cut, false), None);
        assert_eq!(utf8_text(vec![0xff, b'a'], true), None);
        assert_eq!(utf8_text(text.to_vec(), false).as_deref(), Some("héllo"));
    }

    #[test]
    fn limits_default_to_the_documented_values() {
        let limits = Limits::default();
        assert_eq!(limits.http_timeout, Duration::from_secs(10));
        assert_eq!(limits.http_max_bytes, 1 << 20);
        assert_eq!(limits.shell_timeout, Duration::from_secs(30));
        assert_eq!(limits.output_max_bytes, 64 << 10);
        assert_eq!(limits.fs_max_bytes, 1 << 20);
    }
}
