//! Claude Code 2.1.332 (`claude -p`, offline against the fake Anthropic Messages API),
//! gated by the `PreToolUse` hooks of docs/integrations/claude-code.md: the command hook
//! (`airlock hook claude-code`) through every scripted turn and a gateway that hangs, and
//! the `http` hook through all of them but the hang (its `"onFailure": "block"` is what
//! blocks the call when the gateway is down).

use crate::harness::{guide_block, run, Gateway, Place, Setup, DENY_REASON};
use crate::model::{FakeModel, Script};
use crate::scenarios;
use std::process::Command;

const GUIDE: &str = "claude-code.md";

/// `claude -p` with `settings` as the project's `.claude/settings.json`.
fn claude(setup: &Setup, settings: &str) -> Command {
    claude_prompted(setup, settings, "run the scripted command")
}

/// `claude -p PROMPT` with `settings` as the project's `.claude/settings.json`.
fn claude_prompted(setup: &Setup, settings: &str, prompt: &str) -> Command {
    Place::write(&setup.place.project, ".claude/settings.json", settings);
    let mut command = setup.command("claude");
    command
        .args(["-p", prompt, "--output-format", "json"])
        .env("ANTHROPIC_BASE_URL", &setup.model.url)
        .env("ANTHROPIC_API_KEY", "sk-ant-fake")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    command
}

/// The guide's command hook (§2a).
fn command_hook(setup: &Setup) -> Command {
    let settings = setup.with_wait(&guide_block(GUIDE, "## 2a.", "json"));
    claude(setup, &settings)
}

/// The guide's `http` hook (§2b), at this run's gateway.
fn http_hook(setup: &Setup) -> Command {
    let settings = guide_block(GUIDE, "## 2b.", "json")
        .replace("http://127.0.0.1:7070", &setup.url)
        .replace("wait_s=55", &format!("wait_s={}", setup.wait));
    claude(setup, &settings)
}

#[test]
fn command_hook_allows_and_denies() {
    scenarios::allow_and_deny(command_hook);
}

#[test]
fn command_hook_waits_for_a_person() {
    scenarios::ask_then_approve_while_waiting(command_hook);
}

#[test]
fn command_hook_lets_the_retry_after_a_late_approval_through() {
    scenarios::late_approval_then_retry(command_hook);
}

#[test]
fn command_hook_fails_closed_when_the_gateway_is_down() {
    scenarios::gateway_down_fails_closed(command_hook);
}

#[test]
fn command_hook_fails_closed_in_time_when_the_gateway_hangs() {
    scenarios::hung_gateway_fails_closed_in_time(command_hook);
}

/// What Claude Code tells the model when a hook with `"onFailure": "block"` failed.
const BLOCKED_ON_FAILURE: &str = "blocking because onFailure is";

/// `"onFailure": "block"`: a hook Claude Code cannot ask blocks the call (without it,
/// Claude Code would run the tool: here its own permission prompt would refuse instead).
#[test]
fn http_hook_fails_closed_when_the_gateway_is_down() {
    scenarios::gateway_down_blocks_without_an_answer(http_hook, BLOCKED_ON_FAILURE);
}

/// The guide's command hook with `airlock` missing from the hook's `PATH` (exit 127).
fn missing_binary_hook(setup: &Setup) -> Command {
    let settings = setup.with_wait(&guide_block(GUIDE, "## 2a.", "json"));
    assert!(settings.contains("\"airlock hook "), "{settings}");
    claude(
        setup,
        &settings.replace("\"airlock hook ", "\"airlock-not-installed hook "),
    )
}

#[test]
fn command_hook_blocks_when_airlock_cannot_start() {
    scenarios::gateway_down_blocks_without_an_answer(missing_binary_hook, BLOCKED_ON_FAILURE);
}

#[test]
fn http_hook_allows_and_denies() {
    scenarios::allow_and_deny(http_hook);
}

#[test]
fn http_hook_waits_for_a_person() {
    scenarios::ask_then_approve_while_waiting(http_hook);
}

#[test]
fn http_hook_lets_the_retry_after_a_late_approval_through() {
    scenarios::late_approval_then_retry(http_hook);
}

/// A slash command's shell lines (`` !`…` ``) run through no tool call: the guide's
/// `PreSkillShellCommand` hook gates each — the allowed line runs, the denied one does
/// not, and the model reads airlock's reason in its place.
#[test]
fn command_hook_gates_the_shell_lines_of_a_slash_command() {
    let gateway = Gateway::start();
    let place = Place::new();
    // The model, once the command's text reaches it, runs nothing the policy knows.
    let model = FakeModel::start(Script::call("true"));
    Place::write(
        &place.project,
        ".claude/commands/probe.md",
        "---\nallowed-tools: Bash(touch:*)\n---\n!`touch allowed.txt`\n\n!`touch forbidden.txt`\n\nSay done.\n",
    );
    let setup = scenarios::setup(&place, &model, &gateway, 1);
    let settings = setup.with_wait(&guide_block(GUIDE, "## 2a.", "json"));
    let finished = run(claude_prompted(&setup, &settings, "/probe"));
    let why = format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        finished.code, finished.stdout, finished.stderr
    );
    let told = model.requests().join("\n");
    assert!(place.project.join("allowed.txt").exists(), "{why}\n{told}");
    assert!(
        !place.project.join("forbidden.txt").exists(),
        "{why}\n{told}"
    );
    assert!(gateway.consumed_grants() >= 1, "{why}");
    // The line was refused by airlock's answer, not by the hook's failure.
    assert!(told.contains(DENY_REASON), "{why}\n{told}");
}
