//! The integration tests of `airlock-tools`, driven through the public API only: specs and
//! planning, the workspace confinement of `fs.*`, `shell.exec`'s process handling,
//! `http.fetch` against a real local server, SMTP delivery to a real local sink.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fs;
mod http;
mod plan;
mod shell;
mod smtp;

use std::path::Path;

use airlock_tools::{Builtins, Limits, ToolContext, ToolOutput};
use serde_json::Value;

/// A context over `workspace` with default limits and no HTTP host allowed.
fn context(workspace: &Path) -> ToolContext {
    ToolContext {
        workspace_dir: workspace.to_path_buf(),
        http_allow: Vec::new(),
        limits: Limits::default(),
    }
}

/// Runs a tool and returns its output.
async fn run(tool: &str, arguments: Value, context: &ToolContext) -> ToolOutput {
    Builtins::execute(tool, &arguments, context).await
}

/// The error message of a failed output; panics when the output is not a failure.
#[track_caller]
fn error_of(output: &ToolOutput) -> String {
    assert!(!output.ok, "expected a failure, got {output:?}");
    output.output["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message in {output:?}"))
        .to_string()
}
