//! The expiry sweeper: pending approvals past their deadline become `expired` (G4), their
//! waiters are woken, and the model is told "expired" — never "rejected".
//!
//! The same loop marks calls whose outcome is overdue as ambiguous (`outcomes.rs`).
//!
//! The deadline is also enforced at decision time inside the store transaction, so the
//! sweeper is about telling waiters promptly, not about correctness.

use crate::effects::{audit, event};
use crate::{Gate, GateError};
use airlock_protocol::events::ApprovalAudit;
use airlock_protocol::Approval;
use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_store::Effects;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How many approvals one sweep expires at most (the rest wait for the next sweep).
const BATCH: u32 = 500;

/// The longest the sweeper sleeps without looking (a backstop for clock jumps).
const MAX_SLEEP: Duration = Duration::from_secs(1);

impl Gate {
    /// Expires everything due now; returns how many approvals expired.
    pub async fn sweep_once(&self) -> Result<usize, GateError> {
        let mut total = 0;
        loop {
            let now = self.now();
            let on_expire = |approval: &Approval| -> Effects {
                Effects::none()
                    .audit(audit(
                        now,
                        "system",
                        &approval.id,
                        AuditEvent::ApprovalExpired(ApprovalAudit::of(approval)),
                    ))
                    .event(event(
                        now,
                        WorkspaceEventData::ApprovalExpired(approval.clone()),
                    ))
            };
            let expired = self.store().expire_due(now, BATCH, &on_expire).await?;
            for (workspace, approval) in &expired {
                self.settle(workspace, &approval.call_id);
                self.poke(workspace);
            }
            total += expired.len();
            if expired.len() < BATCH as usize {
                return Ok(total);
            }
        }
    }

    /// Runs the sweeper until `stop` is cancelled: sleeps until the nearest deadline (at
    /// most a second), or until a new approval arrives.
    pub async fn run_sweeper(&self, stop: CancellationToken) {
        loop {
            if let Err(error) = self.sweep_once().await {
                tracing::warn!(%error, "expiry sweep failed; retrying");
            }
            // Calls whose outcome is overdue become ambiguous (DESIGN.md §11.8). Looked up
            // with a read first, so that an idle sweeper opens no write transaction.
            match self.store().next_outcome_due().await {
                Ok(Some(due)) if due <= self.now() => {
                    if let Err(error) = self.sweep_ambiguous_once().await {
                        tracing::warn!(%error, "ambiguity sweep failed; retrying");
                    }
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "ambiguity sweep failed; retrying"),
            }
            let sleep = match self.store().next_deadline().await {
                Ok(Some(deadline)) => {
                    let millis = deadline.as_millisecond() - self.now().as_millisecond();
                    Duration::from_millis(u64::try_from(millis.max(1)).unwrap_or(1)).min(MAX_SLEEP)
                }
                Ok(None) | Err(_) => MAX_SLEEP,
            };
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(sleep) => {}
                _ = self.inner.sweeper_wake.notified() => {}
            }
        }
    }
}
