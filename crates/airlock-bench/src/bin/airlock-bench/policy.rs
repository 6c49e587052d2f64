//! `airlock-bench policy`: airlock's policy engine beside `cedar-policy` and `regorus` on
//! one generated corpus (DESIGN.md §9, "Policy evaluation").
//!
//! For each size: compile every engine (time and heap kept), check that all three give the
//! corpus's expected decision on the oracle traffic (any disagreement stops the run), then
//! measure latency on one thread (each call timed on its own), throughput on two threads,
//! and the ratios airlock / peer.

use crate::report::Report;
use airlock_bench::corpus::{no_match_call, oracle_traffic, traffic, TrafficCall};
use airlock_bench::engines::{Airlock, Cedar, Engine, Regorus};
use airlock_bench::stats::{median, summarize};
use anyhow::{bail, Context};
use stats_alloc::{Region, StatsAlloc};
use std::alloc::System;
use std::hint::black_box;
use std::time::{Duration, Instant};

const BENCH: &str = "policy";

/// How much of each measurement a run makes.
pub struct Plan {
    pub sizes: Vec<usize>,
    /// Requests of the oracle check at every size up to 1,000 rules.
    pub oracle_requests: usize,
    /// Requests of the oracle check at 10,000 rules, where regorus takes about a quarter
    /// of a second per request on the project's machine.
    pub oracle_requests_largest: usize,
    /// Samples timed per engine and case (a peer stops earlier at `budget`).
    pub samples: usize,
    /// Time a slow engine may spend on one latency case, and each throughput run.
    pub budget: Duration,
    /// Compilations per engine and size (median reported).
    pub compiles: usize,
}

impl Plan {
    pub fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                sizes: vec![10, 100],
                oracle_requests: 1_000,
                oracle_requests_largest: 1_000,
                samples: 20_000,
                budget: Duration::from_millis(200),
                compiles: 3,
            }
        } else {
            Plan {
                sizes: vec![10, 100, 1_000, 10_000],
                oracle_requests: 10_000,
                oracle_requests_largest: 300,
                samples: 200_000,
                budget: Duration::from_secs(2),
                compiles: 5,
            }
        }
    }
}

pub fn run(
    report: &mut Report,
    quick: bool,
    allocator: &'static StatsAlloc<System>,
) -> anyhow::Result<()> {
    let plan = Plan::new(quick);
    timer_overhead(report);
    for &rules in &plan.sizes {
        let mut airlock = compile::<Airlock>(report, &plan, rules, allocator)?;
        let mut cedar = compile::<Cedar>(report, &plan, rules, allocator)?;
        let mut regorus = compile::<Regorus>(report, &plan, rules, allocator)?;

        let requests = if rules >= 10_000 {
            plan.oracle_requests_largest
        } else {
            plan.oracle_requests
        };
        oracle(
            report,
            rules,
            requests,
            &mut airlock,
            &mut cedar,
            &mut regorus,
        )?;

        let cases = [
            ("mixed", traffic(rules, 1_000)),
            ("no_match", vec![no_match_call(rules)]),
        ];
        for (case, calls) in &cases {
            latency(report, &plan, rules, case, calls, &airlock)?;
            latency(report, &plan, rules, case, calls, &cedar)?;
            latency(report, &plan, rules, case, calls, &regorus)?;
            for metric in ["p50", "p99"] {
                ratio(report, rules, case, metric, false);
            }
        }
        let (case, calls) = &cases[0];
        throughput(report, &plan, rules, calls, &airlock)?;
        throughput(report, &plan, rules, calls, &cedar)?;
        throughput(report, &plan, rules, calls, &regorus)?;
        ratio(report, rules, case, "throughput_2_threads", true);
    }
    Ok(())
}

fn case_name(engine: &str, rules: usize, case: &str) -> String {
    format!("{engine} rules={rules} {case}")
}

/// What reading the clock twice costs: every latency sample below includes it once.
fn timer_overhead(report: &mut Report) {
    let mut samples: Vec<u64> = (0..100_000)
        .map(|_| {
            let start = Instant::now();
            black_box(start.elapsed().as_nanos() as u64)
        })
        .collect();
    let summary = summarize(&mut samples);
    report.add(BENCH, "timer (Instant pair)", "p50", summary.p50, "ns");
}

/// Compiles the corpus `plan.compiles` times: median time from text to the first answer,
/// and the heap the compiled policy keeps.
fn compile<E: Engine>(
    report: &mut Report,
    plan: &Plan,
    rules: usize,
    allocator: &'static StatsAlloc<System>,
) -> anyhow::Result<E> {
    let probe = no_match_call(rules);
    let mut seconds = Vec::new();
    let mut kept = None;
    for _ in 0..plan.compiles {
        drop(kept.take());
        let region = Region::new(allocator);
        let start = Instant::now();
        let mut engine = E::compile(rules)?;
        // The first answer finishes whatever the engine prepares lazily (regorus analyses
        // its modules on the first evaluation).
        let input = engine.prepare(&probe)?;
        engine.decide(&input)?;
        seconds.push(start.elapsed().as_secs_f64());
        drop(input);
        let change = region.change();
        let bytes = change.bytes_allocated as f64 - change.bytes_deallocated as f64
            + change.bytes_reallocated as f64;
        kept = Some((engine, bytes));
    }
    let (engine, bytes) = kept.context("no compilation ran")?;
    let case = case_name(E::NAME, rules, "compile");
    report.add(BENCH, &case, "time", median(&mut seconds) * 1e3, "ms");
    report.add(BENCH, &case, "heap", bytes, "bytes");
    Ok(engine)
}

/// All three engines must give the corpus's expected decision on every request.
fn oracle(
    report: &mut Report,
    rules: usize,
    requests: usize,
    airlock: &mut Airlock,
    cedar: &mut Cedar,
    regorus: &mut Regorus,
) -> anyhow::Result<()> {
    let calls = oracle_traffic(rules, requests);
    let mut disagreements = Vec::new();
    for call in &calls {
        let answers = [
            answer(airlock, call),
            answer(cedar, call),
            answer(regorus, call),
        ];
        let expected = call.expected.to_string();
        if answers.iter().any(|answer| *answer != expected) {
            disagreements.push(format!(
                "{} {}: expected {expected}, airlock {}, cedar {}, regorus {}",
                call.tool, call.arguments, answers[0], answers[1], answers[2]
            ));
        }
    }
    report.add(
        BENCH,
        format!("oracle rules={rules}"),
        "agreeing_requests",
        (calls.len() - disagreements.len()) as f64,
        "count",
    );
    if !disagreements.is_empty() {
        for line in disagreements.iter().take(20) {
            eprintln!("disagreement at {rules} rules: {line}");
        }
        bail!(
            "the engines disagree on {} of {} requests at {rules} rules",
            disagreements.len(),
            calls.len()
        );
    }
    Ok(())
}

fn answer<E: Engine>(engine: &mut E, call: &TrafficCall) -> String {
    match engine.prepare(call).and_then(|input| engine.decide(&input)) {
        Ok(decision) => decision.to_string(),
        Err(error) => format!("error ({error})"),
    }
}

/// Latency on one thread: every call timed on its own, cycling through `calls`, until
/// `plan.samples` or (after a minimum of 100) `plan.budget` is reached.
fn latency<E: Engine>(
    report: &mut Report,
    plan: &Plan,
    rules: usize,
    case: &str,
    calls: &[TrafficCall],
    engine: &E,
) -> anyhow::Result<()> {
    let mut engine = engine.clone();
    let inputs = calls
        .iter()
        .map(|call| engine.prepare(call))
        .collect::<Result<Vec<_>, _>>()?;
    // Warm up: one pass, so caches (regorus's glob cache, airlock's memo) are filled, cut
    // short after `plan.budget` for an engine that takes that long.
    let warming = Instant::now();
    for input in &inputs {
        black_box(engine.decide(input)?);
        if warming.elapsed() > plan.budget {
            break;
        }
    }
    let mut samples = Vec::with_capacity(plan.samples);
    let started = Instant::now();
    for n in 0..plan.samples {
        let input = &inputs[n % inputs.len()];
        let start = Instant::now();
        let decision = engine.decide(black_box(input));
        samples.push(start.elapsed().as_nanos() as u64);
        black_box(decision?);
        if n >= 100 && n % 16 == 0 && started.elapsed() > plan.budget {
            break;
        }
    }
    let summary = summarize(&mut samples);
    let name = case_name(E::NAME, rules, case);
    report.add(BENCH, &name, "p50", summary.p50, "ns");
    report.add(BENCH, &name, "p99", summary.p99, "ns");
    report.add(BENCH, &name, "samples", summary.count as f64, "count");
    Ok(())
}

/// Throughput on two threads, each with its own handle on the compiled policy, cycling
/// through `calls` from different offsets for `plan.budget`.
fn throughput<E: Engine>(
    report: &mut Report,
    plan: &Plan,
    rules: usize,
    calls: &[TrafficCall],
    engine: &E,
) -> anyhow::Result<()> {
    let inputs = calls
        .iter()
        .map(|call| engine.prepare(call))
        .collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    let counts = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|thread| {
                let mut engine = engine.clone();
                let inputs = &inputs;
                scope.spawn(move || -> anyhow::Result<u64> {
                    let mut done = 0u64;
                    let mut next = thread * inputs.len() / 2;
                    while done < 16 || started.elapsed() < plan.budget {
                        for _ in 0..16 {
                            black_box(engine.decide(&inputs[next % inputs.len()])?);
                            next += 1;
                            done += 1;
                        }
                    }
                    Ok(done)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| match worker.join() {
                Ok(count) => count,
                Err(_) => Err(anyhow::anyhow!("a throughput thread panicked")),
            })
            .collect::<anyhow::Result<Vec<u64>>>()
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    let total: u64 = counts.iter().sum();
    report.add(
        BENCH,
        case_name(E::NAME, rules, "mixed"),
        "throughput_2_threads",
        total as f64 / elapsed,
        "/s",
    );
    Ok(())
}

/// How many times faster airlock is than each peer on `metric` (latency: peer / airlock;
/// throughput: airlock / peer).
fn ratio(report: &mut Report, rules: usize, case: &str, metric: &str, higher_is_better: bool) {
    let Some(ours) = report.value(BENCH, &case_name(Airlock::NAME, rules, case), metric) else {
        return;
    };
    for peer in [Cedar::NAME, Regorus::NAME] {
        if let Some(theirs) = report.value(BENCH, &case_name(peer, rules, case), metric) {
            let times = if higher_is_better {
                ours / theirs
            } else {
                theirs / ours
            };
            report.add(
                BENCH,
                case_name("airlock", rules, case),
                format!("faster_than_{peer}_{metric}"),
                times,
                "x",
            );
        }
    }
}
