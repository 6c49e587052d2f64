//! The "fewer prompts" report: per tool and target, how often people were asked and what
//! they decided, and the standing rules that would have removed the most prompts. These
//! are suggestions only: a person must create the rule (G6).

use crate::identity::require_role;
use crate::{Gate, GateError};
use airlock_protocol::{ApprovalStatus, Role, RuleScope};
use airlock_store::{ApprovalFilter, Principal};
use serde::Serialize;
use std::collections::BTreeMap;

/// How many recent approvals the report reads.
const WINDOW: u32 = 10_000;

/// Prompts of one tool and target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PromptCount {
    pub tool: String,
    /// The target a standing rule could bind to; none for tools no rule can cover.
    pub target: Option<String>,
    pub asked: u64,
    pub approved: u64,
    pub rejected: u64,
    pub expired: u64,
    pub cancelled: u64,
    pub pending: u64,
}

/// A standing rule that would have allowed what people kept approving.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    pub tool: String,
    pub target: String,
    pub scope: RuleScope,
    pub scope_id: String,
    /// Prompts it would have removed (approved ones, with no rejection of the same).
    pub would_remove: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PromptReport {
    /// Most asked first.
    pub items: Vec<PromptCount>,
    /// Most prompts removed first.
    pub suggestions: Vec<Suggestion>,
    /// How many approvals the report read (the most recent ones).
    pub window: u64,
}

impl Gate {
    pub async fn prompt_insights(&self, principal: &Principal) -> Result<PromptReport, GateError> {
        require_role(principal, Role::Viewer, "read insights")?;
        let workspace = principal.workspace.as_str();
        let approvals = self
            .store()
            .list_approvals(
                workspace,
                &ApprovalFilter {
                    status: None,
                    session_id: None,
                    run_id: None,
                    before: None,
                    limit: WINDOW,
                },
            )
            .await?;
        let mut counts: BTreeMap<(String, Option<String>), PromptCount> = BTreeMap::new();
        // (tool, target, agent) → (approved, rejected)
        let mut per_agent: BTreeMap<(String, String, String), (u64, u64)> = BTreeMap::new();
        for approval in &approvals {
            let key = (approval.tool.clone(), approval.standing_target.clone());
            let count = counts.entry(key).or_insert_with(|| PromptCount {
                tool: approval.tool.clone(),
                target: approval.standing_target.clone(),
                ..PromptCount::default()
            });
            count.asked += 1;
            match approval.status {
                ApprovalStatus::Approved => count.approved += 1,
                ApprovalStatus::Rejected => count.rejected += 1,
                ApprovalStatus::Expired => count.expired += 1,
                ApprovalStatus::Cancelled => count.cancelled += 1,
                ApprovalStatus::Pending => count.pending += 1,
            }
            if let Some(target) = &approval.standing_target {
                let entry = per_agent
                    .entry((
                        approval.tool.clone(),
                        target.clone(),
                        approval.agent_id.clone(),
                    ))
                    .or_default();
                match approval.status {
                    ApprovalStatus::Approved => entry.0 += 1,
                    ApprovalStatus::Rejected => entry.1 += 1,
                    _ => {}
                }
            }
        }
        let live = self
            .store()
            .list_standing_rules(workspace)
            .await?
            .into_iter()
            .filter(|rule| {
                rule.revoked_at.is_none() && rule.expires_at.is_none_or(|at| at > self.now())
            })
            .collect::<Vec<_>>();
        let mut suggestions: Vec<Suggestion> = per_agent
            .into_iter()
            // Approved more than once and never rejected: a person keeps saying yes.
            .filter(|(_, (approved, rejected))| *approved >= 2 && *rejected == 0)
            .filter(|((tool, target, agent), _)| {
                !live.iter().any(|rule| {
                    rule.tool == *tool
                        && rule.target == *target
                        && rule.scope == RuleScope::Agent
                        && rule.scope_id == *agent
                })
            })
            .map(|((tool, target, agent), (approved, _))| Suggestion {
                reason: format!("approved {approved} times for this agent and never rejected"),
                tool,
                target,
                scope: RuleScope::Agent,
                scope_id: agent,
                would_remove: approved,
            })
            .collect();
        suggestions.sort_by(|a, b| {
            b.would_remove
                .cmp(&a.would_remove)
                .then_with(|| a.tool.cmp(&b.tool))
                .then_with(|| a.target.cmp(&b.target))
        });
        let mut items: Vec<PromptCount> = counts.into_values().collect();
        items.sort_by(|a, b| b.asked.cmp(&a.asked).then_with(|| a.tool.cmp(&b.tool)));
        Ok(PromptReport {
            items,
            suggestions,
            window: approvals.len() as u64,
        })
    }
}
