//! `airlock policy replay` and `airlock policy lint` (DESIGN.md §11.5): a candidate policy
//! judged on recorded calls before it is saved.
//!
//! The history comes from one of three places: the server (`--since`, the default: a
//! replay asks `PUT /v1/policy?dry_run=true`, a lint reads `GET /v1/audit/export`), an
//! audit export (`--from`, its chain checked unless `--no-verify`), or a calls file
//! (`--calls`, `history.rs`). Every call is evaluated by the one engine,
//! `Policy::evaluate`; a replay exits 1 when any call would move toward allow, unless
//! `--allow-loosening`.

use super::history::{read_calls, read_export, replay_calls};
use crate::client::{encode, parse, print_json, Client, ClientArgs};
use crate::table::write_stdout;
use crate::Outcome;
use airlock_gate::replay::{replay_one, History};
use airlock_policy::lint::MatchTally;
use airlock_policy::replay::{Recorded, Replay};
use airlock_policy::{DecidedBy, Decision, LoadOptions, Policy, Risk, Verdict, DEFAULT_POLICY};
use airlock_protocol::{ReplayReport, VerifyReport};
use anyhow::{bail, Context};
use clap::Args;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// Where the recorded calls come from (one of them; `--since 7d` when none is given).
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// Calls recorded by the server in this last span (`7d`, `12h`). `replay` reads the
    /// last 7d without a source; `lint` reads no history unless one is given.
    #[arg(long, conflicts_with_all = ["from", "calls"])]
    pub since: Option<String>,
    /// An audit export (`airlock audit export`); its hash chain is checked first.
    #[arg(long, value_name = "EXPORT.ndjson", conflicts_with = "calls")]
    pub from: Option<PathBuf>,
    /// A calls file in JSON lines (`airlock-bench fatigue`'s format, or canonical calls);
    /// `-` reads standard input.
    #[arg(long, value_name = "CALLS.jsonl")]
    pub calls: Option<PathBuf>,
    /// With --from: replay an export whose hash chain does not verify.
    #[arg(long)]
    pub no_verify: bool,
    /// With --calls: the policy that judges calls that carry no recorded `decision`
    /// [default: the built-in coding-agent policy, what `airlock serve` enforces].
    #[arg(long, value_name = "POLICY.toml")]
    pub baseline: Option<PathBuf>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Loads a candidate policy; one that does not load prints its errors with positions.
pub fn load_candidate(file: &Path) -> anyhow::Result<Result<Policy, Outcome>> {
    let source =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let options = LoadOptions {
        file_name: file.display().to_string(),
        ..LoadOptions::default()
    };
    Ok(Policy::load(&source, &options).map_err(|errors| {
        eprintln!("{errors}");
        Outcome::Refused
    }))
}

fn open(path: &Path) -> anyhow::Result<BufReader<File>> {
    File::open(path)
        .map(|file| BufReader::with_capacity(1 << 20, file))
        .with_context(|| format!("cannot read {}", path.display()))
}

fn baseline(history: &HistoryArgs) -> anyhow::Result<Result<Policy, Outcome>> {
    match &history.baseline {
        Some(path) => load_candidate(path),
        None => Policy::load(DEFAULT_POLICY, &LoadOptions::default())
            .map(Ok)
            .map_err(|errors| anyhow::anyhow!("the built-in policy does not load: {errors}")),
    }
}

/// The verdict the server gives a hook call it cannot translate: deny, before any policy.
fn untranslatable() -> Verdict {
    Verdict {
        decision: Decision::Deny,
        decided_by: DecidedBy::System,
        rule: None,
        reason: Some("the agent's call cannot be translated".into()),
        risk: Risk::Exec,
        target: None,
        standing_rule: None,
        secrets: Vec::new(),
        deadline_seconds: None,
        approvals: None,
        approvers: Vec::new(),
    }
}

/// Refuses a replay of an export whose chain does not verify, saying where it breaks.
fn refuse_tampered(path: &Path, report: &VerifyReport) -> Outcome {
    let at = report
        .first_bad_seq
        .map_or_else(String::new, |seq| format!(" at seq {seq}"));
    eprintln!(
        "{}: the audit chain breaks{at}: {}; nothing replayed (pass --no-verify to replay it anyway)",
        path.display(),
        report.problem.as_deref().unwrap_or("it does not verify")
    );
    Outcome::Refused
}

/// Replays a local history (a calls file or an export) under `policy`, calling `each`
/// for every call besides counting it. `None` when the export was refused.
fn replay_local(
    policy: &Policy,
    history: &HistoryArgs,
    mut each: Option<&mut dyn FnMut(&Recorded)>,
) -> anyhow::Result<Result<ReplayReport, Outcome>> {
    let mut replay = Replay::new(policy);
    if let Some(path) = &history.calls {
        let baseline = match baseline(history)? {
            Ok(baseline) => baseline,
            Err(outcome) => return Ok(Err(outcome)),
        };
        // `-` is standard input: a generator can pipe calls in without a file.
        let reader: Box<dyn std::io::BufRead + Send> = if path.as_os_str() == "-" {
            Box::new(BufReader::with_capacity(1 << 20, std::io::stdin()))
        } else {
            Box::new(open(path)?)
        };
        let judge = |replay: &mut Replay, recorded: &Recorded, by: Option<&str>| {
            if by == Some("untranslatable") {
                replay.count(recorded, &untranslatable());
            } else {
                replay.push(policy, recorded);
            }
        };
        let read = if let Some(each) = each.as_mut() {
            // A visitor that keeps state (a lint's tally) sees the calls in order, on
            // this thread.
            read_calls(reader, &baseline, |recorded, by| {
                each(recorded);
                judge(&mut replay, recorded, by);
            })
            .map(drop)
        } else {
            replay_calls(reader, &baseline, policy, judge).map(|whole| replay = whole)
        };
        read.with_context(|| format!("the calls file {}", path.display()))?;
    } else if let Some(path) = &history.from {
        let verified = read_export(
            open(path)?,
            !history.no_verify,
            &mut History::new(None),
            |recorded, by| {
                if let Some(each) = each.as_mut() {
                    each(recorded);
                }
                replay_one(&mut replay, policy, recorded, by.unwrap_or_default());
            },
        )
        .with_context(|| format!("the export {}", path.display()))?;
        if let Some(report) = verified.filter(|report| !report.ok) {
            return Ok(Err(refuse_tampered(path, &report)));
        }
    } else {
        bail!("give --calls or --from for a local history");
    }
    Ok(Ok(replay.finish()))
}

pub fn replay(
    file: &Path,
    history: &HistoryArgs,
    allow_loosening: bool,
) -> anyhow::Result<Outcome> {
    let policy = match load_candidate(file)? {
        Ok(policy) => policy,
        Err(outcome) => return Ok(outcome),
    };
    let report = if history.calls.is_some() || history.from.is_some() {
        match replay_local(&policy, history, None)? {
            Ok(report) => report,
            Err(outcome) => return Ok(outcome),
        }
    } else {
        let span = history.since.as_deref().unwrap_or("7d");
        let source = std::fs::read_to_string(file)?;
        let client = Client::new(&history.client);
        let answer = client.put_text(
            &format!("/v1/policy?dry_run=true&since={}", encode(span)),
            &source,
            "application/toml",
        )?;
        parse(&answer, "a replay report")?
    };
    if history.client.json {
        print_json(&serde_json::to_value(&report)?)?;
    } else {
        print_report(file, &report);
    }
    if report.toward_allow > 0 && !allow_loosening {
        eprintln!(
            "{} call{} would move toward allow; pass --allow-loosening to accept that",
            report.toward_allow,
            if report.toward_allow == 1 { "" } else { "s" }
        );
        return Ok(Outcome::Refused);
    }
    Ok(Outcome::Ok)
}

fn print_report(file: &Path, report: &ReplayReport) {
    println!(
        "replayed {} recorded call{} under {} (digest {})",
        report.calls,
        if report.calls == 1 { "" } else { "s" },
        file.display(),
        report.digest
    );
    println!(
        "prompts per 100 calls: {:.2} before, {:.2} after",
        report.prompts_per_100_before, report.prompts_per_100_after
    );
    let counts = |c: &airlock_protocol::DecisionCounts| {
        format!("allow {}, ask {}, deny {}", c.allow, c.ask, c.deny)
    };
    println!("before: {}", counts(&report.before));
    println!("after:  {}", counts(&report.after));
    if report.changed == 0 {
        println!("no call changes");
        return;
    }
    println!(
        "\n{} call{} change, {} toward allow:",
        report.changed,
        if report.changed == 1 { "" } else { "s" },
        report.toward_allow
    );
    for transition in &report.transitions {
        println!(
            "  {:>5} → {:<5} {:>8}{}",
            transition.from.as_str(),
            transition.to.as_str(),
            transition.count,
            if transition.toward_allow {
                "  toward allow"
            } else {
                ""
            }
        );
    }
    println!("\nchanged calls (toward allow first):");
    for change in &report.changes {
        println!(
            "  {}  {}  {} → {}  by {} (was {}){}",
            change.id,
            change.tool,
            change.from.as_str(),
            change.to.as_str(),
            change.rule_after.as_deref().unwrap_or("the policy default"),
            change.rule_before.as_deref().unwrap_or("-"),
            change
                .at
                .as_deref()
                .map_or_else(String::new, |at| format!("  at {at}"))
        );
    }
    if report.truncated {
        println!(
            "  … and {} more (the first {} are listed)",
            report.changed - report.changes.len() as u64,
            ReplayReport::LISTED
        );
    }
}

/// `airlock policy lint`: findings need no history; "never matched" needs one, from the
/// same sources as a replay (`--since` reads the server's audit export).
pub fn lint(file: &Path, history: &HistoryArgs, with_history: bool) -> anyhow::Result<Outcome> {
    let policy = match load_candidate(file)? {
        Ok(policy) => policy,
        Err(outcome) => return Ok(outcome),
    };
    let tally = if with_history {
        let mut tally = MatchTally::new(&policy);
        if history.calls.is_some() || history.from.is_some() {
            if let Err(outcome) = replay_local(
                &policy,
                history,
                Some(&mut |recorded: &Recorded| tally.push(&policy, &recorded.call)),
            )? {
                return Ok(outcome);
            }
        } else {
            let span = history.since.as_deref().unwrap_or("7d");
            let since = since_of(span)?;
            let client = Client::new(&history.client);
            let response = client.get_raw("/v1/audit/export")?;
            let reader = BufReader::new(response.into_body().into_reader());
            let verified = read_export(
                reader,
                !history.no_verify,
                &mut History::new(Some(since)),
                |recorded, _| tally.push(&policy, &recorded.call),
            )?;
            if let Some(report) = verified.filter(|report| !report.ok) {
                return Ok(refuse_tampered(
                    Path::new("the server's audit log"),
                    &report,
                ));
            }
        }
        Some(tally)
    } else {
        None
    };
    let findings = policy.lint(tally.as_ref());
    if history.client.json {
        print_json(&serde_json::json!({ "findings": findings }))?;
    } else if findings.is_empty() {
        write_stdout(&format!("{}: no findings\n", file.display()))?;
    } else {
        let mut text = String::new();
        for finding in &findings {
            text.push_str(&format!("{}: {finding}\n", file.display()));
        }
        write_stdout(&text)?;
    }
    Ok(if findings.is_empty() {
        Outcome::Ok
    } else {
        Outcome::Refused
    })
}

/// Now minus a span such as `7d`.
fn since_of(span: &str) -> anyhow::Result<jiff::Timestamp> {
    let duration = humantime::parse_duration(span)
        .with_context(|| format!("--since {span}: not a span such as 7d or 12h"))?;
    let signed = jiff::SignedDuration::try_from(duration)?;
    Ok(jiff::Timestamp::now().checked_sub(signed)?)
}
