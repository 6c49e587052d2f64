//! The values the store takes and returns beside the wire records of `airlock-protocol`.

pub use airlock_digest::canonical::CanonicalJson;
use airlock_protocol::{Approval, Call, StandingRule};
use jiff::Timestamp;
use serde_json::Value;

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    pub id: String,
    pub name: String,
    pub created_at: Timestamp,
}

// Who is asking lives in the protocol crate (the server needs it without the store);
// re-exported so that the store's own code and its users name it as before.
pub use airlock_protocol::{Principal, Subject};

/// An audit record to append; the store assigns `seq`, `prev_hash` and `hash`.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    pub at: Timestamp,
    pub actor: String,
    pub kind: String,
    pub subject: String,
    /// Already redacted by the caller; stored and hashed as it is.
    pub data: CanonicalJson,
}

/// A workspace event to append; the store assigns its id.
#[derive(Debug, Clone, PartialEq)]
pub struct EventEntry {
    pub at: Timestamp,
    pub kind: String,
    pub data: CanonicalJson,
}

/// What an operation appends in its own transaction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effects {
    pub audit: Vec<AuditEntry>,
    pub events: Vec<EventEntry>,
}

impl Effects {
    pub fn none() -> Effects {
        Effects::default()
    }

    pub fn audit(mut self, entry: AuditEntry) -> Effects {
        self.audit.push(entry);
        self
    }

    pub fn event(mut self, entry: EventEntry) -> Effects {
        self.events.push(entry);
        self
    }
}

/// A single-use capability to execute one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub id: String,
    pub call_id: String,
    pub created_at: Timestamp,
    pub consumed_at: Option<Timestamp>,
}

/// How one redeem asks for a grant (DESIGN.md §11.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedeemRequest<'a> {
    pub at: Timestamp,
    /// The client's `Idempotency-Key`, already checked for size and shape by the gate.
    pub key: Option<&'a str>,
    /// When the call turns ambiguous if no outcome was reported by then; `None` for a
    /// path that reports its outcome in the same breath and never leaves it open.
    pub outcome_due: Option<Timestamp>,
}

/// What a coding agent's hook call is looked up by before it is judged
/// ([`crate::Store::hook_reads`]): each part that is `None` finds nothing.
#[derive(Debug, Clone, Copy)]
pub struct HookReads<'a> {
    pub agent_id: &'a str,
    /// The airlock session the call belongs to.
    pub session_id: Option<&'a str>,
    /// The key its grant would be redeemed under (a retry whose answer was lost).
    pub redeem_key: Option<&'a str>,
    /// The key a call held for this retry is held under.
    pub retry_key: Option<&'a str>,
    /// The call's tool and its redacted arguments (an unreconciled ambiguous twin).
    pub tool: &'a str,
    pub arguments: &'a Value,
}

/// What [`HookReads`] found, read in one statement.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookFound {
    /// The session, when it exists in the workspace.
    pub session: Option<airlock_protocol::Session>,
    /// As [`crate::Store::call_redeemed_under`] answers for `redeem_key`.
    pub redeemed_under: Option<String>,
    /// The id of the call [`crate::Store::held_for_retry`] answers for `retry_key`.
    pub held: Option<String>,
    /// As [`crate::Store::ambiguous_twin`] answers (`twin`) for the tool and arguments.
    pub ambiguous_twin: Option<String>,
}

/// What [`crate::Store::ambiguous_twin`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TwinFound {
    /// The id of the oldest unreconciled ambiguous call of the agent with exactly this tool
    /// and these redacted arguments.
    pub twin: Option<String>,
    /// Whether the workspace holds any unreconciled ambiguous call (of any agent or tool).
    pub any_in_workspace: bool,
}

/// A consumed grant, and whether this answer replays an earlier redeem under the same key.
#[derive(Debug, Clone, PartialEq)]
pub struct Redemption {
    pub grant: Grant,
    pub replayed: bool,
    /// The arguments a person edited the call to while approving it: what to execute
    /// instead of the submitted ones (DESIGN.md §11.6). `None` when not edited.
    pub arguments: Option<serde_json::Value>,
}

/// What recording an outcome did.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeRecorded {
    /// The call as it stands after the operation, showing the stored outcome.
    pub call: Call,
    /// False when the same outcome had been stored before: nothing was written.
    pub stored: bool,
}

/// A call as the gate decided it at submission.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCall {
    pub call: Call,
    /// Present when the call is pending.
    pub approval: Option<Approval>,
    /// Present when the call is allowed.
    pub grant: Option<Grant>,
}

/// Which approvals to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalFilter {
    pub status: Option<airlock_protocol::ApprovalStatus>,
    pub session_id: Option<String>,
    /// Only the approvals of this run's calls (its steps).
    pub run_id: Option<String>,
    /// Only approvals older than this one (its id): the page after the one it ends.
    pub before: Option<String>,
    pub limit: u32,
}

/// A person's decision on an approval, as the gate prepared it.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub approval_id: String,
    pub approve: bool,
    /// The digest the decider saw; must equal the approval's.
    pub binding_digest: String,
    /// `user:<id>`.
    pub decided_by: String,
    pub reason: Option<String>,
    pub at: Timestamp,
    /// The grant to insert on approve.
    pub grant: Option<Grant>,
    /// The standing rule to mint on approve with `remember`.
    pub standing_rule: Option<StandingRule>,
    /// A person's edit of the arguments, applied on approve (DESIGN.md §11.6).
    pub edit: Option<Edit>,
    /// Under the two-person rule (an approval with `approvals_required` > 1): what to
    /// append when this vote is an approval that leaves it still short of its people (the
    /// vote's audit record and event). The decision's own effects are appended when the
    /// vote settles it. Ignored for an approval one person decides.
    pub vote: Option<Effects>,
}

/// The arguments a person approved instead of the asked ones. The gate evaluated them
/// under the policy in force and made sure they hold no secret, so they are stored as
/// they are and executed exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    pub arguments: serde_json::Value,
    /// The binding digest over the edited arguments; the grant is bound to it.
    pub binding_digest: String,
}

/// What a successful decision changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    pub approval: Approval,
    pub call: Call,
    pub grant: Option<Grant>,
    /// The minted (or reused, `false`) standing rule.
    pub standing_rule: Option<(StandingRule, bool)>,
}

/// A change committed to the shared database, by this node or another (PostgreSQL
/// LISTEN/NOTIFY): one workspace event, named by its id, kind and the call it concerns.
///
/// Two kinds are not event kinds but the listener's own signals, with an empty workspace:
/// [`Change::RESYNC`] and [`Change::LOST`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub workspace: String,
    pub kind: String,
    /// The event data's `call_id`, when it has one.
    pub call_id: Option<String>,
    pub event_id: u64,
}

impl Change {
    /// The kind of [`Change::resync`]: notifications may have been missed (the listening
    /// connection was re-established, or the receiver fell behind): re-read everything.
    pub const RESYNC: &'static str = "resync";

    /// The kind of [`Change::lost`]: the connection is lost, and changes are not heard
    /// until the next resync.
    pub const LOST: &'static str = "lost";

    /// The change that says "you may have missed some: re-read everything".
    pub fn resync() -> Change {
        Change::signal(Change::RESYNC)
    }

    /// The change that says "the connection is lost: changes are not heard until the next
    /// resync". Sent as soon as the loss is seen, before listening again.
    pub fn lost() -> Change {
        Change::signal(Change::LOST)
    }

    fn signal(kind: &str) -> Change {
        Change {
            workspace: String::new(),
            kind: kind.to_owned(),
            call_id: None,
            event_id: 0,
        }
    }
}

// ----- the built-in runtime

/// A journal event to append to a run; the store assigns its `seq` (continuous from 1).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEventEntry {
    pub at: Timestamp,
    pub kind: String,
    pub data: Value,
}

/// Who holds a running run, and until when. A node renews its lease with every write; a
/// lease that ran out lets another node (or this one after a restart) take the run over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub owner: String,
    pub until: Timestamp,
}

/// How a run's end (cancel, pause), or a new policy, closes pending approvals in its
/// transaction.
pub struct ClosingApprovals<'a> {
    pub at: Timestamp,
    /// The approvals' `decision_reason`, also their calls' `reason`.
    pub reason: &'a str,
    /// The effects of closing one approval (its audit record and event).
    pub effects: &'a (dyn for<'b> Fn(&'b Approval) -> Effects + Sync),
}

/// What one write to a run changes, all in one transaction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunUpdate {
    pub at: Option<Timestamp>,
    pub events: Vec<RunEventEntry>,
    /// The run's new state (with its error, for `failed`).
    pub state: Option<(airlock_protocol::RunState, Option<String>)>,
    /// The new lease while the run keeps running; the lease is dropped whenever the run
    /// leaves `running`.
    pub lease: Option<Lease>,
    pub messages: Vec<airlock_protocol::Message>,
    /// Inserted, or updating the outcome of the step with the same index (state, call,
    /// status, output, rule, approver, finish time); its tool call, tool and arguments stay
    /// as first written.
    pub steps: Vec<StoredStep>,
    /// Audit records and workspace events of the same change.
    pub effects: Effects,
    /// The result of a tool that was already executing when a person paused or cancelled
    /// the run: the holder may still write it to the paused or cancelled run (DESIGN.md
    /// §11.6), and nothing else.
    pub while_paused: bool,
}

/// A step as the runtime stores it: the trace entry plus whether its stored arguments
/// are the exact ones (they are not when the arguments held secrets, which are never
/// stored; such a call cannot run after a restart).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredStep {
    pub step: airlock_protocol::Step,
    pub exact: bool,
}

// ----- web sessions

/// A browser signed in to the web inbox. The cookie value itself is never stored, only
/// its SHA-256; the session acts as whoever holds `token_hash`, for as long as that token
/// is unrevoked and `expires_at` has not passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSession {
    pub id: String,
    /// Hex SHA-256 of the cookie value.
    pub cookie_hash: String,
    /// The hash of the user token the person signed in with.
    pub token_hash: String,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}
