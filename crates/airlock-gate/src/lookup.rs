//! What a coding agent's hook call reads before it is judged, read at once (issue 19).
//!
//! A hook call in a session made five reads before its one commit: the session (two
//! queries), a call already redeemed under its key (a retry whose answer was lost), a
//! call held for its retry, and an unreconciled ambiguous twin. On SQLite each was a
//! hand-off to a reader thread and back, the largest part of the call's time on the
//! server. They are all known before the call is evaluated, so [`Gate::look_up_hook_call`]
//! makes them one statement (`Store::hook_reads`), with the session's id from memory
//! once the session exists (an agent's external id names one session forever).
//!
//! What was found travels with the submission ([`crate::calls::Redeeming::looked_up`]) and
//! is used only for the very call it was read for (the same retry key, tool and redacted
//! arguments); for anything else the gate reads again, as it did before. A found held
//! call or replay is handled exactly as before, with its own reads: those are rare, and
//! their conditional writes are what decide between concurrent retries.

use crate::calls::Submission;
use crate::identity::require_agent;
use crate::outcomes::check_idempotency_key;
use crate::retries::retry_key;
use crate::{Gate, GateError};
use airlock_policy::secrets;
use airlock_protocol::Session;
use airlock_store::{HookFound, HookReads, Principal};
use serde_json::Value;

/// What one hook call found before it was judged. Made only by
/// [`Gate::look_up_hook_call`]; the gate trusts a part only for the call it was read for.
#[derive(Debug, Clone)]
pub struct LookedUp {
    /// The call's session (`None` when the hook named none).
    pub session: Option<Session>,
    /// A call of this agent whose grant was consumed under the hook's key.
    pub redeemed_under: Option<String>,
    /// The retry key the held call was looked up by, and the held call's id.
    pub(crate) retry_key: Option<String>,
    pub(crate) held: Option<String>,
    /// The tool and redacted arguments the twin was looked up for, and the twin.
    pub(crate) tool: String,
    pub(crate) redacted: Value,
    pub(crate) ambiguous_twin: Option<String>,
}

impl LookedUp {
    /// Whether a call held under `key` was found; `None` when this lookup was not made
    /// for that key (then the caller reads it).
    pub(crate) fn held_under(&self, key: &str) -> Option<bool> {
        (self.retry_key.as_deref() == Some(key)).then_some(self.held.is_some())
    }

    /// The ambiguous twin of this tool and redacted arguments; `None` when this lookup
    /// was not made for them (then the caller reads it).
    pub(crate) fn twin_of(&self, tool: &str, redacted: &Value) -> Option<Option<String>> {
        (self.tool == tool && self.redacted == *redacted).then(|| self.ambiguous_twin.clone())
    }
}

impl Gate {
    /// Reads, in one statement, what a hook call needs before it is judged (see the module
    /// documentation): its session (opened when `external` names one not seen yet, as
    /// [`Gate::session_for_external`] does), a redeem under `key`, a held call, an
    /// ambiguous twin. `submission` is the call as it will be submitted, without its
    /// session (the session found here is its session).
    pub async fn look_up_hook_call(
        &self,
        principal: &Principal,
        external: Option<(&str, String)>,
        key: Option<&str>,
        submission: &Submission,
    ) -> Result<LookedUp, GateError> {
        let (agent_id, _) = require_agent(principal, "submit calls")?;
        if let Some(key) = key {
            check_idempotency_key(key)?;
        }
        let workspace = principal.workspace.as_str();
        let cache = &self.inner.cache;
        let remembered = external
            .as_ref()
            .and_then(|(external, _)| cache.session_id(workspace, agent_id, external));
        if let (Some(id), Some((external, _))) = (remembered, &external) {
            let (submission, retry, redacted, mut found) = self
                .hook_reads(principal, Some(id), key, submission)
                .await?;
            match found.session.take() {
                Some(session) if session.agent_id.as_deref() == Some(agent_id) => {
                    return Ok(LookedUp::new(
                        Some(session),
                        retry,
                        submission,
                        redacted,
                        found,
                    ));
                }
                // Not found under the remembered id (which cannot happen while sessions
                // are never deleted): forget it and look the session up again below.
                _ => cache.forget_session_id(workspace, agent_id, external),
            }
        }
        // The session as the database has it (opened now if it is new).
        let session = match &external {
            Some((external, title)) => {
                let (session, _) = self
                    .session_for_external(principal, external, Some(title.clone()))
                    .await?;
                cache.keep_session_id(workspace, agent_id, external, &session.id);
                Some(session)
            }
            None => None,
        };
        let id = session.as_ref().map(|session| session.id.clone());
        let (submission, retry, redacted, found) =
            self.hook_reads(principal, id, key, submission).await?;
        // The session just read or opened (the join read it again: the same row).
        Ok(LookedUp::new(session, retry, submission, redacted, found))
    }

    /// [`Store::hook_reads`](airlock_store::Store::hook_reads) for `submission` in the
    /// session `session_id`: the submission as it will be judged, its retry key, its
    /// redacted arguments, and what was found.
    async fn hook_reads(
        &self,
        principal: &Principal,
        session_id: Option<String>,
        key: Option<&str>,
        submission: &Submission,
    ) -> Result<(Submission, Option<String>, Value, HookFound), GateError> {
        let (agent_id, _) = require_agent(principal, "submit calls")?;
        let submission = Submission {
            session_id,
            context: submission.context.clone().checked(),
            ..submission.clone()
        };
        let retry = retry_key(principal, &submission);
        let redacted = secrets::redact(&submission.arguments);
        let found = self
            .store()
            .hook_reads(
                &principal.workspace,
                &HookReads {
                    agent_id,
                    session_id: submission.session_id.as_deref(),
                    redeem_key: key,
                    retry_key: retry.as_deref(),
                    tool: &submission.tool,
                    arguments: &redacted,
                },
            )
            .await?;
        Ok((submission, retry, redacted, found))
    }
}

impl LookedUp {
    fn new(
        session: Option<Session>,
        retry_key: Option<String>,
        submission: Submission,
        redacted: Value,
        found: HookFound,
    ) -> LookedUp {
        LookedUp {
            session,
            redeemed_under: found.redeemed_under,
            retry_key,
            held: found.held,
            tool: submission.tool,
            redacted,
            ambiguous_twin: found.ambiguous_twin,
        }
    }
}
