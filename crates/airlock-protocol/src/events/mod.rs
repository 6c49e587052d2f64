//! Typed events: the run journal ([`RunEventData`]), the workspace stream
//! ([`WorkspaceEventData`]) and the audit log ([`AuditEvent`]), one variant per kind and
//! one struct per data shape.
//!
//! Each enum is serde-tagged as `{"kind": …, "data": …}`, the shape in which the records
//! of the HTTP API ([`crate::RunEvent`], [`crate::WorkspaceEvent`], [`crate::AuditRecord`])
//! carry them. The records themselves keep `kind` as text and `data` as JSON: the store
//! keeps what it was given, a row written by another version still reads, and the audit
//! chain is hashed over the stored text. The typing is where events are made and read:
//! producers build a variant and store [`kind`](RunEventData::kind) +
//! [`data`](RunEventData::data); consumers call `from_parts` and handle an
//! [`EventError`] (a kind this build does not know, or data of another shape) themselves.
//!
//! The JSON of every data struct is exactly what the earlier `json!()` producers wrote:
//! the same field names in the same order, `null` where they wrote `null`, absent where
//! they left a field out (tests/events.rs holds the expected text of each kind).

mod audit;
mod run;
mod workspace;

pub use audit::{
    AgentAudit, ApprovalAudit, ApprovalDecidedAudit, ApprovalRequestedAudit, AuditEvent, AuditKind,
    CallAdoptedAudit, CallAmbiguousAudit, CallAudit, CallOutcomeAudit, CallReconciledAudit,
    GrantConsumedAudit, PolicyUpdatedAudit, RuleCreatedAudit, RuleRevokedAudit, RunAudit,
    SessionUpdatedAudit, SubjectAudit, TaskCreatedAudit, TaskUpdatedAudit, UserCreatedAudit,
    VoteAudit, WebSessionCreatedAudit, WebSessionEndedAudit,
};
pub use run::{
    ApprovalRequired, RunActor, RunCompleted, RunEventData, RunFailed, RunKind, RunResumed,
    RunStarted, RunSuspended, StepFinished, TextDelta, ToolCallMade, ToolDecided, ToolFinished,
    ToolStarted,
};
pub use workspace::{
    AgentUpdated, CallOutcomeEvent, CallReconciledEvent, PolicyUpdatedEvent, RuleRevoked,
    RunStateChanged, TokenRevoked, WorkspaceEventData, WorkspaceKind,
};

use serde_json::Value;
use std::fmt;

/// Why a stored `kind` + `data` does not read as a typed event.
#[derive(Debug)]
pub enum EventError {
    /// A kind this build does not know (written by a newer or older version).
    UnknownKind(String),
    /// A known kind whose data has another shape.
    Data {
        kind: String,
        error: serde_json::Error,
    },
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventError::UnknownKind(kind) => write!(f, "unknown event kind `{kind}`"),
            EventError::Data { kind, error } => write!(f, "the data of a `{kind}` event: {error}"),
        }
    }
}

impl std::error::Error for EventError {}

/// A data struct as stored. Serialising these types cannot fail (string keys only, no
/// custom serialisers that refuse); `null` is the same fallback the producers used before.
pub(crate) fn to_data(data: &impl serde::Serialize) -> Value {
    serde_json::to_value(data).unwrap_or(Value::Null)
}

/// [`to_data`] as JSON text.
pub(crate) fn to_data_json(data: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(data).unwrap_or_else(|_| b"null".to_vec())
}

/// Declares one tagged enum of event kinds: each `"kind" => Variant(Data)` becomes a
/// variant renamed to its kind, and the enum gets `KINDS`, `kind()`, `data()` and
/// `from_parts()`, so that a kind's text is written once. `pub enum Data: Kind` also
/// declares `Kind`, the same variants without their data, for readers that only branch
/// on the kind (a replay over a million records, a cache deciding what to drop): they
/// match on it, so a kind added later is a compile error until each reader decides.
macro_rules! event_kinds {
    (
        $(#[$meta:meta])*
        pub enum $name:ident: $kinds:ident {
            $( $(#[doc = $doc:literal])* $kind:literal => $variant:ident($data:ty), )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", content = "data")]
        pub enum $name {
            $( $(#[doc = $doc])* #[serde(rename = $kind)] $variant($data), )+
        }

        #[doc = concat!("The kinds of [`", stringify!($name), "`], without their data.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $kinds {
            $( $(#[doc = $doc])* $variant, )+
        }

        impl $kinds {
            /// The kind a stored `kind` names; `None` for a kind this build does not know
            /// (written by a newer or older version), which each reader handles itself.
            pub fn parse(kind: &str) -> Option<$kinds> {
                match kind {
                    $( $kind => Some($kinds::$variant), )+
                    _ => None,
                }
            }

            /// The kind as stored and sent.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $kinds::$variant => $kind, )+
                }
            }
        }

        impl $name {
            /// Every kind, as stored.
            pub const KINDS: &'static [&'static str] = &[$($kind),+];

            /// The kind as stored and sent (the SSE `event:` name).
            pub fn kind(&self) -> &'static str {
                self.kind_of().as_str()
            }

            /// The kind, without the data.
            pub fn kind_of(&self) -> $kinds {
                match self {
                    $( $name::$variant(_) => $kinds::$variant, )+
                }
            }

            /// The data as stored and sent.
            pub fn data(&self) -> serde_json::Value {
                match self {
                    $( $name::$variant(data) => $crate::events::to_data(data), )+
                }
            }

            /// The data as JSON text, written without a `Value` tree (what the store
            /// keeps, once canonicalized); `null` where [`Self::data`] gives it.
            pub fn data_json(&self) -> Vec<u8> {
                match self {
                    $( $name::$variant(data) => $crate::events::to_data_json(data), )+
                }
            }

            /// Reads a stored `kind` + `data` back.
            pub fn from_parts(
                kind: &str,
                data: serde_json::Value,
            ) -> Result<$name, $crate::events::EventError> {
                match kind {
                    $( $kind => serde_json::from_value(data).map($name::$variant), )+
                    other => return Err($crate::events::EventError::UnknownKind(other.to_owned())),
                }
                .map_err(|error| $crate::events::EventError::Data { kind: kind.to_owned(), error })
            }
        }
    };
}
pub(crate) use event_kinds;
