//! The store conformance suite: one binary, one module per concern, every behaviour an
//! `async fn(Ctx)` written against `Arc<dyn Store>` only.
//!
//! The behaviours are listed once, in [`conformance_suite!`]; each backend runs all of
//! them with one line at the bottom of this file, each test on a fresh, empty database.
//! Adding a backend is implementing [`store::harness::Backend`] and adding its line.
//!
//! - `harness`: the backend abstraction, the per-test context and the SQLite backend.
//! - `fixtures`: a small world (two workspaces, agents, a user, a policy) and builders.
//! - `identity`, `policy`, `calls`, `decide`, `concurrency`, `grants`, `expiry`, `rules`,
//!   `audit`, `durability`: the behaviours, by concern.
//! - `runs`, `takeover`, `journal`, `outbox`: the built-in runtime's runs and leases,
//!   claiming them back (and the sweeper's view of them), reading them back, and the
//!   grants spent inside a run with the outbox written beside them.
//! - `outcomes`: idempotent redeems, reported outcomes, ambiguous calls (DESIGN §11.8);
//!   `hook_reads`: a hook call's reads in one statement answer as the separate ones.
//! - `web`: the browser inbox's sessions.
//! - `notify`: notifications of pending approvals, signed links, the server secret.
//! - `integrations`: Slack messages and requests, approvals' trace context.
//! - `schema`: the two migration sets make the same tables, columns and indexes.
//! - `sqlite`: what only the SQLite backend promises (file creation, pragmas).
//! - `postgres`: the PostgreSQL backend, and what only it promises (several nodes on one
//!   database, notifications between them).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod store {
    pub mod audit;
    pub mod calls;
    pub mod concurrency;
    pub mod decide;
    pub mod durability;
    pub mod expiry;
    pub mod fixtures;
    pub mod grants;
    pub mod harness;
    pub mod hook_reads;
    pub mod identity;
    pub mod integrations;
    pub mod journal;
    pub mod notify;
    pub mod outbox;
    pub mod outcomes;
    pub mod pause;
    pub mod policy;
    pub mod postgres;
    pub mod rules;
    pub mod runs;
    pub mod schema;
    pub mod sqlite;
    pub mod takeover;
    pub mod tasks;
    pub mod votes;
    pub mod web;
}

/// One test of one behaviour on one backend. Every test runs on two worker threads, so
/// the concurrency behaviours really race.
macro_rules! behaviour {
    ($backend:expr, $module:ident :: $test:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            let backend: Box<dyn $crate::store::harness::Backend> = Box::new($backend);
            $crate::store::harness::run(backend, $crate::store::$module::$test).await;
        }
    };
}

/// Every behaviour of the suite, for the backend `$backend` (an expression, evaluated
/// inside each async test, that makes a backend over a fresh database).
macro_rules! conformance_suite {
    ($backend:expr) => {
        behaviour!($backend, identity::workspaces_are_found_by_unique_name);
        behaviour!($backend, identity::user_tokens_resolve_only_by_hash);
        behaviour!($backend, identity::revoked_tokens_resolve_to_nobody);
        behaviour!($backend, identity::tokens_are_revoked_by_subject);
        behaviour!($backend, identity::agents_are_created_read_and_updated);
        behaviour!($backend, identity::agent_names_are_unique_per_workspace);
        behaviour!($backend, identity::user_names_are_unique_per_workspace);
        behaviour!($backend, identity::sessions_are_created_and_read);
        behaviour!($backend, identity::another_workspace_sees_nothing);
        behaviour!($backend, policy::every_policy_version_is_kept);
        behaviour!($backend, policy::put_policy_cancels_stale_pending_approvals);
        behaviour!($backend, calls::allowed_call_is_recorded_with_its_grant);
        behaviour!($backend, calls::denied_call_is_recorded_without_grant);
        behaviour!($backend, calls::pending_call_is_recorded_with_its_approval);
        behaviour!(
            $backend,
            calls::pending_call_under_a_replaced_policy_is_refused_whole
        );
        behaviour!(
            $backend,
            calls::list_approvals_filters_and_orders_newest_first
        );
        behaviour!(
            $backend,
            decide::approve_writes_approval_call_grant_audit_and_events
        );
        behaviour!(
            $backend,
            votes::votes_count_each_person_once_and_the_last_one_approves
        );
        behaviour!(
            $backend,
            votes::one_rejection_rejects_an_approval_that_needs_several
        );
        behaviour!(
            $backend,
            decide::reject_writes_no_grant_and_keeps_the_reason
        );
        behaviour!(
            $backend,
            decide::an_edit_is_stored_with_the_grant_and_redeemed_as_the_arguments
        );
        behaviour!($backend, decide::a_refused_edit_writes_nothing);
        behaviour!(
            $backend,
            decide::unknown_approval_is_not_found_and_writes_nothing
        );
        behaviour!(
            $backend,
            decide::second_decision_is_refused_and_writes_nothing
        );
        behaviour!($backend, decide::decision_at_or_after_deadline_is_expired);
        behaviour!($backend, decide::wrong_binding_digest_is_refused);
        behaviour!(
            $backend,
            decide::decision_after_policy_cancellation_is_stale
        );
        behaviour!($backend, decide::refusals_are_checked_in_order);
        behaviour!(
            $backend,
            decide::approve_and_remember_mints_or_reuses_a_rule
        );
        behaviour!(
            $backend,
            concurrency::fifty_concurrent_decisions_have_one_winner
        );
        behaviour!(
            $backend,
            concurrency::twenty_concurrent_redeems_have_one_winner
        );
        behaviour!(
            $backend,
            concurrency::concurrent_calls_are_all_recorded_and_chained
        );
        behaviour!($backend, grants::a_grant_is_redeemed_once);
        behaviour!($backend, grants::redeem_refusals_say_why);
        behaviour!($backend, grants::a_held_call_is_released_once);
        behaviour!(
            $backend,
            grants::an_allowed_call_is_redeemed_in_the_commit_that_records_it
        );
        behaviour!(
            $backend,
            hook_reads::hook_reads_answer_as_the_separate_reads
        );
        behaviour!($backend, expiry::expire_due_moves_only_due_approvals);
        behaviour!(
            $backend,
            expiry::expire_due_honours_the_limit_across_workspaces
        );
        behaviour!($backend, expiry::next_deadline_is_the_earliest_pending_one);
        behaviour!($backend, rules::standing_rules_dedupe_and_revoke);
        behaviour!(
            $backend,
            rules::live_rules_filter_by_scope_expiry_and_revocation
        );
        behaviour!($backend, rules::an_expiry_at_the_end_of_time_reads_back);
        behaviour!($backend, audit::audit_chain_is_continuous_and_recomputes);
        behaviour!($backend, audit::audit_chains_are_per_workspace);
        behaviour!(
            $backend,
            audit::sealing_moves_records_and_every_read_stays_the_same
        );
        behaviour!($backend, audit::events_are_read_after_an_id);
        behaviour!($backend, durability::pending_approval_survives_a_restart);
        behaviour!(
            $backend,
            durability::spent_grant_stays_spent_after_a_restart
        );
        behaviour!(
            $backend,
            decide::cancel_approval_closes_a_pending_approval_once
        );
        behaviour!(
            $backend,
            runs::start_run_creates_a_running_run_and_applies_its_update
        );
        behaviour!(
            $backend,
            runs::concurrent_starts_in_one_session_have_one_winner
        );
        behaviour!(
            $backend,
            runs::update_run_keeps_seq_continuous_and_renews_the_lease
        );
        behaviour!(
            $backend,
            runs::update_run_without_the_lease_is_lease_lost_and_writes_nothing
        );
        behaviour!($backend, runs::steps_are_upserted_by_index);
        behaviour!(
            $backend,
            takeover::claim_run_takes_over_a_suspended_or_abandoned_run
        );
        behaviour!($backend, takeover::concurrent_claims_have_one_winner);
        behaviour!(
            $backend,
            takeover::renew_lease_keeps_a_held_run_and_nothing_else
        );
        behaviour!($backend, runs::cancel_run_ends_a_live_run_whoever_holds_it);
        behaviour!(
            $backend,
            pause::pause_closes_what_the_run_asked_and_resume_asks_again
        );
        behaviour!($backend, pause::cancel_closes_what_a_pause_closes);
        behaviour!(
            $backend,
            takeover::stalled_runs_are_the_ones_that_should_move
        );
        behaviour!($backend, takeover::a_run_survives_a_restart);
        behaviour!($backend, journal::session_runs_are_oldest_first);
        behaviour!($backend, journal::run_events_are_read_after_a_seq);
        behaviour!($backend, journal::session_messages_round_trip_in_order);
        behaviour!(
            $backend,
            outbox::redeem_for_run_spends_the_grant_with_its_outbox_row_and_update
        );
        behaviour!($backend, outbox::redeem_for_run_refusals_write_nothing);
        behaviour!(
            $backend,
            outbox::outbox_lists_newest_first_and_delivers_what_is_due
        );
        behaviour!(
            $backend,
            outbox::outbox_items_are_claimed_by_one_node_at_a_time
        );
        behaviour!(
            $backend,
            tasks::tasks_keep_their_settings_and_rules_and_revoke_them
        );
        behaviour!(
            $backend,
            tasks::dispatch_claims_the_overlap_guard_once_and_the_end_of_the_run_frees_it
        );
        behaviour!(
            $backend,
            web::web_sessions_resolve_by_cookie_hash_until_they_expire
        );
        behaviour!($backend, web::web_sessions_act_only_as_a_live_user_token);
        behaviour!($backend, web::web_sessions_survive_a_restart_and_end_once);
        behaviour!($backend, web::opening_a_web_session_clears_the_expired_ones);
        behaviour!(
            $backend,
            web::policy_versions_list_newest_first_in_their_workspace_only
        );
        behaviour!(
            $backend,
            notify::notifications_are_enqueued_once_per_approval_and_channel
        );
        behaviour!(
            $backend,
            notify::notifications_are_claimed_once_and_every_attempt_is_recorded
        );
        behaviour!($backend, notify::signed_links_sign_in_once_as_their_user);
        behaviour!(
            $backend,
            notify::a_link_signs_nobody_in_once_its_approval_is_decided_or_if_it_has_none
        );
        behaviour!($backend, notify::the_server_secret_is_generated_once);
        behaviour!(
            $backend,
            integrations::slack_messages_are_closed_once_after_their_approval_ended
        );
        behaviour!($backend, integrations::a_slack_request_is_accepted_once);
        behaviour!(
            $backend,
            integrations::an_approvals_trace_context_is_kept_once
        );
        behaviour!(
            $backend,
            outcomes::a_redeem_under_a_key_replays_to_that_key_only
        );
        behaviour!(
            $backend,
            outcomes::two_hundred_concurrent_redeems_under_one_key_answer_one_grant
        );
        behaviour!(
            $backend,
            outcomes::two_hundred_concurrent_redeems_under_many_keys_have_one_winner
        );
        behaviour!(
            $backend,
            outcomes::an_outcome_is_stored_once_and_only_for_its_agent
        );
        behaviour!(
            $backend,
            outcomes::overdue_calls_are_marked_ambiguous_once_across_nodes
        );
        behaviour!(
            $backend,
            outcomes::a_reconciliation_settles_an_ambiguous_call_once
        );
    };
}

mod sqlite {
    conformance_suite!(crate::store::harness::Sqlite::fresh());
}

mod postgres {
    conformance_suite!(crate::store::postgres::Postgres::fresh().await);
}
