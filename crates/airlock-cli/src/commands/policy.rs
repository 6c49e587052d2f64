//! `airlock policy check | eval | explain | test | replay | lint | show-default | init |
//! classes`: the policy engine offline, on files; a candidate judged on recorded calls
//! (`replay`, `lint`: `replay.rs`); the built-in coding-agent policy and command classes.

use super::replay::{self, HistoryArgs};
use crate::table::write_stdout;
use crate::Outcome;
use airlock_policy::cases::{parse_cases, run_cases};
use airlock_policy::classes::CLASSES_TOML;
use airlock_policy::explain::Miss;
use airlock_policy::{Call, LoadOptions, Mode, Policy, DEFAULT_POLICY};
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use std::fmt::Write as _;
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
        #[command(flatten)]
        call: CallFlags,
        /// Print the decision as JSON (what `eval` always prints; accepted as the other
        /// commands accept it).
        #[arg(long)]
        json: bool,
    },
    /// Explain one call's verdict: every candidate rule, matched or not (and for a miss
    /// the `when` key and value that failed), then the standing-rule, mode and secrets
    /// steps.
    Explain {
        #[command(flatten)]
        call: CallFlags,
        /// Print the explanation as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Replay recorded calls under a candidate policy and report what would change
    /// (exit 1 when any call would move toward allow, unless --allow-loosening).
    Replay {
        file: PathBuf,
        #[command(flatten)]
        history: HistoryArgs,
        /// Exit 0 even when calls would move toward allow.
        #[arg(long)]
        allow_loosening: bool,
    },
    /// Report rules shadowed by a stricter rule, examples on one side only, and (with a
    /// history: --since, --from or --calls) rules that never matched (exit 1 on findings).
    Lint {
        file: PathBuf,
        #[command(flatten)]
        history: HistoryArgs,
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

/// The policy and the one call `eval` and `explain` judge.
#[derive(Debug, Args)]
pub struct CallFlags {
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
}

impl CallFlags {
    /// The call to judge (no standing rules, nothing declared), over `arguments` read
    /// from `--args`.
    fn call<'a>(&'a self, arguments: &'a Value) -> Call<'a> {
        Call {
            tool: &self.tool,
            arguments,
            agent: self.agent.as_deref(),
            mode: self.mode,
            standing: &[],
            declared: None,
            native_tool: self.native_tool.as_deref(),
            cwd: self.cwd.as_deref(),
            project: self.project.as_deref(),
            home: self.home.as_deref(),
        }
    }
}

pub fn run(command: PolicyCommand) -> anyhow::Result<Outcome> {
    match command {
        PolicyCommand::Check { file, json } => check(&file, json),
        PolicyCommand::Eval { call, .. } => eval(&call),
        PolicyCommand::Explain { call, json } => explain(&call, json),
        PolicyCommand::Replay {
            file,
            history,
            allow_loosening,
        } => replay::replay(&file, &history, allow_loosening),
        PolicyCommand::Lint { file, history } => {
            let with_history =
                history.since.is_some() || history.from.is_some() || history.calls.is_some();
            replay::lint(&file, &history, with_history)
        }
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

/// `--args` read as a JSON object and the policy loaded (an invalid one is reported).
fn prepare(file: &Path, args: &str) -> anyhow::Result<Result<(Policy, Value), Outcome>> {
    let arguments: Value = serde_json::from_str(args).context("--args is not valid JSON")?;
    if !arguments.is_object() {
        bail!("--args must be a JSON object, such as '{{\"to\": \"ana@acme.test\"}}'");
    }
    Ok(load_or_report(file)?.map(|policy| (policy, arguments)))
}

fn eval(flags: &CallFlags) -> anyhow::Result<Outcome> {
    let (policy, arguments) = match prepare(&flags.file, &flags.args)? {
        Ok(prepared) => prepared,
        Err(outcome) => return Ok(outcome),
    };
    let verdict = policy.evaluate(&flags.call(&arguments));
    println!("{}", serde_json::to_string_pretty(&verdict)?);
    Ok(if verdict.decision == airlock_policy::Decision::Deny {
        Outcome::Refused
    } else {
        Outcome::Ok
    })
}

fn explain(flags: &CallFlags, as_json: bool) -> anyhow::Result<Outcome> {
    let (policy, arguments) = match prepare(&flags.file, &flags.args)? {
        Ok(prepared) => prepared,
        Err(outcome) => return Ok(outcome),
    };
    let tool = flags.tool.as_str();
    let explained = policy.explain(&flags.call(&arguments));
    if as_json {
        println!("{}", serde_json::to_string_pretty(&explained)?);
        return Ok(Outcome::Ok);
    }
    println!(
        "{tool} (risk {}): {} candidate rule{}",
        explained.risk,
        explained.candidates.len(),
        if explained.candidates.len() == 1 {
            ""
        } else {
            "s"
        }
    );
    for rule in &explained.candidates {
        let outcome = match &rule.failed {
            None => "matched".to_owned(),
            Some(Miss::Agents { agent }) => format!(
                "missed: agents filter does not admit {}",
                agent
                    .as_deref()
                    .map_or("a call with no agent".to_owned(), |a| format!("`{a}`"))
            ),
            Some(Miss::NativeTool { native_tool }) => format!(
                "missed: native_tool filter does not admit {}",
                native_tool
                    .as_deref()
                    .map_or("a call with no native tool".to_owned(), |t| format!(
                        "`{t}`"
                    ))
            ),
            Some(Miss::When { key, value }) => {
                format!("missed: when.{key} does not hold for {value}")
            }
        };
        println!(
            "  [{}] {} ({} {}): {outcome}",
            rule.index,
            rule.rule,
            rule.tool,
            rule.decision.as_str()
        );
    }
    match &explained.cited {
        Some(rule) => println!(
            "rules decide: {} by `{rule}`",
            explained.rules_decision.as_str()
        ),
        None => println!(
            "rules decide: {} (no rule matched: the policy default)",
            explained.rules_decision.as_str()
        ),
    }
    let step = |name: &str, step: &airlock_policy::explain::Step| {
        println!(
            "{name}: {}{}",
            if step.applied { "APPLIED: " } else { "" },
            step.detail
        );
    };
    step("standing rules", &explained.standing);
    step("mode", &explained.mode);
    step("secrets", &explained.secrets);
    println!(
        "verdict: {}{}",
        explained.verdict.decision.as_str(),
        explained
            .verdict
            .reason
            .as_deref()
            .map_or_else(String::new, |r| format!(" ({r})"))
    );
    Ok(Outcome::Ok)
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
    let mut out = String::new();
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
        let _ = writeln!(
            out,
            "{}",
            json!({"passed": passed, "failed": failed, "cases": items})
        );
    } else {
        for result in &results {
            let _ = match &result.failure {
                None => writeln!(out, "pass  {}", result.case.name),
                Some(why) => writeln!(
                    out,
                    "FAIL  {} ({}:{}): {why}",
                    result.case.name,
                    cases_file.display(),
                    result.case.line
                ),
            };
        }
        let _ = writeln!(out, "{passed} passed, {failed} failed");
    }
    // A reader that stopped early (`| head`) does not make the run fail.
    write_stdout(&out)?;
    Ok(if failed == 0 {
        Outcome::Ok
    } else {
        Outcome::Refused
    })
}
