//! Builders for the audit records and events that go with each change: each takes a typed
//! kind from `airlock_protocol::events` and hands the store its kind text and data JSON,
//! which is what the store keeps (and what the audit chain hashes).

use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_store::{AuditEntry, EventEntry};
use jiff::Timestamp;

pub fn audit(at: Timestamp, actor: &str, subject: &str, event: AuditEvent) -> AuditEntry {
    AuditEntry {
        at,
        actor: actor.to_owned(),
        kind: event.kind().to_owned(),
        subject: subject.to_owned(),
        data: event.data(),
    }
}

pub fn event(at: Timestamp, event: WorkspaceEventData) -> EventEntry {
    EventEntry {
        at,
        kind: event.kind().to_owned(),
        data: event.data(),
    }
}
