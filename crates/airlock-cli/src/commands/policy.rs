//! `airlock policy check | eval | test | show-default | init | classes`: the policy engine
//! offline, on files, and the built-in coding-agent policy and command classes.

use crate::Outcome;
use airlock_policy::cases::{parse_cases, run_cases};
use airlock_policy::classes::CLASSES_TOML;
use airlock_policy::{Call, LoadOptions, Mode, Policy, DEFAULT_POLICY};
use anyhow::{bail, Context};
use clap::Subcommand;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Load a policy and report every problem at file:line:column (exit 1 when invalid).
    Check {
        file: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Evaluate one call and print the decision as JSON (exit 1 on deny).
    Eval {
        file: PathBuf,
        /// Tool name, such as `email.send`.
        #[arg(long)]
        tool: String,
        /// The call's arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Agent name, for rules with an `agents` filter.
        #[arg(long)]
        agent: Option<String>,
        /// Mode: ask, read_only or unattended.
        #[arg(long, default_value = "ask")]
        mode: Mode,
        /// The agent's own tool name (`Bash`), for rules with `native_tool`.
        #[arg(long)]
        native_tool: Option<String>,
        /// The call's absolute working directory; relative paths resolve against it.
        #[arg(long)]
        cwd: Option<String>,
        /// The project root (`{project}`); defaults to `--cwd`.
        #[arg(long)]
        project: Option<String>,
        /// The agent user's home directory (`{home}`, `~`).
        #[arg(long)]
        home: Option<String>,
    },
    /// Run a cases file against a policy (exit 1 on any failed case).
    Test {
        file: PathBuf,
        /// The cases file; defaults to `<policy stem>.cases.toml` beside the policy.
        #[arg(long)]
        cases: Option<PathBuf>,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the built-in coding-agent policy that `airlock serve` enforces without --policy.
    ShowDefault,
    /// Write the built-in coding-agent policy to stdout, to start your own:
    /// `airlock policy init > policy.toml`.
    Init,
    /// Print the command classification the `class` matcher uses (extend it in a policy
    /// with `[commands.<class>] add = [...]`).
    Classes,
}

pub fn run(command: PolicyCommand) -> anyhow::Result<Outcome> {
    match command {
        PolicyCommand::Check { file, json } => check(&file, json),
        PolicyCommand::Eval {
            file,
            tool,
            args,
            agent,
            mode,
            native_tool,
            cwd,
            project,
            home,
        } => eval(
            &file,
            &tool,
            &args,
            agent.as_deref(),
            mode,
            Place {
                native_tool: native_tool.as_deref(),
                cwd: cwd.as_deref(),
                project: project.as_deref(),
                home: home.as_deref(),
            },
        ),
        PolicyCommand::Test { file, cases, json } => test(&file, cases, json),
        PolicyCommand::ShowDefault | PolicyCommand::Init => {
            print!("{DEFAULT_POLICY}");
            Ok(Outcome::Ok)
        }
        PolicyCommand::Classes => {
            print!("{CLASSES_TOML}");
            Ok(Outcome::Ok)
        }
    }
}

fn read(file: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))
}

fn options(file: &Path) -> LoadOptions {
    LoadOptions {
        file_name: file.display().to_string(),
        ..LoadOptions::default()
    }
}

/// Loads a policy for `eval` and `test`, where an invalid policy is a refusal (exit 1).
fn load_or_report(file: &Path) -> anyhow::Result<Result<Policy, Outcome>> {
    let source = read(file)?;
    Ok(Policy::load(&source, &options(file)).map_err(|errors| {
        eprintln!("{errors}");
        Outcome::Refused
    }))
}

fn check(file: &Path, as_json: bool) -> anyhow::Result<Outcome> {
    let source = read(file)?;
    let loaded = Policy::load(&source, &options(file));
    match (&loaded, as_json) {
        (Ok(policy), true) => println!(
            "{}",
            json!({"valid": true, "digest": policy.digest(), "rules": policy.rules().len(), "errors": []})
        ),
        (Ok(policy), false) => println!(
            "{}: ok ({} rules, digest {})",
            file.display(),
            policy.rules().len(),
            policy.digest()
        ),
        (Err(errors), true) => {
            let errors: Vec<Value> = errors
                .0
                .iter()
                .map(|e| json!({"file": e.file, "line": e.line, "column": e.column, "message": e.message}))
                .collect();
            println!("{}", json!({"valid": false, "errors": errors}));
        }
        (Err(errors), false) => eprintln!("{errors}"),
    }
    Ok(if loaded.is_ok() {
        Outcome::Ok
    } else {
        Outcome::Refused
    })
}

/// Where an evaluated call happens, from the `eval` flags.
struct Place<'a> {
    native_tool: Option<&'a str>,
    cwd: Option<&'a str>,
    project: Option<&'a str>,
    home: Option<&'a str>,
}

fn eval(
    file: &Path,
    tool: &str,
    args: &str,
    agent: Option<&str>,
    mode: Mode,
    place: Place,
) -> anyhow::Result<Outcome> {
    let arguments: Value = serde_json::from_str(args).context("--args is not valid JSON")?;
    if !arguments.is_object() {
        bail!("--args must be a JSON object, such as '{{\"to\": \"ana@acme.test\"}}'");
    }
    let policy = match load_or_report(file)? {
        Ok(policy) => policy,
        Err(outcome) => return Ok(outcome),
    };
    let verdict = policy.evaluate(&Call {
        tool,
        arguments: &arguments,
        agent,
        mode,
        standing: &[],
        declared: None,
        native_tool: place.native_tool,
        cwd: place.cwd,
        project: place.project,
        home: place.home,
    });
    println!("{}", serde_json::to_string_pretty(&verdict)?);
    Ok(if verdict.decision == airlock_policy::Decision::Deny {
        Outcome::Refused
    } else {
        Outcome::Ok
    })
}

fn test(file: &Path, cases: Option<PathBuf>, as_json: bool) -> anyhow::Result<Outcome> {
    let cases_file = match cases {
        Some(path) => path,
        None => {
            let default = file.with_extension("cases.toml");
            if !default.exists() {
                bail!(
                    "no cases file: pass --cases FILE or create {}",
                    default.display()
                );
            }
            default
        }
    };
    let policy = match load_or_report(file)? {
        Ok(policy) => policy,
        Err(outcome) => return Ok(outcome),
    };
    let cases = match parse_cases(&read(&cases_file)?, &cases_file.display().to_string()) {
        Ok(cases) => cases,
        Err(errors) => {
            eprintln!("{errors}");
            return Ok(Outcome::Refused);
        }
    };
    let results = run_cases(&policy, cases);
    let failed = results.iter().filter(|r| r.failure.is_some()).count();
    let passed = results.len() - failed;
    if as_json {
        let items: Vec<Value> = results
            .iter()
            .map(|r| {
                json!({
                    "name": r.case.name,
                    "line": r.case.line,
                    "passed": r.failure.is_none(),
                    "failure": r.failure,
                    "verdict": r.verdict,
                })
            })
            .collect();
        println!(
            "{}",
            json!({"passed": passed, "failed": failed, "cases": items})
        );
    } else {
        for result in &results {
            match &result.failure {
                None => println!("pass  {}", result.case.name),
                Some(why) => println!(
                    "FAIL  {} ({}:{}): {why}",
                    result.case.name,
                    cases_file.display(),
                    result.case.line
                ),
            }
        }
        println!("{passed} passed, {failed} failed");
    }
    Ok(if failed == 0 {
        Outcome::Ok
    } else {
        Outcome::Refused
    })
}
