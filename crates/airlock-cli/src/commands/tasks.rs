//! `airlock tasks list | create | run | revoke`: scheduled instructions for a built-in
//! agent, started on a cron schedule in a time zone.
//!
//! A task may be given permissions at creation (`--permission TOOL=TARGET:ACCESS`), which
//! the server mints as task-scoped standing rules so that nobody has to be awake for the
//! 3 a.m. run. Only valid write/external grants become rules; the server reports every
//! other one back as dropped with the reason, and this command prints those on stderr
//! without failing: the task itself was created. A malformed `--permission` is a usage
//! error (exit 2) before any request.

use super::rules::{send, Verb};
use crate::client::{encode, parse, print_json, Client, ClientArgs};
use crate::table::{fields, or_dash, relative, truncate, Table};
use crate::Outcome;
use airlock_protocol::{Agent, Run, StandingRule, Task};
use anyhow::Context;
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct TasksArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(subcommand)]
    command: TasksCommand,
}

#[derive(Debug, Subcommand)]
enum TasksCommand {
    /// List the workspace's tasks, newest first.
    List,
    /// Create a task; its permissions become task-scoped standing rules.
    Create {
        /// A short title, such as `Nightly report`.
        #[arg(long)]
        title: String,
        /// The agent that runs it (id or name).
        #[arg(long)]
        agent: String,
        /// Five fields: minute hour day-of-month month day-of-week, such as `0 3 * * *`.
        #[arg(long)]
        cron: String,
        /// The IANA time zone the cron is read in, such as `Europe/Paris` (default UTC).
        #[arg(long)]
        timezone: Option<String>,
        /// Create it switched off: it does not run until enabled.
        #[arg(long)]
        disabled: bool,
        /// Allow the task's runs TOOL on exactly TARGET without asking; ACCESS is `write`
        /// or `external`, the tool's risk (`email.send=ops@acme.test:external`). Repeatable.
        #[arg(long = "permission", value_name = "TOOL=TARGET:ACCESS", value_parser = parse_permission)]
        permissions: Vec<Permission>,
        #[command(flatten)]
        instructions: Instructions,
    },
    /// Start a run of the task now, whatever its schedule (exit 1 while one is in progress).
    Run {
        /// The task's id (`task_…`).
        id: String,
    },
    /// End a task for good: it never runs again and its standing rules are revoked.
    Revoke {
        /// The task's id (`task_…`).
        id: String,
    },
}

/// What the agent is told at each run: inline, or read from a file (`-` for stdin).
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct Instructions {
    /// The instructions, as the user's message of each run.
    #[arg(long)]
    instructions: Option<String>,
    /// Read the instructions from FILE (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    instructions_file: Option<PathBuf>,
}

/// One grant asked for at creation, as the server takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Permission {
    tool: String,
    target: String,
    access: String,
}

/// `TOOL=TARGET:ACCESS`. The tool ends at the first `=` and the access starts after the
/// last `:`, so targets may hold both (`slack.post=slack:T1/C1:external`).
fn parse_permission(text: &str) -> Result<Permission, String> {
    let shape = "expected TOOL=TARGET:ACCESS, such as `email.send=ops@acme.test:external`";
    let (tool, rest) = text
        .split_once('=')
        .ok_or_else(|| format!("no `=` after the tool: {shape}"))?;
    let (target, access) = rest
        .rsplit_once(':')
        .ok_or_else(|| format!("no `:ACCESS` after the target: {shape}"))?;
    for (part, value) in [("tool", tool), ("target", target), ("access", access)] {
        if value.trim().is_empty() {
            return Err(format!("the {part} is empty: {shape}"));
        }
    }
    Ok(Permission {
        tool: tool.trim().to_owned(),
        target: target.to_owned(),
        access: access.trim().to_owned(),
    })
}

/// A permission the server did not turn into a rule, and why.
#[derive(Debug, Deserialize)]
struct Dropped {
    #[serde(flatten)]
    permission: Permission,
    reason: String,
}

pub fn run(args: TasksArgs) -> anyhow::Result<Outcome> {
    let as_json = args.client.json;
    match args.command {
        TasksCommand::List => {
            let client = Client::new(&args.client);
            let answer = client.get("/v1/tasks")?;
            if as_json {
                print_json(&answer)?;
                return Ok(Outcome::Ok);
            }
            let tasks: Vec<Task> = parse(&answer["items"], "a list of tasks")?;
            if tasks.is_empty() {
                println!("no tasks; create one with `airlock tasks create --title T --agent A --cron \"0 3 * * *\" --instructions TEXT`");
                return Ok(Outcome::Ok);
            }
            // Names read better than ids; a list that cannot be read just leaves the ids.
            let names: HashMap<String, String> = client
                .get("/v1/agents")
                .ok()
                .and_then(|page| parse::<Vec<Agent>>(&page["items"], "agents").ok())
                .unwrap_or_default()
                .into_iter()
                .map(|agent| (agent.id, agent.name))
                .collect();
            let mut table = Table::new(&[
                "ID", "TITLE", "AGENT", "SCHEDULE", "STATE", "NEXT RUN", "LAST RUN",
            ]);
            for task in tasks {
                let state = match (&task.revoked_at, task.enabled, &task.active_run_id) {
                    (Some(_), _, _) => "revoked".to_owned(),
                    (None, _, Some(run)) => format!("running {run}"),
                    (None, false, None) => "disabled".to_owned(),
                    (None, true, None) => "enabled".to_owned(),
                };
                table.row(vec![
                    task.id.clone(),
                    truncate(&task.title, 40),
                    names.get(&task.agent_id).cloned().unwrap_or(task.agent_id),
                    format!("{} ({})", task.cron, task.timezone),
                    state,
                    task.next_run_at.map_or_else(|| "-".to_owned(), relative),
                    or_dash(task.last_run_id.as_deref()),
                ]);
            }
            print!("{}", table.render());
            Ok(Outcome::Ok)
        }
        TasksCommand::Create {
            title,
            agent,
            cron,
            timezone,
            disabled,
            permissions,
            instructions,
        } => {
            let instructions = match (instructions.instructions, instructions.instructions_file) {
                (Some(text), _) => text,
                (None, Some(file)) if file.as_os_str() == "-" => {
                    let mut text = String::new();
                    std::io::stdin()
                        .read_to_string(&mut text)
                        .context("cannot read the instructions from standard input")?;
                    text
                }
                (None, Some(file)) => std::fs::read_to_string(&file)
                    .with_context(|| format!("cannot read {}", file.display()))?,
                // INVARIANT: clap requires exactly one of the two.
                (None, None) => anyhow::bail!("give --instructions or --instructions-file"),
            };
            let mut body = json!({
                "title": title,
                "instructions": instructions,
                "agent": agent,
                "cron": cron,
                "enabled": !disabled,
                "permissions": permissions,
            });
            if let Some(timezone) = timezone {
                body["timezone"] = timezone.into();
            }
            let client = Client::new(&args.client);
            let answer = client.post("/v1/tasks", &body)?;
            let dropped: Vec<Dropped> = parse(&answer["dropped"], "a list of dropped permissions")?;
            if as_json {
                print_json(&answer)?;
            } else {
                let task: Task = parse(&answer["task"], "a task")?;
                let rules: Vec<StandingRule> = parse(&answer["rules"], "a list of rules")?;
                print!("{}", describe(&task));
                if !rules.is_empty() {
                    println!("\nallowed without asking (task rules):");
                    for rule in &rules {
                        println!("  {}  {} for {}", rule.id, rule.tool, rule.target);
                    }
                }
            }
            for dropped in &dropped {
                let Permission {
                    tool,
                    target,
                    access,
                } = &dropped.permission;
                eprintln!(
                    "dropped permission {tool}={target}:{access}: {}",
                    dropped.reason
                );
            }
            Ok(Outcome::Ok)
        }
        TasksCommand::Run { id } => {
            let client = Client::new(&args.client);
            let answer = client.post(&format!("/v1/tasks/{}/run", encode(&id)), &json!({}))?;
            if as_json {
                print_json(&answer)?;
                return Ok(Outcome::Ok);
            }
            let run: Run = parse(&answer, "a run")?;
            println!("{}", run.id);
            eprintln!("started run {} of {id} ({})", run.id, run.state);
            Ok(Outcome::Ok)
        }
        TasksCommand::Revoke { id } => {
            let path = format!("/v1/tasks/{}", encode(&id));
            let (_, answer) = send(&args.client, Verb::Patch, &path, &json!({"revoke": true}))?;
            if as_json {
                print_json(&answer)?;
                return Ok(Outcome::Ok);
            }
            let task: Task = parse(&answer, "a task")?;
            println!(
                "revoked {} ({}): it never runs again and its standing rules are revoked",
                task.id, task.title
            );
            Ok(Outcome::Ok)
        }
    }
}

/// The `key  value` view of one task.
fn describe(task: &Task) -> String {
    fields(&[
        ("task", task.id.clone()),
        ("title", task.title.clone()),
        ("agent", task.agent_id.clone()),
        ("schedule", format!("{} ({})", task.cron, task.timezone)),
        (
            "enabled",
            if task.enabled { "yes" } else { "no" }.to_owned(),
        ),
        (
            "next run",
            task.next_run_at.map(crate::table::when).unwrap_or_default(),
        ),
        ("instructions", truncate(&task.instructions, 80)),
    ])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn permissions_split_at_the_first_equals_and_the_last_colon() {
        assert_eq!(
            parse_permission("slack.post=slack:T1/C1:external").unwrap(),
            Permission {
                tool: "slack.post".into(),
                target: "slack:T1/C1".into(),
                access: "external".into(),
            }
        );
        let permission = parse_permission("kv.set=a=b:write").unwrap();
        assert_eq!(
            (permission.tool.as_str(), permission.target.as_str()),
            ("kv.set", "a=b")
        );
    }

    #[test]
    fn malformed_permissions_say_what_is_missing() {
        assert!(parse_permission("email.send")
            .unwrap_err()
            .contains("no `=`"));
        assert!(parse_permission("email.send=bob")
            .unwrap_err()
            .contains("no `:ACCESS`"));
        assert!(parse_permission("=bob:external")
            .unwrap_err()
            .contains("tool is empty"));
        assert!(parse_permission("email.send=:external")
            .unwrap_err()
            .contains("target is empty"));
        assert!(parse_permission("email.send=bob:")
            .unwrap_err()
            .contains("access is empty"));
    }
}
