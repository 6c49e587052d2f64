//! What happened after a grant was consumed (DESIGN.md §11.8): the outcome the agent
//! reports, and a person's reconciliation of a call nobody reported on.
//!
//! A consumed grant says the agent was allowed to run the call, not that it did. These
//! records close that gap: an outcome from the agent, or, when none arrives within the
//! policy's `outcome_timeout`, an *ambiguous* call that a person settles.

use crate::records::string_enum;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

string_enum! {
    /// What the agent says happened when it ran the call.
    OutcomeStatus {
        Succeeded => "succeeded",
        Failed => "failed",
    }
}

string_enum! {
    /// A person's account of an ambiguous call.
    Resolution {
        /// The call ran (the person checked).
        Ran => "ran",
        /// The call never ran: the agent's next identical call is asked afresh.
        DidNotRun => "did_not_run",
    }
}

/// The outcome of a redeemed call, as reported once by its agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CallOutcome {
    pub status: OutcomeStatus,
    /// At most 2,000 characters, redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub reported_at: Timestamp,
}

/// A person's settling of an ambiguous call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Reconciliation {
    pub resolution: Resolution,
    /// `user:<id>`.
    pub by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
}

/// The body of `POST /v1/calls/{id}/outcome`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OutcomeReport {
    pub status: OutcomeStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The body of `POST /v1/calls/{id}/reconcile`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReconcileRequest {
    pub resolution: Resolution,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
