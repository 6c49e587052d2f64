//! The real coding agents as test peers: Claude Code, Codex and Gemini CLI, installed
//! from npm (pinned, by `install_agent_peers` in scripts/services.sh), each run
//! non-interactively (Codex also interactively, its TUI under a pseudo-terminal:
//! `agents/terminal.rs`, `agents/screen.rs`) and offline against a fake model that
//! speaks its wire format (`agents/model.rs`), with airlock's hook configured exactly as its guide in
//! docs/integrations/ shows (the tests read the configuration out of the guide), against
//! a real `airlock serve`.
//!
//! Every agent goes through the same scripted turns (`agents/scenarios.rs`): allow, deny
//! with the reason reaching the model, ask and approve while the hook waits, a late
//! approval and the model's retry, and the gateway down. Run alone with
//! `cargo nextest run -p airlock-cli --test agents`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

#[path = "common/captured.rs"]
mod captured;
#[path = "agents/claude_code.rs"]
mod claude_code;
#[path = "agents/codex.rs"]
mod codex;
#[path = "agents/codex_tui.rs"]
mod codex_tui;
#[path = "agents/gemini.rs"]
mod gemini;
#[path = "agents/harness.rs"]
mod harness;
#[path = "agents/model.rs"]
mod model;
#[path = "agents/scenarios.rs"]
mod scenarios;
#[path = "agents/screen.rs"]
mod screen;
#[path = "agents/terminal.rs"]
mod terminal;
// The `cli` binary's server harness; this binary uses part of it.
#[allow(dead_code)]
#[path = "cli/support.rs"]
mod support;
