//! The handlers, one module per resource. Each authenticates with [`crate::auth::Auth`],
//! reads its input with the extractors of [`crate::body`], asks the gate, and shapes the
//! answer; every `#[utoipa::path]` here is what `/openapi.json` is generated from.
//!
//! - [`system`]: `/healthz`, `/metrics`, `/openapi.json`.
//! - [`identity`]: users, agents, sessions.
//! - [`policy`]: the policy in force, replacing it, dry runs.
//! - [`calls`]: submit, long-poll, redeem.
//! - [`outcomes`]: reported outcomes, ambiguous calls, reconciliation.
//! - [`approvals`]: list, read, decide.
//! - [`rules`]: standing rules.
//! - [`audit`]: list, verify, export.
//! - [`events`]: the workspace event stream (SSE).
//! - [`runs`]: the built-in runtime: messages, runs, run journals, the outbox.
//! - [`tasks`]: scheduled tasks and the "fewer prompts" report.
//! - [`hooks`]: coding-agent hooks (Claude Code's `http` hook) and what a verdict means to one.

pub mod approvals;
pub mod audit;
pub mod calls;
pub mod events;
pub mod hooks;
pub mod identity;
pub mod outcomes;
pub mod policy;
pub mod rules;
pub mod runs;
pub mod system;
pub mod tasks;

use serde::Serialize;
use utoipa::ToSchema;

/// A list answer: `{items: [...]}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Items<T> {
    pub items: Vec<T>,
}

impl<T> Items<T> {
    pub fn new(items: Vec<T>) -> Items<T> {
        Items { items }
    }
}
