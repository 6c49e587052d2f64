//! Deciding several approvals at once (DESIGN.md §11.6): `POST /v1/approvals/decisions`.
//!
//! A model's turn often holds several tool calls; a person decides them together. Each
//! item stands alone: it is decided (or refused) exactly as the one-approval decision
//! would be, in its own transaction, and one bad item never changes another's outcome.

use crate::bodies::DecisionVerdict;
use crate::records::{ApprovalStatus, Problem};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The body of `POST /v1/approvals/decisions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"items": [
    {"id": "apr_…", "binding_digest": "…", "decision": "approve"},
    {"id": "apr_…", "binding_digest": "…", "decision": "reject", "reason": "not this one"}]})))]
#[serde(deny_unknown_fields)]
pub struct DecisionBatch {
    /// 1 to 1000 decisions, applied in this order.
    pub items: Vec<BatchItem>,
}

/// One decision of a batch: the one-approval decision's fields and the approval's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BatchItem {
    /// The approval's id.
    pub id: String,
    /// The approval's `binding_digest` (or `edited_binding_digest`), echoed (G2).
    pub binding_digest: String,
    pub decision: DecisionVerdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Approve with edits: the whole arguments object to run instead (only with
    /// `approve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub arguments: Option<Value>,
}

/// The answer to a batch: one result per item, in the items' order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BatchResults {
    pub results: Vec<BatchResult>,
}

/// What became of one item: the approval's `status` after it was decided, or the
/// `problem` that refused it (the same problem the one-approval decision answers; nothing
/// was written for it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BatchResult {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ApprovalStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<Problem>,
}
