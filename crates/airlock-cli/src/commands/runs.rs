//! `airlock runs pause ID | resume ID`: stop a built-in agent's run from advancing, and
//! let it go on (DESIGN.md §11.6). DESIGN §7 names no `runs` verb; these follow the other
//! client commands: `--json` prints the server's answer, a refusal (a run that cannot be
//! paused or is not paused, a viewer's token) exits 1, usage or connection errors exit 2.

use crate::client::{encode, parse, print_json, Client, ClientArgs};
use crate::Outcome;
use airlock_protocol::Run;
use clap::{Args, Subcommand};
use serde_json::json;

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(subcommand)]
    command: RunsCommand,
}

#[derive(Debug, Subcommand)]
enum RunsCommand {
    /// Pause a run: it does not advance, and its pending approvals are cancelled (a later
    /// click on one is refused).
    Pause {
        /// The run's id (`run_…`).
        id: String,
    },
    /// Resume a paused run: it continues from its journal and asks again for the calls
    /// whose approvals the pause cancelled.
    Resume {
        /// The run's id (`run_…`).
        id: String,
    },
}

pub fn run(args: RunsArgs) -> anyhow::Result<Outcome> {
    let (id, verb, done) = match &args.command {
        RunsCommand::Pause { id } => (id, "pause", "paused"),
        RunsCommand::Resume { id } => (id, "resume", "resumed"),
    };
    let client = Client::new(&args.client);
    let answer = client.post(&format!("/v1/runs/{}/{verb}", encode(id)), &json!({}))?;
    if args.client.json {
        print_json(&answer)?;
        return Ok(Outcome::Ok);
    }
    let run: Run = parse(&answer, "a run")?;
    println!("{done} {} (now {})", run.id, run.state);
    Ok(Outcome::Ok)
}
