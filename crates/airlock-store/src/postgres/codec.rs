//! How values travel in and out of PostgreSQL columns, and how sqlx errors become
//! [`StoreError`]s.
//!
//! The encodings are SQLite's (`sqlite/codec.rs`): timestamps are BIGINT unix
//! milliseconds, enums their serde snake_case text, JSON values TEXT. A column that does
//! not decode is a [`StoreError::Corrupt`] naming its table, never a panic nor a default.

use crate::{StoreError, StoreResult};
use jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::Row;

/// Maps a sqlx error to a short store error. A unique violation is a
/// [`StoreError::Conflict`] naming what already exists; bound values never appear in the
/// message (they may be redacted arguments, but they are still not for logs). Everything
/// else — the server gone, a statement timeout, an exhausted pool — is
/// [`StoreError::Database`] with the reason.
pub(crate) fn database(error: sqlx::Error) -> StoreError {
    if let Some(db_error) = error.as_database_error() {
        if db_error.is_unique_violation() {
            let what = match db_error.table() {
                Some("agents") => "an agent with this name already exists in the workspace",
                Some("workspaces") => "a workspace with this name already exists",
                Some("tokens") => "this token is already registered",
                Some("policies") => "this policy version already exists",
                _ => "a record with this id already exists",
            };
            return StoreError::Conflict(what.to_owned());
        }
        return StoreError::Database(db_error.message().to_owned());
    }
    StoreError::Database(error.to_string())
}

/// A timestamp as stored: unix milliseconds.
pub(crate) fn millis(at: Timestamp) -> i64 {
    at.as_millisecond()
}

pub(crate) fn opt_millis(at: Option<Timestamp>) -> Option<i64> {
    at.map(millis)
}

/// A `u64` counter (sequence number, version, limit) as a BIGINT.
pub(crate) fn to_i64(value: u64) -> StoreResult<i64> {
    i64::try_from(value).map_err(|_| StoreError::Database(format!("{value} is out of range")))
}

/// An enum's serde text (`"approved"`, `"policy_default"`, `"read_only"`).
pub(crate) fn enum_text<T: Serialize>(value: &T) -> StoreResult<String> {
    match serde_json::to_value(value) {
        Ok(Value::String(text)) => Ok(text),
        _ => Err(StoreError::Database(
            "an enum did not encode as text".to_owned(),
        )),
    }
}

/// A value as JSON text.
pub(crate) fn json_text<T: Serialize + ?Sized>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|error| StoreError::Database(error.to_string()))
}

/// An optional value as optional JSON text (`None` stays NULL, not `"null"`).
pub(crate) fn opt_json_text<T: Serialize>(value: &Option<T>) -> StoreResult<Option<String>> {
    value.as_ref().map(json_text).transpose()
}

/// Reads the columns of one row of `table`, turning every decoding failure into
/// [`StoreError::Corrupt`].
pub(crate) struct Columns<'r> {
    row: &'r PgRow,
    table: &'static str,
}

impl<'r> Columns<'r> {
    pub(crate) fn new(row: &'r PgRow, table: &'static str) -> Columns<'r> {
        Columns { row, table }
    }

    fn corrupt(&self, column: &str, detail: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt {
            table: self.table,
            detail: format!("{column}: {detail}"),
        }
    }

    fn get<T>(&self, column: &str) -> StoreResult<T>
    where
        T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    {
        self.row
            .try_get(column)
            .map_err(|error| self.corrupt(column, error))
    }

    pub(crate) fn text(&self, column: &str) -> StoreResult<String> {
        self.get(column)
    }

    pub(crate) fn opt_text(&self, column: &str) -> StoreResult<Option<String>> {
        self.get(column)
    }

    pub(crate) fn int(&self, column: &str) -> StoreResult<i64> {
        self.get(column)
    }

    pub(crate) fn unsigned(&self, column: &str) -> StoreResult<u64> {
        let value = self.int(column)?;
        u64::try_from(value).map_err(|_| self.corrupt(column, "negative"))
    }

    pub(crate) fn time(&self, column: &str) -> StoreResult<Timestamp> {
        let value = self.int(column)?;
        Timestamp::from_millisecond(value).map_err(|error| self.corrupt(column, error))
    }

    pub(crate) fn opt_time(&self, column: &str) -> StoreResult<Option<Timestamp>> {
        let value: Option<i64> = self.get(column)?;
        value
            .map(|value| {
                Timestamp::from_millisecond(value).map_err(|error| self.corrupt(column, error))
            })
            .transpose()
    }

    /// An enum stored as its serde text.
    pub(crate) fn enumeration<T: DeserializeOwned>(&self, column: &str) -> StoreResult<T> {
        let text = self.text(column)?;
        serde_json::from_value(Value::String(text)).map_err(|error| self.corrupt(column, error))
    }

    pub(crate) fn json<T: DeserializeOwned>(&self, column: &str) -> StoreResult<T> {
        let text = self.text(column)?;
        serde_json::from_str(&text).map_err(|error| self.corrupt(column, error))
    }

    pub(crate) fn opt_json<T: DeserializeOwned>(&self, column: &str) -> StoreResult<Option<T>> {
        self.opt_text(column)?
            .map(|text| serde_json::from_str(&text).map_err(|error| self.corrupt(column, error)))
            .transpose()
    }
}
