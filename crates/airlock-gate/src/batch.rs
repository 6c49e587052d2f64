//! Deciding several approvals at once (DESIGN.md §11.6).
//!
//! A batch is a list of one-approval decisions made by one person. Each item goes through
//! [`Gate::decide`] on its own, so it is checked, applied and refused exactly as it would
//! be alone, in its own transaction: one bad item (wrong digest, unknown id, already
//! decided, not allowed) never changes another's outcome, and a crash part-way leaves
//! every item either decided in full or untouched. Items are applied in order, so the
//! same approval named twice is decided once and the second is `already_decided`.

use crate::identity::require_role;
use crate::{Gate, GateError};
use airlock_protocol::{Approval, BatchItem, DecisionRequest, Role};
use airlock_store::Principal;

/// The most items one batch may hold.
pub const MAX_ITEMS: usize = 1000;

impl Gate {
    /// Decides each item as [`Gate::decide`] would; one result per item, in order. A
    /// caller who may not decide at all (agents, viewers) is refused as a whole before
    /// any item is read, like the one-approval decision (G6).
    pub async fn decide_batch(
        &self,
        principal: &Principal,
        items: Vec<BatchItem>,
    ) -> Result<Vec<(String, Result<Approval, GateError>)>, GateError> {
        require_role(principal, Role::Approver, "decide approvals")?;
        if items.is_empty() || items.len() > MAX_ITEMS {
            return Err(GateError::Invalid(format!(
                "items must hold 1 to {MAX_ITEMS} decisions, not {}",
                items.len()
            )));
        }
        let mut results = Vec::with_capacity(items.len());
        for item in items {
            let request = DecisionRequest {
                decision: item.decision,
                binding_digest: item.binding_digest,
                reason: item.reason,
                remember: None,
                arguments: item.arguments,
            };
            let outcome = self.decide(principal, &item.id, request).await;
            results.push((item.id, outcome));
        }
        Ok(results)
    }
}
