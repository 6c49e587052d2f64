//! Standing rules: a person's "allow every time" for one tool and one exact target.
//!
//! Only users with role ≥ approver mint or revoke them (agents never, G6), only for tools
//! the policy lists as `write` or `external` with a `target` (exec is never eligible, read
//! needs none), and only for a non-empty target. Minting an identical live rule again
//! returns the existing one.

use crate::decide::expires_at;
use crate::effects::{audit, event};
use crate::identity::require_role;
use crate::ids::new_id;
use crate::{Gate, GateError};
use airlock_protocol::events::{RuleCreatedAudit, RuleRevoked, RuleRevokedAudit};
use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_protocol::{Risk, Role, RuleScope, StandingRule};
use airlock_store::{Effects, Principal};

pub use airlock_protocol::NewRule;

impl Gate {
    /// Whether standing rules may name this tool: its risk (the policy's catalogue, else
    /// a trusted provider's declaration) is `write` or `external` and it names a target.
    pub fn check_eligible(&self, workspace: &str, tool: &str) -> Result<Risk, GateError> {
        let declared = self.declared_tool(tool);
        let entry = self.loaded_policy(workspace).and_then(|loaded| {
            loaded
                .policy
                .tool_or_declared(tool, declared.as_ref())
                .cloned()
        });
        match entry {
            Some(entry)
                if matches!(entry.risk, Risk::Write | Risk::External) && entry.target.is_some() =>
            {
                Ok(entry.risk)
            }
            Some(entry) => Err(GateError::Invalid(format!(
                "`{tool}` is not eligible for standing rules: its risk is {} {}; only write or external tools with a target are (exec tools never are)",
                entry.risk,
                if entry.target.is_some() { "" } else { "and it names no target" }
            ))),
            None => Err(GateError::Invalid(format!(
                "`{tool}` is not eligible for standing rules: the policy must list it with risk write or external and a target (unlisted tools are exec)"
            ))),
        }
    }

    pub async fn list_rules(&self, principal: &Principal) -> Result<Vec<StandingRule>, GateError> {
        require_role(principal, Role::Viewer, "list standing rules")?;
        Ok(self
            .store()
            .list_standing_rules(&principal.workspace)
            .await?)
    }

    /// Mints a standing rule; returns it and whether it is new.
    pub async fn create_rule(
        &self,
        principal: &Principal,
        rule: NewRule,
    ) -> Result<(StandingRule, bool), GateError> {
        require_role(principal, Role::Approver, "create standing rules")?;
        let workspace = principal.workspace.as_str();
        if rule.target.trim().is_empty() {
            return Err(GateError::Invalid(
                "target is empty; a standing rule binds to one exact target".into(),
            ));
        }
        self.check_eligible(workspace, &rule.tool)?;
        match rule.scope {
            RuleScope::Session => {
                self.store()
                    .get_session(workspace, &rule.scope_id)
                    .await?
                    .ok_or(GateError::NotFound("session"))?;
            }
            RuleScope::Agent => {
                self.store()
                    .get_agent(workspace, &rule.scope_id)
                    .await?
                    .ok_or(GateError::NotFound("agent"))?;
            }
            RuleScope::Task => {
                self.store()
                    .get_task(workspace, &rule.scope_id)
                    .await?
                    .ok_or(GateError::NotFound("task"))?;
            }
        }
        let now = self.now();
        let expires_at = expires_at(now, rule.expires_in.as_ref())?;
        let actor = principal.actor();
        let standing = StandingRule {
            id: new_id("rule"),
            tool: rule.tool,
            target: rule.target,
            scope: rule.scope,
            scope_id: rule.scope_id,
            created_by: actor.clone(),
            created_at: now,
            expires_at,
            revoked_at: None,
        };
        let effects = Effects::none()
            .audit(audit(
                now,
                &actor,
                &standing.id,
                AuditEvent::RuleCreated(RuleCreatedAudit {
                    tool: standing.tool.clone(),
                    target: standing.target.clone(),
                    scope: standing.scope,
                    scope_id: standing.scope_id.clone(),
                    expires_at: Some(standing.expires_at.map(|t| t.to_string())),
                    from_approval: None,
                }),
            ))
            .event(event(
                now,
                WorkspaceEventData::RuleCreated(standing.clone()),
            ));
        let (stored, created) = self
            .store()
            .create_standing_rule(workspace, &standing, &effects)
            .await?;
        if created {
            self.forget_rules(workspace);
            self.poke(workspace);
        }
        Ok((stored, created))
    }

    /// Revokes a standing rule.
    pub async fn revoke_rule(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<StandingRule, GateError> {
        require_role(principal, Role::Approver, "revoke standing rules")?;
        let now = self.now();
        let effects = Effects::none()
            .audit(audit(
                now,
                &principal.actor(),
                id,
                AuditEvent::RuleRevoked(RuleRevokedAudit {
                    rule_id: id.to_owned(),
                }),
            ))
            .event(event(
                now,
                WorkspaceEventData::RuleRevoked(RuleRevoked { id: id.to_owned() }),
            ));
        let revoked = self
            .store()
            .revoke_standing_rule(&principal.workspace, id, now, &effects)
            .await?
            .ok_or(GateError::NotFound("standing rule"))?;
        // Before answering: from now on no call on this node is allowed by it.
        self.forget_rules(&principal.workspace);
        self.poke(&principal.workspace);
        Ok(revoked)
    }
}
