//! The store's operations, written once for both databases.
//!
//! `sqlite.rs` and `postgres.rs` each compile this folder as their own module
//! (`#[path = "sql/mod.rs"] mod sql;`), so every file here is plain sqlx code over the
//! names its backend's `dialect.rs` gives: `Db`, `Conn`, `Pool`, and the few things the
//! databases really do differently (the workspace lock, the chain head, `ORD`,
//! `FOR_UPDATE`, announcing events, the sweeper's re-read). One SQL text serves both:
//! SQLite accepts PostgreSQL's `$1` placeholders. Besides the dialect, each backend gives
//! `write_transaction!` (one write transaction: SQLite's writer with its group commit, a
//! pooled PostgreSQL transaction) and `Backend` with `reads`, `lend_reader` (a connection
//! for the hot path's reads, `hook_reads.rs`), `record_batched` and `changes`.
//!
//! - `store.rs`: the [`crate::Store`] impl, made from the list of its operations
//!   (`store_operations!` in `lib.rs`, see `operations.rs`): each method one function of
//!   the modules below.
//! - `notify.rs`: the [`crate::NotifyStore`] impl and its operations.
//! - `integrations.rs`: the [`crate::IntegrationStore`] impl and its operations (Slack,
//!   trace context).
//! - `heads.rs`: the [`crate::HeadStore`] impl (the audit chain's head, kept apart).
//! - `audit`: appending effects (hash chain, events) and reading the events back.
//! - `pages`: reading the audit chain back, and sealing its oldest records into segments.
//! - `identity`: workspaces, users, agents, tokens, sessions.
//! - `policy`: policy versions and the cancellation of stale approvals.
//! - `calls`: call, approval and grant rows.
//! - `decide`, `grants`, `expiry`: the three operations that end a wait.
//! - `retries`: calls held for their agent's retry after a hook stopped waiting.
//! - `hook_reads`: what a coding agent's hook call reads before it is judged, as one
//!   statement.
//! - `rules`: standing rules.
//! - `web`: the browser inbox's sessions (cookie hash → principal).
//! - `runs`, `tasks`: the built-in runtime's runs, journal, steps, messages, outbox, and
//!   scheduled tasks; `pause`: pausing and resuming a run.

// What the files below reach as `super::dialect` and `super::Backend`.
use super::{dialect, Backend};

use crate::codec::database;
use crate::StoreResult;
use dialect::{Db, Pool};

/// A query with its arguments bound, ready to run.
type Query<'q> = sqlx::query::Query<'q, Db, <Db as sqlx::Database>::Arguments<'q>>;

/// One row as the backend returns it.
type Row = <Db as sqlx::Database>::Row;

/// Runs `query` on `pool` and decodes every row it returns.
async fn all<T>(
    query: Query<'_>,
    pool: &Pool,
    decode: fn(&Row) -> StoreResult<T>,
) -> StoreResult<Vec<T>> {
    let rows = query.fetch_all(pool).await.map_err(database)?;
    rows.iter().map(decode).collect()
}

/// Runs `query` on `pool` and decodes the row it returns, if any.
async fn optional<'e, T>(
    query: Query<'_>,
    executor: impl sqlx::Executor<'e, Database = Db>,
    decode: fn(&Row) -> StoreResult<T>,
) -> StoreResult<Option<T>> {
    let row = query.fetch_optional(executor).await.map_err(database)?;
    row.as_ref().map(decode).transpose()
}

/// Runs `query`, a statement that returns no rows (an insert, an update, a delete) on
/// `executor`; what it did (`rows_affected`).
async fn execute<'e>(
    query: Query<'_>,
    executor: impl sqlx::Executor<'e, Database = Db>,
) -> StoreResult<<Db as sqlx::Database>::QueryResult> {
    query.execute(executor).await.map_err(database)
}

/// A column list (as the `*_COLUMNS` constants write it) with each column qualified by
/// `alias`, for a query that joins a table having some of the same names.
fn qualified(alias: &str, columns: &str) -> String {
    let columns: Vec<String> = columns
        .split(", ")
        .map(|column| format!("{alias}.{column}"))
        .collect();
    columns.join(", ")
}

/// Decodes a row of `table` that carries the `workspace` it belongs to beside the record
/// `decode` reads: what the operations that span every workspace return.
fn with_workspace<T>(
    row: &Row,
    table: &'static str,
    decode: fn(&Row) -> StoreResult<T>,
) -> StoreResult<(String, T)> {
    let workspace = crate::codec::Columns::new(row, table).text("workspace")?;
    Ok((workspace, decode(row)?))
}

pub(crate) mod audit;
pub(crate) mod calls;
mod decide;
pub(crate) mod expiry;
mod grants;
mod heads;
pub(crate) mod hook_reads;
mod identity;
mod integrations;
mod notify;
mod outcomes;
mod pages;
mod pause;
mod policy;
pub(crate) mod retries;
mod rules;
mod runs;
mod store;
mod tasks;
mod web;
