//! An asked call on the 2026-07-28 protocol, where nothing is held open: the proxy answers
//! the `tools/call` at once with an input-required result whose `requestState` names the
//! approval, and the client retries the same call with that state until a person has
//! decided. Each retry only looks at the approval ([`Gate::check`]); the approved one is
//! redeemed and forwarded then, exactly once.
//!
//! Inline approval: when the client declares form elicitation and the gate holds a
//! person's token, the first input-required result also carries the approval form as an
//! input request; the client's answer comes back with the retry and is recorded as that
//! person's decision (the same gate, the same rules as in [`asked`](crate::asked)). The
//! form is put once: a dismissed form leaves the inbox to decide.
//!
//! The state is a handle, not data: the proxy keeps what it names (the call, its approval,
//! the tool and the exact arguments) and a retry that names an unknown approval, or
//! another tool or other arguments than the asked call, is denied and forwards nothing
//! (G2). Approvals still held when the client goes away are cancelled with the others, and
//! one still undecided at a retry after the gate's wait limit is withdrawn (`Denied`).

use crate::asked::{decision, elicits_forms, question};
use crate::gate::{ApprovalPrompt, Gate, Pending, Verdict, Waited};
use rmcp::model::{
    ElicitRequest, ElicitResult, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    JsonObject,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// The key of the approval form among the input requests (and of the client's answer).
pub const APPROVAL_INPUT: &str = "airlock_approval";

/// What `requestState` starts with; the rest is the call's id.
const STATE_PREFIX: &str = "airlock-call:";

/// One asked call, while the client retries it.
#[derive(Debug, Clone)]
struct Held {
    pending: Pending,
    tool: String,
    arguments: JsonObject,
    /// The form put to the person, until they answered it.
    prompt: Option<ApprovalPrompt>,
    /// When the gate asked: the call is withdrawn once it waited the gate's limit.
    since: Instant,
}

/// The asked calls of 2026-07-28 clients, by `requestState`.
#[derive(Debug, Default)]
pub struct HeldCalls(Mutex<HashMap<String, Held>>);

/// What a `tools/call` on 2026-07-28 comes to.
#[derive(Debug)]
pub enum Step {
    /// Still waiting for a person: answer this, the client retries.
    Ask(InputRequiredResult),
    /// Decided: forward on [`Verdict::Allow`] (the grant is redeemed), else deny.
    Done(Verdict),
    /// Approved, and the grant of this call redeemed (or not: the verdict says): forward
    /// on [`Verdict::Allow`], then report the outcome on the call.
    Redeemed { call_id: String, verdict: Verdict },
}

impl HeldCalls {
    /// Holds a call the gate just asked about, and answers the first input-required
    /// result, with the approval form when the person can be asked inline.
    pub async fn ask<G: Gate>(
        &self,
        gate: &G,
        pending: Pending,
        tool: &str,
        arguments: JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> InputRequiredResult {
        let state = format!("{STATE_PREFIX}{}", pending.call_id);
        let prompt = if gate.decides_inline() && elicits_forms(context) {
            match gate.prompt(pending.approval_id.clone()).await {
                Ok(prompt) => Some(prompt),
                Err(error) => {
                    tracing::warn!(approval = %pending.approval_id, %error, "no inline question");
                    None
                }
            }
        } else {
            None
        };
        let inputs = prompt.as_ref().and_then(|prompt| match question(prompt) {
            Ok(params) => {
                let mut inputs = InputRequests::new();
                inputs.insert(
                    APPROVAL_INPUT.to_owned(),
                    InputRequest::Elicitation(ElicitRequest::new(params)),
                );
                Some(inputs)
            }
            Err(error) => {
                tracing::warn!(%error, "no inline question");
                None
            }
        });
        let held = Held {
            pending,
            tool: tool.to_owned(),
            arguments,
            prompt: inputs.as_ref().and(prompt),
            since: Instant::now(),
        };
        self.lock().insert(state.clone(), held);
        InputRequiredResult::new(inputs, Some(state))
    }

    /// A retry carrying `state`: records the person's inline answer if it came with it,
    /// then looks at the approval. The held call is let go once decided.
    pub async fn resume<G: Gate>(
        &self,
        gate: &G,
        state: &str,
        tool: &str,
        arguments: &JsonObject,
        answers: Option<&InputResponses>,
    ) -> Step {
        let Some(held) = self.lock().get(state).cloned() else {
            return Step::Done(Verdict::Deny {
                reason: "the requestState names no call this airlock proxy is asking about \
                         (it may have restarted); call the tool again to ask again"
                    .into(),
            });
        };
        if held.tool != tool || &held.arguments != arguments {
            return Step::Done(Verdict::Deny {
                reason: format!(
                    "the retried call is not the call approval {} asks about: the tool and \
                     its arguments must be the same",
                    held.pending.approval_id
                ),
            });
        }
        if let (Some(prompt), Some(answer)) = (
            held.prompt.clone(),
            answers.and_then(|answers| answers.get(APPROVAL_INPUT)),
        ) {
            // Answered (or not understood): never put again.
            if let Some(entry) = self.lock().get_mut(state) {
                entry.prompt = None;
            }
            match serde_json::from_value::<ElicitResult>(answer.clone()) {
                Ok(answer) => {
                    if let Some(decided) = decision(&answer) {
                        // A refusal (decided first in the inbox) shows in the check below.
                        let _ = gate.decide(prompt, decided).await;
                    }
                }
                Err(error) => tracing::warn!(%error, "the client's inline answer is not an answer"),
            }
        }
        let limit = gate.wait_limit();
        let step = match gate.check(held.pending.call_id.clone()).await {
            None if held.since.elapsed() >= limit => {
                gate.cancel(held.pending.call_id.clone()).await;
                Step::Done(Verdict::Deny {
                    reason: format!(
                        "nobody decided within {} s, so the airlock approval {} was withdrawn; \
                         try the call again to ask again",
                        limit.as_secs(),
                        held.pending.approval_id
                    ),
                })
            }
            None => return Step::Ask(InputRequiredResult::from_request_state(state)),
            Some(Waited::Approved) => Step::Redeemed {
                call_id: held.pending.call_id.clone(),
                verdict: gate.redeem(held.pending.call_id.clone()).await,
            },
            Some(Waited::Closed { reason, gave_up }) => {
                if gave_up {
                    gate.cancel(held.pending.call_id.clone()).await;
                }
                Step::Done(Verdict::Deny { reason })
            }
        };
        self.lock().remove(state);
        step
    }

    /// The calls still held (the client went away: nobody will retry them).
    pub fn drain(&self) -> Vec<String> {
        self.lock()
            .drain()
            .map(|(_, held)| held.pending.call_id)
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        // Every operation leaves the map whole, so a poisoned lock still holds a good map.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
