//! Storage for airlock: the [`Store`] trait and its backends.
//!
//! The trait is a set of *whole operations*, each one transaction: recording a call with
//! its approval and grant, deciding an approval, consuming a grant, expiring what is due.
//! Each operation also appends the audit records and workspace events the gate hands it, in
//! the same transaction (G8), so a change and its record can never be separated. Backends
//! implement the operations natively; nothing outside this crate knows SQL.
//!
//! - [`sqlite`]: the embedded default (WAL, `synchronous=FULL`, one writer connection).
//! - [`postgres`]: several nodes sharing one database (row locks, LISTEN/NOTIFY).
//! - [`NotifyStore`] (`notify.rs`): notifications, their attempts, signed links' nonces.
//! - [`IntegrationStore`] (`integrations.rs`): Slack messages and requests, trace context.
//! - [`HeadStore`] (`heads.rs`): the audit chain's head, kept apart from its records.
//! - `operations.rs`: how each trait's list of operations (`store_operations!` for `Store`)
//!   becomes the trait and each backend's implementation; `store_operations.rs`: the
//!   list of [`Store`]'s; `error.rs`: the errors.
//!
//! INVARIANT: the store never decides policy questions. It enforces the conditions that
//! must be checked inside the transaction (status, deadline, binding digest, policy
//! digest, single consumption) and nothing else; the gate decides everything else.

// The files of `src/sql/` are compiled once per backend on purpose: each operation is
// written once and type-checked against both databases (`sqlite.rs`, `postgres.rs`).
#![allow(clippy::duplicate_mod)]

// The operation lists (`store_operations!`, `notify_operations!`,
// `integration_operations!`) and the macros that turn them into traits and
// implementations (`operations.rs`) come before the backends that implement them.
#[macro_use]
mod operations;
#[macro_use]
mod heads;
#[macro_use]
mod integrations;
#[macro_use]
mod notify;
#[macro_use]
mod store_operations;
mod audit_rows;
pub(crate) mod codec;
mod error;
#[cfg(test)]
#[allow(clippy::expect_used)]
mod test_calls;
mod types;

pub use audit_rows::{AuditRow, AuditRows, ChainReader, SegmentRef};
pub use error::*;
pub use heads::*;
pub use integrations::*;
pub use notify::*;
pub use types::*;

use airlock_protocol::{
    Agent, Approval, AuditRecord, Call, CallOutcome, Message, OutboxItem, PolicyInfo,
    Reconciliation, Run, RunEvent, Session, StandingRule, Task, User, WorkspaceEvent,
};
use jiff::Timestamp;

store_operations!(declare [
    /// Storage for one or many workspaces. Every method is one transaction. The
    /// notification operations are in the supertrait [`NotifyStore`], Slack's and the trace
    /// context's in [`IntegrationStore`].
    pub trait Store: NotifyStore + IntegrationStore + HeadStore + Send + Sync + 'static
] {
    /// Write transactions this store has committed since it was opened, on this node:
    /// what tests and benchmarks count to see how many commits an operation costs.
    fn commits(&self) -> u64;

    // ----- other nodes

    /// A stream of the events committed to this database by any node (this one included),
    /// for a backend that other nodes can write to; `None` when no one else can (SQLite).
    /// The receiver also gets [`Change::resync`] whenever changes may have been missed.
    async fn listen(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
        Ok(None)
    }

    /// Whether this process is the only one that writes the database (SQLite: one server
    /// per file). Only then may a cache of what the database holds be trusted without a
    /// listener; the safe default is `false`.
    fn single_writer(&self) -> bool {
        false
    }

    /// How many reads of a long walk (verifying the whole audit chain) are best made at
    /// once, beside everything else the store serves: SQLite reads in this process, so
    /// one a core, within its small reader pool; PostgreSQL's reads are round trips that
    /// its server answers, so more of them overlap even on few cores.
    fn long_reads_at_once(&self) -> usize {
        2
    }

    /// A blocking reader of the audit chain's sealed segments on a connection of its
    /// own (the caller runs it off the async runtime, one a thread), for a backend that
    /// reads them faster that way than through [`Store::audit_rows_after`]: SQLite, which
    /// reads in this process; `None` otherwise.
    fn chain_reader(&self) -> StoreResult<Option<Box<dyn ChainReader>>> {
        Ok(None)
    }
});

pub mod postgres;
pub mod sqlite;
