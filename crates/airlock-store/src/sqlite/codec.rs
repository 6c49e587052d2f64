//! How SQLite's errors become [`StoreError`]s. The column encodings and the row
//! decoders are shared by every backend (`crate::codec`) and re-exported here for the
//! modules of this backend.

use crate::StoreError;

// The encodings and the row decoders are the same on every backend.
pub(crate) use crate::codec::{
    enum_text, json_text, millis, opt_json_text, opt_millis, to_i64, Columns,
};

/// Maps a sqlx error to a short store error. A UNIQUE violation is a
/// [`StoreError::Conflict`] naming what already exists; bound values never appear in the
/// message (they may be redacted arguments, but they are still not for logs).
pub(crate) fn database(error: sqlx::Error) -> StoreError {
    if let Some(db_error) = error.as_database_error() {
        if db_error.is_unique_violation() {
            let message = db_error.message();
            let what = if message.contains("agents.") {
                "an agent with this name already exists in the workspace"
            } else if message.contains("workspaces.") {
                "a workspace with this name already exists"
            } else if message.contains("tokens.") {
                "this token is already registered"
            } else if message.contains("policies.") {
                "this policy version already exists"
            } else {
                "a record with this id already exists"
            };
            return StoreError::Conflict(what.to_owned());
        }
        return StoreError::Database(db_error.message().to_owned());
    }
    StoreError::Database(error.to_string())
}
