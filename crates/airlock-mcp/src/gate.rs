//! What the proxy asks the airlock gate about a `tools/call`, and what it gets back.
//!
//! The binary implements [`Gate`] over HTTP (submit as the agent, long-poll an asked call,
//! redeem the grant). The proxy forwards a call only on [`Verdict::Allow`], which a gate
//! returns only after the grant was redeemed (consumed exactly once, G1). Anything else,
//! including a gateway that cannot be reached, is a [`Verdict::Deny`] (fail closed, G4).

use serde_json::{Map, Value};
use std::future::Future;

/// The gate's answer to one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed or approved, and the grant is redeemed: forward the call once.
    Allow,
    /// Anything else; `reason` is what the model reads after `Denied: `.
    Deny { reason: String },
}

/// Decides tool calls. `check` waits as long as the gate wants (an asked call waits for a
/// person); the proxy keeps the MCP client's request alive meanwhile.
pub trait Gate: Send + Sync + 'static {
    fn check(
        &self,
        tool: String,
        arguments: Map<String, Value>,
    ) -> impl Future<Output = Verdict> + Send;
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
