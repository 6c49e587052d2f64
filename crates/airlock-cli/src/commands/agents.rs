//! `airlock agents create | list`: the automated actors that submit calls.
//!
//! An agent's token is shown exactly once, at creation: only its hash is stored (§2).

use crate::client::{parse, print_json, Client, ClientArgs};
use crate::table::{fields, relative, Table};
use crate::Outcome;
use airlock_protocol::{Agent, Mode};
use clap::{Args, Subcommand};
use serde_json::json;

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(subcommand)]
    command: AgentsCommand,
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// Create an agent and print its token (shown only this once).
    Create {
        /// Letters, digits, `-`, `_` or `.`, at most 64.
        name: String,
        /// ask (default), read_only or unattended.
        #[arg(long)]
        mode: Option<Mode>,
    },
    /// List the workspace's agents.
    List,
}

pub fn run(args: AgentsArgs) -> anyhow::Result<Outcome> {
    let client = Client::new(&args.client);
    match args.command {
        AgentsCommand::Create { name, mode } => {
            let mut body = json!({"name": name});
            if let Some(mode) = mode {
                body["mode"] = json!(mode);
            }
            let answer = client.post("/v1/agents", &body)?;
            if args.client.json {
                print_json(&answer)?;
                return Ok(Outcome::Ok);
            }
            let agent: Agent = parse(&answer["agent"], "an agent")?;
            let token = answer["token"].as_str().unwrap_or_default();
            print!(
                "{}",
                fields(&[
                    ("agent", agent.name),
                    ("id", agent.id),
                    ("mode", agent.mode.to_string()),
                    ("token", token.to_owned()),
                ])
            );
            eprintln!("the token is shown only this once: keep it where the agent can read it");
            Ok(Outcome::Ok)
        }
        AgentsCommand::List => {
            let answer = client.get("/v1/agents")?;
            if args.client.json {
                print_json(&answer)?;
                return Ok(Outcome::Ok);
            }
            let agents: Vec<Agent> = parse(&answer["items"], "a list of agents")?;
            if agents.is_empty() {
                println!("no agents; create one with `airlock agents create NAME`");
                return Ok(Outcome::Ok);
            }
            let mut table = Table::new(&["NAME", "ID", "MODE", "CREATED"]);
            for agent in agents {
                table.row(vec![
                    agent.name,
                    agent.id,
                    agent.mode.to_string(),
                    relative(agent.created_at),
                ]);
            }
            print!("{}", table.render());
            Ok(Outcome::Ok)
        }
    }
}
