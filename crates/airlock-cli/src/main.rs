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

/// mimalloc instead of glibc's malloc: the server allocates and frees on every worker
/// thread for every request, and glibc's arenas were 8-16% of the gate's profile; with
/// mimalloc the gate answers a quarter to a third more calls per second (BENCHMARKS.md,
/// "The allocator"). Version 2 without transparent huge pages (`Cargo.toml`): a hook
/// process (one per tool call) would otherwise fault in a 2 MiB page at its first
/// allocation.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// The parser of `airlock hook …` alone. Agents run the hook as a new process on every
/// tool call, so it is parsed without building every other command's parser first; the
/// command, its flags, its help and its errors are the same as [`Cli`]'s (a test compares
/// them).
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about)]
struct HookCli {
    #[command(subcommand)]
    command: HookCommand,
}

#[derive(Debug, Subcommand)]
enum HookCommand {
    /// Gate a coding agent's tool call from its hook: hook JSON on stdin, verdict on stdout.
    Hook(commands::hook::HookArgs),
}

fn main() -> ExitCode {
    let result = if std::env::args_os()
        .nth(1)
        .is_some_and(|first| first == "hook")
    {
        let HookCli {
            command: HookCommand::Hook(args),
        } = HookCli::parse();
        commands::hook::run(args)
    } else {
        run(Cli::parse())
    };
    exit_code(result)
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
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
    }
}

fn exit_code(result: anyhow::Result<Outcome>) -> ExitCode {
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

#[cfg(test)]
mod tests {
    use super::{Cli, HookCli};
    use clap::Parser;

    /// What a parser prints for `args` when it stops (help, or a usage error).
    fn stops_with<P: Parser + std::fmt::Debug>(args: &[&str]) -> String {
        match P::try_parse_from(args) {
            Ok(parsed) => format!("parsed: {parsed:?}"),
            Err(error) => format!("{:?}: {}", error.kind(), error.render()),
        }
    }

    #[test]
    fn the_hook_parser_speaks_as_the_whole_one() {
        for args in [
            &["airlock", "hook", "--help"][..],
            &["airlock", "hook", "-h"],
            &["airlock", "hook"],
            &["airlock", "hook", "copilot"],
            &["airlock", "hook", "claude-code", "--wait", "soon"],
            &["airlock", "hook", "claude-code", "--nope"],
            &["airlock", "hook", "gemini", "extra"],
        ] {
            let whole = stops_with::<Cli>(args);
            assert!(!whole.starts_with("parsed"), "{args:?}: {whole}");
            assert_eq!(stops_with::<HookCli>(args), whole, "{args:?}");
        }
        // A good command line parses to the same arguments.
        let args = [
            "airlock",
            "hook",
            "codex",
            "--wait",
            "5",
            "--url",
            "http://127.0.0.1:1",
            "--json",
        ];
        let whole = format!("{:?}", Cli::try_parse_from(args).map(|cli| cli.command));
        let alone = format!("{:?}", HookCli::try_parse_from(args).map(|cli| cli.command));
        assert_eq!(
            alone.replacen("Ok(Hook(", "", 1),
            whole.replacen("Ok(Hook(", "", 1)
        );
    }
}
