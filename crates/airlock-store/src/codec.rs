//! How values travel in and out of columns, the same on every backend, and the decoding
//! of rows into the records they hold.
//!
//! Timestamps are 64-bit unix milliseconds (sub-millisecond precision is dropped on the
//! way in, so a value read back is the millisecond it was stored at). Enums are their
//! serde snake_case text, JSON values are text. A column that does not decode is a
//! [`StoreError::Corrupt`] naming its table, never a panic and never a default.
//!
//! Each backend only says how to read the four column shapes ([`RawRow`]); the row
//! decoders (`call_from_row`, …) are written once, here.

use crate::{Grant, StoreError, StoreResult, StoredStep};
use airlock_protocol::{
    Agent, Approval, Call, CallOutcome, Message, OutboxItem, PolicyInfo, Preview, Reconciliation,
    Run, RunEvent, StandingRule, Step, Task,
};
use jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

/// The column shapes the store uses, read from one backend's row.
pub(crate) trait RawRow: Sync {
    fn text(&self, column: &str) -> Result<String, sqlx::Error>;
    fn opt_text(&self, column: &str) -> Result<Option<String>, sqlx::Error>;
    fn int(&self, column: &str) -> Result<i64, sqlx::Error>;
    fn opt_int(&self, column: &str) -> Result<Option<i64>, sqlx::Error>;
}

/// Implements [`RawRow`] for a sqlx row type with `try_get`.
macro_rules! raw_row {
    ($row:ty) => {
        impl RawRow for $row {
            fn text(&self, column: &str) -> Result<String, sqlx::Error> {
                self.try_get(column)
            }
            fn opt_text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
                self.try_get(column)
            }
            fn int(&self, column: &str) -> Result<i64, sqlx::Error> {
                self.try_get(column)
            }
            fn opt_int(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
                self.try_get(column)
            }
        }
    };
}

raw_row!(SqliteRow);
raw_row!(PgRow);

/// A timestamp as stored: unix milliseconds, clamped to what [`Timestamp::from_millisecond`]
/// reads back. Only `Timestamp::MAX`'s last 999 ms (and `MIN`'s first) are outside that
/// range; a time there is clamped to the nearest one inside, so no row is ever written
/// that cannot be read (a clamped expiry or deadline is earlier, never later).
pub(crate) fn millis(at: Timestamp) -> i64 {
    at.as_millisecond().clamp(
        readable_millis(Timestamp::MIN),
        readable_millis(Timestamp::MAX),
    )
}

/// The whole second of `bound` in milliseconds: a value `from_millisecond` takes.
fn readable_millis(bound: Timestamp) -> i64 {
    bound.as_second().saturating_mul(1000)
}

/// A stored millisecond as a timestamp. Versions before the clamp in [`millis`] stored
/// `Timestamp::MAX` (an `expires_in` or a `deadline` of thousands of years) as a value
/// 999 ms past the readable range; such a row reads as the latest readable time instead
/// of being corrupt (which made every read of its table fail).
fn from_millis(value: i64) -> Result<Timestamp, jiff::Error> {
    let latest = readable_millis(Timestamp::MAX);
    let value = if value > latest && value <= Timestamp::MAX.as_millisecond() {
        latest
    } else {
        value
    };
    Timestamp::from_millisecond(value)
}

pub(crate) fn opt_millis(at: Option<Timestamp>) -> Option<i64> {
    at.map(millis)
}

/// A `u64` counter (sequence number, version, limit) as a signed 64-bit integer.
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

/// Maps a sqlx error of either database to a short store error. A unique violation is a
/// [`StoreError::Conflict`] naming what already exists; bound values never appear in the
/// message (they may be redacted arguments, but they are still not for logs). Everything
/// else — the server gone, a statement timeout, an exhausted pool — is
/// [`StoreError::Database`] with the reason.
pub(crate) fn database(error: sqlx::Error) -> StoreError {
    let Some(db_error) = error.as_database_error() else {
        return StoreError::Database(error.to_string());
    };
    if !db_error.is_unique_violation() {
        return StoreError::Database(db_error.message().to_owned());
    }
    // PostgreSQL names the table; SQLite names it only in its message ("UNIQUE
    // constraint failed: agents.workspace, agents.name").
    let on = |table: &str| match db_error.table() {
        Some(name) => name == table,
        None => db_error.message().contains(&format!(" {table}.")),
    };
    let what = if on("agents") {
        "an agent with this name already exists in the workspace"
    } else if on("users") {
        "a user with this name already exists in the workspace"
    } else if on("workspaces") {
        "a workspace with this name already exists"
    } else if on("tokens") {
        "this token is already registered"
    } else if on("policies") {
        "this policy version already exists"
    } else {
        "a record with this id already exists"
    };
    StoreError::Conflict(what.to_owned())
}

/// Reads the columns of one row of `table`, turning every decoding failure into
/// [`StoreError::Corrupt`].
pub(crate) struct Columns<'r> {
    row: &'r dyn RawRow,
    table: &'static str,
}

impl<'r> Columns<'r> {
    pub(crate) fn new(row: &'r dyn RawRow, table: &'static str) -> Columns<'r> {
        Columns { row, table }
    }

    fn corrupt(&self, column: &str, detail: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt {
            table: self.table,
            detail: format!("{column}: {detail}"),
        }
    }

    pub(crate) fn text(&self, column: &str) -> StoreResult<String> {
        self.row
            .text(column)
            .map_err(|error| self.corrupt(column, error))
    }

    pub(crate) fn opt_text(&self, column: &str) -> StoreResult<Option<String>> {
        self.row
            .opt_text(column)
            .map_err(|error| self.corrupt(column, error))
    }

    pub(crate) fn int(&self, column: &str) -> StoreResult<i64> {
        self.row
            .int(column)
            .map_err(|error| self.corrupt(column, error))
    }

    pub(crate) fn opt_int(&self, column: &str) -> StoreResult<Option<i64>> {
        self.row
            .opt_int(column)
            .map_err(|error| self.corrupt(column, error))
    }

    pub(crate) fn unsigned(&self, column: &str) -> StoreResult<u64> {
        let value = self.int(column)?;
        u64::try_from(value).map_err(|_| self.corrupt(column, "negative"))
    }

    pub(crate) fn time(&self, column: &str) -> StoreResult<Timestamp> {
        let value = self.int(column)?;
        from_millis(value).map_err(|error| self.corrupt(column, error))
    }

    pub(crate) fn opt_time(&self, column: &str) -> StoreResult<Option<Timestamp>> {
        self.opt_int(column)?
            .map(|value| from_millis(value).map_err(|error| self.corrupt(column, error)))
            .transpose()
    }

    /// An enum stored as its serde text.
    pub(crate) fn enumeration<T: DeserializeOwned>(&self, column: &str) -> StoreResult<T> {
        let text = self.text(column)?;
        serde_json::from_value(Value::String(text)).map_err(|error| self.corrupt(column, error))
    }

    /// An optional enum stored as its serde text.
    pub(crate) fn opt_enumeration<T: DeserializeOwned>(
        &self,
        column: &str,
    ) -> StoreResult<Option<T>> {
        self.opt_text(column)?
            .map(|text| {
                serde_json::from_value(Value::String(text))
                    .map_err(|error| self.corrupt(column, error))
            })
            .transpose()
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

// ---------------------------------------------------------------- row decoders

pub(crate) fn call_from_row<R: RawRow>(row: &R) -> StoreResult<Call> {
    let columns = Columns::new(row, "calls");
    Ok(Call {
        id: columns.text("id")?,
        agent_id: columns.text("agent_id")?,
        session_id: columns.opt_text("session_id")?,
        tool: columns.text("tool")?,
        arguments: columns.json("arguments")?,
        risk: columns.enumeration("risk")?,
        status: columns.enumeration("status")?,
        decided_by: columns.enumeration("decided_by")?,
        rule: columns.opt_text("rule")?,
        reason: columns.opt_text("reason")?,
        approval_id: columns.opt_text("approval_id")?,
        grant_id: columns.opt_text("grant_id")?,
        created_at: columns.time("created_at")?,
        decided_at: columns.opt_time("decided_at")?,
        native_tool: columns.opt_text("native_tool")?,
        cwd: columns.opt_text("cwd")?,
        project: columns.opt_text("project")?,
        redeemed_at: columns.opt_time("redeemed_at")?,
        outcome: match columns.opt_enumeration("outcome_status")? {
            Some(status) => Some(CallOutcome {
                status,
                detail: columns.opt_text("outcome_detail")?,
                reported_at: columns.time("outcome_at")?,
            }),
            None => None,
        },
        ambiguous_at: columns.opt_time("ambiguous_at")?,
        reconciliation: match columns.opt_enumeration("reconciled")? {
            Some(resolution) => Some(Reconciliation {
                resolution,
                by: columns.text("reconciled_by")?,
                reason: columns.opt_text("reconciled_reason")?,
                at: columns.time("reconciled_at")?,
            }),
            None => None,
        },
        original_arguments: columns.opt_json("original_arguments")?,
    })
}

pub(crate) fn approval_from_row<R: RawRow>(row: &R) -> StoreResult<Approval> {
    let columns = Columns::new(row, "approvals");
    Ok(Approval {
        id: columns.text("id")?,
        call_id: columns.text("call_id")?,
        agent_id: columns.text("agent_id")?,
        session_id: columns.opt_text("session_id")?,
        status: columns.enumeration("status")?,
        tool: columns.text("tool")?,
        risk: columns.enumeration("risk")?,
        preview: Preview {
            summary: columns.text("preview_summary")?,
            body: columns.opt_text("preview_body")?,
            arguments: columns.json("preview_arguments")?,
        },
        rule: columns.opt_text("rule")?,
        reason: columns.opt_text("reason")?,
        binding_digest: columns.text("binding_digest")?,
        policy_digest: columns.text("policy_digest")?,
        standing_target: columns.opt_text("standing_target")?,
        deadline: columns.time("deadline")?,
        created_at: columns.time("created_at")?,
        decided_at: columns.opt_time("decided_at")?,
        decided_by: columns.opt_text("decided_by")?,
        decision_reason: columns.opt_text("decision_reason")?,
        edited_binding_digest: columns.opt_text("edited_binding_digest")?,
        approvals_required: match columns.unsigned("approvals_required")? {
            0 | 1 => None,
            n => Some(u32::try_from(n).unwrap_or(u32::MAX)),
        },
        approvers: columns.opt_json("approvers")?.unwrap_or_default(),
        votes: columns.opt_json("votes")?.unwrap_or_default(),
    })
}

pub(crate) fn grant_from_row<R: RawRow>(row: &R) -> StoreResult<Grant> {
    let columns = Columns::new(row, "grants");
    Ok(Grant {
        id: columns.text("id")?,
        call_id: columns.text("call_id")?,
        created_at: columns.time("created_at")?,
        consumed_at: columns.opt_time("consumed_at")?,
    })
}

pub(crate) fn agent_from_row<R: RawRow>(row: &R) -> StoreResult<Agent> {
    let columns = Columns::new(row, "agents");
    Ok(Agent {
        id: columns.text("id")?,
        name: columns.text("name")?,
        mode: columns.enumeration("mode")?,
        system_prompt: columns.opt_text("system_prompt")?,
        tools: columns.opt_json("tools")?,
        workspace_dir: columns.opt_text("workspace_dir")?,
        llm: columns.opt_json("llm")?,
        mcp_servers: columns.opt_json("mcp_servers")?,
        created_at: columns.time("created_at")?,
    })
}

pub(crate) fn rule_from_row<R: RawRow>(row: &R) -> StoreResult<StandingRule> {
    let columns = Columns::new(row, "standing_rules");
    Ok(StandingRule {
        id: columns.text("id")?,
        tool: columns.text("tool")?,
        target: columns.text("target")?,
        scope: columns.enumeration("scope")?,
        scope_id: columns.text("scope_id")?,
        created_by: columns.text("created_by")?,
        created_at: columns.time("created_at")?,
        expires_at: columns.opt_time("expires_at")?,
        revoked_at: columns.opt_time("revoked_at")?,
    })
}

pub(crate) fn policy_from_row<R: RawRow>(row: &R) -> StoreResult<PolicyInfo> {
    let columns = Columns::new(row, "policies");
    Ok(PolicyInfo {
        version: columns.unsigned("version")?,
        digest: columns.text("digest")?,
        source: columns.text("source")?,
        updated_at: columns.time("created_at")?,
    })
}

pub(crate) const RUN_COLUMNS: &str =
    "id, session_id, agent_id, state, error, last_seq, created_at, updated_at";

pub(crate) fn run_from_row<R: RawRow>(row: &R) -> StoreResult<Run> {
    let columns = Columns::new(row, "runs");
    Ok(Run {
        id: columns.text("id")?,
        session_id: columns.text("session_id")?,
        agent_id: columns.text("agent_id")?,
        state: columns.enumeration("state")?,
        error: columns.opt_text("error")?,
        last_seq: columns.unsigned("last_seq")?,
        created_at: columns.time("created_at")?,
        updated_at: columns.time("updated_at")?,
    })
}

pub(crate) fn run_event_from_row<R: RawRow>(row: &R) -> StoreResult<RunEvent> {
    let columns = Columns::new(row, "run_events");
    Ok(RunEvent {
        seq: columns.unsigned("seq")?,
        kind: columns.text("kind")?,
        at: columns.time("at")?,
        data: columns.json("data")?,
    })
}

pub(crate) const STEP_COLUMNS: &str = "idx, tool_call_id, tool, arguments, exact, call_id, \
     state, status, output, rule, standing_rule, approver, finished_at";

pub(crate) fn step_from_row<R: RawRow>(row: &R) -> StoreResult<StoredStep> {
    let columns = Columns::new(row, "run_steps");
    let index = u32::try_from(columns.int("idx")?).map_err(|_| StoreError::Corrupt {
        table: "run_steps",
        detail: "idx: out of range".into(),
    })?;
    let status: Option<String> = columns.opt_text("status")?;
    Ok(StoredStep {
        step: Step {
            index,
            tool_call_id: columns.text("tool_call_id")?,
            tool: columns.text("tool")?,
            arguments: columns.json("arguments")?,
            call_id: columns.opt_text("call_id")?,
            state: columns.enumeration("state")?,
            status: status
                .map(|text| {
                    text.parse().map_err(|detail| StoreError::Corrupt {
                        table: "run_steps",
                        detail: format!("status: {detail}"),
                    })
                })
                .transpose()?,
            output: columns.opt_json("output")?,
            rule: columns.opt_text("rule")?,
            standing_rule: columns.opt_text("standing_rule")?,
            approver: columns.opt_text("approver")?,
            finished_at: columns.opt_time("finished_at")?,
        },
        exact: columns.int("exact")? != 0,
    })
}

pub(crate) const MESSAGE_COLUMNS: &str =
    "id, session_id, run_id, role, text, tool_calls, tool_call_id, steps, created_at";

pub(crate) fn message_from_row<R: RawRow>(row: &R) -> StoreResult<Message> {
    let columns = Columns::new(row, "messages");
    Ok(Message {
        id: columns.text("id")?,
        session_id: columns.text("session_id")?,
        run_id: columns.text("run_id")?,
        role: columns.text("role")?,
        text: columns.opt_text("text")?,
        tool_calls: columns.json("tool_calls")?,
        tool_call_id: columns.opt_text("tool_call_id")?,
        steps: columns.json("steps")?,
        created_at: columns.time("created_at")?,
    })
}

pub(crate) const OUTBOX_COLUMNS: &str = "id, kind, recipient, payload, run_id, call_id, \
     created_at, delivered_at, attempts, last_error";

pub(crate) fn outbox_from_row<R: RawRow>(row: &R) -> StoreResult<OutboxItem> {
    let columns = Columns::new(row, "outbox");
    Ok(OutboxItem {
        id: columns.text("id")?,
        kind: columns.text("kind")?,
        recipient: columns.text("recipient")?,
        payload: columns.json("payload")?,
        run_id: columns.opt_text("run_id")?,
        call_id: columns.text("call_id")?,
        created_at: columns.time("created_at")?,
        delivered_at: columns.opt_time("delivered_at")?,
        attempts: u32::try_from(columns.int("attempts")?).map_err(|_| StoreError::Corrupt {
            table: "outbox",
            detail: "attempts: out of range".into(),
        })?,
        last_error: columns.opt_text("last_error")?,
    })
}

pub(crate) const TASK_COLUMNS: &str = "id, title, instructions, agent_id, cron, timezone, \
     enabled, created_by, created_at, updated_at, revoked_at, next_run_at, active_run_id, \
     last_run_id";

pub(crate) fn task_from_row<R: RawRow>(row: &R) -> StoreResult<Task> {
    let columns = Columns::new(row, "tasks");
    Ok(Task {
        id: columns.text("id")?,
        title: columns.text("title")?,
        instructions: columns.text("instructions")?,
        agent_id: columns.text("agent_id")?,
        cron: columns.text("cron")?,
        timezone: columns.text("timezone")?,
        enabled: columns.int("enabled")? != 0,
        created_by: columns.text("created_by")?,
        created_at: columns.time("created_at")?,
        updated_at: columns.time("updated_at")?,
        revoked_at: columns.opt_time("revoked_at")?,
        next_run_at: columns.opt_time("next_run_at")?,
        active_run_id: columns.opt_text("active_run_id")?,
        last_run_id: columns.opt_text("last_run_id")?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_time_written_reads_back() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        for at in [Timestamp::MIN, Timestamp::MAX, Timestamp::UNIX_EPOCH, now] {
            let back = from_millis(millis(at)).unwrap();
            assert!(
                (back.as_second() - at.as_second()).abs() <= 1,
                "{at} → {back}"
            );
        }
        assert_eq!(from_millis(millis(now)).unwrap(), now);
        // What versions before the clamp wrote for `Timestamp::MAX` reads as the latest.
        let latest = from_millis(253_402_207_200_999).unwrap();
        assert_eq!(latest.to_string(), "9999-12-30T22:00:00Z");
        assert!(from_millis(253_402_207_201_000).is_err());
    }
}
