//! What the proxy asks the airlock gate about a `tools/call`, and what it gets back.
//!
//! The binary implements [`Gate`] over HTTP with the client flow every airlock client
//! shares (`airlock-cli/src/flow.rs`). The proxy drives the steps itself, because
//! only it knows what the MCP client is doing meanwhile:
//!
//! 1. [`Gate::submit`] the call (with the server's [`Hints`] about the tool);
//! 2. an asked call: [`Gate::wait`] for a person (or, on 2026-07-28, [`Gate::check`] it
//!    each time the client retries), [`Gate::cancel`] it when the client gives up, and, with a person's token, record the client's inline answer with
//!    [`Gate::decide`];
//! 3. [`Gate::redeem`] the grant of an allowed or approved call, and forward the call only
//!    on [`Verdict::Allow`] (the grant is consumed exactly once, G1).
//!
//! Anything that prevents a verdict, including a gateway that cannot be reached, is a
//! deny (fail closed, G4).

use serde_json::{Map, Value};
use std::future::Future;

/// The gate's final answer to one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed or approved, and the grant is redeemed: forward the call once. `edited`:
    /// the arguments a person changed the call to while approving it (DESIGN.md §11.6),
    /// forwarded instead of the client's.
    Allow { edited: Option<Map<String, Value>> },
    /// Anything else; `reason` is what the model reads after `Denied: `.
    Deny { reason: String },
}

/// One `tools/call` as the gate sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct GateCall {
    /// `mcp__<server>__<tool>`.
    pub tool: String,
    pub arguments: Map<String, Value>,
    /// What the server's `tools/list` says about the tool; `None` when the server did not
    /// list it (the gate treats it as the riskiest kind, `exec`).
    pub hints: Option<Hints>,
}

/// A tool's annotations from its server (`readOnlyHint`, `destructiveHint`). Only hints:
/// they inform the risk of a tool the policy does not list, and never loosen a rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
}

impl Hints {
    /// No hint at all: nothing worth sending.
    pub fn is_empty(&self) -> bool {
        self.read_only.is_none() && self.destructive.is_none()
    }
}

/// What submitting a call gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// Allowed by policy; the grant still has to be redeemed.
    Allowed { call_id: String },
    /// Asked: a person decides in the inbox (or inline).
    Pending(Pending),
    /// Denied, or no verdict could be had.
    Denied { reason: String },
}

/// An asked call, waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub call_id: String,
    pub approval_id: String,
}

/// How the wait for a person ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waited {
    /// Approved; the grant still has to be redeemed.
    Approved,
    /// Rejected, expired, cancelled, or still pending when the gate stopped waiting
    /// (`gave_up`: the proxy then cancels the approval, which nobody waits for anymore).
    Closed { reason: String, gave_up: bool },
}

/// What the MCP client is shown to approve inline: the approval's preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalPrompt {
    pub approval_id: String,
    pub summary: String,
    pub body: Option<String>,
    /// Echoed by the decision (G2): the person decides on exactly this call.
    pub binding_digest: String,
}

/// A person's answer in the MCP client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InlineDecision {
    Approve,
    /// Declined in the client; recorded as a rejection with this reason.
    Reject,
}

impl InlineDecision {
    /// The reason a rejection records, which the model reads.
    pub const REJECT_REASON: &'static str = "declined in the MCP client";
}

/// The airlock gate, as the proxy uses it. Every method answers; none fails: trouble is a
/// deny (or, for the side steps [`Gate::cancel`] and [`Gate::decide`], a report the
/// proxy can only log).
pub trait Gate: Send + Sync + 'static {
    /// Submits the call and answers at once (an asked call is [`Submitted::Pending`]).
    fn submit(&self, call: GateCall) -> impl Future<Output = Submitted> + Send;

    /// Waits for a person to decide the asked call, as long as the gate allows (the
    /// approval's deadline, the proxy's `--wait`).
    fn wait(&self, call_id: String) -> impl Future<Output = Waited> + Send;

    /// Where the asked call stands now, without waiting: `None` while a person has not
    /// decided it (the 2026-07-28 protocol, where a retried request asks again).
    fn check(&self, call_id: String) -> impl Future<Output = Option<Waited>> + Send;

    /// How long an asked call may wait for a person before the proxy withdraws it (the
    /// proxy's `--wait`); [`Gate::wait`] keeps to it itself, a 2026-07-28 client's
    /// retries are held to it by the proxy.
    fn wait_limit(&self) -> std::time::Duration;

    /// Consumes the grant of an allowed or approved call: [`Verdict::Allow`] only once.
    fn redeem(&self, call_id: String) -> impl Future<Output = Verdict> + Send;

    /// Reports what became of a call forwarded after its grant was redeemed: whether the
    /// real server's result was a success, and its error text when not (DESIGN.md §11.8).
    /// Best effort: a report that cannot be made leaves the call to turn ambiguous, where
    /// a person sees it.
    fn report(
        &self,
        call_id: String,
        succeeded: bool,
        detail: Option<String>,
    ) -> impl Future<Output = ()> + Send;

    /// Closes the approval of a call nobody waits for anymore (the client cancelled it,
    /// disconnected, or the wait ran out). Best effort: a call decided meanwhile stays
    /// decided, and its grant is never redeemed.
    fn cancel(&self, call_id: String) -> impl Future<Output = ()> + Send;

    /// Whether the gate can record a person's inline decision, that is, whether it holds
    /// a person's token. An agent's token never decides (G6), so without one the proxy
    /// does not ask inline.
    fn decides_inline(&self) -> bool;

    /// The approval's preview, to show the person inline.
    fn prompt(
        &self,
        approval_id: String,
    ) -> impl Future<Output = Result<ApprovalPrompt, String>> + Send;

    /// Records the person's inline decision on `prompt`'s approval. `Err` says why it was
    /// not recorded (decided first in the inbox, say); the call's wait tells the outcome.
    fn decide(
        &self,
        prompt: ApprovalPrompt,
        decision: InlineDecision,
    ) -> impl Future<Output = Result<(), String>> + Send;
}

/// The tool name the gate sees: `mcp__<server>__<tool>`, as Claude Code names MCP tools,
/// so one policy covers a server whether it is reached by the proxy or by a hook.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// The default server name: the basename of the command, other characters than ASCII
/// letters and digits as `_` (`/usr/bin/mcp-server-git` → `mcp_server_git`).
pub fn server_name(command: &str) -> String {
    let base = command.rsplit(['/', '\\']).next().unwrap_or(command);
    base.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_claude_codes_convention() {
        assert_eq!(
            server_name("/usr/local/bin/mcp-server-git"),
            "mcp_server_git"
        );
        assert_eq!(server_name("node"), "node");
        assert_eq!(
            tool_name("filesystem", "read_file"),
            "mcp__filesystem__read_file"
        );
    }
}
