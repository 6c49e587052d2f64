//! `airlock serve --demo`: everything needed to see the approval loop in two commands.
//!
//! It creates an agent `demo` (once; its token goes to DIR/demo-agent.token, mode 0600),
//! and prints one command that submits an `email.send` needing approval as that agent and
//! waits, and one that approves the newest pending approval as the owner. It also creates
//! `assistant`, a built-in agent on a scripted model, and prints the `airlock chat`
//! command that talks to it. The demo policy
//! (unless `--policy` is given) asks for mail to outside addresses, allows mail within
//! `example.com` and forbids `rm -rf`.

use super::write_secret;
use airlock_gate::identity::AgentSpec;
use airlock_gate::Gate;
use airlock_protocol::LlmConfig;
use anyhow::{bail, Context};
use std::path::Path;

/// The demo agent's name.
const AGENT: &str = "demo";

/// The demo's built-in agent: airlock runs it with a scripted model whose scenarios are
/// picked by words in the message ("email", "time").
const ASSISTANT: &str = "assistant";

/// The demo policy. Mail outside `example.com` matches no rule and so is asked (the
/// default); each rule's `examples` are checked whenever the policy loads.
pub const POLICY: &str = r#"# The demo policy of `airlock serve --demo`.
version = 1
default = "ask"
deadline = "1h"
secrets = "deny"

[tools."email.send"]
risk = "external"
target = "to"
summary = "Send email to {to}"
body = "{body}"

[tools."shell.exec"]
risk = "exec"
summary = "Run `{command}`"

[[rules]]
name = "reading-the-clock"
tool = "clock.now"
decision = "allow"

[[rules]]
name = "no-destructive-shell"
tool = "shell.exec"
decision = "deny"
reason = "destructive command"
when = { command = { prefix = ["rm -rf"] } }
examples = { match = [{ command = "rm -rf /" }], not_match = [{ command = "ls -l" }] }

[[rules]]
name = "mail-inside-example-com"
tool = "email.send"
decision = "allow"
when = { to = { glob = "*@example.com" } }
examples = { match = [{ to = "ana@example.com" }], not_match = [{ to = "bob@elsewhere.test" }] }
"#;

/// The arguments of the demo's call: an outside address, so a person must approve.
const DEMO_ARGS: &str = r#"{"to":"bob@elsewhere.test","subject":"Quarterly report","body":"Hi Bob, the report is attached."}"#;

/// Creates the demo agent when missing and returns the text to print.
pub async fn prepare(
    gate: &Gate,
    workspace: &str,
    data_dir: &Path,
    url: &str,
) -> anyhow::Result<String> {
    // Absolute, so that the printed commands work from any folder.
    let data_dir = std::path::absolute(data_dir)
        .with_context(|| format!("cannot resolve {}", data_dir.display()))?;
    let token_file = data_dir.join("demo-agent.token");
    let principal = gate
        .owner(workspace)
        .await?
        .context("the workspace has no owner to create the demo agents")?;
    let agents = gate.list_agents(&principal).await?;
    let exists = |name: &str| agents.iter().any(|agent| agent.name == name);
    if !exists(AGENT) {
        let spec = AgentSpec {
            name: AGENT.to_owned(),
            ..AgentSpec::default()
        };
        let (_, token) = gate.create_agent(&principal, spec).await?;
        write_secret(&token_file, &token)?;
    } else if !token_file.exists() {
        bail!(
            "the agent `{AGENT}` exists but {} is gone, and a token is shown only once: \
             start the demo with a fresh --data-dir",
            token_file.display()
        );
    }

    if !exists(ASSISTANT) {
        let spec = AgentSpec {
            name: ASSISTANT.to_owned(),
            system_prompt: Some("You are airlock's demo assistant.".into()),
            llm: Some(LlmConfig {
                base_url: "scripted:demo".into(),
                model: "scripted".into(),
                api_key_env: None,
                stream: None,
            }),
            ..AgentSpec::default()
        };
        gate.create_agent(&principal, spec).await?;
    }

    // The `airlock` front beside this binary (`airlock-full`) is what users run; `cargo run`
    // builds only this one, which runs every command too.
    let full = std::env::current_exe().context("cannot find the airlock executable")?;
    let front = full.with_file_name("airlock");
    let exe = if front.is_file() { front } else { full };
    let exe = shell_quote(&exe.display().to_string());
    let url_arg = shell_quote(url);
    let call = format!(
        "AIRLOCK_TOKEN=\"$(cat {token})\" {exe} call email.send --url {url_arg} --args '{DEMO_ARGS}' --wait 300",
        token = shell_quote(&token_file.display().to_string()),
    );
    let approve = format!(
        "{exe} approvals approve --latest --url {url_arg} --data-dir {dir}",
        dir = shell_quote(&data_dir.display().to_string()),
    );
    let chat = format!(
        "{exe} chat {ASSISTANT} --url {url_arg} --data-dir {dir}",
        dir = shell_quote(&data_dir.display().to_string()),
    );
    Ok(format!(
        "\ndemo: agent `{AGENT}` is ready. Submit an email that needs approval and wait for it:\n\n  \
         {call}\n\nthen approve it in the inbox at {url}/ (sign in with the owner token), or \
         in another terminal:\n\n  \
         {approve}\n\n\
         or let airlock run an agent: chat with the scripted `{ASSISTANT}`, type \
         \"email Bob the report\", and approve its email inline:\n\n  \
         {chat}\n"
    ))
}

/// Quotes a word for `sh` when it needs it.
fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:=@+,%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use airlock_policy::{Call, Decision, LoadOptions, Mode, Policy};
    use serde_json::json;

    fn decide(policy: &Policy, tool: &str, arguments: serde_json::Value) -> Decision {
        policy
            .evaluate(&Call {
                tool,
                arguments: &arguments,
                agent: Some(AGENT),
                mode: Mode::Ask,
                standing: &[],
                declared: None,
                native_tool: None,
                cwd: None,
                project: None,
                home: None,
            })
            .decision
    }

    #[test]
    fn the_demo_policy_asks_allows_and_denies_as_described() {
        let policy = Policy::load(POLICY, &LoadOptions::default()).unwrap();
        let outside: serde_json::Value = serde_json::from_str(DEMO_ARGS).unwrap();
        assert_eq!(decide(&policy, "email.send", outside), Decision::Ask);
        assert_eq!(
            decide(
                &policy,
                "email.send",
                json!({"to": "ana@example.com", "body": "hi"})
            ),
            Decision::Allow
        );
        assert_eq!(
            decide(&policy, "shell.exec", json!({"command": "rm -rf /tmp/x"})),
            Decision::Deny
        );
    }

    #[test]
    fn words_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("/usr/bin/airlock"), "/usr/bin/airlock");
        assert_eq!(shell_quote("/tmp/my dir"), "'/tmp/my dir'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
