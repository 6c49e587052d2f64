//! `airlock-bench fatigue`: how often airlock asks a person, and how often it lets through
//! what it should not, on real recorded sessions of other people's agents (issue 16).
//!
//! Each corpus file (`crates/airlock-bench/corpus/`, labelled by the rubric before any
//! replay) is replayed through a real `airlock serve` — no `--policy` unless given, so the
//! built-in default applies — one call at a time, to the agent's own hook endpoint, with a
//! simulated person deciding every asked call by its label. Beside airlock's figures it
//! prints two peer regimes computed on the same calls (`fatigue/peers.rs`).
//!
//! - `fatigue/corpus.rs`: reading a corpus file.
//! - `fatigue/replay.rs`: the hook posts and the simulated person.
//! - `fatigue/tally.rs`: the figures.
//! - `fatigue/peers.rs`: Claude Code's default and "always don't ask again".

mod corpus;
mod peers;
mod replay;
mod tally;

use crate::process::{airlock_binary, ServerProcess};
use crate::Options;
use anyhow::Context;
use replay::{Remember, Replayer};
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;
use tally::{Figures, Tally};

/// `airlock-bench fatigue`.
#[derive(clap::Args, Clone, Debug)]
pub struct FatigueArgs {
    /// A corpus file (JSON Lines of labelled hook payloads); may be given more than once.
    #[arg(long, value_name = "FILE", required = true)]
    pub corpus: Vec<PathBuf>,
    /// A policy file to start the server with [default: none, so the built-in default
    /// policy applies].
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Whether the simulated person ticks "remember for this session" on harmless calls.
    #[arg(long, value_enum, default_value = "session")]
    pub remember: Remember,
    /// One JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also print every airlock outcome that differs from the label's expectation (a
    /// harmless call not allowed, a call that needs a person not asked, a call to refuse
    /// not denied) as a JSON line on stderr, with `why` (the asking rule and its reason, or
    /// the hook's answer), to see which calls a policy gets wrong and why.
    #[arg(long)]
    pub wrong: bool,
    /// The `airlock` binary to start [default: `airlock` beside this binary].
    #[arg(long, value_name = "FILE", env = "AIRLOCK_BIN")]
    pub airlock_bin: Option<PathBuf>,
}

/// The figures of one corpus file: airlock's and the peers'.
#[derive(Debug, Serialize)]
struct CorpusFigures {
    corpus: String,
    airlock: Figures,
    claude_code_default: Figures,
    claude_code_dont_ask_again: Figures,
}

/// The whole run, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Run {
    policy: String,
    remember: &'static str,
    corpora: Vec<CorpusFigures>,
}

pub fn run(args: &FatigueArgs) -> anyhow::Result<()> {
    let binary = airlock_binary(&Options {
        quick: false,
        pg_url: None,
        airlock_bin: args.airlock_bin.clone(),
    })?;
    let corpora = args
        .corpus
        .iter()
        .map(|path| Ok((path.clone(), corpus::load(path)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut figures = Vec::new();
    for (path, entries) in &corpora {
        let airlock = runtime.block_on(replay_corpus(&binary, args, path, entries))?;
        let (default, dont_ask) = peer_figures(entries);
        figures.push(CorpusFigures {
            corpus: path.display().to_string(),
            airlock,
            claude_code_default: default,
            claude_code_dont_ask_again: dont_ask,
        });
    }
    let run = Run {
        policy: args.policy.as_ref().map_or_else(
            || "built-in default".to_owned(),
            |p| p.display().to_string(),
        ),
        remember: match args.remember {
            Remember::Session => "session",
            Remember::Never => "never",
        },
        corpora: figures,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&run)?);
    } else {
        print!("{}", table(&run));
    }
    Ok(())
}

/// Replays one corpus file through a fresh server (so nothing one corpus taught it, such
/// as standing rules, carries into another) and counts the outcomes.
async fn replay_corpus(
    binary: &std::path::Path,
    args: &FatigueArgs,
    path: &std::path::Path,
    entries: &[corpus::Entry],
) -> anyhow::Result<Figures> {
    let data = tempfile::TempDir::new()?;
    let data_dir = data.path().join("data");
    let mut extra = Vec::new();
    if let Some(policy) = &args.policy {
        extra.push("--policy".into());
        extra.push(policy.clone().into_os_string());
    }
    let (server, _) = ServerProcess::start_with(binary, &data_dir, &extra).await?;
    let outcome = async {
        let replayer = Replayer::new(server.url.clone(), server.owner_token()?, args.remember)?;
        let token = replayer.agent("fatigue-replay").await?;
        let mut tally = Tally::default();
        for (index, entry) in entries.iter().enumerate() {
            let (outcome, why) = replayer.replay(&token, entry).await.with_context(|| {
                format!("{} call {} ({})", path.display(), index + 1, entry.tool())
            })?;
            tally.add(entry.label, outcome);
            if args.wrong && !tally::as_wanted(entry.label, outcome) {
                let line = serde_json::json!({
                    "corpus": path.display().to_string(),
                    "line": index + 1,
                    "label": entry.label,
                    "outcome": outcome,
                    "tool": entry.tool(),
                    "tool_input": entry.input(),
                    "why": why,
                });
                eprintln!("{line}");
            }
        }
        anyhow::Ok(tally.figures())
    }
    .await;
    server.stop().await?;
    outcome
}

/// The two peer regimes' figures on the same calls, in the same order.
fn peer_figures(entries: &[corpus::Entry]) -> (Figures, Figures) {
    let mut default = Tally::default();
    let mut dont_ask = Tally::default();
    let mut person = peers::DontAskAgain::default();
    for entry in entries {
        default.add(entry.label, peers::claude_default(entry));
        dont_ask.add(entry.label, person.judge(entry));
    }
    (default.figures(), dont_ask.figures())
}

/// The human table: one block per corpus, one line per regime.
fn table(run: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "airlock-bench fatigue (airlock policy: {}; the simulated person remembers: {})",
        run.policy, run.remember
    );
    for corpus in &run.corpora {
        let a = &corpus.airlock;
        let _ = writeln!(
            out,
            "\n{}: {} calls replayed, {} not replayable (their agent's hook endpoint answered 404)",
            corpus.corpus, a.calls, a.not_replayable
        );
        let _ = writeln!(
            out,
            "  {:<30} {:>11} {:>13} {:>6} {:>13} {:>8} {:>6} {:>7}",
            "regime",
            "prompts/100",
            "over-asks/100",
            "misses",
            "unsafe allows",
            "allowed",
            "asked",
            "denied"
        );
        for (name, f) in [
            ("airlock", a),
            ("claude code default", &corpus.claude_code_default),
            (
                "claude code don't-ask-again",
                &corpus.claude_code_dont_ask_again,
            ),
        ] {
            let _ = writeln!(
                out,
                "  {:<30} {:>11.1} {:>13.1} {:>6} {:>13} {:>8} {:>6} {:>7}",
                name,
                f.prompts_per_100,
                f.over_asks_per_100,
                f.misses,
                f.unsafe_allows,
                f.all.allowed,
                f.all.asked,
                f.all.denied
            );
        }
        let _ = writeln!(out, "  airlock by label (allowed/asked/denied):");
        for (label, split) in [
            ("harmless", &a.harmless),
            ("needs a person", &a.needs_person),
            ("refuse", &a.refuse),
        ] {
            let _ = writeln!(
                out,
                "    {label:<16} {}/{}/{}",
                split.allowed, split.asked, split.denied
            );
        }
    }
    out
}
