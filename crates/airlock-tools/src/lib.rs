//! The built-in tools of airlock's agent runtime: what each tool is, how a call of it is
//! checked, and how it runs.
//!
//! - [`catalogue`]: the [`ToolSpec`] of every built-in tool (schema, risk, target, preview
//!   templates) — [`Builtins::specs`], [`Builtins::spec`].
//! - [`plan`]: argument validation against the schema and how a call takes effect
//!   ([`Plan::Outbox`] for `email.send`, [`Plan::Run`] for the rest) — [`Builtins::plan`].
//! - [`execute`]: [`Builtins::execute`], the [`ToolContext`] a tool runs in and its
//!   [`Limits`], the [`ToolOutput`] handed back to the model; `clock.now`.
//! - [`fs`]: `fs.read` and `fs.write`, confined to the workspace directory.
//! - [`http`]: `http.fetch`, GET only, to allowed hosts only.
//! - [`shell`]: `shell.exec`, in its own process group, killed whole on timeout.
//! - [`email`]: SMTP delivery of an `email.send` outbox effect ([`deliver_email`]).
//!
//! Architecture invariant: this crate knows nothing about the gate, the store or HTTP
//! servers. The runtime asks the gate first and calls [`Builtins::execute`] only with a
//! consumed grant; nothing here decides whether a call may run. What this crate does
//! enforce is the containment a tool promises whatever the policy says: the workspace
//! directory, the HTTP host allowlist, the size and time limits.

pub mod catalogue;
pub mod email;
pub mod execute;
pub mod fs;
pub mod http;
pub mod plan;
pub mod shell;

pub use airlock_protocol::Risk;
pub use catalogue::ToolSpec;
pub use email::{deliver_email, deliver_email_within, is_loopback, SmtpConfig, IMPLICIT_TLS_PORT};
pub use execute::{Limits, ToolContext, ToolOutput};
pub use plan::{OutboxEffect, Plan};

/// The built-in tools. A namespace: the tools are fixed at compile time and hold no state.
pub struct Builtins;

/// Why a tool call could not be planned, or an outbox effect not delivered. Messages are
/// lower-case and name the tool and the argument, because the model reads them and has to
/// be able to correct its call.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// No built-in tool has this name.
    #[error("unknown tool `{name}`")]
    UnknownTool { name: String },
    /// The arguments are not a JSON object.
    #[error("{tool}: arguments must be a JSON object, got {found}")]
    ArgumentsNotObject { tool: String, found: &'static str },
    /// A required argument is absent.
    #[error("{tool}: missing required argument `{argument}`")]
    MissingArgument { tool: String, argument: String },
    /// An argument the tool does not take.
    #[error("{tool}: unknown argument `{argument}` (the tool takes {expected})")]
    UnknownArgument {
        tool: String,
        argument: String,
        /// The arguments the tool does take, for the message.
        expected: String,
    },
    /// An argument of the wrong JSON type.
    #[error("{tool}: argument `{argument}` must be {expected}, got {found}")]
    WrongType {
        tool: String,
        argument: String,
        expected: &'static str,
        found: &'static str,
    },
    /// An argument of the right type whose value the tool cannot use.
    #[error("{tool}: argument `{argument}` {reason}")]
    InvalidArgument {
        tool: String,
        argument: String,
        reason: String,
    },
    /// The tool takes effect through the outbox; the runtime must not execute it.
    #[error("{tool} takes effect through the outbox and is never executed directly")]
    NotRunnable { tool: String },
    /// An outbox effect that this crate cannot deliver as it stands.
    #[error("outbox effect: {reason}")]
    InvalidEffect { reason: String },
    /// The SMTP configuration cannot be used.
    #[error("smtp configuration: {reason}")]
    SmtpConfig { reason: String },
    /// The SMTP server could not be reached or refused the message.
    #[error("smtp delivery failed: {reason}")]
    SmtpDelivery { reason: String },
}
