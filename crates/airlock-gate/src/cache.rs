//! In-memory copies of what every call reads: token → principal, the agent, the live
//! standing rules of a workspace, and which workspaces hold no unreconciled ambiguous call
//! (the compiled policy has its own cache, `policy.rs`).
//!
//! A call would otherwise make three database round trips before it is even evaluated.
//! The copies are only ever trusted while they are known to be in step with the database:
//!
//! - On a store no other process writes (SQLite), every change goes through this gate,
//!   which drops the copies it touches after the store committed and before it answers.
//! - On a shared store (PostgreSQL) the copies are in step only while this node's listener
//!   hears the other nodes' changes (`listen.rs`): until the listener is up, from the
//!   moment it reports its connection lost until it has listened again and resynced, and
//!   after it stops, the cache is *unknown* and every read goes to the database.
//!
//! INVARIANT: a revocation is never masked. A value read from the database is kept only if
//! no invalidation happened since the read began (`epoch`), so a read that raced with a
//! revocation cannot put the revoked value back. Invalidation is coarse (everything of the
//! kind in the workspace): changes are rare, reads are not.
//!
//! INVARIANT: a call is never let past an ambiguous twin this node could have seen. Calls
//! become ambiguous only by the sweeper's marking (`Gate::sweep_ambiguous_once`); while
//! this node marks, no workspace is known clear and no read is kept as clear, and when
//! it has marked, the workspaces it marked (all of them if marking failed) are dropped
//! before anything else can be told. Other nodes' marks arrive as `call.ambiguous`.

use crate::{Gate, GateError};
use airlock_protocol::{Agent, StandingRule, WorkspaceKind};
use airlock_store::Principal;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Whether the copies can be trusted, and the copies.
#[derive(Default)]
pub(crate) struct ReadCache {
    state: RwLock<State>,
}

#[derive(Default)]
struct State {
    /// Trusted: see the module documentation.
    live: bool,
    /// Bumped by every invalidation; a fill carries the epoch its read began in.
    epoch: u64,
    /// How many times a trusted cache became unknown.
    losses: u64,
    /// Never trusted (`Gate::disable_read_cache`).
    disabled: bool,
    /// Token hash → principal.
    tokens: HashMap<String, Principal>,
    /// (workspace, agent id) → agent.
    agents: HashMap<(String, String), Arc<Agent>>,
    /// Workspace → every standing rule not revoked (expiry is checked at use).
    rules: HashMap<String, Arc<Vec<StandingRule>>>,
    /// (workspace, agent id, external id) → the id of the agent's session of that
    /// external id. Kept through invalidations and listener losses: no operation changes
    /// or deletes this mapping once the session exists (the database holds one session
    /// per agent and external id), so a copy is never stale. The session itself (its mode)
    /// is read from the database with the call's other reads.
    sessions: HashMap<(String, String, String), String>,
    /// Workspaces known to hold no unreconciled ambiguous call: a call there needs no
    /// read for an ambiguous twin.
    unambiguous: HashSet<String>,
    /// How many markings of ambiguous calls this node has under way; while any is, no
    /// workspace is known clear.
    marking: u32,
}

/// The most session ids kept; past it the map starts over (each id is read again once).
const MAX_SESSION_IDS: usize = 65_536;

/// Permission to keep what a read returns: the epoch the read began in. `None` when the
/// cache is unknown, so nothing read is kept.
pub(crate) type Ticket = Option<u64>;

/// What the cache can say about the copies right now (for tests and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStatus {
    /// The copies are trusted; otherwise every read goes to the database.
    pub live: bool,
    /// How many invalidations there have been; grows by one or more on each.
    pub epoch: u64,
    /// How many times the cache went from trusted to unknown (a listener lost or stopped).
    pub losses: u64,
}

impl ReadCache {
    /// A cache that is trusted from the start (`live`) or unknown until a listener says so.
    pub(crate) fn new(live: bool) -> ReadCache {
        ReadCache {
            state: RwLock::new(State {
                live,
                ..State::default()
            }),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn status(&self) -> CacheStatus {
        let state = self.read();
        CacheStatus {
            live: state.live,
            epoch: state.epoch,
            losses: state.losses,
        }
    }

    /// Takes a ticket before reading the database.
    pub(crate) fn ticket(&self) -> Ticket {
        let state = self.read();
        state.live.then_some(state.epoch)
    }

    /// Marks the copies trusted (`true`: the listener is up and nothing was missed) or
    /// unknown (`false`); either way drops them all, since the switch means changes may
    /// have gone unheard.
    pub(crate) fn set_live(&self, live: bool) {
        let mut state = self.write();
        state.epoch += 1;
        if state.live && !live {
            state.losses += 1;
        }
        state.live = live && !state.disabled;
        state.tokens.clear();
        state.agents.clear();
        state.rules.clear();
        state.unambiguous.clear();
    }

    /// Never trusts the cache again.
    pub(crate) fn disable(&self) {
        self.write().disabled = true;
        self.set_live(false);
    }

    pub(crate) fn principal(&self, token_hash: &str) -> Option<Principal> {
        let state = self.read();
        if !state.live {
            return None;
        }
        state.tokens.get(token_hash).cloned()
    }

    pub(crate) fn keep_principal(&self, ticket: Ticket, token_hash: &str, principal: &Principal) {
        self.keep(ticket, |state| {
            state
                .tokens
                .insert(token_hash.to_owned(), principal.clone());
        });
    }

    pub(crate) fn agent(&self, workspace: &str, id: &str) -> Option<Arc<Agent>> {
        let state = self.read();
        if !state.live {
            return None;
        }
        state
            .agents
            .get(&(workspace.to_owned(), id.to_owned()))
            .cloned()
    }

    pub(crate) fn keep_agent(&self, ticket: Ticket, workspace: &str, agent: Arc<Agent>) {
        self.keep(ticket, |state| {
            state
                .agents
                .insert((workspace.to_owned(), agent.id.clone()), agent);
        });
    }

    pub(crate) fn rules(&self, workspace: &str) -> Option<Arc<Vec<StandingRule>>> {
        let state = self.read();
        if !state.live {
            return None;
        }
        state.rules.get(workspace).cloned()
    }

    pub(crate) fn keep_rules(
        &self,
        ticket: Ticket,
        workspace: &str,
        rules: Arc<Vec<StandingRule>>,
    ) {
        self.keep(ticket, |state| {
            state.rules.insert(workspace.to_owned(), rules);
        });
    }

    /// Whether the workspace is known to hold no unreconciled ambiguous call.
    pub(crate) fn unambiguous(&self, workspace: &str) -> bool {
        let state = self.read();
        state.live && state.marking == 0 && state.unambiguous.contains(workspace)
    }

    /// Keeps that the workspace held no unreconciled ambiguous call when a read that
    /// began with `ticket` looked.
    pub(crate) fn keep_unambiguous(&self, ticket: Ticket, workspace: &str) {
        self.keep(ticket, |state| {
            if state.marking == 0 {
                state.unambiguous.insert(workspace.to_owned());
            }
        });
    }

    /// Calls are about to be marked ambiguous: until the returned guard is finished with
    /// the workspaces marked (or dropped: all of them), no workspace is known clear.
    pub(crate) fn marking(&self) -> Marking<'_> {
        let mut state = self.write();
        state.epoch += 1;
        state.marking += 1;
        Marking {
            cache: self,
            done: false,
        }
    }

    fn keep(&self, ticket: Ticket, insert: impl FnOnce(&mut State)) {
        let Some(epoch) = ticket else { return };
        let mut state = self.write();
        if state.live && state.epoch == epoch {
            insert(&mut state);
        }
    }

    /// The id of `agent`'s session that another system names `external`, when known.
    pub(crate) fn session_id(
        &self,
        workspace: &str,
        agent: &str,
        external: &str,
    ) -> Option<String> {
        let state = self.read();
        if state.disabled {
            return None;
        }
        state
            .sessions
            .get(&(workspace.to_owned(), agent.to_owned(), external.to_owned()))
            .cloned()
    }

    /// Keeps a session's id under its agent and external id (see [`State::sessions`]).
    pub(crate) fn keep_session_id(&self, workspace: &str, agent: &str, external: &str, id: &str) {
        let mut state = self.write();
        if state.disabled {
            return;
        }
        if state.sessions.len() >= MAX_SESSION_IDS {
            state.sessions.clear();
        }
        state.sessions.insert(
            (workspace.to_owned(), agent.to_owned(), external.to_owned()),
            id.to_owned(),
        );
    }

    /// Forgets one session id (its session was not found under it).
    pub(crate) fn forget_session_id(&self, workspace: &str, agent: &str, external: &str) {
        self.write().sessions.remove(&(
            workspace.to_owned(),
            agent.to_owned(),
            external.to_owned(),
        ));
    }

    /// Drops the workspace's tokens (a token or its subject changed).
    pub(crate) fn forget_tokens(&self, workspace: &str) {
        let mut state = self.write();
        state.epoch += 1;
        state
            .tokens
            .retain(|_, principal| principal.workspace != workspace);
    }

    /// Drops the workspace's agents (one's settings changed).
    pub(crate) fn forget_agents(&self, workspace: &str) {
        let mut state = self.write();
        state.epoch += 1;
        state.agents.retain(|(of, _), _| of != workspace);
    }

    /// Drops the workspace's standing rules (one was minted or revoked).
    pub(crate) fn forget_rules(&self, workspace: &str) {
        let mut state = self.write();
        state.epoch += 1;
        state.rules.remove(workspace);
    }

    /// Drops that the workspace holds no ambiguous call (one was marked).
    pub(crate) fn forget_unambiguous(&self, workspace: &str) {
        let mut state = self.write();
        state.epoch += 1;
        state.unambiguous.remove(workspace);
    }

    /// Drops everything of the workspace (a change this node cannot classify).
    pub(crate) fn forget_workspace(&self, workspace: &str) {
        let mut state = self.write();
        state.epoch += 1;
        state
            .tokens
            .retain(|_, principal| principal.workspace != workspace);
        state.agents.retain(|(of, _), _| of != workspace);
        state.rules.remove(workspace);
        state.unambiguous.remove(workspace);
    }
}

/// A marking of ambiguous calls under way ([`ReadCache::marking`]).
pub(crate) struct Marking<'a> {
    cache: &'a ReadCache,
    done: bool,
}

impl Marking<'_> {
    /// The marking committed, and these are the workspaces it marked calls in.
    pub(crate) fn finish<'w>(mut self, marked: impl IntoIterator<Item = &'w str>) {
        let mut state = self.cache.write();
        for workspace in marked {
            state.unambiguous.remove(workspace);
        }
        self.done = true;
        end_marking(&mut state);
    }
}

impl Drop for Marking<'_> {
    /// Unfinished (the marking failed, or its task was dropped): it may have committed
    /// anywhere, so no workspace is known clear any more.
    fn drop(&mut self) {
        if !self.done {
            let mut state = self.cache.write();
            state.unambiguous.clear();
            end_marking(&mut state);
        }
    }
}

fn end_marking(state: &mut State) {
    state.epoch += 1;
    state.marking = state.marking.saturating_sub(1);
}

impl Gate {
    /// Whether the read cache is trusted right now, and its invalidation count.
    pub fn cache_status(&self) -> CacheStatus {
        self.inner.cache.status()
    }

    /// Reads every token, agent and standing rule from the database from now on, as
    /// before the cache existed: for measuring the cache side by side (`airlock-bench`).
    pub fn disable_read_cache(&self) {
        self.inner.cache.disable();
    }

    /// Who holds the token with this hash (unrevoked), from the cache when it can.
    pub(crate) async fn principal_for_hash(
        &self,
        token_hash: &str,
    ) -> Result<Option<Principal>, GateError> {
        let cache = &self.inner.cache;
        if let Some(principal) = cache.principal(token_hash) {
            return Ok(Some(principal));
        }
        let ticket = cache.ticket();
        let principal = self.store().principal_for_token(token_hash).await?;
        if let Some(principal) = &principal {
            cache.keep_principal(ticket, token_hash, principal);
        }
        Ok(principal)
    }

    /// An agent of the workspace, from the cache when it can.
    pub(crate) async fn agent_cached(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<Option<Arc<Agent>>, GateError> {
        let cache = &self.inner.cache;
        if let Some(agent) = cache.agent(workspace, id) {
            return Ok(Some(agent));
        }
        let ticket = cache.ticket();
        let Some(agent) = self.store().get_agent(workspace, id).await? else {
            return Ok(None);
        };
        let agent = Arc::new(agent);
        cache.keep_agent(ticket, workspace, agent.clone());
        Ok(Some(agent))
    }

    /// Every standing rule of the workspace that is not revoked, newest first (some may
    /// have expired: the caller checks), from the cache when it can.
    pub(crate) async fn unrevoked_rules(
        &self,
        workspace: &str,
    ) -> Result<Arc<Vec<StandingRule>>, GateError> {
        let cache = &self.inner.cache;
        if let Some(rules) = cache.rules(workspace) {
            return Ok(rules);
        }
        let ticket = cache.ticket();
        let mut rules = self.store().list_standing_rules(workspace).await?;
        rules.retain(|rule| rule.revoked_at.is_none());
        let rules = Arc::new(rules);
        cache.keep_rules(ticket, workspace, rules.clone());
        Ok(rules)
    }

    /// A change heard from the listener (this node's own included) drops what it touches;
    /// `None` is a kind this build does not know.
    pub(crate) fn forget_changed(&self, workspace: &str, kind: Option<WorkspaceKind>) {
        let cache = &self.inner.cache;
        match touches(kind) {
            Touches::Nothing => {}
            Touches::Tokens => cache.forget_tokens(workspace),
            Touches::Agents => cache.forget_agents(workspace),
            Touches::Rules => cache.forget_rules(workspace),
            Touches::Ambiguous => cache.forget_unambiguous(workspace),
            Touches::Everything => cache.forget_workspace(workspace),
        }
    }

    /// This node changed standing rules (minted, revoked, a task's): called after the
    /// store committed and before the change is answered.
    pub(crate) fn forget_rules(&self, workspace: &str) {
        self.inner.cache.forget_rules(workspace);
    }

    pub(crate) fn set_cache_live(&self, live: bool) {
        self.inner.cache.set_live(live);
    }
}

/// Whether a change of this kind (a workspace event kind, heard from the listener) can
/// touch what the cache holds, and which part. Every known kind is decided here (a kind
/// added to `WorkspaceKind` does not compile until it is); a kind this build does not
/// know drops everything of the workspace, so a newer node's change fails safe.
pub(crate) fn touches(kind: Option<WorkspaceKind>) -> Touches {
    use WorkspaceKind as K;
    let Some(kind) = kind else {
        return Touches::Everything;
    };
    match kind {
        K::RuleCreated | K::RuleRevoked | K::TaskCreated | K::TaskUpdated | K::TaskRevoked => {
            Touches::Rules
        }
        K::AgentUpdated => Touches::Agents,
        K::TokenRevoked => Touches::Tokens,
        // Not sorted into a part of its own: a session's change drops the workspace.
        K::SessionUpdated => Touches::Everything,
        // Another node marked a call ambiguous (this node's own marks are dropped as they
        // commit: `ReadCache::marking`).
        K::CallAmbiguous => Touches::Ambiguous,
        // A decision may mint a standing rule, but it also sends `rule.created`.
        K::ApprovalRequested
        | K::ApprovalDecided
        | K::ApprovalVoted
        | K::ApprovalExpired
        | K::ApprovalCancelled
        | K::CallDecided
        | K::CallOutcome
        | K::CallReconciled
        | K::PolicyUpdated
        | K::RunState => Touches::Nothing,
    }
}

/// What part of the cache a change touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Touches {
    Nothing,
    Tokens,
    Agents,
    Rules,
    Ambiguous,
    Everything,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use airlock_store::Subject;

    fn principal(workspace: &str) -> Principal {
        Principal {
            workspace: workspace.to_owned(),
            subject: Subject::Agent {
                id: "agt_1".into(),
                name: "scout".into(),
            },
        }
    }

    #[test]
    fn an_unknown_cache_keeps_nothing_and_answers_nothing() {
        let cache = ReadCache::new(false);
        let ticket = cache.ticket();
        assert_eq!(ticket, None);
        cache.keep_principal(ticket, "h", &principal("ws"));
        assert_eq!(cache.principal("h"), None);
    }

    #[test]
    fn a_read_that_raced_with_an_invalidation_is_not_kept() {
        let cache = ReadCache::new(true);
        let ticket = cache.ticket();
        // The revocation lands between the database read and the fill.
        cache.forget_tokens("ws");
        cache.keep_principal(ticket, "h", &principal("ws"));
        assert_eq!(cache.principal("h"), None);
        // A read that began after it is kept.
        let ticket = cache.ticket();
        cache.keep_principal(ticket, "h", &principal("ws"));
        assert_eq!(cache.principal("h"), Some(principal("ws")));
    }

    #[test]
    fn losing_the_listener_drops_everything_and_stops_answering() {
        let cache = ReadCache::new(true);
        cache.keep_principal(cache.ticket(), "h", &principal("ws"));
        cache.set_live(false);
        assert_eq!(cache.principal("h"), None);
        // A fill whose read began before the loss is not kept once live again.
        let stale = Some(cache.status().epoch);
        cache.set_live(true);
        cache.keep_principal(stale, "h", &principal("ws"));
        assert_eq!(cache.principal("h"), None);
    }

    #[test]
    fn invalidation_is_per_workspace() {
        let cache = ReadCache::new(true);
        cache.keep_principal(cache.ticket(), "a", &principal("ws1"));
        cache.keep_principal(cache.ticket(), "b", &principal("ws2"));
        cache.forget_tokens("ws1");
        assert_eq!(cache.principal("a"), None);
        assert_eq!(cache.principal("b"), Some(principal("ws2")));
    }

    #[test]
    fn session_ids_outlive_invalidations_but_not_a_disabled_cache() {
        let cache = ReadCache::new(true);
        cache.keep_session_id("ws", "agt_1", "ext", "ses_1");
        cache.forget_workspace("ws");
        cache.set_live(false);
        // Unknown or not, the mapping is a fact that never changes.
        assert_eq!(
            cache.session_id("ws", "agt_1", "ext").as_deref(),
            Some("ses_1")
        );
        assert_eq!(cache.session_id("ws", "agt_2", "ext"), None);
        cache.forget_session_id("ws", "agt_1", "ext");
        assert_eq!(cache.session_id("ws", "agt_1", "ext"), None);
        cache.keep_session_id("ws", "agt_1", "ext", "ses_1");
        cache.disable();
        assert_eq!(cache.session_id("ws", "agt_1", "ext"), None);
    }

    #[test]
    fn no_workspace_is_known_clear_while_calls_are_marked_ambiguous() {
        let cache = ReadCache::new(true);
        cache.keep_unambiguous(cache.ticket(), "ws1");
        cache.keep_unambiguous(cache.ticket(), "ws2");
        assert!(cache.unambiguous("ws1") && cache.unambiguous("ws2"));
        // A read that began before the marking is not kept, nor one during it.
        let before = cache.ticket();
        let marking = cache.marking();
        assert!(!cache.unambiguous("ws1") && !cache.unambiguous("ws2"));
        cache.keep_unambiguous(before, "ws3");
        cache.keep_unambiguous(cache.ticket(), "ws3");
        marking.finish(["ws1"]);
        assert!(!cache.unambiguous("ws1"));
        assert!(cache.unambiguous("ws2"));
        assert!(!cache.unambiguous("ws3"));
        // A marking that failed (or was dropped) may have marked anywhere.
        let marking = cache.marking();
        drop(marking);
        assert!(!cache.unambiguous("ws2"));
        cache.keep_unambiguous(cache.ticket(), "ws2");
        assert!(cache.unambiguous("ws2"));
        // Another node's mark, heard, and a lost listener drop it too.
        assert_eq!(
            touches(WorkspaceKind::parse("call.ambiguous")),
            Touches::Ambiguous
        );
        cache.forget_unambiguous("ws2");
        assert!(!cache.unambiguous("ws2"));
        cache.keep_unambiguous(cache.ticket(), "ws2");
        cache.set_live(false);
        cache.set_live(true);
        assert!(!cache.unambiguous("ws2"));
    }

    #[test]
    fn unknown_change_kinds_drop_everything() {
        let touches = |kind: &str| touches(WorkspaceKind::parse(kind));
        assert_eq!(touches("rule.revoked"), Touches::Rules);
        assert_eq!(touches("token.revoked"), Touches::Tokens);
        assert_eq!(touches("approval.decided"), Touches::Nothing);
        assert_eq!(touches("something.new"), Touches::Everything);
    }
}
