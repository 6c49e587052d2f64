//! An agent's settings as each reader sees them (G9). The people who may change an agent
//! (admin and owner) read its settings as saved: they edit them. Everyone else (viewers,
//! approvers, the agent's own token) reads them with secret material redacted: an MCP
//! server's command line (`command: "env", args: ["GITHUB_TOKEN=ghp_…", …]`, `--token X`)
//! and a model URL holding a password.

use airlock_policy::secrets::redact_text;
use airlock_protocol::{Agent, Role};
use airlock_store::{Principal, Subject};

/// `agent` as `principal` may read it.
pub(crate) fn as_seen_by(principal: &Principal, mut agent: Agent) -> Agent {
    if matches!(&principal.subject, Subject::User { role, .. } if *role >= Role::Admin) {
        return agent;
    }
    if let Some(llm) = &mut agent.llm {
        llm.base_url = redact_text(&llm.base_url);
    }
    for server in agent.mcp_servers.iter_mut().flatten() {
        server.command = redact_text(&server.command);
        server.args = redact_arguments(&server.args);
    }
    agent
}

/// A command line's arguments, each redacted alone and with the one before it, so that
/// an option's value is found by the option's name (`--api-key`, `X`).
fn redact_arguments(args: &[String]) -> Vec<String> {
    let mut redacted: Vec<String> = args.iter().map(|arg| redact_text(arg)).collect();
    for position in 1..args.len() {
        let before = &redacted[position - 1];
        let prefix = format!("{before} ");
        let pair = redact_text(&format!("{before} {}", redacted[position]));
        match pair.strip_prefix(&prefix) {
            Some(value) => redacted[position] = value.to_owned(),
            // The secret reached back into the option itself: keep neither in clear.
            None if pair != format!("{prefix}{}", redacted[position]) => {
                redacted[position] = "[REDACTED:secret_field]".to_owned();
            }
            None => {}
        }
    }
    redacted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_values_and_assignments_are_redacted() {
        let args: Vec<String> = [
            "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
            "npx",
            "--api-key",
            "hunter2-is-not-a-good-key",
            "--root",
            "/srv/files",
        ]
        .map(str::to_owned)
        .to_vec();
        let seen = redact_arguments(&args);
        assert!(!seen[0].contains("ghp_a1B2"), "{seen:?}");
        assert_eq!(seen[1], "npx");
        assert_eq!(seen[2], "--api-key");
        assert!(seen[3].starts_with("[REDACTED:"), "{seen:?}");
        assert_eq!(seen[4..], ["--root", "/srv/files"]);
    }
}
