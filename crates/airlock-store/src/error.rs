//! What a store operation answers besides its value: [`StoreError`] for trouble with the
//! database, and for the operations that may refuse, why they refused ([`DecideError`],
//! [`RedeemError`], [`SettleError`]). Every refusal writes nothing.

use crate::Grant;
use airlock_protocol::ApprovalStatus;

/// Storage trouble that is not a refusal: the database is unreachable, a query failed, a
/// row is corrupt. Callers map it to 503/500 and never to an allow.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(String),
    #[error("corrupt row in {table}: {detail}")]
    Corrupt { table: &'static str, detail: String },
    #[error("conflict: {0}")]
    Conflict(String),
    /// A call was evaluated under a policy that another request replaced before the call
    /// was recorded; the gate evaluates it again under the policy now in force.
    #[error("the policy changed while the call was being evaluated")]
    StalePolicy,
    /// A run write from a node that no longer holds the run (it was cancelled, or taken
    /// over after the lease ran out).
    #[error("the run is no longer held by this node")]
    LeaseLost,
}

pub type StoreResult<T> = Result<T, StoreError>;

/// Why a decision was refused. Each refusal writes nothing (G3).
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("no such approval")]
    NotFound,
    #[error("the approval is already {0}")]
    AlreadyDecided(ApprovalStatus),
    #[error("the approval's deadline has passed")]
    Expired,
    #[error("the binding digest does not match the approval")]
    BindingMismatch,
    /// The policy in force is not the one the call was evaluated under.
    #[error("the policy changed while the approval was pending")]
    StalePolicy,
    /// Under the two-person rule: this person's vote is already counted.
    #[error("this person already voted on the approval")]
    AlreadyVoted,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a grant could not be consumed.
#[derive(Debug, thiserror::Error)]
pub enum RedeemError {
    #[error("no such call")]
    NotFound,
    /// The call was never allowed or approved.
    #[error("the call has no grant")]
    NoGrant,
    /// The grant was consumed before (G1).
    #[error("the grant was already consumed")]
    Spent,
    /// Not a failure for the client: a retry under the key the grant was consumed with.
    /// Carried as an error so that the transaction writes nothing; callers answer it with
    /// the grant (and any edited arguments) and `replayed: true`.
    #[error("the grant was consumed under this key before")]
    Replay(Grant, Option<serde_json::Value>),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why an outcome or a reconciliation could not be recorded (DESIGN.md §11.8).
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    #[error("no such call")]
    NotFound,
    /// An outcome for a call whose grant was never consumed.
    #[error("the call was not redeemed")]
    NotRedeemed,
    /// Another outcome was stored before; the first one stands.
    #[error("a different outcome was already reported")]
    AlreadyReported,
    /// A reconciliation for a call that is not ambiguous (or was reported on since).
    #[error("the call is not ambiguous")]
    NotAmbiguous,
    #[error("the call was already reconciled")]
    AlreadyReconciled,
    #[error(transparent)]
    Store(#[from] StoreError),
}
