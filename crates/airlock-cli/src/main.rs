//! The `airlock` binary: argument parsing, dispatch and exit codes (DESIGN.md §7).
//!
//! Exit codes: 0 ok, 1 a refusal or a failed check (a deny, an invalid policy, a failed
//! case, a tampered audit, a decision the server refused), 2 usage or connection error.
//! Each command module returns an [`Outcome`] or an error, and only this file turns them
//! into a process exit code: an error is exit 2 unless it is a [`client::Refused`].
//!
//! - [`commands`]: one module per command.
//! - [`client`]: the HTTP client the client commands share.
//! - [`table`]: human output.

// The binary's job is to print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod client;
mod commands;
mod flow;
mod table;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// airlock: a human-in-the-loop approval gateway for AI agent tool calls.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check, evaluate and test policy files offline.
    #[command(subcommand)]
    Policy(commands::policy::PolicyCommand),
    /// Serve the HTTP API and the inbox.
    Serve(commands::serve::ServeArgs),
    /// List, show, approve and reject approvals.
    Approvals(commands::approvals::ApprovalsArgs),
    /// Verify and export the hash-chained audit log.
    Audit(commands::audit::AuditArgs),
    /// Create and list agents.
    Agents(commands::agents::AgentsArgs),
    /// Submit a tool call as an agent and report the verdict (exit 1 unless allowed).
    Call(commands::call::CallArgs),
    /// Gate a coding agent's tool call from its hook: hook JSON on stdin, verdict on stdout.
    Hook(commands::hook::HookArgs),
    /// Talk to a built-in agent; approve or reject its calls inline.
    Chat(commands::chat::ChatArgs),
    /// Run an MCP server behind airlock (`mcp proxy -- COMMAND ARGS…`).
    Mcp(commands::mcp::McpArgs),
    /// List, add and revoke standing rules: "allow this tool for this exact target".
    Rules(commands::rules::RulesArgs),
    /// List, create, run and revoke scheduled tasks.
    Tasks(commands::tasks::TasksArgs),
    /// Pause and resume a built-in agent's run.
    Runs(commands::runs::RunsArgs),
    /// How often people were asked, and the standing rules that would ask them less.
    Insights(commands::insights::InsightsArgs),
}

/// How a command ended, mapped to the exit codes of DESIGN.md §7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// Exit 1: a refusal or a failed check.
    Refused,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Policy(command) => commands::policy::run(command),
        Command::Serve(args) => commands::serve::run(args),
        Command::Approvals(args) => commands::approvals::run(args),
        Command::Audit(args) => commands::audit::run(args),
        Command::Agents(args) => commands::agents::run(args),
        Command::Call(args) => commands::call::run(args),
        Command::Hook(args) => commands::hook::run(args),
        Command::Mcp(args) => commands::mcp::run(args),
        Command::Chat(args) => commands::chat::run(args),
        Command::Rules(args) => commands::rules::run(args),
        Command::Tasks(args) => commands::tasks::run(args),
        Command::Runs(args) => commands::runs::run(args),
        Command::Insights(args) => commands::insights::run(args),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Refused) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error:#}");
            if error.downcast_ref::<client::Refused>().is_some() {
                ExitCode::from(1)
            } else {
                ExitCode::from(2)
            }
        }
    }
}
