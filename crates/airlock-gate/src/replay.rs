//! Replaying the recorded history under a candidate policy (DESIGN.md §11.5).
//!
//! The history is the audit chain: every decided call is there (`call.allowed`,
//! `call.denied`, `approval.requested`) with its redacted arguments, agent, session and
//! place, beside the records that say which standing rules were live (`rule.created`,
//! `rule.revoked`, each rule's `expires_at`), what each agent was called and in which
//! mode (`agent.created`, `agent.updated`), and which sessions had a mode of their own
//! (`session.updated`). [`History`] reads the records in chain order, keeps that state
//! as of each record, and hands every call in the window to the caller as an
//! [`airlock_policy::replay::Recorded`], with the standing rules live in its scope at its
//! time. The same reader serves the store (`Gate::replay_policy`, paging through
//! the chain) and an export file (`airlock policy replay --from`), so both replay alike.
//!
//! A task's standing rules apply to the calls of its runs: a call record names its task
//! (`task_id`); records written before it did cannot be tied to a task, so such rules
//! are not applied to them. The home folder of a call is not recorded (`{home}` anchors
//! match nothing, which fails closed).

use crate::identity::require_role;
use crate::{Gate, GateError};
use airlock_policy::document::SecretsMode;
use airlock_policy::replay::{Recorded, Replay};
use airlock_policy::{Call, CompiledTool, DecidedBy, Decision, Mode, Policy, StandingRule};
use airlock_protocol::{AuditKind, AuditRecord, ReplayReport, Role};
use airlock_store::Principal;
use jiff::Timestamp;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Audit records read per page when the gate walks the chain.
const PAGE: u32 = 1000;

/// A standing rule as the chain last described it.
#[derive(Debug, Clone)]
struct LiveRule {
    rule: StandingRule,
    scope: String,
    scope_id: String,
    expires_at: Option<Timestamp>,
}

/// The state of a workspace as of the last audit record read.
#[derive(Debug, Default)]
pub struct History {
    /// Agent id → (name, mode).
    agents: HashMap<String, (String, Mode)>,
    /// Session id → the mode a person set for it, instead of its agent's.
    session_modes: HashMap<String, Mode>,
    /// Standing rule id → the rule, while it is not revoked.
    standing: BTreeMap<String, LiveRule>,
    /// What trusted providers declare about their tools (the gate's own runtime).
    declared: HashMap<String, CompiledTool>,
    /// Only calls recorded at or after this are replayed (earlier records still build
    /// the state).
    since: Option<Timestamp>,
}

impl History {
    pub fn new(since: Option<Timestamp>) -> History {
        History {
            since,
            ..History::default()
        }
    }

    /// Takes in one record; a call record in the window is handed to `visit`.
    pub fn read(&mut self, record: &AuditRecord, visit: impl FnOnce(&Recorded)) {
        let data = &record.data;
        let text = |key: &str| data.get(key).and_then(Value::as_str);
        // Only the kind is parsed here: the fields are read leniently below, so a record
        // of an older shape still replays, and a kind this build does not know is skipped.
        let Some(kind) = AuditKind::parse(&record.kind) else {
            return;
        };
        let before = match kind {
            AuditKind::CallAllowed => Decision::Allow,
            AuditKind::CallDenied => Decision::Deny,
            AuditKind::ApprovalRequested => Decision::Ask,
            AuditKind::AgentCreated | AuditKind::AgentUpdated => {
                if let Some(name) = text("name") {
                    let mode = data
                        .get("mode")
                        .and_then(|mode| serde_json::from_value(mode.clone()).ok())
                        .unwrap_or(Mode::Ask);
                    self.agents
                        .insert(record.subject.clone(), (name.to_owned(), mode));
                }
                return;
            }
            AuditKind::RuleCreated => {
                if let (Some(tool), Some(target)) = (text("tool"), text("target")) {
                    self.standing.insert(
                        record.subject.clone(),
                        LiveRule {
                            rule: StandingRule {
                                id: record.subject.clone(),
                                tool: tool.to_owned(),
                                target: target.to_owned(),
                            },
                            scope: text("scope").unwrap_or_default().to_owned(),
                            scope_id: text("scope_id").unwrap_or_default().to_owned(),
                            expires_at: text("expires_at").and_then(|at| at.parse().ok()),
                        },
                    );
                }
                return;
            }
            AuditKind::RuleRevoked => {
                self.standing.remove(&record.subject);
                return;
            }
            AuditKind::SessionUpdated => {
                match data
                    .get("mode")
                    .and_then(|mode| serde_json::from_value(mode.clone()).ok())
                {
                    Some(mode) => self.session_modes.insert(record.subject.clone(), mode),
                    None => self.session_modes.remove(&record.subject),
                };
                return;
            }
            _ => return,
        };
        let at: Option<Timestamp> = record.at.parse().ok();
        if let Some(since) = self.since {
            // A record whose time does not read is outside any window: fail closed
            // toward replaying less, never toward inventing a time.
            if at.is_none_or(|at| at < since) {
                return;
            }
        }
        let Some(tool) = text("tool") else {
            return;
        };
        let empty = Value::Object(serde_json::Map::new());
        let arguments = data.get("arguments").unwrap_or(&empty);
        let agent_id = text("agent_id").unwrap_or_default();
        let session_id = text("session_id");
        let task_id = text("task_id");
        let (agent, mode) = match self.agents.get(agent_id) {
            Some((name, mode)) => (Some(name.as_str()), *mode),
            None => (None, Mode::Ask),
        };
        let mode = session_id
            .and_then(|session| self.session_modes.get(session))
            .copied()
            .unwrap_or(mode);
        let standing: Vec<StandingRule> = self
            .standing
            .values()
            .filter(|live| {
                let in_scope = match live.scope.as_str() {
                    "agent" => live.scope_id == agent_id,
                    "session" => session_id == Some(live.scope_id.as_str()),
                    "task" => task_id == Some(live.scope_id.as_str()),
                    _ => false,
                };
                in_scope
                    && live
                        .expires_at
                        .is_none_or(|expires| at.is_some_and(|at| at < expires))
            })
            .map(|live| live.rule.clone())
            .collect();
        let recorded = Recorded {
            call: Call {
                tool,
                arguments,
                agent,
                mode,
                standing: &standing,
                declared: self.declared.get(tool),
                native_tool: text("native_tool"),
                cwd: text("cwd"),
                project: text("project"),
                home: None,
            },
            id: text("call_id").unwrap_or(&record.subject),
            at: Some(&record.at),
            before,
            rule_before: text("rule").or_else(|| text("standing_rule")),
            prepared: None,
        };
        visit(&recorded);
    }
}

/// A recorded call replayed under `policy` and counted, with the one thing the record
/// cannot show the engine: the arguments are stored redacted, so a call once denied for
/// its secret material carries none now. It stays denied where the candidate would ask
/// it and still denies asked calls holding secrets.
pub fn replay_one(replay: &mut Replay, policy: &Policy, recorded: &Recorded, decided_by: &str) {
    let mut verdict = policy.evaluate(&recorded.call);
    if decided_by == "secrets"
        && verdict.decision == Decision::Ask
        && policy.secrets_mode() == SecretsMode::Deny
    {
        verdict.decision = Decision::Deny;
        verdict.decided_by = DecidedBy::Secrets;
        verdict.reason = Some("the recorded arguments held secret material".into());
    }
    replay.count(recorded, &verdict);
}

/// The recorded `decided_by` of a call record (empty when absent).
pub fn decided_by(record: &AuditRecord) -> &str {
    record
        .data
        .get("decided_by")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Gate {
    /// What `source` would change on the calls recorded since `since` (all when none):
    /// `PUT /v1/policy?dry_run=true`. Nothing is stored. A text that does not load is
    /// refused with its errors.
    pub async fn replay_policy(
        &self,
        principal: &Principal,
        source: &str,
        since: Option<Timestamp>,
    ) -> Result<ReplayReport, GateError> {
        require_role(principal, Role::Admin, "dry-run a policy change")?;
        let policy = Policy::load(source, &crate::policy::load_options())
            .map_err(GateError::PolicyInvalid)?;
        self.replay_history(&principal.workspace, &policy, since)
            .await
    }

    /// Replays the workspace's whole chain (the calls since `since`) under `policy`.
    pub(crate) async fn replay_history(
        &self,
        workspace: &str,
        policy: &Policy,
        since: Option<Timestamp>,
    ) -> Result<ReplayReport, GateError> {
        let mut history = History::new(since);
        history.declared = self
            .inner
            .declared
            .read()
            .map(|declared| declared.clone())
            .unwrap_or_default();
        let mut replay = Replay::new(policy);
        let mut after = 0;
        loop {
            let page = self.store().audit_after(workspace, after, PAGE).await?;
            for record in &page {
                let by = decided_by(record);
                history.read(record, |recorded| {
                    replay_one(&mut replay, policy, recorded, by);
                });
            }
            match page.last() {
                Some(last) if page.len() as u32 == PAGE => after = last.seq,
                _ => break,
            }
        }
        Ok(replay.finish())
    }
}
