//! `airlock-full`, the binary with the whole CLI: argument parsing, dispatch and exit codes
//! (DESIGN.md §7). Users run `airlock` (`front.rs`), which runs `airlock hook …` itself and
//! hands every other command line here unchanged; `cargo run` runs this one directly.
//!
//! Exit codes: 0 ok, 1 a refusal or a failed check (a deny, an invalid policy, a failed
//! case, a tampered audit, a decision the server refused), 2 usage or connection error.
//! Each command module returns an [`Outcome`] or an error, and only
//! [`airlock_client::exit_code`] turns them into a process exit code: an error is exit 2
//! unless it is a [`client::Refused`].
//!
//! - [`commands`]: one module per command.
//! - [`client`]: the HTTP client the client commands share (`airlock-client`).
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

/// The whole CLI.
#[derive(Debug, Parser)]
#[command(name = "airlock", bin_name = "airlock", version, about = airlock_client::ABOUT)]
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

pub use airlock_client::Outcome;

fn main() -> ExitCode {
    // The hook is parsed alone, as the front binary does (`airlock_client::HookCli`).
    let result = if std::env::args_os()
        .nth(1)
        .is_some_and(|first| first == "hook")
    {
        hook(airlock_client::parse_hook_command())
    } else {
        run(Cli::parse())
    };
    airlock_client::exit_code(result)
}

/// `airlock hook …`: the front's code over plain HTTP, this binary's client over TLS.
fn hook(args: commands::hook::HookArgs) -> anyhow::Result<Outcome> {
    match airlock_client::run_plain_hook(args) {
        Ok(outcome) => outcome,
        Err(args) => {
            let client = client::Client::new(args.client());
            commands::hook::run(args, client)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Policy(command) => commands::policy::run(command),
        Command::Serve(args) => commands::serve::run(args),
        Command::Approvals(args) => commands::approvals::run(args),
        Command::Audit(args) => commands::audit::run(args),
        Command::Agents(args) => commands::agents::run(args),
        Command::Call(args) => commands::call::run(args),
        Command::Hook(args) => hook(args),
        Command::Mcp(args) => commands::mcp::run(args),
        Command::Chat(args) => commands::chat::run(args),
        Command::Rules(args) => commands::rules::run(args),
        Command::Tasks(args) => commands::tasks::run(args),
        Command::Runs(args) => commands::runs::run(args),
        Command::Insights(args) => commands::insights::run(args),
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use airlock_client::HookCli;
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
