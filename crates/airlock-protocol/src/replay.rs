//! The replay report (DESIGN.md §11.5): what a candidate policy would have decided on the
//! recorded calls, beside what they got. One shape for `airlock policy replay --json`,
//! `PUT /v1/policy?dry_run=true` and the replay report of an insights suggestion.

use crate::Decision;
use serde::{Deserialize, Serialize};

/// How many calls got each decision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecisionCounts {
    pub allow: u64,
    pub ask: u64,
    pub deny: u64,
}

impl DecisionCounts {
    pub fn add(&mut self, decision: Decision) {
        match decision {
            Decision::Allow => self.allow += 1,
            Decision::Ask => self.ask += 1,
            Decision::Deny => self.deny += 1,
        }
    }

    pub fn total(&self) -> u64 {
        self.allow + self.ask + self.deny
    }

    /// Prompts per 100 calls (asked calls are prompts), two decimals; 0 for no calls.
    pub fn prompts_per_100(&self) -> f64 {
        match self.total() {
            0 => 0.0,
            total => (self.ask as f64 * 10_000.0 / total as f64).round() / 100.0,
        }
    }
}

/// How many calls moved from one decision to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Transition {
    pub from: Decision,
    pub to: Decision,
    pub count: u64,
    /// `to` is looser than `from` (deny → ask, deny → allow, ask → allow).
    pub toward_allow: bool,
}

/// One recorded call whose decision would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChangedCall {
    /// Where the call was recorded: its call id, or `line N` of a calls file.
    pub id: String,
    /// When it was recorded (RFC 3339), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    pub tool: String,
    pub from: Decision,
    pub to: Decision,
    /// The rule (or standing rule) the recorded decision cited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_before: Option<String>,
    /// The rule of the candidate policy that decides it now; none for the policy default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_after: Option<String>,
    /// Why the candidate decides as it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub toward_allow: bool,
}

/// What a candidate policy changes on the recorded calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReplayReport {
    /// The candidate policy's digest.
    pub digest: String,
    /// Calls replayed.
    pub calls: u64,
    pub before: DecisionCounts,
    pub after: DecisionCounts,
    pub prompts_per_100_before: f64,
    pub prompts_per_100_after: f64,
    /// Calls whose decision changes, of them toward allow.
    pub changed: u64,
    pub toward_allow: u64,
    /// Every kind of change with its count: toward allow first, then by count.
    pub transitions: Vec<Transition>,
    /// The changed calls, toward allow first, then in recorded order; at most
    /// [`ReplayReport::LISTED`] (see `truncated`).
    pub changes: Vec<ChangedCall>,
    /// More calls changed than are listed.
    pub truncated: bool,
}

impl ReplayReport {
    /// How many changed calls a report lists: a report on a million calls must stay small.
    pub const LISTED: usize = 1000;
}
