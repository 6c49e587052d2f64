//! Codex 0.169.0 (`codex exec`, offline against the fake OpenAI Responses API through a
//! `model_provider` in a temp `CODEX_HOME`), gated by the `PreToolUse` and
//! `PermissionRequest` hooks of docs/integrations/codex.md, in `~/.codex/hooks.json`.
//! Commands run inside Codex's own sandbox (`workspace-write`), which never reaches
//! `PermissionRequest`: `PreToolUse` is what gates them.

use crate::harness::{guide_block, Place, Setup};
use crate::scenarios;
use std::process::Command;

const GUIDE: &str = "codex.md";

/// The model provider: the fake model's Responses API, keyed by an env var.
fn config(model_url: &str) -> String {
    format!(
        "model = \"fake-model\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\n\
         name = \"fake\"\nbase_url = \"{model_url}/v1\"\nwire_api = \"responses\"\n\
         env_key = \"FAKE_MODEL_KEY\"\n"
    )
}

/// `codex exec` as the guide says for it: the hooks trusted for this run with
/// `--dangerously-bypass-hook-trust` (no one is there to trust them).
fn codex_exec(setup: &Setup) -> Command {
    let codex_home = setup.place.home.join(".codex");
    let hooks = setup.with_wait(&guide_block(GUIDE, "`~/.codex/hooks.json`", "json"));
    Place::write(&codex_home, "hooks.json", &hooks);
    Place::write(&codex_home, "config.toml", &config(&setup.model.url));
    let mut command = setup.command("codex");
    command
        .args([
            "exec",
            "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "run the scripted command",
        ])
        .env("CODEX_HOME", &codex_home)
        .env("FAKE_MODEL_KEY", "sk-fake");
    command
}

#[test]
fn exec_allows_and_denies() {
    scenarios::allow_and_deny(codex_exec);
}

#[test]
fn exec_waits_for_a_person() {
    scenarios::ask_then_approve_while_waiting(codex_exec);
}

#[test]
fn exec_lets_the_retry_after_a_late_approval_through() {
    scenarios::late_approval_then_retry(codex_exec);
}

#[test]
fn exec_fails_closed_when_the_gateway_is_down() {
    scenarios::gateway_down_fails_closed(codex_exec);
}
