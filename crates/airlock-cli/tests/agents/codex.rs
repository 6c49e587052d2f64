//! Codex 0.169.0 (`codex exec`, offline against the fake OpenAI Responses API through a
//! `model_provider` in a temp `CODEX_HOME`), gated by the `PreToolUse` and
//! `PermissionRequest` hooks of docs/integrations/codex.md, in `~/.codex/hooks.json`.
//! Commands run inside Codex's own sandbox (`workspace-write`), which never reaches
//! `PermissionRequest`: `PreToolUse` is what gates them.

use crate::harness::{guide_block, run, Gateway, Place, Setup};
use crate::model::{FakeModel, Script};
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
/// `--dangerously-bypass-hook-trust` (no one is there to trust them), in the
/// `workspace-write` sandbox.
fn codex_exec(setup: &Setup) -> Command {
    codex_exec_with(setup, &["--sandbox", "workspace-write"])
}

/// Writes the guide's `hooks.json` and the fake model's provider in `~/.codex`, and
/// gives a `codex` command that uses them.
pub fn codex(setup: &Setup) -> Command {
    let codex_home = setup.place.home.join(".codex");
    let hooks = setup.with_wait(&guide_block(GUIDE, "`~/.codex/hooks.json`", "json"));
    Place::write(&codex_home, "hooks.json", &hooks);
    Place::write(&codex_home, "config.toml", &config(&setup.model.url));
    let mut command = setup.command("codex");
    command
        .env("CODEX_HOME", &codex_home)
        .env("FAKE_MODEL_KEY", "sk-fake");
    command
}

/// `codex exec` with `mode` (its sandbox or approval flags).
fn codex_exec_with(setup: &Setup, mode: &[&str]) -> Command {
    let mut command = codex(setup);
    command
        .args([
            "exec",
            "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check",
        ])
        .args(mode)
        .arg("run the scripted command");
    command
}

/// A call that asks to leave the sandbox, in `codex exec --approve-for-me`: Codex asks
/// `PreToolUse` and then `PermissionRequest` about the same tool call; airlock judges it
/// once (one grant) and the `PermissionRequest` takes that verdict (`call.adopted`).
#[test]
fn exec_escalation_is_gated_by_both_hooks() {
    let gateway = Gateway::start();
    let place = Place::new();
    let model = FakeModel::start(Script {
        escalate: true,
        ..Script::call("touch allowed.txt")
    });
    let setup = scenarios::setup(&place, &model, &gateway, 55);
    let finished = run(codex_exec_with(&setup, &["--approve-for-me"]));
    let why = format!(
        "{}\n{}\n{:?}",
        finished.stdout,
        finished.stderr,
        model.results()
    );
    assert!(finished.stderr.contains("hook: PermissionRequest"), "{why}");
    assert!(place.project.join("allowed.txt").exists(), "{why}");
    assert_eq!(gateway.consumed_grants(), 1, "{why}");
    let audit = gateway.server.get_json("/v1/audit?limit=1000");
    let escalations = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|record| record["kind"] == "call.adopted" && record["data"]["escalation"] == true)
        .count();
    assert_eq!(escalations, 1, "{why}");
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

#[test]
fn exec_fails_closed_in_time_when_the_gateway_hangs() {
    scenarios::hung_gateway_fails_closed_in_time(codex_exec);
}
