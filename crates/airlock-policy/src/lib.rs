//! The airlock policy engine: pure, synchronous, no I/O.
//!
//! Stages, in the order a policy goes through them:
//! - [`document`]: TOML text → syntax tree with source spans (serde types).
//! - [`load`]: syntax tree → compiled [`Policy`], with every load-time check of DESIGN.md §4.3
//!   reported as a [`LoadError`] at `file:line:column`.
//! - [`condition`] and [`matcher`]: the `when` matchers (`eq`, `in`, `glob`, `regex`, `prefix`, `path`,
//!   `domain`, `present`) compiled once at load.
//! - [`index`]: rules indexed by tool name so evaluation skips rules that cannot match.
//! - [`evaluate`]: one call → one [`Verdict`]; never an error, never a panic.
//! - [`explain`] and [`replay`]: why a call gets its verdict, and what a candidate policy
//!   would change on recorded calls (DESIGN.md §11.5); both call [`Policy::evaluate`].
//!
//! - [`classes`] and [`context`]: the command classification (shipped as data) and where a
//!   call happens (`cwd`, project, home), which the `class` matcher and the path anchors
//!   `{project}`, `{home}`, `{tmp}` use.
//! - [`defaults`]: the built-in coding-agent policy ([`DEFAULT_POLICY`]).
//!
//! Beside evaluation: [`approvers`] (the two-person rule's `approvals` and `approvers`),
//! [`secrets`] (detection and redaction), [`preview`] (summary and body
//! templates), [`visible`] (exact values shown with their invisible characters written
//! out), [`canonical`] (RFC 8785 JSON) and [`digest`] (policy, binding and audit
//! digests), and [`cases`] (the `airlock policy test` cases file).

pub mod approvers;
pub mod cases;
pub mod classes;
pub mod condition;
pub mod context;
pub mod defaults;
pub mod document;
pub mod evaluate;
pub mod explain;
pub mod index;
pub mod lint;
pub mod load;
pub mod matcher;
pub mod preview;
pub mod replay;
mod rule_key;
pub mod secrets;
pub mod visible;

// Canonical JSON and the digests live in `airlock-digest`, which the store shares; their
// old paths here stay for the crates that import them.
pub use airlock_digest::{canonical, digest};

pub use airlock_protocol::{DecidedBy, Decision, Mode, Risk, SecretFinding, Verdict};
pub use defaults::DEFAULT_POLICY;
pub use evaluate::{Call, Prepared, StandingRule};
pub use load::{CompiledTool, LoadError, LoadErrors, LoadOptions, Policy, DEFAULT_OUTCOME_TIMEOUT};
