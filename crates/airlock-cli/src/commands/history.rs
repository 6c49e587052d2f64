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
use airlock_hooks::payload::{home_from_transcript, launch_folder};
use airlock_hooks::{canonical, Agent};
use airlock_policy::replay::Recorded;
use airlock_policy::{Call, Decision, Mode, Policy, StandingRule};
use airlock_protocol::{AuditRecord, VerifyReport};
use anyhow::{anyhow, bail, Context};
use serde::Deserialize;
use serde_json::Value;
use std::io::BufRead;

/// One line of a calls file.
#[derive(Debug, Deserialize)]
struct Line {
    /// Hook shape: the agent kind. Canonical shape: the agent's name.
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    payload: Option<Value>,
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

fn canon(mut line: Line) -> Result<(Canon, Line), String> {
    if let Some(payload) = line.payload.take() {
        let kind = line.agent.as_deref().unwrap_or_default();
        let agent = Agent::from_name(kind).ok_or_else(|| {
            format!("`agent` must be claude-code, codex or gemini beside a `payload`, not `{kind}`")
        })?;
        let hook = agent.read(payload).map_err(|e| e.to_string())?;
        let transcript = hook.transcript_path.clone().unwrap_or_default();
        let cwd = hook.cwd.clone().filter(|cwd| cwd.starts_with('/'));
        let project = cwd
            .as_deref()
            .map(|cwd| launch_folder(&transcript, cwd).unwrap_or_else(|| cwd.to_owned()));
        let home = home_from_transcript(&transcript);
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
        if text.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(&text)
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
        // The server denies a hook call it cannot translate before any policy sees it;
        // the replay says so instead of evaluating a call no policy would meet.
        if call.untranslatable.is_some() {
            let id = format!("line {number}");
            visit(
                &Recorded {
                    call: policy_call,
                    id: &id,
                    at: line.at.as_deref(),
                    before: line.decision.unwrap_or(Decision::Deny),
                    rule_before: line.rule.as_deref(),
                },
                Some("untranslatable"),
            );
            count += 1;
            continue;
        }
        let baseline_verdict;
        let (before, rule_before) = match line.decision {
            Some(decision) => (decision, line.rule.as_deref()),
            None => {
                baseline_verdict = baseline.evaluate(&policy_call);
                (baseline_verdict.decision, baseline_verdict.rule.as_deref())
            }
        };
        let id = format!("line {number}");
        visit(
            &Recorded {
                call: policy_call,
                id: &id,
                at: line.at.as_deref(),
                before,
                rule_before,
            },
            None,
        );
        count += 1;
    }
    Ok(count)
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
}
