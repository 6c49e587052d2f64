//! Builders for the audit records and events that go with each change: each takes a typed
//! kind from `airlock_protocol::events` and hands the store its kind text and data JSON,
//! which is what the store keeps (and what the audit chain hashes).

use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_store::{AuditEntry, CanonicalJson, EventEntry};
use jiff::Timestamp;
use serde_json::Value;

pub fn audit(at: Timestamp, actor: &str, subject: &str, event: AuditEvent) -> AuditEntry {
    AuditEntry {
        at,
        actor: actor.to_owned(),
        kind: event.kind().to_owned(),
        subject: subject.to_owned(),
        data: canonical(event.data_json()),
    }
}

pub fn event(at: Timestamp, event: WorkspaceEventData) -> EventEntry {
    EventEntry {
        at,
        kind: event.kind().to_owned(),
        data: canonical(event.data_json()),
    }
}

/// The canonical form of an event's data as serde_json wrote it (valid JSON).
fn canonical(data: Vec<u8>) -> CanonicalJson {
    CanonicalJson::from_json(&data).unwrap_or_else(|_| CanonicalJson::from_value(&Value::Null))
}
