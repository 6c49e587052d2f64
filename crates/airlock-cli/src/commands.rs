//! One module per top-level command.
//!
//! `policy` works on files offline; `serve` runs the server; `approvals`, `audit`,
//! `agents`, `call`, `chat`, `hook`, `mcp`, `rules`, `runs`, `tasks` and `insights` are
//! clients of a running server (through [`crate::client`]).

pub mod agents;
pub mod ambiguous;
pub mod approvals;
pub mod audit;
pub mod call;
pub mod chat;
pub mod history;
pub use airlock_client::hook;
pub mod insights;
pub mod mcp;
pub mod policy;
pub mod replay;
pub mod rules;
pub mod runs;
pub mod serve;
pub mod tasks;
pub mod turn;
