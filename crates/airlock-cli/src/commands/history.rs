//! Recorded calls for `airlock policy replay` and `lint`, read one at a time (flat memory
//! whatever the file's size) from a calls file or an audit export.
//!
//! A calls file holds one call a line, in either of two shapes:
//! - an agent's hook payload, as `airlock-bench fatigue`'s corpus keeps it:
//!   `{"agent": "claude-code" | "codex" | "gemini", "payload": {…tool_name, tool_input, cwd…}}`;
//!   it is put in the canonical vocabulary by `airlock-hooks`, as the hook endpoints do;
//! - a canonical call: `{"tool", "arguments", "agent"?, "mode"?, "native_tool"?, "cwd"?,
//!   "project"?, "home"?, "standing"?: [{"id", "tool", "target"}]}`.
//!
//! Either may carry the decision it got (`"decision"`, with `"rule"` and `"at"`); a call
//! without one is judged "before" under a baseline policy. Other keys (`label`, `why`,
//! `source`) are ignored. A line that is neither shape stops the read, naming its number.
//!
//! An audit export is read with the gate's own reader (`airlock_gate::replay::History`)
//! and its chain checked on the way (`ChainVerifier`); the caller refuses the result when
//! the chain breaks.

use airlock_gate::audit::ChainVerifier;
use airlock_gate::replay::{decided_by, History};
use airlock_hooks::payload::{home_from_transcript_at, launch_folder};
use airlock_hooks::{canonical, Agent};
use airlock_policy::matcher::path::application_settings_folder;
use airlock_policy::replay::{Recorded, Replay};
use airlock_policy::{Call, Decision, Mode, Policy, Prepared, StandingRule};
use airlock_protocol::{AuditRecord, VerifyReport};
use anyhow::{anyhow, bail, Context};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::io::BufRead;
use std::sync::{mpsc, Arc, Mutex};

/// One line of a calls file.
#[derive(Debug, Deserialize)]
struct Line<'a> {
    /// Hook shape: the agent kind. Canonical shape: the agent's name.
    #[serde(default)]
    agent: Option<String>,
    /// Kept as its text, which the agent's reader takes apart itself (as the hook
    /// endpoints do), rather than built as a tree first.
    #[serde(default, borrow)]
    payload: Option<&'a RawValue>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    native_tool: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    home: Option<String>,
    #[serde(default)]
    standing: Vec<Standing>,
    #[serde(default)]
    decision: Option<Decision>,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    at: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Standing {
    id: String,
    tool: String,
    target: String,
}

/// A call of a calls file, in the canonical vocabulary.
struct Canon {
    tool: String,
    arguments: Value,
    agent: Option<String>,
    native_tool: Option<String>,
    cwd: Option<String>,
    project: Option<String>,
    home: Option<String>,
    /// Why the hook call could not be translated: the server denies such a call.
    untranslatable: Option<String>,
}

fn canon(mut line: Line<'_>) -> Result<(Canon, Line<'_>), String> {
    if let Some(payload) = line.payload.take() {
        let kind = line.agent.as_deref().unwrap_or_default();
        let agent = Agent::from_name(kind).ok_or_else(|| {
            format!("`agent` must be claude-code, codex or gemini beside a `payload`, not `{kind}`")
        })?;
        let hook = agent.parse(payload.get()).map_err(|e| e.to_string())?;
        let transcript = hook.transcript_path.clone().unwrap_or_default();
        let cwd = hook.cwd.clone().filter(|cwd| cwd.starts_with('/'));
        let home = home_from_transcript_at(&transcript, cwd.as_deref());
        // As the hook endpoints place it: an application's settings folder is no project.
        let project = cwd
            .as_deref()
            .map(|cwd| launch_folder(&transcript, cwd).unwrap_or_else(|| cwd.to_owned()))
            .filter(|project| !application_settings_folder(project, home.as_deref()));
        let (tool, arguments, native_tool, untranslatable) = match canonical(&hook) {
            Ok(call) => (call.tool, call.arguments, Some(call.native_tool), None),
            Err(error) => (
                hook.native_tool.clone(),
                hook.input.clone(),
                Some(hook.native_tool.clone()),
                Some(error.to_string()),
            ),
        };
        return Ok((
            Canon {
                tool,
                arguments,
                agent: None,
                native_tool,
                cwd,
                project,
                home,
                untranslatable,
            },
            line,
        ));
    }
    let tool = line
        .tool
        .clone()
        .filter(|tool| !tool.is_empty())
        .ok_or("neither a `payload` nor a `tool`")?;
    let arguments = line
        .arguments
        .take()
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    if !arguments.is_object() {
        return Err("`arguments` must be a JSON object".into());
    }
    Ok((
        Canon {
            tool,
            arguments,
            agent: line.agent.clone(),
            native_tool: line.native_tool.clone(),
            cwd: line.cwd.clone(),
            project: line.project.clone().or_else(|| line.cwd.clone()),
            home: line.home.clone(),
            untranslatable: None,
        },
        line,
    ))
}

/// Reads a calls file, handing each call to `visit` with the decision it had: recorded,
/// or the `baseline` policy's. Returns how many calls were read.
pub fn read_calls(
    reader: impl BufRead,
    baseline: &Policy,
    mut visit: impl FnMut(&Recorded, Option<&str>),
) -> anyhow::Result<u64> {
    let mut count = 0;
    for (index, text) in reader.lines().enumerate() {
        let number = index + 1;
        let text = text.with_context(|| format!("line {number}: cannot be read"))?;
        if read_line(number, &text, baseline, &mut visit)? {
            count += 1;
        }
    }
    Ok(count)
}

/// How many lines a worker of [`replay_calls`] judges at a time: enough that hand-offs
/// between threads are rare, few enough that memory stays flat (one chunk per worker in
/// flight and at most two per worker queued on either side).
const CHUNK: usize = 2048;

/// Replays a calls file under `policy` on every core: one thread reads lines in chunks,
/// workers judge each chunk into its own [`Replay`] (`judge` counts one call), and the
/// parts are merged in file order, so the report is the one a single thread would give.
/// The first bad line in file order is the error, as in [`read_calls`].
pub fn replay_calls(
    reader: impl BufRead + Send,
    baseline: &Policy,
    policy: &Policy,
    judge: impl Fn(&mut Replay, &Recorded, Option<&str>) + Sync,
) -> anyhow::Result<Replay> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(16));
    std::thread::scope(|scope| {
        let (work, queue) = mpsc::sync_channel::<(usize, usize, Vec<String>)>(2 * workers);
        // Shared by the workers alone: when the last one stops, the reader's next send
        // fails and it stops too, whatever made the workers stop.
        let queue = Arc::new(Mutex::new(queue));
        let (done, parts) = mpsc::sync_channel::<(usize, anyhow::Result<Replay>)>(2 * workers);
        for _ in 0..workers {
            let (queue, done, judge) = (Arc::clone(&queue), done.clone(), &judge);
            scope.spawn(move || loop {
                let next = match queue.lock() {
                    Ok(queue) => queue.recv(),
                    Err(_) => return,
                };
                let Ok((index, first, lines)) = next else {
                    return;
                };
                let mut part = Replay::new(policy);
                let judged = lines.iter().enumerate().try_for_each(|(offset, text)| {
                    read_line(first + offset, text, baseline, |recorded, by| {
                        judge(&mut part, recorded, by)
                    })
                    .map(drop)
                });
                if done.send((index, judged.map(|()| part))).is_err() {
                    return;
                }
            });
        }
        drop((done, queue));
        let reading = scope.spawn(move || -> anyhow::Result<()> {
            let mut chunk = Vec::with_capacity(CHUNK);
            let (mut index, mut first) = (0, 1);
            for (offset, text) in reader.lines().enumerate() {
                let number = offset + 1;
                chunk.push(text.with_context(|| format!("line {number}: cannot be read"))?);
                if chunk.len() == CHUNK {
                    let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK));
                    if work.send((index, first, full)).is_err() {
                        return Ok(());
                    }
                    (index, first) = (index + 1, number + 1);
                }
            }
            if !chunk.is_empty() {
                // A failed send means the workers stopped on an error, reported instead.
                let _ = work.send((index, first, chunk));
            }
            Ok(())
        });
        let merged = merge_in_order(parts, Replay::new(policy))?;
        match reading.join() {
            Ok(read) => read.map(|()| merged),
            Err(_) => bail!("the thread reading the calls file failed"),
        }
    })
}

/// Merges the parts of a replay in their order, holding back those that finish early;
/// stops at the first part that failed (the channel is dropped, which stops the workers).
fn merge_in_order(
    parts: mpsc::Receiver<(usize, anyhow::Result<Replay>)>,
    mut merged: Replay,
) -> anyhow::Result<Replay> {
    let mut early = std::collections::BTreeMap::new();
    let mut next = 0;
    for (index, part) in parts {
        early.insert(index, part);
        while let Some(part) = early.remove(&next) {
            merged.merge(part?);
            next += 1;
        }
    }
    Ok(merged)
}

/// Reads one line of a calls file and hands its call to `visit`; `false` for a blank line.
fn read_line(
    number: usize,
    text: &str,
    baseline: &Policy,
    mut visit: impl FnMut(&Recorded, Option<&str>),
) -> anyhow::Result<bool> {
    if text.trim().is_empty() {
        return Ok(false);
    }
    let line: Line = serde_json::from_str(text)
        .map_err(|e| anyhow!("line {number}: not a recorded call: {e}"))?;
    let (call, line) = canon(line).map_err(|e| anyhow!("line {number}: {e}"))?;
    let standing: Vec<StandingRule> = line
        .standing
        .iter()
        .map(|s| StandingRule {
            id: s.id.clone(),
            tool: s.tool.clone(),
            target: s.target.clone(),
        })
        .collect();
    let policy_call = Call {
        tool: &call.tool,
        arguments: &call.arguments,
        agent: call.agent.as_deref(),
        mode: line.mode.unwrap_or(Mode::Ask),
        standing: &standing,
        declared: None,
        native_tool: call.native_tool.as_deref(),
        cwd: call.cwd.as_deref(),
        project: call.project.as_deref(),
        home: call.home.as_deref(),
    };
    let id = format!("line {number}");
    // The server denies a hook call it cannot translate before any policy sees it; the
    // replay says so instead of evaluating a call no policy would meet.
    if call.untranslatable.is_some() {
        let recorded = Recorded {
            call: policy_call,
            id: &id,
            at: line.at.as_deref(),
            before: line.decision.unwrap_or(Decision::Deny),
            rule_before: line.rule.as_deref(),
            prepared: None,
        };
        visit(&recorded, Some("untranslatable"));
        return Ok(true);
    }
    // Prepared once for the baseline and the candidate: the secrets scan and the command's
    // classification do not depend on the policy.
    let prepared = Prepared::new(&policy_call);
    let baseline_verdict;
    let (before, rule_before) = match line.decision {
        Some(decision) => (decision, line.rule.as_deref()),
        None => {
            baseline_verdict = baseline.evaluate_prepared(&policy_call, &prepared);
            (baseline_verdict.decision, baseline_verdict.rule.as_deref())
        }
    };
    let recorded = Recorded {
        call: policy_call,
        id: &id,
        at: line.at.as_deref(),
        before,
        rule_before,
        prepared: Some(&prepared),
    };
    visit(&recorded, None);
    Ok(true)
}

/// Reads an audit export, handing each call in the window to `visit` (with its recorded
/// `decided_by`). With `verify`, the chain is checked on the way and its report returned:
/// the caller must refuse the result when it is not `ok`.
pub fn read_export(
    mut reader: impl BufRead,
    verify: bool,
    history: &mut History,
    mut visit: impl FnMut(&Recorded, Option<&str>),
) -> anyhow::Result<Option<VerifyReport>> {
    let mut verifier = verify.then(ChainVerifier::default);
    let mut text = String::new();
    let mut number = 0;
    let mut torn = false;
    loop {
        text.clear();
        let read = reader
            .read_line(&mut text)
            .with_context(|| format!("line {}: cannot be read", number + 1))?;
        if read == 0 {
            break;
        }
        number += 1;
        if text.trim().is_empty() {
            continue;
        }
        let record: AuditRecord = match serde_json::from_str(&text) {
            Ok(record) => record,
            // A last line cut off mid-write is a torn tail, which verification reports.
            Err(_) if !text.ends_with('\n') && verify => {
                torn = true;
                break;
            }
            Err(error) => bail!("line {number}: not an audit record: {error}"),
        };
        if let Some(verifier) = verifier.as_mut() {
            verifier.push(&record);
        }
        let by = decided_by(&record);
        history.read(&record, |recorded| visit(recorded, Some(by)));
    }
    Ok(verifier.map(|verifier| verifier.finish(torn)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use airlock_policy::LoadOptions;

    #[test]
    fn reads_both_shapes_and_names_a_bad_line() {
        let baseline =
            Policy::load("version = 1\ndefault = \"ask\"\n", &LoadOptions::default()).unwrap();
        let text = concat!(
            r#"{"agent":"claude-code","payload":{"tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/p"},"label":"harmless"}"#,
            "\n\n",
            r#"{"tool":"email.send","arguments":{"to":"a@b.test"},"decision":"allow","rule":"r"}"#,
            "\n"
        );
        let mut seen = Vec::new();
        let count = read_calls(text.as_bytes(), &baseline, |recorded, _| {
            seen.push((
                recorded.id.to_owned(),
                recorded.call.tool.to_owned(),
                recorded.before,
                recorded.call.native_tool.map(str::to_owned),
            ));
        })
        .unwrap();
        assert_eq!(count, 2);
        assert_eq!(
            seen[0],
            (
                "line 1".into(),
                "shell.exec".into(),
                Decision::Ask,
                Some("Bash".into())
            )
        );
        assert_eq!(seen[1].0, "line 3");
        assert_eq!(seen[1].2, Decision::Allow);

        let bad = format!("{}\n{{\"tool\": 3}}\n", text.lines().next().unwrap());
        let error = read_calls(bad.as_bytes(), &baseline, |_, _| {}).unwrap_err();
        assert!(format!("{error:#}").starts_with("line 2:"), "{error:#}");
        let error = read_calls("{\"arguments\":{}}".as_bytes(), &baseline, |_, _| {}).unwrap_err();
        assert!(
            format!("{error:#}").contains("line 1: neither"),
            "{error:#}"
        );
    }

    #[test]
    fn a_replay_on_every_core_equals_one_on_a_single_thread_and_names_the_first_bad_line() {
        let baseline =
            Policy::load("version = 1\ndefault = \"ask\"\n", &LoadOptions::default()).unwrap();
        let candidate = Policy::load(
            "version = 1\ndefault = \"ask\"\n[[rules]]\nname = \"ls\"\ntool = \"shell.exec\"\n\
             decision = \"allow\"\nwhen = { command = { glob = \"ls*\" } }\n",
            &LoadOptions::default(),
        )
        .unwrap();
        let lines: Vec<String> = (0..5 * CHUNK + 17)
            .map(|n| match n % 4 {
                0 => format!(
                    r#"{{"agent":"claude-code","payload":{{"tool_name":"Bash","tool_input":{{"command":"ls {n}"}},"cwd":"/p"}}}}"#
                ),
                1 => String::new(),
                2 => format!(r#"{{"tool":"shell.exec","arguments":{{"command":"rm {n}"}},"decision":"allow"}}"#),
                _ => r#"{"tool":"shell.exec","arguments":{"command":"ls"},"decision":"deny"}"#.into(),
            })
            .collect();
        let text = lines.join("\n");
        let judge = |replay: &mut Replay, recorded: &Recorded, _: Option<&str>| {
            replay.push(&candidate, recorded);
        };
        let mut single = Replay::new(&candidate);
        read_calls(text.as_bytes(), &baseline, |recorded, by| {
            judge(&mut single, recorded, by)
        })
        .unwrap();
        let single = single.finish();
        let parallel = replay_calls(text.as_bytes(), &baseline, &candidate, judge)
            .unwrap()
            .finish();
        assert_eq!(parallel, single);
        assert_eq!(parallel.calls, (lines.len() - lines.len() / 4) as u64);
        assert!(parallel.changed > 0 && parallel.toward_allow > 0);

        // Two bad lines in different chunks: the earlier one is named, every time.
        let mut bad = lines.clone();
        bad[4 * CHUNK + 3] = "{\"tool\": 3}".into();
        bad[2 * CHUNK + 5] = "not json".into();
        let bad = bad.join("\n");
        for _ in 0..5 {
            let error = replay_calls(bad.as_bytes(), &baseline, &candidate, judge).unwrap_err();
            let expected = format!("line {}:", 2 * CHUNK + 6);
            assert!(format!("{error:#}").starts_with(&expected), "{error:#}");
        }
    }
}
