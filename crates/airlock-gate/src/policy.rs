//! The policy in force, per workspace: cached compiled, replaced whole, evaluated.
//!
//! INVARIANT: the cache only ever holds a policy that loaded; a text that fails to load
//! is refused with its errors and the policy in force stays (DESIGN.md §4.3).

use crate::effects::{audit, event};
use crate::identity::require_role;
use crate::{Gate, GateError};
use airlock_policy::{Call as PolicyCall, LoadOptions, Mode, Policy, Verdict};
use airlock_protocol::events::{ApprovalAudit, PolicyUpdatedAudit, PolicyUpdatedEvent};
use airlock_protocol::{Approval, PolicyInfo, Role};
use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_store::{Effects, Principal, Store};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// The text of the policy a workspace starts with when none was given: ask for everything.
pub const STARTER_POLICY: &str =
    "# Every call goes to a person until you write rules.\nversion = 1\ndefault = \"ask\"\n";

/// A compiled policy with the record it came from.
pub struct LoadedPolicy {
    pub policy: Policy,
    pub info: PolicyInfo,
}

/// Compiled policies by workspace id.
#[derive(Default)]
pub struct PolicyCache {
    by_workspace: RwLock<HashMap<String, Arc<LoadedPolicy>>>,
    /// Per workspace: a submission holds a read turn from evaluating a call to recording
    /// it, and replacing the policy holds the write turn. So on one node a policy is never
    /// replaced between a call's evaluation and its recording, and the store's staleness
    /// check only ever fires for a change made on another node. Without it, a burst of
    /// submissions queued on the workspace's write lock while the policy changes would all
    /// be refused as stale, re-evaluated and queued again, once per change.
    turns: std::sync::Mutex<HashMap<String, Arc<tokio::sync::RwLock<()>>>>,
}

impl PolicyCache {
    /// Loads the policy in force of every workspace. A stored policy that no longer loads
    /// (it loaded when stored) is skipped and logged: its workspace then evaluates under
    /// no policy, which denies everything.
    pub async fn load(store: &dyn Store) -> Result<PolicyCache, GateError> {
        let cache = PolicyCache::default();
        for (workspace, info) in store.current_policies().await? {
            match Policy::load(&info.source, &load_options()) {
                Ok(policy) => cache.insert(&workspace, LoadedPolicy { policy, info }),
                Err(errors) => {
                    tracing::error!(%workspace, %errors, "stored policy does not load; denying every call");
                }
            }
        }
        Ok(cache)
    }

    /// Reloads one workspace's policy in force from the store (another node replaced it).
    pub async fn reload(&self, store: &dyn Store, workspace: &str) -> Result<(), GateError> {
        if let Some(info) = store.current_policy(workspace).await? {
            let stale = self.get(workspace).is_none_or(|loaded| {
                loaded.info.digest != info.digest || loaded.info.version != info.version
            });
            if stale {
                match Policy::load(&info.source, &load_options()) {
                    Ok(policy) => self.insert(workspace, LoadedPolicy { policy, info }),
                    Err(errors) => {
                        tracing::error!(%workspace, %errors, "stored policy does not load; keeping the one in force here");
                    }
                }
            }
        }
        Ok(())
    }

    /// Reloads every workspace's policy in force.
    pub async fn reload_all(&self, store: &dyn Store) -> Result<(), GateError> {
        for (workspace, _) in store.current_policies().await? {
            self.reload(store, &workspace).await?;
        }
        Ok(())
    }

    /// The workspaces with a policy in force.
    pub fn workspaces(&self) -> Vec<String> {
        self.by_workspace
            .read()
            .map(|map| map.keys().cloned().collect())
            .unwrap_or_default()
    }

    pub fn get(&self, workspace: &str) -> Option<Arc<LoadedPolicy>> {
        self.by_workspace
            .read()
            .ok()
            .and_then(|map| map.get(workspace).cloned())
    }

    /// The workspace's change lock (see `turns`). The lock is fair: once a change waits,
    /// later submissions wait behind it, so a change is never starved.
    pub(crate) fn turn(&self, workspace: &str) -> Arc<tokio::sync::RwLock<()>> {
        let mut turns = self
            .turns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        turns.entry(workspace.to_owned()).or_default().clone()
    }

    fn insert(&self, workspace: &str, loaded: LoadedPolicy) {
        if let Ok(mut map) = self.by_workspace.write() {
            map.insert(workspace.to_owned(), Arc::new(loaded));
        }
    }
}

pub(crate) fn load_options() -> LoadOptions {
    LoadOptions {
        file_name: "policy.toml".into(),
        ..LoadOptions::default()
    }
}

/// The reason given to approvals closed because the policy changed under them.
pub const STALE_REASON: &str = "stale_policy: the policy changed while the call was pending";

impl Gate {
    /// The policy in force.
    pub async fn policy(&self, principal: &Principal) -> Result<PolicyInfo, GateError> {
        require_role(principal, Role::Viewer, "read the policy")?;
        self.inner
            .policies
            .get(&principal.workspace)
            .map(|loaded| loaded.info.clone())
            .ok_or(GateError::NotFound("policy"))
    }

    /// The workspace's policy versions, newest first, at most `limit` (the text of each
    /// included). The same role as reading the policy in force: a version's text says no
    /// more than the policy did while it was in force.
    pub async fn policy_history(
        &self,
        principal: &Principal,
        limit: u32,
    ) -> Result<Vec<PolicyInfo>, GateError> {
        require_role(principal, Role::Viewer, "read the policy history")?;
        Ok(self
            .store()
            .policy_versions(&principal.workspace, limit)
            .await?)
    }

    /// Replaces the policy in force. A text that does not load is refused with every
    /// error and changes nothing. Pending approvals made under another policy are
    /// cancelled in the same transaction, and their waiters are told.
    pub async fn put_policy(
        &self,
        principal: &Principal,
        source: &str,
    ) -> Result<PolicyInfo, GateError> {
        require_role(principal, Role::Admin, "change the policy")?;
        self.replace_policy(&principal.workspace, &principal.actor(), source)
            .await
    }

    /// Replaces the policy as `actor` (`user:<id>`, or `policy` for a watched file).
    pub async fn replace_policy(
        &self,
        workspace: &str,
        actor: &str,
        source: &str,
    ) -> Result<PolicyInfo, GateError> {
        let policy = Policy::load(source, &load_options()).map_err(GateError::PolicyInvalid)?;
        let turn = self.inner.policies.turn(workspace);
        let _change = turn.write().await;
        let current = self.inner.policies.get(workspace);
        if let Some(current) = &current {
            if current.info.digest == policy.digest() && current.info.source == source {
                return Ok(current.info.clone());
            }
        }
        let now = self.now();
        let info = PolicyInfo {
            version: current.as_ref().map_or(1, |c| c.info.version + 1),
            digest: policy.digest().to_owned(),
            source: source.to_owned(),
            updated_at: now,
        };
        let effects = Effects::none()
            .audit(audit(
                now,
                actor,
                &format!("policy:{}", info.version),
                AuditEvent::PolicyUpdated(PolicyUpdatedAudit {
                    version: info.version,
                    digest: info.digest.clone(),
                    previous_digest: current.as_ref().map(|c| c.info.digest.clone()),
                }),
            ))
            .event(event(
                now,
                WorkspaceEventData::PolicyUpdated(PolicyUpdatedEvent {
                    version: info.version,
                    digest: info.digest.clone(),
                }),
            ));
        let on_cancel = |approval: &Approval| -> Effects {
            Effects::none()
                .audit(audit(
                    now,
                    "system",
                    &approval.id,
                    AuditEvent::ApprovalCancelled(ApprovalAudit::of(approval)),
                ))
                .event(event(
                    now,
                    WorkspaceEventData::ApprovalCancelled(approval.clone()),
                ))
        };
        let cancelled = self
            .store()
            .put_policy(workspace, &info, &effects, STALE_REASON, &on_cancel)
            .await?;
        self.inner.policies.insert(
            workspace,
            LoadedPolicy {
                policy,
                info: info.clone(),
            },
        );
        for approval in &cancelled {
            self.settle(workspace, &approval.call_id);
        }
        self.poke(workspace);
        Ok(info)
    }

    /// A dry run of the policy in force (`POST /v1/policy/evaluate`): nothing is stored.
    pub async fn evaluate_dry(
        &self,
        principal: &Principal,
        tool: &str,
        arguments: &Value,
        agent: Option<&str>,
    ) -> Result<Verdict, GateError> {
        require_role(principal, Role::Viewer, "evaluate calls")?;
        // The same checks as a submitted call's, so the dry run answers what the gate would.
        crate::calls::check_call_shape(tool, arguments)?;
        // An agent by name or by id; one that does not exist is 404, never a silent
        // "no agent" (which would skip its mode and its rules' `agents` filters).
        let agent = match agent {
            Some(key) => {
                let store = self.store();
                let found = match store.agent_by_name(&principal.workspace, key).await? {
                    Some(agent) => Some(agent),
                    None => store.get_agent(&principal.workspace, key).await?,
                };
                Some(found.ok_or(GateError::NotFound("agent"))?)
            }
            None => None,
        };
        let mode = agent.as_ref().map_or(Mode::Ask, |agent| agent.mode);
        Ok(self.evaluate(
            &principal.workspace,
            &PolicyCall {
                tool,
                arguments,
                agent: agent.as_ref().map(|agent| agent.name.as_str()),
                mode,
                standing: &[],
                declared: None,
                native_tool: None,
                cwd: None,
                project: None,
                home: None,
            },
        ))
    }

    /// Evaluates under the policy in force; a workspace without a usable policy denies.
    pub(crate) fn evaluate(&self, workspace: &str, call: &PolicyCall) -> Verdict {
        match self.inner.policies.get(workspace) {
            Some(loaded) => loaded.policy.evaluate(call),
            None => Verdict {
                decision: airlock_policy::Decision::Deny,
                decided_by: airlock_policy::DecidedBy::System,
                rule: None,
                reason: Some("no policy is in force in this workspace".into()),
                risk: airlock_policy::Risk::Exec,
                target: None,
                standing_rule: None,
                secrets: Vec::new(),
                deadline_seconds: None,
                approvals: None,
                approvers: Vec::new(),
            },
        }
    }

    /// The compiled policy in force (for previews and digests).
    pub(crate) fn loaded_policy(&self, workspace: &str) -> Option<Arc<LoadedPolicy>> {
        self.inner.policies.get(workspace)
    }
}
