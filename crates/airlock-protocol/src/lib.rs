//! Wire types shared by every airlock crate.
//!
//! This crate owns the vocabulary of ../shared/DESIGN.md §2 as Rust types: the ordered
//! [`Decision`], the tool [`Risk`] classes, the agent [`Mode`]s and the [`Verdict`] that the
//! policy engine returns, and the objects of the HTTP API ([`Call`], [`Approval`],
//! [`AuditRecord`], …), who is asking ([`Principal`]), and the typed kinds of the run
//! journal, the workspace stream and the audit log ([`events`]). The `openapi` feature derives
//! their OpenAPI schemas. It knows nothing about storage, HTTP or policy parsing; every
//! other crate depends on it, it depends on none of them.

mod batch;
mod bodies;
mod decision;
pub mod events;
mod identity;
mod outcome;
mod records;
mod replay;
mod runs;

pub use batch::{BatchItem, BatchResult, BatchResults, DecisionBatch};
pub use bodies::{
    AgentCreated, AgentPatch, AgentSpec, Annotations, AuditHead, DecisionRequest, DecisionVerdict,
    EvaluateRequest, ExpiresIn, NewMessage, NewRule, NewSession, NewTask, NewUser, Permission,
    PolicyUpdated, Redeemed, Remember, SessionPatch, SessionSnapshot, Started, SubmitCall,
    TaskPatch, UserCreated, VerifyReport, MAX_DURATION_SECONDS,
};
pub use decision::{DecidedBy, Decision, Mode, Risk, SecretFinding, Verdict};
pub use events::{
    AuditEvent, AuditKind, EventError, RunEventData, RunKind, WorkspaceEventData, WorkspaceKind,
};
pub use identity::{Principal, Subject};
pub use outcome::{
    CallOutcome, OutcomeReport, OutcomeStatus, ReconcileRequest, Reconciliation, Resolution,
};
pub use records::{
    Agent, Approval, ApprovalStatus, AuditRecord, Call, CallStatus, LlmConfig, McpServerConfig,
    PolicyInfo, Preview, Problem, Role, RuleScope, Session, StandingRule, User, Vote,
    WorkspaceEvent,
};
pub use replay::{ChangedCall, DecisionCounts, ReplayReport, Transition};
pub use runs::{Message, OutboxItem, Run, RunEvent, RunState, Step, StepState, StepStatus, Task};
