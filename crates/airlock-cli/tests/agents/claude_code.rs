//! Claude Code 2.1.332 (`claude -p`, offline against the fake Anthropic Messages API),
//! gated by the `PreToolUse` hooks of docs/integrations/claude-code.md: the command hook
//! (`airlock hook claude-code`) through every scripted turn, and the `http` hook through
//! all but the gateway down (Claude Code runs the tool when an `http` hook is unreachable,
//! as the guide says).

use crate::harness::{guide_block, Place, Setup};
use crate::scenarios;
use std::process::Command;

const GUIDE: &str = "claude-code.md";

/// `claude -p` with `settings` as the project's `.claude/settings.json`.
fn claude(setup: &Setup, settings: &str) -> Command {
    Place::write(&setup.place.project, ".claude/settings.json", settings);
    let mut command = setup.command("claude");
    command
        .args(["-p", "run the scripted command", "--output-format", "json"])
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
