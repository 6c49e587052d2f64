//! The gate: every tool call goes in, a decision comes out, and an asked call waits
//! durably for a person.
//!
//! - [`Gate`] (this file): the shared state and its construction.
//! - [`identity`]: bootstrap, tokens, users, agents, sessions, who-may-do-what;
//!   `agent_view`: an agent's settings as each role may read them (secrets redacted).
//! - [`policy`]: the policy in force per workspace, replacing it, dry runs.
//! - [`calls`]: submit, long-poll, redeem; [`lookup`]: a hook call's reads, made at once.
//! - [`decide`]: approvals and the decision on them (G2, G3, G4, G6); `edit`: a
//!   person's edit of the arguments while approving (§11.6); [`batch`]: several
//!   decisions at once, each standing alone; `votes`: the two-person rule.
//! - [`rules`]: standing rules.
//! - [`tasks`]: scheduled tasks and their task-scoped rules; [`cron`]: their schedules.
//! - [`expiry`]: the sweeper that moves overdue approvals to `expired`.
//! - [`insights`], [`learn`]: the "fewer prompts" report; rules learned from approvals.
//! - `listen`: changes committed by other nodes (PostgreSQL), applied here.
//! - `cache`: tokens, agents and standing rules in memory, trusted only while in step.
//! - [`audit`]: listing and verifying the hash chain.
//! - [`replay`]: the recorded history replayed under a candidate policy (§11.5).
//! - [`waiters`], [`clock`], [`ids`], [`effects`]: the small parts the others share.
//! - [`failpoint`]: the crash tests' failure-injection points, on the gate's and the
//!   runtime's durable steps.
//! - `web`: the inbox's sign-in sessions; `operator`: the start-up reads of `serve`.
//! - [`Runs`], [`Notifications`]: the narrow handles the runtime and the notifier get
//!   instead of the store, which stays private to the gate.
//!
//! INVARIANT: every change the gate makes goes through one store operation that also
//! appends its audit records and events (G8); the gate only wakes waiters and notifies
//! subscribers *after* that operation committed.

mod agent_view;
pub mod audit;
pub mod batch;
mod cache;
pub mod calls;
pub mod clock;
pub mod cron;
pub mod decide;
mod edit;
pub mod effects;
mod error;
pub mod expiry;
pub mod failpoint;
pub mod identity;
pub mod ids;
pub mod insights;
pub mod learn;
mod listen;
pub mod lookup;
mod notifications;
mod operator;
pub mod outcomes;
mod pause;
pub mod policy;
pub mod replay;
pub mod retries;
pub mod rules;
mod runs;
mod seal;
pub mod tasks;
mod votes;
pub mod waiters;
mod web;

pub use cache::CacheStatus;
pub use error::GateError;
pub use notifications::Notifications;
pub use runs::Runs;

use airlock_store::Store;
use clock::Clock;
use policy::PolicyCache;
use std::sync::Arc;
use tokio::sync::broadcast;
use waiters::Waiters;

/// The gate. Cheap to clone; every clone shares the same state.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    policies: PolicyCache,
    /// Tokens, agents and standing rules as every call reads them (`cache.rs`).
    cache: cache::ReadCache,
    waiters: Waiters,
    /// Carries a workspace id whenever events were appended for it, so that SSE streams
    /// read them from the store. Lagging receivers just re-read; nothing is lost.
    pokes: broadcast::Sender<String>,
    /// Wakes the expiry sweeper when an approval with a nearer deadline appears.
    sweeper_wake: tokio::sync::Notify,
    /// Carries `(workspace, call_id)` whenever a pending call stopped pending (decided,
    /// expired, cancelled), here or on another node; `("", "")` when some may have been
    /// missed. The built-in runtime resumes runs from it.
    settled: broadcast::Sender<(String, String)>,
    /// What trusted providers (the built-in runtime) declare about their tools: used
    /// where the policy's catalogue is silent, for standing-rule eligibility and for the
    /// runtime's own calls.
    declared: std::sync::RwLock<std::collections::HashMap<String, airlock_policy::CompiledTool>>,
    /// What the built-in runtime says of an agent's settings before they are saved (its
    /// tools, model and MCP servers): `Err` is why they cannot run, and the save is a 422.
    agent_check: std::sync::RwLock<Option<AgentCheck>>,
}

/// A check of an agent's settings, registered by the runtime that runs them
/// ([`Gate::check_agents_with`]): `Err` names the field and what is wrong with it.
pub type AgentCheck =
    Arc<dyn Fn(&airlock_protocol::Agent) -> Result<(), String> + Send + Sync + 'static>;

impl Gate {
    /// Builds a gate over a store, loading the policy in force of every workspace.
    pub async fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Result<Gate, GateError> {
        let policies = PolicyCache::load(store.as_ref()).await?;
        let (pokes, _) = broadcast::channel(1024);
        let (settled, _) = broadcast::channel(1024);
        // Trusted from the start only when no one else writes the database; otherwise
        // once the listener runs (`listen.rs`).
        let cache = cache::ReadCache::new(store.single_writer());
        Ok(Gate {
            inner: Arc::new(Inner {
                store,
                clock,
                policies,
                cache,
                waiters: Waiters::default(),
                pokes,
                sweeper_wake: tokio::sync::Notify::new(),
                settled,
                declared: Default::default(),
                agent_check: Default::default(),
            }),
        })
    }

    pub(crate) fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    pub fn now(&self) -> jiff::Timestamp {
        self.inner.clock.now()
    }

    /// A receiver of workspace ids whose event streams have new events.
    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.inner.pokes.subscribe()
    }

    /// How many callers are long-polling right now (for metrics).
    pub fn waiting(&self) -> usize {
        self.inner.waiters.waiting()
    }

    /// Registers what a trusted provider declares about its tools (the built-in runtime,
    /// at start).
    pub fn declare_tools(
        &self,
        tools: impl IntoIterator<Item = (String, airlock_policy::CompiledTool)>,
    ) {
        if let Ok(mut declared) = self.inner.declared.write() {
            declared.extend(tools);
        }
    }

    /// Registers the check every agent's settings pass before they are saved (the built-in
    /// runtime, at start): creating or changing an agent whose settings it refuses is a
    /// 422 naming the field (DESIGN.md §6).
    pub fn check_agents_with(&self, check: AgentCheck) {
        if let Ok(mut slot) = self.inner.agent_check.write() {
            *slot = Some(check);
        }
    }

    /// Runs the registered check of an agent's settings, if any.
    pub(crate) fn check_agent(&self, agent: &airlock_protocol::Agent) -> Result<(), GateError> {
        let check = self
            .inner
            .agent_check
            .read()
            .ok()
            .and_then(|slot| slot.clone());
        match check {
            Some(check) => check(agent).map_err(GateError::Invalid),
            None => Ok(()),
        }
    }

    /// The declaration of a tool, if a trusted provider made one.
    pub fn declared_tool(&self, name: &str) -> Option<airlock_policy::CompiledTool> {
        self.inner
            .declared
            .read()
            .ok()
            .and_then(|declared| declared.get(name).cloned())
    }

    /// A receiver of `(workspace, call_id)` for every call that stopped pending; `("",
    /// "")` says some may have been missed (re-check everything). Lagging receivers
    /// should re-check everything too.
    pub fn subscribe_settled(&self) -> broadcast::Receiver<(String, String)> {
        self.inner.settled.subscribe()
    }

    /// A pending call stopped pending: wake its long-pollers and tell the subscribers.
    fn settle(&self, workspace: &str, call_id: &str) {
        // A decision may have minted a standing rule (approve with "always"): settling is
        // the one step every decision takes after its commit and before it answers.
        self.forget_rules(workspace);
        self.inner.waiters.wake(call_id);
        let _ = self
            .inner
            .settled
            .send((workspace.to_owned(), call_id.to_owned()));
    }

    fn poke(&self, workspace: &str) {
        // No subscriber is not an error: nobody is streaming.
        let _ = self.inner.pokes.send(workspace.to_owned());
    }
}
