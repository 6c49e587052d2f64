//! The operations of the [`crate::Store`] trait, listed once, by resource: each entry is
//! an operation's documentation, its signature and the `src/sql/` function that performs
//! it (see `operations.rs`). `lib.rs` hands the list to `declare!`, each backend to
//! `implement!`; the names an entry uses resolve where the list is expanded.

/// The operations of [`Store`], listed once: `operations.rs` says how an entry
/// becomes a method of the trait and of each backend's implementation.
macro_rules! store_operations {
    ($then:ident $($args:tt)*) => { $then! { $($args)*
        // ----- workspaces, identities, tokens

        /// The workspace with this name, if any.
        async fn workspace_by_name(&self, name: &str) -> StoreResult<Option<Workspace>>
            = read identity::workspace_by_name(name);

        /// Creates a workspace. Names are unique.
        async fn create_workspace(&self, workspace: &Workspace) -> StoreResult<()>
            = write identity::create_workspace(workspace);

        /// Creates a user and its token (hash only), appending `effects`.
        async fn create_user(
            &self,
            workspace: &str,
            user: &User,
            token_hash: &str,
            effects: &Effects,
        ) -> StoreResult<()>
            = write identity::create_user(workspace, user, token_hash, effects);

        async fn list_users(&self, workspace: &str) -> StoreResult<Vec<User>>
            = read identity::list_users(workspace);

        /// Creates an agent and its token (hash only). Agent names are unique per workspace:
        /// a duplicate is `StoreError::Conflict`.
        async fn create_agent(
            &self,
            workspace: &str,
            agent: &Agent,
            token_hash: &str,
            effects: &Effects,
        ) -> StoreResult<()>
            = write identity::create_agent(workspace, agent, token_hash, effects);

        /// Replaces an agent's settings (everything but id, name and created_at).
        async fn update_agent(
            &self,
            workspace: &str,
            agent: &Agent,
            effects: &Effects,
        ) -> StoreResult<()>
            = write identity::update_agent(workspace, agent, effects);

        async fn get_agent(&self, workspace: &str, id: &str) -> StoreResult<Option<Agent>>
            = read identity::find_agent(workspace, AgentKey::Id, id);

        async fn agent_by_name(&self, workspace: &str, name: &str) -> StoreResult<Option<Agent>>
            = read identity::find_agent(workspace, AgentKey::Name, name);

        async fn list_agents(&self, workspace: &str) -> StoreResult<Vec<Agent>>
            = read identity::list_agents(workspace);

        /// Who holds the token with this hash (unrevoked), if anyone.
        async fn principal_for_token(&self, token_hash: &str) -> StoreResult<Option<Principal>>
            = read identity::principal_for_token(token_hash);

        /// Revokes every live token of one user or agent of the workspace, appending
        /// `effects`; returns how many were revoked (0 writes nothing).
        async fn revoke_tokens(
            &self,
            workspace: &str,
            subject_id: &str,
            at: Timestamp,
            effects: &Effects,
        ) -> StoreResult<u64>
            = write identity::revoke_tokens(workspace, subject_id, at, effects);

        // ----- policy

        /// Stores a new policy version and makes it the one in force. In the same transaction,
        /// every pending approval of the workspace whose `policy_digest` differs from
        /// `policy.digest` becomes `cancelled` (decided_by `system`, decision_reason `reason`)
        /// and its call `cancelled`, with the effects `on_cancel` describes for it. Returns the
        /// cancelled approvals (as they are after the change).
        async fn put_policy(
            &self,
            workspace: &str,
            policy: &PolicyInfo,
            effects: &Effects,
            cancel_reason: &str,
            // `for<'a>` spelled out: `#[async_trait]` would otherwise tie the elided lifetime
            // to the call, and no approval made inside the operation could be passed.
            on_cancel: &(dyn for<'a> Fn(&'a Approval) -> Effects + Sync),
        ) -> StoreResult<Vec<Approval>>
            = write policy::put_policy(workspace, policy, effects, cancel_reason, on_cancel);

        /// The policy in force.
        async fn current_policy(&self, workspace: &str) -> StoreResult<Option<PolicyInfo>>
            = read policy::current_policy(workspace);

        /// The policy in force in every workspace (for loading at start).
        async fn current_policies(&self) -> StoreResult<Vec<(String, PolicyInfo)>>
            = read policy::current_policies();

        // ----- sessions

        async fn create_session(&self, workspace: &str, session: &Session) -> StoreResult<()>
            = write identity::create_session(workspace, session);

        async fn get_session(&self, workspace: &str, id: &str) -> StoreResult<Option<Session>>
            = read identity::get_session(workspace, id);

        /// Sets a session's own mode, or clears it (`None`: its agent's mode applies again),
        /// and appends `effects`; `false` when the workspace has no such session (nothing
        /// written).
        async fn set_session_mode(
            &self,
            workspace: &str,
            session_id: &str,
            mode: Option<airlock_protocol::Mode>,
            effects: &Effects,
        ) -> StoreResult<bool>
            = write identity::set_session_mode(workspace, session_id, mode, effects);

        /// The agent's session that another system names `external_id`, if any. Creating a
        /// second one with the same agent and external id is a `Conflict`.
        async fn session_by_external(
            &self,
            workspace: &str,
            agent_id: &str,
            external_id: &str,
        ) -> StoreResult<Option<Session>>
            = read identity::session_by_external(workspace, agent_id, external_id);

        // ----- calls, approvals, grants

        /// Records a call as the gate decided it: the call row, its approval when pending, its
        /// grant when allowed, and `effects`. A pending call whose approval names a policy
        /// digest other than the one in force is refused with `StalePolicy` and nothing is
        /// written: it would otherwise wait for a decision that can never be made.
        async fn record_call(
            &self,
            workspace: &str,
            call: NewCall,
            effects: Effects,
        ) -> StoreResult<()>
            = backend record_call(workspace, call, effects);

        /// Records an allowed call and consumes its grant in one transaction, as
        /// [`Store::record_call`] then [`Store::redeem_keyed`] would in two (for a caller that
        /// redeems the moment its call is allowed: a coding agent's hook). The grant is written
        /// already consumed, with `request.key`; the call with its redeem time and outcome
        /// deadline, and held under `hold` as [`Store::hold_for_retry`] would. No one else
        /// can have seen the grant unconsumed, so it is consumed exactly once (G1), and a
        /// retry under the key replays it through [`Store::redeem_keyed`]. `effects` carry the
        /// records of both steps, in that order. A call that is not allowed (an approval, no
        /// grant) is refused with `Conflict` and nothing is written.
        async fn record_call_redeemed(
            &self,
            workspace: &str,
            call: NewCall,
            request: &RedeemRequest<'_>,
            hold: Option<&str>,
            effects: Effects,
        ) -> StoreResult<()>
            = backend record_call_redeemed(workspace, call, request, hold, effects);

        async fn get_call(&self, workspace: &str, id: &str) -> StoreResult<Option<Call>>
            = read calls::fetch_call(workspace, id);

        async fn get_approval(&self, workspace: &str, id: &str) -> StoreResult<Option<Approval>>
            = read calls::fetch_approval(workspace, id);

        /// Approvals, newest first, optionally of one status, optionally of one session.
        async fn list_approvals(
            &self,
            workspace: &str,
            filter: &ApprovalFilter,
        ) -> StoreResult<Vec<Approval>>
            = read calls::list_approvals(workspace, filter);

        /// Decides a pending approval, in one transaction that checks, in this order: the
        /// approval exists in the workspace (`NotFound`); it is pending (`AlreadyDecided`, or
        /// `StalePolicy` for one cancelled because the policy changed); `now` is before its
        /// deadline (`Expired`, nothing written); the binding digest matches
        /// (`BindingMismatch`); its policy digest is the one in force (`StalePolicy`). Then it
        /// moves approval and call to approved/rejected with a conditional update (only from
        /// `pending`, so of concurrent deciders exactly one wins and the others get
        /// `AlreadyDecided`), inserts the grant on approve, the standing rule when asked
        /// (deduplicated: an identical live rule is reused), and appends `effects`.
        ///
        /// Under the two-person rule (`approvals_required` > 1) the decision is a vote: a
        /// person who already voted gets `AlreadyVoted`; a rejection rejects; an approval that
        /// leaves fewer approving votes than required is kept in `votes`, the approval stays
        /// pending and `decision.vote` is appended instead of `effects`; the approval that
        /// reaches the count approves, as above. Votes are counted under the same lock, so
        /// of concurrent votes exactly one completes the count.
        async fn decide(
            &self,
            workspace: &str,
            decision: &Decision,
            effects: &Effects,
        ) -> Result<Decided, DecideError>
            = write decide::decide(workspace, decision, effects);

        /// Closes a pending approval without a decision (its run was cancelled, its MCP
        /// client went away): approval and call become `cancelled`, decided by `system` with
        /// `reason` (which names who asked), and `effects` are appended. Refused like a
        /// decision when the approval is not pending (`AlreadyDecided`) or unknown
        /// (`NotFound`).
        async fn cancel_approval(
            &self,
            workspace: &str,
            approval_id: &str,
            at: Timestamp,
            reason: &str,
            effects: &Effects,
        ) -> Result<Approval, DecideError>
            = write runs::cancel_approval(workspace, approval_id, at, reason, effects);

        /// Consumes the call's grant with one conditional update (G1), appending `effects`
        /// only when it succeeds.
        async fn redeem(
            &self,
            workspace: &str,
            call_id: &str,
            at: Timestamp,
            effects: &Effects,
        ) -> Result<Grant, RedeemError>
            = backend redeem(workspace, call_id, at, effects);

        /// Holds the call for its agent's retry under `key`: a hook stopped waiting for it
        /// and told the agent to try the identical call again.
        async fn hold_for_retry(&self, workspace: &str, call_id: &str, key: &str) -> StoreResult<()>
            = write retries::hold(workspace, call_id, key);

        /// The newest call held for a retry under `key`.
        async fn held_for_retry(&self, workspace: &str, key: &str) -> StoreResult<Option<Call>>
            = read retries::held(workspace, key);

        /// Ends the hold of `call_id` under `key` with one conditional update, appending
        /// `effects` only when this caller ended it (`true`); `false` when another retry
        /// ended it first.
        async fn release_retry(
            &self,
            workspace: &str,
            call_id: &str,
            key: &str,
            effects: &Effects,
        ) -> StoreResult<bool>
            = write retries::release(workspace, call_id, key, effects);

        /// Consumes the call's grant as [`Store::redeem`] does, storing `request.key` and the
        /// call's outcome deadline in the same update (DESIGN.md §11.8). A redeem of a
        /// consumed grant under the key it was consumed with answers the same grant with
        /// `replayed` and writes nothing; any other key, or none, is `Spent`.
        async fn redeem_keyed(
            &self,
            workspace: &str,
            call_id: &str,
            request: &RedeemRequest<'_>,
            effects: &Effects,
        ) -> Result<Redemption, RedeemError>
            = backend redeem_keyed(workspace, call_id, request, effects);

        /// Stores the outcome of a redeemed call of `agent_id`, once: the same outcome again
        /// answers `stored: false` and writes nothing; another is `AlreadyReported`.
        async fn record_outcome(
            &self,
            workspace: &str,
            call_id: &str,
            agent_id: &str,
            outcome: &CallOutcome,
            effects: &Effects,
        ) -> Result<OutcomeRecorded, SettleError>
            = write outcomes::record_outcome(workspace, call_id, agent_id, outcome, effects);

        /// Marks up to `limit` redeemed calls with no outcome by their due time as ambiguous,
        /// each once across every node, with the effects `on_mark` describes.
        async fn mark_ambiguous(
            &self,
            now: Timestamp,
            limit: u32,
            on_mark: &(dyn for<'a> Fn(&'a str, &'a Call) -> Effects + Sync),
        ) -> StoreResult<Vec<(String, Call)>>
            = write outcomes::mark_ambiguous(now, limit, on_mark);

        /// The earliest outcome deadline still open (for the sweeper's next wake-up).
        async fn next_outcome_due(&self) -> StoreResult<Option<Timestamp>>
            = read outcomes::next_outcome_due();

        /// A person's settling of an ambiguous call, once.
        async fn reconcile(
            &self,
            workspace: &str,
            call_id: &str,
            reconciliation: &Reconciliation,
            effects: &Effects,
        ) -> Result<Call, SettleError>
            = write outcomes::reconcile(workspace, call_id, reconciliation, effects);

        /// Ambiguous calls waiting for a person, oldest first.
        async fn list_ambiguous(&self, workspace: &str, limit: u32) -> StoreResult<Vec<Call>>
            = read outcomes::list_ambiguous(workspace, limit);

        /// The id of an unreconciled ambiguous call of `agent_id` with this tool and these
        /// redacted arguments, if any, and whether the workspace holds any such call.
        async fn ambiguous_twin(
            &self,
            workspace: &str,
            agent_id: &str,
            tool: &str,
            arguments: &serde_json::Value,
        ) -> StoreResult<TwinFound>
            = backend hook_reads::ambiguous_twin_lent(workspace, agent_id, tool, &json_text(arguments)?);

        /// Everything a coding agent's hook call reads before it is judged (its session, a
        /// redeem under its key, a call held for its retry, an ambiguous twin), in one
        /// statement: each answer is the one the separate read would give.
        async fn hook_reads(&self, workspace: &str, reads: &HookReads<'_>) -> StoreResult<HookFound>
            = backend hook_reads::hook_reads_lent(workspace, reads);

        /// The call of `agent_id` whose grant was consumed under `key`, if any.
        async fn call_redeemed_under(
            &self,
            workspace: &str,
            agent_id: &str,
            key: &str,
        ) -> StoreResult<Option<String>>
            = read outcomes::call_redeemed_under(workspace, agent_id, key);

        /// The newest redeemed call of `agent_id` with this tool and these redacted arguments
        /// that has no outcome yet.
        async fn awaiting_outcome(
            &self,
            workspace: &str,
            agent_id: &str,
            tool: &str,
            arguments: &serde_json::Value,
        ) -> StoreResult<Option<String>>
            = read outcomes::awaiting_outcome(workspace, agent_id, tool, &json_text(arguments)?);

        /// Moves up to `limit` pending approvals whose deadline is at or before `now` to
        /// `expired` (call too), each with the effects `on_expire` describes. Returns them with
        /// their workspace.
        async fn expire_due(
            &self,
            now: Timestamp,
            limit: u32,
            // `for<'a>` spelled out: `#[async_trait]` would otherwise tie the elided lifetime
            // to the call, and no approval made inside the operation could be passed.
            on_expire: &(dyn for<'a> Fn(&'a Approval) -> Effects + Sync),
        ) -> StoreResult<Vec<(String, Approval)>>
            = write expiry::expire_due(now, limit, on_expire);

        /// The earliest deadline of any pending approval (for the sweeper's next wake-up).
        async fn next_deadline(&self) -> StoreResult<Option<Timestamp>>
            = read expiry::next_deadline();

        // ----- standing rules

        /// Creates a standing rule, or returns the identical live one (same tool, target, scope
        /// and scope id, not revoked, not expired at `rule.created_at`) with `created = false`,
        /// in which case nothing is written.
        async fn create_standing_rule(
            &self,
            workspace: &str,
            rule: &StandingRule,
            effects: &Effects,
        ) -> StoreResult<(StandingRule, bool)>
            = write rules::create_standing_rule(workspace, rule, effects);

        /// Revokes a live rule; `None` when no unrevoked rule has this id.
        async fn revoke_standing_rule(
            &self,
            workspace: &str,
            id: &str,
            at: Timestamp,
            effects: &Effects,
        ) -> StoreResult<Option<StandingRule>>
            = write rules::revoke_standing_rule(workspace, id, at, effects);

        /// Every rule of the workspace, newest first (revoked and expired included).
        async fn list_standing_rules(&self, workspace: &str) -> StoreResult<Vec<StandingRule>>
            = read rules::list_standing_rules(workspace);

        /// The rules live at `now` in any of these scopes.
        async fn live_standing_rules(
            &self,
            workspace: &str,
            scopes: &[(airlock_protocol::RuleScope, String)],
            now: Timestamp,
        ) -> StoreResult<Vec<StandingRule>>
            = read rules::live_standing_rules(workspace, scopes, now);

        // ----- the built-in runtime

        /// Creates a run in state `running`, held by `lease`, and applies `update` (its user
        /// message, its `run_started` event). Refused with `Conflict` when the session already
        /// has a live run (running or awaiting approval).
        async fn start_run(
            &self,
            workspace: &str,
            run: &Run,
            lease: &Lease,
            update: &RunUpdate,
        ) -> StoreResult<Vec<RunEvent>>
            = write runs::start_run(workspace, run, lease, update);

        /// Applies `update` to a run, refused with `LeaseLost` (nothing written) unless the run
        /// is `running` (or, for an update `while_paused`, paused or cancelled) and held by
        /// `owner` (a lease that ran out still holds until another node claims the run).
        /// Returns the appended events with their `seq`.
        async fn update_run(
            &self,
            workspace: &str,
            run_id: &str,
            owner: &str,
            update: &RunUpdate,
        ) -> StoreResult<Vec<RunEvent>>
            = write runs::update_run(workspace, run_id, owner, update);

        /// Consumes the call's grant (G1) and, in the same transaction, inserts `outbox` (the
        /// effect of a tool whose effect is a database write) and applies `update` to the run
        /// held by `owner`. Any refusal writes nothing.
        #[allow(clippy::too_many_arguments)]
        async fn redeem_for_run(
            &self,
            workspace: &str,
            call_id: &str,
            at: Timestamp,
            effects: &Effects,
            outbox: Option<&OutboxItem>,
            run_id: &str,
            owner: &str,
            update: &RunUpdate,
        ) -> Result<Grant, RedeemError>
            = write runs::redeem_for_run(
                workspace, call_id, at, effects, outbox, run_id, owner, update,
            );

        /// Takes a run over: from `awaiting_approval`, or from `running` when its lease ran
        /// out before `now` (its node died), to `running` under `lease`, applying `update`.
        /// `None` (nothing written) when the run is in neither situation: someone else holds
        /// it, or it ended.
        async fn claim_run(
            &self,
            workspace: &str,
            run_id: &str,
            now: Timestamp,
            lease: &Lease,
            update: &RunUpdate,
        ) -> StoreResult<Option<Run>>
            = write runs::claim_run(workspace, run_id, now, lease, update);

        /// Cancels a live run whoever holds it, applying `update` (its `run_cancelled`
        /// event), and closes, as `closing` says, the pending approvals a pause closes (those
        /// of its gated steps, and of the calls its agent made in its session since it
        /// started that no step names yet), all in one transaction. The holder keeps its
        /// lease only to journal the result of a tool it is executing. Returns the run and
        /// the approvals it closed; `None` when the run is unknown or already ended.
        async fn cancel_run(
            &self,
            workspace: &str,
            run_id: &str,
            update: &RunUpdate,
            closing: &ClosingApprovals<'_>,
        ) -> StoreResult<Option<(Run, Vec<Approval>)>>
            = write runs::cancel_run(workspace, run_id, update, closing);

        /// Pauses a live run whoever holds it, applying `update` (its `run_paused` event), and
        /// closes, as `closing` says, the pending approvals of its gated steps and of the calls
        /// its agent made in its session since it started that no step names yet (a leg that
        /// was between the gate and its step): all in one transaction. The holder keeps its
        /// lease only to journal a tool already executing. `None` when the run is unknown or
        /// not running or awaiting approval.
        async fn pause_run(
            &self,
            workspace: &str,
            run_id: &str,
            update: &RunUpdate,
            closing: &ClosingApprovals<'_>,
        ) -> StoreResult<Option<(Run, Vec<Approval>)>>
            = write pause::pause_run(workspace, run_id, update, closing);

        /// Resumes a paused run: it becomes `awaiting_approval` with no lease (so any node may
        /// claim it), and each gated step whose approval was cancelled loses its call, so that
        /// the leg asks again (a new approval; the old one stays cancelled). `Conflict` while
        /// the leg that held it when it was paused may still be in a step (its lease is still
        /// there and live at `now`); `None` when the run is unknown or not paused.
        async fn resume_run(
            &self,
            workspace: &str,
            run_id: &str,
            now: Timestamp,
            update: &RunUpdate,
        ) -> StoreResult<Option<Run>>
            = write pause::resume_run(workspace, run_id, now, update);

        /// The leg of a paused (or cancelled) run stopped: `owner` lets go of its lease, so
        /// the run may be resumed. `false` (nothing written) unless the run is paused or
        /// cancelled and held by `owner`.
        async fn release_paused(&self, workspace: &str, run_id: &str, owner: &str)
            -> StoreResult<bool>
            = write pause::release_paused(workspace, run_id, owner);

        /// A live leg keeps its run while it waits (on a model, a tool): `lease.owner`'s
        /// lease runs on to `lease.until`. `false` (nothing written) unless the run is
        /// running or paused and still held by that owner.
        async fn renew_lease(&self, workspace: &str, run_id: &str, lease: &Lease)
            -> StoreResult<bool>
            = write runs::renew_lease(workspace, run_id, lease);

        /// Runs that should be moving and are not, with their workspace, at most `limit`:
        /// runs awaiting approval none of whose gated calls is still pending, and running runs
        /// whose lease ran out before `now`.
        async fn stalled_runs(
            &self,
            now: Timestamp,
            limit: u32,
        ) -> StoreResult<Vec<(String, String)>>
            = read runs::stalled_runs(now, limit);

        async fn get_run(&self, workspace: &str, id: &str) -> StoreResult<Option<Run>>
            = read runs::fetch_run(workspace, id);

        /// The runs of a session, oldest first.
        async fn session_runs(&self, workspace: &str, session_id: &str) -> StoreResult<Vec<Run>>
            = read runs::session_runs(workspace, session_id);

        /// Journal events of a run with `seq > after`, in order, at most `limit`.
        async fn run_events_after(
            &self,
            workspace: &str,
            run_id: &str,
            after: u64,
            limit: u32,
        ) -> StoreResult<Vec<RunEvent>>
            = read runs::run_events_after(workspace, run_id, after, limit);

        /// The steps of a run, by index.
        async fn run_steps(&self, workspace: &str, run_id: &str) -> StoreResult<Vec<StoredStep>>
            = read runs::run_steps(workspace, run_id);

        /// The run a gated call belongs to, if any.
        async fn run_of_call(&self, workspace: &str, call_id: &str) -> StoreResult<Option<String>>
            = read runs::run_of_call(workspace, call_id);

        /// A session's conversation, oldest first.
        async fn session_messages(
            &self,
            workspace: &str,
            session_id: &str,
        ) -> StoreResult<Vec<Message>>
            = read runs::session_messages(workspace, session_id);

        /// Outbox items of a workspace, newest first, at most `limit`.
        async fn list_outbox(&self, workspace: &str, limit: u32) -> StoreResult<Vec<OutboxItem>>
            = read runs::list_outbox(workspace, limit);

        /// Undelivered outbox items of every workspace whose next attempt is due at `now`,
        /// by next attempt time, at most `limit`.
        async fn outbox_due(
            &self,
            now: Timestamp,
            limit: u32,
        ) -> StoreResult<Vec<(String, OutboxItem)>>
            = read runs::outbox_due(now, limit);

        /// Claims an outbox item for one delivery attempt: moves its next attempt to `until`
        /// if it is undelivered and due at `now`. Of several nodes claiming the same item,
        /// exactly one gets `true`; a node that dies mid-attempt leaves it to be retried at
        /// `until`.
        async fn claim_outbox(
            &self,
            workspace: &str,
            id: &str,
            now: Timestamp,
            until: Timestamp,
        ) -> StoreResult<bool>
            = write runs::claim_outbox(workspace, id, now, until);

        /// Records one delivery attempt: delivered (`error` None) or failed, to be tried again
        /// at `retry_at`. An unknown or already delivered item is left as it is.
        async fn outbox_attempt(
            &self,
            workspace: &str,
            id: &str,
            at: Timestamp,
            error: Option<&str>,
            retry_at: Option<Timestamp>,
        ) -> StoreResult<()>
            = write runs::outbox_attempt(workspace, id, at, error, retry_at);

        // ----- scheduled tasks

        /// Creates a task with its task-scoped standing rules (minted by the person creating
        /// it), appending `effects`.
        async fn create_task(
            &self,
            workspace: &str,
            task: &Task,
            rules: &[StandingRule],
            effects: &Effects,
        ) -> StoreResult<()>
            = write tasks::create_task(workspace, task, rules, effects);

        async fn get_task(&self, workspace: &str, id: &str) -> StoreResult<Option<Task>>
            = read tasks::get_task(workspace, id);

        /// Every task of the workspace, newest first.
        async fn list_tasks(&self, workspace: &str) -> StoreResult<Vec<Task>>
            = read tasks::list_tasks(workspace);

        /// Writes a task's settings (title, instructions, cron, time zone, enabled, next run,
        /// revocation), never its run bookkeeping. With `revoke_rules_at`, also revokes every
        /// live standing rule scoped to the task. Appends `effects`.
        async fn update_task(
            &self,
            workspace: &str,
            task: &Task,
            revoke_rules_at: Option<Timestamp>,
            effects: &Effects,
        ) -> StoreResult<()>
            = write tasks::update_task(workspace, task, revoke_rules_at, effects);

        /// Enabled, unrevoked tasks of every workspace whose next run is due at `now`, at most
        /// `limit`.
        async fn due_tasks(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<(String, Task)>>
            = read tasks::due_tasks(now, limit);

        /// Dispatches a task, in one transaction: claims it (only if enabled, unrevoked, with
        /// no run in progress, and — unless `manual` — due at `now`), sets its next run, and
        /// creates `session` and `run` (held under `lease`, with `update` applied). `false`
        /// and nothing written when the claim fails: another node dispatched it, or its run
        /// is still in progress (the overlap guard).
        #[allow(clippy::too_many_arguments)]
        async fn dispatch_task(
            &self,
            workspace: &str,
            task_id: &str,
            now: Timestamp,
            manual: bool,
            next_run_at: Option<Timestamp>,
            session: &Session,
            run: &Run,
            lease: &Lease,
            update: &RunUpdate,
        ) -> StoreResult<bool>
            = write tasks::dispatch_task(
                workspace, task_id, now, manual, next_run_at, session, run, lease, update,
            );

        /// A due tick of a task whose run is still in progress is skipped, not queued: moves
        /// its next run to `next_run_at`. `false` when the task is not in that situation.
        async fn skip_task_tick(
            &self,
            workspace: &str,
            task_id: &str,
            now: Timestamp,
            next_run_at: Option<Timestamp>,
        ) -> StoreResult<bool>
            = write tasks::skip_task_tick(workspace, task_id, now, next_run_at);

        // ----- audit and events

        /// Audit records with `seq > after`, in order, at most `limit`.
        async fn audit_after(
            &self,
            workspace: &str,
            after: u64,
            limit: u32,
        ) -> StoreResult<Vec<AuditRecord>>
            = read pages::audit_after(workspace, after, limit);

        /// The same records as stored, in one lean page (`data` as its JSON text): what chain
        /// verification reads.
        async fn audit_rows_after(
            &self,
            workspace: &str,
            after: u64,
            limit: u32,
        ) -> StoreResult<AuditRows>
            = read pages::audit_rows_after(workspace, after, limit);

        /// The workspaces whose chain has enough records in rows to seal a segment
        /// ([`Store::seal_audit`]).
        async fn workspaces_to_seal(&self) -> StoreResult<Vec<String>>
            = read pages::workspaces_to_seal();

        /// Moves the oldest records of `workspace`'s chain, a thousand, unchanged into one
        /// sealed segment, when more than that many are kept as rows (the newest always
        /// stays a row); how many it moved. Reads are unchanged by it: the records are the
        /// same, in the same order, only verified faster.
        async fn seal_audit(&self, workspace: &str) -> StoreResult<u64>
            = backend pages::seal_audit(workspace);

        /// Workspace events with `id > after`, in order, at most `limit`.
        async fn events_after(
            &self,
            workspace: &str,
            after: u64,
            limit: u32,
        ) -> StoreResult<Vec<WorkspaceEvent>>
            = read audit::events_after(workspace, after, limit);

        /// The id of the newest event of the workspace (0 when none).
        async fn last_event_id(&self, workspace: &str) -> StoreResult<u64>
            = read audit::last_event_id(workspace);

        // ----- web sessions (the browser inbox)

        /// Stores a signed-in browser, appending `effects`. In the same transaction, removes
        /// the workspace's sessions that expired at or before `session.created_at`, so that
        /// the table only ever holds about as many rows as there are people signed in.
        async fn create_web_session(
            &self,
            workspace: &str,
            session: &WebSession,
            effects: &Effects,
        ) -> StoreResult<()>
            = write web::create_web_session(workspace, session, effects);

        /// The session whose cookie has this hash and who it acts as, if it is live at `now`:
        /// not expired, and the token it was opened with is a user's and is not revoked
        /// (revoking the token ends every session opened with it). The principal carries the
        /// user's role as it is now.
        async fn web_session(
            &self,
            cookie_hash: &str,
            now: Timestamp,
        ) -> StoreResult<Option<(WebSession, Principal)>>
            = read web::web_session(cookie_hash, now);

        /// Ends the session whose cookie has this hash; appends `effects` only when there was
        /// one. `false` (nothing written) when the workspace has no such session.
        async fn delete_web_session(
            &self,
            workspace: &str,
            cookie_hash: &str,
            effects: &Effects,
        ) -> StoreResult<bool>
            = write web::delete_web_session(workspace, cookie_hash, effects);

        /// The workspace's policy versions, newest first, at most `limit` (the policy page's
        /// history; `source` included).
        async fn policy_versions(&self, workspace: &str, limit: u32) -> StoreResult<Vec<PolicyInfo>>
            = read web::policy_versions(workspace, limit);
    } };
}
