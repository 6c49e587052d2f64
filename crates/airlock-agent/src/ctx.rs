//! What a leg, its steps and the tools they execute share: the run being driven
//! ([`Ctx`]), why a leg stopped early ([`LegError`]), what became of a step
//! ([`Settled`]).
//!
//! Its own module so that the runtime's parts depend in one direction: `leg` drives
//! `steps`, which run tools through `execute`; none of them reaches back up for these
//! types.

use crate::toolset::Toolset;
use airlock_protocol::{Agent, Principal, Run};
use airlock_store::StoreError;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Exact arguments of the tool calls made in this leg, by tool call id: the only thing a
/// leg holds in memory (arguments holding secrets are stored redacted).
pub(crate) type ExactArguments = HashMap<String, Value>;

/// Why a call cannot run from what is stored.
pub(crate) const NOT_STORED: &str = "the call's arguments held secret material, which airlock does not store, and the run was resumed from storage; the call cannot run as the model made it";

/// Why a leg stopped early. Either way the run stays in the store as it was last
/// written, for the sweeper (or a person's cancel) to deal with.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LegError {
    /// Another node took the run over, or it was cancelled.
    #[error("the run is no longer held by this node")]
    LeaseLost,
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for LegError {
    fn from(error: StoreError) -> LegError {
        match error {
            StoreError::LeaseLost => LegError::LeaseLost,
            other => LegError::Store(other),
        }
    }
}

/// What became of a step this pass.
pub(crate) enum Settled {
    Finished,
    /// Waiting for a person: the approval's id.
    Waiting(String),
}

/// The run being driven, and who it acts as.
pub(crate) struct Ctx<'a> {
    pub(crate) workspace: &'a str,
    pub(crate) run: Run,
    pub(crate) agent: Agent,
    pub(crate) principal: Principal,
    pub(crate) toolset: Arc<Toolset>,
}
