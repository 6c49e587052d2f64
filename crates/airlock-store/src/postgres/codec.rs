//! How PostgreSQL's errors become [`StoreError`]s. The column encodings and the row
//! decoders are shared by every backend (`crate::codec`) and re-exported here for the
//! modules of this backend.

use crate::StoreError;

// The encodings and the row decoders are the same on every backend.
pub(crate) use crate::codec::{
    enum_text, json_text, millis, opt_json_text, opt_millis, to_i64, Columns,
};

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
