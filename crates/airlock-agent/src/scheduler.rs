//! The scheduler: starts a run of each task when its cron schedule says so.
//!
//! Dispatch is one store transaction that claims the task's overlap guard and creates the
//! run (`Store::dispatch_task`), so of several nodes ticking at once exactly one starts
//! the run, and a task whose run is still in progress (parked on an approval, say) is
//! never dispatched again until that run ends: its due tick is skipped, not queued. The
//! next run is computed from now, so ticks missed while airlock was down run once, not
//! once per missed tick. A parked run holds no thread, so it never stalls other tasks.

use crate::journal::journal_entry;
use crate::Runtime;
use airlock_gate::ids::new_id;
use airlock_gate::tasks::next_run;
use airlock_gate::GateError;
use airlock_protocol::events::RunStarted;
use airlock_protocol::{Message, Role, Run, RunEventData, RunState, Session, Task};
use airlock_store::{Principal, RunUpdate, Subject};

impl Runtime {
    /// Dispatches every due task once.
    pub async fn tick(&self) {
        let now = self.gate().now();
        let due = match self.runs().due_tasks(now, 100).await {
            Ok(due) => due,
            Err(error) => {
                tracing::warn!(%error, "reading due tasks failed");
                return;
            }
        };
        for (workspace, task) in due {
            let next = match next_run(&task, now) {
                Ok(next) => next,
                Err(error) => {
                    tracing::warn!(task = %task.id, %error, "a task's schedule no longer parses");
                    None
                }
            };
            if task.active_run_id.is_some() {
                if let Err(error) = self
                    .runs()
                    .skip_task_tick(&workspace, &task.id, now, next)
                    .await
                {
                    tracing::warn!(task = %task.id, %error, "skipping a tick failed");
                }
                continue;
            }
            if let Err(error) = self.dispatch(&workspace, &task, false, next).await {
                tracing::warn!(task = %task.id, %error, "dispatching a task failed");
            }
        }
    }

    /// Starts a task's run now, whatever its schedule (`POST /v1/tasks/{id}/run`); 409
    /// while a run of it is in progress.
    pub async fn run_task_now(
        &self,
        principal: &Principal,
        task_id: &str,
    ) -> Result<Run, GateError> {
        if let Subject::User { .. } = principal.subject {
            airlock_gate::identity::require_role(principal, Role::Approver, "run tasks")?;
        } else {
            return Err(GateError::Forbidden(
                "agent tokens cannot start tasks; use a user token".into(),
            ));
        }
        let task = self.gate().get_task(principal, task_id).await?;
        if task.revoked_at.is_some() {
            return Err(GateError::Conflict("the task was revoked".into()));
        }
        if !task.enabled {
            return Err(GateError::Conflict(
                "the task is disabled; enable it first".into(),
            ));
        }
        match self
            .dispatch(&principal.workspace, &task, true, task.next_run_at)
            .await?
        {
            Some(run) => Ok(run),
            None => Err(GateError::Conflict(format!(
                "a run of this task is in progress ({}); it starts again after that run ends",
                task.active_run_id.as_deref().unwrap_or("just started")
            ))),
        }
    }

    /// Claims the task and starts its run in one transaction; `None` when the claim fails.
    async fn dispatch(
        &self,
        workspace: &str,
        task: &Task,
        manual: bool,
        next: Option<jiff::Timestamp>,
    ) -> Result<Option<Run>, GateError> {
        let now = self.gate().now();
        let session = Session {
            id: new_id("ses"),
            agent_id: Some(task.agent_id.clone()),
            title: Some(task.title.clone()),
            task_id: Some(task.id.clone()),
            external_id: None,
            created_at: now,
            created_by: None,
            mode: None,
        };
        let run = Run {
            id: new_id("run"),
            session_id: session.id.clone(),
            agent_id: task.agent_id.clone(),
            state: RunState::Running,
            error: None,
            last_seq: 0,
            created_at: now,
            updated_at: now,
        };
        let text = airlock_policy::secrets::redact_text(&task.instructions);
        let update = RunUpdate {
            at: Some(now),
            events: vec![journal_entry(
                now,
                RunEventData::RunStarted(RunStarted {
                    run_id: run.id.clone(),
                    session_id: session.id.clone(),
                    agent_id: run.agent_id.clone(),
                    task_id: Some(task.id.clone()),
                    text: text.clone(),
                }),
            )],
            messages: vec![Message {
                id: new_id("msg"),
                session_id: session.id.clone(),
                run_id: run.id.clone(),
                role: "user".into(),
                text: Some(text),
                tool_calls: Vec::new(),
                tool_call_id: None,
                steps: Vec::new(),
                created_at: now,
            }],
            effects: crate::journal::run_state_effects(
                now,
                &run,
                RunState::Running,
                &format!("task:{}", task.id),
            ),
            ..RunUpdate::default()
        };
        let dispatched = self
            .runs()
            .dispatch_task(
                workspace,
                &task.id,
                now,
                manual,
                next,
                &session,
                &run,
                &self.lease(),
                &update,
            )
            .await?;
        if !dispatched {
            return Ok(None);
        }
        self.journal_grew(&run.id);
        self.spawn_leg(workspace.to_owned(), run.id.clone(), None);
        Ok(Some(run))
    }
}
