//! Scheduled tasks: a title, instructions for an agent, a cron schedule in a time zone.
//!
//! People (role ≥ approver) create tasks with `permissions`: each valid write/external
//! grant becomes a task-scoped standing rule minted by that person, everything else is
//! reported back as dropped with the reason. An agent may create a task too (the runtime's
//! `task.create` tool) but never with permissions: rules are minted by people only (G6).
//! The scheduler that dispatches tasks lives in the runtime.

use crate::cron::Schedule;
use crate::effects::{audit, event};
use crate::identity::require_role;
use crate::ids::new_id;
use crate::{Gate, GateError};
use airlock_protocol::events::{RuleCreatedAudit, TaskCreatedAudit, TaskUpdatedAudit};
use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_protocol::{Role, RuleScope, StandingRule, Task};
use airlock_store::{Effects, Principal, Subject};
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde::Serialize;

pub use airlock_protocol::{NewTask, Permission, TaskPatch};

/// A permission that did not become a rule, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    #[serde(flatten)]
    pub permission: Permission,
    pub reason: String,
}

/// What creating a task made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskCreated {
    pub task: Task,
    pub rules: Vec<StandingRule>,
    pub dropped: Vec<Dropped>,
}

/// A task's schedule, checked: the parsed cron and the zone.
pub fn schedule_of(cron: &str, timezone: &str) -> Result<(Schedule, TimeZone), GateError> {
    let schedule = Schedule::parse(cron).map_err(GateError::Invalid)?;
    let zone = TimeZone::get(timezone)
        .map_err(|_| GateError::Invalid(format!("unknown time zone `{timezone}`")))?;
    Ok((schedule, zone))
}

/// The next time a task should run after `now`: none while disabled or revoked.
pub fn next_run(task: &Task, now: Timestamp) -> Result<Option<Timestamp>, GateError> {
    if !task.enabled || task.revoked_at.is_some() {
        return Ok(None);
    }
    let (schedule, zone) = schedule_of(&task.cron, &task.timezone)?;
    Ok(schedule.next_after(now, &zone))
}

fn check_text(value: &str, what: &str, max: usize) -> Result<(), GateError> {
    if value.trim().is_empty() {
        return Err(GateError::Invalid(format!("{what} is empty")));
    }
    if value.chars().count() > max {
        return Err(GateError::Invalid(format!(
            "{what} is longer than {max} characters"
        )));
    }
    Ok(())
}

impl Gate {
    /// Creates a task. A person may attach permissions (minted as task rules); an agent
    /// creates tasks for itself only and without permissions.
    pub async fn create_task(
        &self,
        principal: &Principal,
        new: NewTask,
    ) -> Result<TaskCreated, GateError> {
        let workspace = principal.workspace.as_str();
        let agent = match &principal.subject {
            Subject::User { .. } => {
                require_role(principal, Role::Approver, "create tasks")?;
                self.agent_by_id_or_name(workspace, &new.agent).await?
            }
            Subject::Agent { id, .. } => {
                if !new.permissions.is_empty() {
                    return Err(GateError::Forbidden(
                        "agents cannot give tasks permissions; standing rules are minted by people only".into(),
                    ));
                }
                let agent = self.agent_by_id_or_name(workspace, &new.agent).await?;
                if agent.id != *id {
                    return Err(GateError::Forbidden(
                        "an agent creates tasks for itself only".into(),
                    ));
                }
                agent
            }
        };
        check_text(&new.title, "title", 200)?;
        check_text(&new.instructions, "instructions", 100_000)?;
        let timezone = new.timezone.unwrap_or_else(|| "UTC".into());
        schedule_of(&new.cron, &timezone)?;
        let now = self.now();
        let actor = principal.actor();
        let mut task = Task {
            id: new_id("task"),
            title: new.title,
            instructions: new.instructions,
            agent_id: agent.id,
            cron: new.cron,
            timezone,
            enabled: new.enabled.unwrap_or(true),
            created_by: actor.clone(),
            created_at: now,
            updated_at: now,
            revoked_at: None,
            next_run_at: None,
            active_run_id: None,
            last_run_id: None,
        };
        task.next_run_at = next_run(&task, now)?;

        let mut rules = Vec::new();
        let mut dropped = Vec::new();
        for permission in new.permissions {
            match self.permission_rule(workspace, &task, &permission, &actor, now) {
                // The same permission twice is one rule: one row, one `rule.created`.
                Ok(rule)
                    if rules.iter().any(|kept: &StandingRule| {
                        kept.tool == rule.tool && kept.target == rule.target
                    }) => {}
                Ok(rule) => rules.push(rule),
                Err(reason) => dropped.push(Dropped { permission, reason }),
            }
        }
        let mut effects = Effects::none()
            .audit(audit(
                now,
                &actor,
                &task.id,
                AuditEvent::TaskCreated(TaskCreatedAudit {
                    title: task.title.clone(),
                    agent_id: task.agent_id.clone(),
                    cron: task.cron.clone(),
                    timezone: task.timezone.clone(),
                    enabled: task.enabled,
                }),
            ))
            .event(event(now, WorkspaceEventData::TaskCreated(task.clone())));
        for rule in &rules {
            effects = effects
                .audit(audit(
                    now,
                    &actor,
                    &rule.id,
                    AuditEvent::RuleCreated(RuleCreatedAudit {
                        tool: rule.tool.clone(),
                        target: rule.target.clone(),
                        scope: rule.scope,
                        scope_id: rule.scope_id.clone(),
                        expires_at: None,
                        from_approval: None,
                    }),
                ))
                .event(event(now, WorkspaceEventData::RuleCreated(rule.clone())));
        }
        self.store()
            .create_task(workspace, &task, &rules, &effects)
            .await?;
        self.forget_rules(workspace);
        self.poke(workspace);
        Ok(TaskCreated {
            task,
            rules,
            dropped,
        })
    }

    /// The task rule a permission becomes, or why it cannot.
    fn permission_rule(
        &self,
        workspace: &str,
        task: &Task,
        permission: &Permission,
        actor: &str,
        now: Timestamp,
    ) -> Result<StandingRule, String> {
        if permission.target.trim().is_empty() {
            return Err("the target is empty; a rule binds to one exact target".into());
        }
        if !matches!(permission.access.as_str(), "write" | "external") {
            return Err(format!(
                "access `{}` cannot be granted; only write or external access can",
                permission.access
            ));
        }
        let risk = self
            .check_eligible(workspace, &permission.tool)
            .map_err(|error| error.to_string())?;
        if risk.as_str() != permission.access {
            return Err(format!(
                "`{}` has risk {risk}, not {}",
                permission.tool, permission.access
            ));
        }
        Ok(StandingRule {
            id: new_id("rule"),
            tool: permission.tool.clone(),
            target: permission.target.clone(),
            scope: RuleScope::Task,
            scope_id: task.id.clone(),
            created_by: actor.to_owned(),
            created_at: now,
            expires_at: None,
            revoked_at: None,
        })
    }

    async fn agent_by_id_or_name(
        &self,
        workspace: &str,
        key: &str,
    ) -> Result<airlock_protocol::Agent, GateError> {
        if let Some(agent) = self.store().get_agent(workspace, key).await? {
            return Ok(agent);
        }
        self.store()
            .agent_by_name(workspace, key)
            .await?
            .ok_or(GateError::NotFound("agent"))
    }

    pub async fn list_tasks(&self, principal: &Principal) -> Result<Vec<Task>, GateError> {
        require_role(principal, Role::Viewer, "list tasks")?;
        Ok(self.store().list_tasks(&principal.workspace).await?)
    }

    pub async fn get_task(&self, principal: &Principal, id: &str) -> Result<Task, GateError> {
        require_role(principal, Role::Viewer, "read tasks")?;
        self.store()
            .get_task(&principal.workspace, id)
            .await?
            .ok_or(GateError::NotFound("task"))
    }

    /// Changes a task (role ≥ approver). `revoke` ends it for good and revokes its rules.
    pub async fn update_task(
        &self,
        principal: &Principal,
        id: &str,
        patch: TaskPatch,
    ) -> Result<Task, GateError> {
        require_role(principal, Role::Approver, "change tasks")?;
        let workspace = principal.workspace.as_str();
        let mut task = self.get_task(principal, id).await?;
        if task.revoked_at.is_some() {
            return Err(GateError::Conflict("the task was revoked".into()));
        }
        if let Some(title) = patch.title {
            check_text(&title, "title", 200)?;
            task.title = title;
        }
        if let Some(instructions) = patch.instructions {
            check_text(&instructions, "instructions", 100_000)?;
            task.instructions = instructions;
        }
        if let Some(cron) = patch.cron {
            task.cron = cron;
        }
        if let Some(timezone) = patch.timezone {
            task.timezone = timezone;
        }
        schedule_of(&task.cron, &task.timezone)?;
        if let Some(enabled) = patch.enabled {
            task.enabled = enabled;
        }
        let now = self.now();
        let revoke = patch.revoke == Some(true);
        if revoke {
            task.revoked_at = Some(now);
            task.enabled = false;
        }
        task.updated_at = now;
        task.next_run_at = next_run(&task, now)?;
        let data = TaskUpdatedAudit {
            title: task.title.clone(),
            cron: task.cron.clone(),
            timezone: task.timezone.clone(),
            enabled: task.enabled,
        };
        let (data, changed) = if revoke {
            (
                AuditEvent::TaskRevoked(data),
                WorkspaceEventData::TaskRevoked(task.clone()),
            )
        } else {
            (
                AuditEvent::TaskUpdated(data),
                WorkspaceEventData::TaskUpdated(task.clone()),
            )
        };
        let effects = Effects::none()
            .audit(audit(now, &principal.actor(), &task.id, data))
            .event(event(now, changed));
        self.store()
            .update_task(workspace, &task, revoke.then_some(now), &effects)
            .await?;
        // A revoked task's rules are revoked with it: before answering.
        self.forget_rules(workspace);
        self.poke(workspace);
        Ok(task)
    }
}
