//! `airlock-bench replay`: `airlock policy replay --calls -` over a million recorded calls
//! (DESIGN.md §11.5: ≤ 10 s, streaming, flat memory).
//!
//! The calls are the fatigue corpus (`corpus/sessions.jsonl`, other people's real agent
//! calls in their hook payload shape), cycled to the size of the run and piped into the
//! real `airlock` binary's standard input, so no file of a million lines touches the disk.
//! Each call is translated to the canonical vocabulary, judged under the baseline (the
//! built-in policy) and under the candidate (the built-in policy with one more rule), as
//! a user's replay does. Figures: wall time, CPU time, calls per second (per CPU second
//! too), and the process's peak resident memory (`VmHWM`, read from `/proc` while it runs) at two sizes: the same
//! peak at 10× the calls is what "flat memory" means.

use crate::process::airlock_binary;
use crate::report::Report;
use crate::Options;
use anyhow::{bail, Context};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BENCH: &str = "replay";

/// The corpus, compiled in so the bench runs from any folder.
const CORPUS: &str = include_str!("../../../corpus/sessions.jsonl");

/// The candidate: the built-in policy and a rule that changes some calls.
fn candidate() -> String {
    format!(
        "{}\n[[rules]]\nname = \"bench-no-fetch\"\ntool = \"http.fetch\"\ndecision = \"deny\"\n",
        airlock_policy::DEFAULT_POLICY
    )
}

pub fn run(report: &mut Report, options: &Options) -> anyhow::Result<()> {
    let binary = airlock_binary(options)?;
    let sizes: &[usize] = if options.quick {
        &[1_000, 10_000]
    } else {
        &[100_000, 1_000_000]
    };
    let folder = tempfile::TempDir::new()?;
    let policy = folder.path().join("candidate.toml");
    std::fs::write(&policy, candidate())?;
    let lines: Vec<&str> = CORPUS.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        bail!("the corpus is empty");
    }
    for &calls in sizes {
        let mut child = Command::new(&binary)
            .args(["policy", "replay"])
            .arg(&policy)
            .args(["--calls", "-", "--json", "--allow-loosening"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let pid = child.id();
        let started = Instant::now();
        let mut stdin = child.stdin.take().context("no stdin")?;
        let lines = lines.clone();
        let feeder = std::thread::spawn(move || -> std::io::Result<()> {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, &mut stdin);
            for n in 0..calls {
                out.write_all(lines[n % lines.len()].as_bytes())?;
                out.write_all(b"\n")?;
            }
            out.flush()
        });
        // The report of a large replay is bigger than a pipe holds: read both pipes while
        // the child runs, or it blocks on its last write and never exits.
        let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut bytes);
                }
                bytes
            })
        };
        let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<_>));
        let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<_>));
        // The peak and the CPU time only grow, so the last readings before the exit are
        // the run's (to within the 20 ms between readings).
        let mut peak = 0u64;
        let mut cpu = 0.0f64;
        while child.try_wait()?.is_none() {
            if let Some(hwm) = peak_memory(pid) {
                peak = peak.max(hwm);
            }
            if let Some(seconds) = cpu_seconds(pid) {
                cpu = cpu.max(seconds);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = child.wait()?;
        let elapsed = started.elapsed().as_secs_f64();
        let joined = |reader: std::thread::JoinHandle<Vec<u8>>| {
            reader
                .join()
                .map_err(|_| anyhow::anyhow!("a pipe reader panicked"))
        };
        let (stdout, stderr) = (joined(stdout)?, joined(stderr)?);
        feeder
            .join()
            .map_err(|_| anyhow::anyhow!("the feeder thread panicked"))??;
        if !status.success() {
            bail!(
                "airlock policy replay failed ({status}): {}",
                String::from_utf8_lossy(&stderr)
            );
        }
        let answer: serde_json::Value = serde_json::from_slice(&stdout)?;
        if answer["calls"].as_u64() != Some(calls as u64) {
            bail!("the replay counted {} calls of {calls}", answer["calls"]);
        }
        let case = format!("{calls} calls");
        report.add(BENCH, &case, "wall_time", elapsed, "s");
        report.add(BENCH, &case, "rate", calls as f64 / elapsed, "calls/s");
        report.add(BENCH, &case, "peak_rss", peak as f64 / 1_048_576.0, "MiB");
        // On a machine shared with other work the wall time says little; CPU time does.
        report.add(BENCH, &case, "cpu_time", cpu, "s");
        if cpu > 0.0 {
            report.add(
                BENCH,
                &case,
                "rate_per_cpu_second",
                calls as f64 / cpu,
                "calls/s",
            );
        }
        report.add(
            BENCH,
            &case,
            "changed",
            answer["changed"].as_f64().unwrap_or_default(),
            "calls",
        );
    }
    Ok(())
}

/// User and system CPU time of a running process, in seconds (`/proc/PID/stat` fields 14
/// and 15, in clock ticks of 1/100 s, Linux's `USER_HZ`).
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after it follow its `)`.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((user + system) / 100.0)
}

/// `VmHWM` of a running process, in bytes.
fn peak_memory(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}
