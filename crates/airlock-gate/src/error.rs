//! The gate's error type: every refusal and every failure, each mapped by the server to one
//! status and one stable problem `type`.

use airlock_policy::LoadErrors;
use airlock_protocol::ApprovalStatus;
use airlock_store::{DecideError, RedeemError, SettleError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// No token, or a token nobody holds.
    #[error("missing or unknown token")]
    Unauthorized,
    /// The principal may not do this (G6).
    #[error("{0}")]
    Forbidden(String),
    /// No such object in the principal's workspace (another workspace's objects too, G6).
    #[error("no such {0}")]
    NotFound(&'static str),
    /// The request is well-formed JSON but makes no sense.
    #[error("{0}")]
    Invalid(String),
    /// A policy that does not load; the one in force stays.
    #[error("the policy does not load")]
    PolicyInvalid(LoadErrors),
    #[error("the binding digest does not match the approval (G2)")]
    BindingMismatch,
    #[error("the approval is already {0}")]
    AlreadyDecided(ApprovalStatus),
    #[error("the approval's deadline has passed")]
    Expired,
    #[error("the policy changed while the approval was pending")]
    StalePolicy,
    /// Under the two-person rule: this person's vote is already counted.
    #[error("you already voted on this approval")]
    AlreadyVoted,
    /// A person's edit of the call that the policy in force denies (DESIGN.md §11.6).
    #[error("the policy denies the edited call: {0}")]
    EditDenied(String),
    #[error("the grant was already consumed")]
    GrantSpent,
    /// A name that must be unique is taken.
    #[error("{0}")]
    Conflict(String),
    /// The store failed; the caller may retry. Never turned into an allow.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
}

impl From<StoreError> for GateError {
    fn from(error: StoreError) -> GateError {
        match error {
            StoreError::Conflict(message) => GateError::Conflict(message),
            StoreError::StalePolicy => GateError::StalePolicy,
            other => GateError::Unavailable(other.to_string()),
        }
    }
}

impl From<DecideError> for GateError {
    fn from(error: DecideError) -> GateError {
        match error {
            DecideError::NotFound => GateError::NotFound("approval"),
            DecideError::AlreadyDecided(status) => GateError::AlreadyDecided(status),
            DecideError::Expired => GateError::Expired,
            DecideError::BindingMismatch => GateError::BindingMismatch,
            DecideError::StalePolicy => GateError::StalePolicy,
            DecideError::AlreadyVoted => GateError::AlreadyVoted,
            DecideError::Store(error) => error.into(),
        }
    }
}

impl From<RedeemError> for GateError {
    fn from(error: RedeemError) -> GateError {
        match error {
            RedeemError::NotFound => GateError::NotFound("call"),
            RedeemError::NoGrant => GateError::Forbidden(
                "the call has no grant: it was denied or is not approved".into(),
            ),
            // Only a store that forgot to turn a replay into an answer gets here; a replay
            // must never pass for a first consumption, so it is refused like a spent grant.
            RedeemError::Spent | RedeemError::Replay(..) => GateError::GrantSpent,
            RedeemError::Store(error) => error.into(),
        }
    }
}

impl From<SettleError> for GateError {
    fn from(error: SettleError) -> GateError {
        match error {
            SettleError::NotFound => GateError::NotFound("call"),
            SettleError::NotRedeemed => GateError::Conflict(
                "the call was not redeemed: there is no execution to report on".into(),
            ),
            SettleError::AlreadyReported => GateError::Conflict(
                "a different outcome was already reported for this call; the first stands".into(),
            ),
            SettleError::NotAmbiguous => GateError::Conflict(
                "the call is not ambiguous: only a redeemed call with no reported outcome \
                 after outcome_timeout is reconciled"
                    .into(),
            ),
            SettleError::AlreadyReconciled => {
                GateError::Conflict("the call was already reconciled".into())
            }
            SettleError::Store(error) => error.into(),
        }
    }
}
