//! The built-in agent runtime (DESIGN.md §1 way 2): airlock runs the agent's turn loop
//! itself against an OpenAI-compatible LLM, and every tool call the model makes goes
//! through the gate first.
//!
//! - [`Runtime`] (this file): starting runs from user messages, reading runs, messages and
//!   journals, cancelling runs.
//! - `ctx`: what a leg, its steps and its tools share (the run being driven, outcomes).
//! - `leg`: one leg of a run — model turns and tool calls until the run completes, fails
//!   or suspends on an approval.
//! - `transcript`: the session's conversation as the model reads it, every tool call
//!   answered.
//! - `turn`: what a model turn becomes before it is stored: an id of its own for each
//!   tool call, streamed text redacted a line at a time.
//! - `gating`: putting the model's tool calls to the gate as steps.
//! - `steps`: moving a step on: executing it, or telling the model why not.
//! - `execute`: executing an allowed call exactly once; running a tool by kind.
//! - `journal`: writing to a held run (typed journal events, finished steps, failure).
//! - `background`: resuming runs when their approvals are decided (here or on another
//!   node), taking over runs whose node died, delivering the outbox.
//! - `pause`: pausing and resuming a run for a person.
//! - `scheduler`: starting runs of scheduled tasks (overlap guard claimed at dispatch).
//! - `toolset`: an agent's provider and tools.
//! - `settings`: an agent's settings checked before they are saved (registered with the
//!   gate).
//!
//! The leg's modules depend in one direction: `leg` → `gating` and `steps`; `gating` →
//! `execute` (a tool's own argument check); `steps` → `execute`; each of them → `journal`
//! → `ctx`. None reaches back up.
//!
//! INVARIANT: nothing in memory is needed to resume a run. A run's state, journal, steps
//! and conversation are in the store; a leg holds the run under a lease that every write
//! renews and checks, and that the leg renews while it waits, so two nodes never drive
//! one run, and a run moves to another node only when its node is gone. A lease names the
//! node, so a node also never claims a run one of its own legs is on (`driving`).
//!
//! INVARIANT: a tool executes only after its grant was consumed (G1). An effect that is a
//! database write (the outbox) commits in the transaction that consumes the grant; any
//! other effect runs after a committed `tool_started`, and a crash between the two is
//! reported to the model as an unknown outcome, never retried.

mod background;
mod ctx;
mod driving;
mod execute;
mod gating;
mod journal;
mod leg;
mod pause;
mod scheduler;
pub mod settings;
mod steps;
pub mod toolset;
mod transcript;
mod turn;

use airlock_gate::identity::require_role;
use airlock_gate::ids::new_id;
use airlock_gate::Runs;
use airlock_gate::{Gate, GateError};
use airlock_protocol::events::{RunActor, RunStarted};
use airlock_protocol::{
    Message, OutboxItem, Role, Run, RunEvent, RunEventData, RunState, Session, StepState,
};
use airlock_store::{Lease, Principal, RunUpdate, Subject};
use journal::{journal_entry, run_state_effects};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
pub use toolset::RuntimeConfig;
use toolset::Toolsets;

/// How long a lease holds a run: every write of its leg renews it, and so does the leg
/// while it waits (`RuntimeConfig::lease_renewal`). It runs out when the node is gone.
pub const LEASE: Duration = Duration::from_secs(120);

/// The longest user message.
const MAX_MESSAGE_CHARS: usize = 100_000;

/// The runtime. Cheap to clone; every clone shares the same state.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    gate: Gate,
    /// The run storage the gate hands the runtime (the gate's store itself is private).
    runs: Runs,
    /// This node's lease owner name.
    node: String,
    settings: RuntimeConfig,
    toolsets: Toolsets,
    /// Carries a run id whenever journal events were appended to it here.
    journal: broadcast::Sender<String>,
    /// Cancelled by [`Runtime::shutdown`]: legs stop where they are (every write they
    /// made is committed or rolled back whole) and are taken over after a restart.
    stopping: tokio_util::sync::CancellationToken,
    /// The runs this node's legs are on; its sweeper leaves them be.
    driving: Arc<driving::Driving>,
}

impl Runtime {
    pub fn new(gate: Gate, settings: RuntimeConfig) -> Runtime {
        // The built-in tools' risk, target and preview count where the policy is silent,
        // for standing-rule eligibility too.
        gate.declare_tools(toolset::declarations());
        // Settings the runtime could not run are refused when saved, naming the field.
        gate.check_agents_with(Arc::new(settings::check));
        let (journal, _) = broadcast::channel(4096);
        Runtime {
            inner: Arc::new(Inner {
                runs: gate.runs(),
                gate,
                node: new_id("node"),
                settings,
                toolsets: Toolsets::default(),
                journal,
                stopping: tokio_util::sync::CancellationToken::new(),
                driving: Arc::default(),
            }),
        }
    }

    pub fn gate(&self) -> &Gate {
        &self.inner.gate
    }

    fn runs(&self) -> &Runs {
        &self.inner.runs
    }

    /// A receiver of run ids whose journals grew on this node.
    pub fn subscribe_journal(&self) -> broadcast::Receiver<String> {
        self.inner.journal.subscribe()
    }

    fn journal_grew(&self, run_id: &str) {
        let _ = self.inner.journal.send(run_id.to_owned());
    }

    fn lease(&self) -> Lease {
        Lease {
            owner: self.inner.node.clone(),
            until: airlock_gate::clock::add_seconds(self.gate().now(), LEASE.as_secs()),
        }
    }

    /// A user's message to the session's agent starts a run (`POST
    /// /v1/sessions/{id}/messages`). Users with role ≥ approver, or the session's own
    /// agent, may post. One live run per session.
    pub async fn post_message(
        &self,
        principal: &Principal,
        session_id: &str,
        text: &str,
    ) -> Result<Run, GateError> {
        if let Subject::User { .. } = principal.subject {
            require_role(principal, Role::Approver, "talk to agents")?;
        }
        let session = self.gate().get_session(principal, session_id).await?;
        let workspace = principal.workspace.as_str();
        let agent_id = session.agent_id.clone().ok_or_else(|| {
            GateError::Invalid("the session has no agent; open one with an agent_id".into())
        })?;
        let agent = self
            .runs()
            .get_agent(workspace, &agent_id)
            .await?
            .ok_or(GateError::NotFound("agent"))?;
        if agent.llm.is_none() {
            return Err(GateError::Invalid(format!(
                "agent `{}` has no `llm` settings, so airlock cannot run it; set them with PATCH /v1/agents/{}",
                agent.name, agent.id
            )));
        }
        let text = text.trim();
        if text.is_empty() {
            return Err(GateError::Invalid("text is empty".into()));
        }
        if text.chars().count() > MAX_MESSAGE_CHARS {
            return Err(GateError::Invalid(format!(
                "text is longer than {MAX_MESSAGE_CHARS} characters"
            )));
        }
        let now = self.gate().now();
        let run = Run {
            id: new_id("run"),
            session_id: session.id.clone(),
            agent_id: agent.id.clone(),
            state: RunState::Running,
            error: None,
            last_seq: 0,
            created_at: now,
            updated_at: now,
        };
        // A message is stored as the person wrote it, secrets redacted (G9).
        let stored_text = airlock_policy::secrets::redact_text(text);
        let message = Message {
            id: new_id("msg"),
            session_id: session.id.clone(),
            run_id: run.id.clone(),
            role: "user".into(),
            text: Some(stored_text.clone()),
            tool_calls: Vec::new(),
            tool_call_id: None,
            steps: Vec::new(),
            created_at: now,
        };
        let update = RunUpdate {
            at: Some(now),
            events: vec![journal_entry(
                now,
                RunEventData::RunStarted(RunStarted {
                    run_id: run.id.clone(),
                    session_id: session.id.clone(),
                    agent_id: agent.id.clone(),
                    task_id: None,
                    text: stored_text,
                }),
            )],
            messages: vec![message],
            effects: run_state_effects(now, &run, RunState::Running, &principal.actor()),
            ..RunUpdate::default()
        };
        self.runs()
            .start_run(workspace, &run, &self.lease(), &update)
            .await?;
        self.journal_grew(&run.id);
        self.spawn_leg(workspace.to_owned(), run.id.clone(), Some(text.to_owned()));
        Ok(run)
    }

    /// A run, for users of its workspace or its agent.
    pub async fn get_run(&self, principal: &Principal, run_id: &str) -> Result<Run, GateError> {
        let run = self
            .runs()
            .get_run(&principal.workspace, run_id)
            .await?
            .ok_or(GateError::NotFound("run"))?;
        if let Subject::Agent { id, .. } = &principal.subject {
            if *id != run.agent_id {
                return Err(GateError::NotFound("run"));
            }
        }
        Ok(run)
    }

    /// A run with its steps and the approvals it waits for (`GET /v1/runs/{id}`).
    pub async fn run_view(&self, principal: &Principal, run_id: &str) -> Result<Value, GateError> {
        let run = self.get_run(principal, run_id).await?;
        let store = self.runs();
        let steps = store.run_steps(&principal.workspace, run_id).await?;
        let mut pending = Vec::new();
        for stored in &steps {
            if stored.step.state != StepState::Gated {
                continue;
            }
            if let Some(call_id) = &stored.step.call_id {
                if let Some(call) = store.get_call(&principal.workspace, call_id).await? {
                    if call.status == airlock_protocol::CallStatus::Pending {
                        if let Some(approval_id) = call.approval_id {
                            pending.push(approval_id);
                        }
                    }
                }
            }
        }
        let mut view = serde_json::to_value(&run)
            .map_err(|error| GateError::Unavailable(error.to_string()))?;
        if let Some(object) = view.as_object_mut() {
            object.insert(
                "steps".into(),
                serde_json::to_value(steps.iter().map(|s| &s.step).collect::<Vec<_>>())
                    .unwrap_or(Value::Null),
            );
            object.insert("pending_approvals".into(), json!(pending));
        }
        Ok(view)
    }

    /// Journal events of a run after `after`.
    pub async fn run_events(
        &self,
        principal: &Principal,
        run_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<RunEvent>, GateError> {
        self.get_run(principal, run_id).await?;
        Ok(self
            .runs()
            .run_events_after(
                &principal.workspace,
                run_id,
                airlock_gate::audit::seq_bound(after),
                limit,
            )
            .await?)
    }

    /// A session's history: user messages and the agent's replies; a run's final reply
    /// carries the trace of its tool calls (`GET /v1/sessions/{id}/messages`).
    pub async fn messages(
        &self,
        principal: &Principal,
        session_id: &str,
    ) -> Result<(Session, Vec<Message>), GateError> {
        let session = self.gate().get_session(principal, session_id).await?;
        let messages = self
            .runs()
            .session_messages(&principal.workspace, session_id)
            .await?;
        Ok((session, messages))
    }

    /// The runs of a session, oldest first.
    pub async fn session_runs(
        &self,
        principal: &Principal,
        session_id: &str,
    ) -> Result<Vec<Run>, GateError> {
        self.gate().get_session(principal, session_id).await?;
        Ok(self
            .runs()
            .session_runs(&principal.workspace, session_id)
            .await?)
    }

    /// Effects that left or will leave the system (`GET /v1/outbox`), for users.
    pub async fn outbox(
        &self,
        principal: &Principal,
        limit: u32,
    ) -> Result<Vec<OutboxItem>, GateError> {
        require_role(principal, Role::Viewer, "read the outbox")?;
        Ok(self.runs().list_outbox(&principal.workspace, limit).await?)
    }

    /// Cancels a live run and closes its pending approvals, so a later click on one is
    /// refused (`POST /v1/runs/{id}/cancel`). Users with role ≥ approver, or the run's
    /// agent.
    pub async fn cancel_run(&self, principal: &Principal, run_id: &str) -> Result<Run, GateError> {
        if let Subject::User { .. } = principal.subject {
            require_role(principal, Role::Approver, "cancel runs")?;
        }
        let run = self.get_run(principal, run_id).await?;
        if !run.state.is_live() {
            return Err(GateError::Conflict(format!(
                "the run is already {}",
                run.state
            )));
        }
        let now = self.gate().now();
        let actor = principal.actor();
        let update = RunUpdate {
            at: Some(now),
            events: vec![journal_entry(
                now,
                RunEventData::RunCancelled(RunActor { by: actor.clone() }),
            )],
            effects: run_state_effects(now, &run, RunState::Cancelled, &actor),
            ..RunUpdate::default()
        };
        let Some(cancelled) = self.gate().cancel_run(principal, run_id, &update).await? else {
            return Err(GateError::Conflict("the run already ended".into()));
        };
        self.journal_grew(run_id);
        Ok(cancelled)
    }

    /// Stops every leg of this node and the agents' MCP servers.
    pub async fn shutdown(&self) {
        self.inner.stopping.cancel();
        self.inner.toolsets.shutdown().await;
    }
}
