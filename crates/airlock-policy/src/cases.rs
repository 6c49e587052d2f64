//! The cases file of `airlock policy test`: calls with the decision each must get.
//!
//! ```toml
//! [[case]]
//! name = "mail to a colleague"      # optional
//! tool = "email.send"
//! args = { to = "ana@acme.test" }
//! agent = "scout"                  # optional
//! mode = "unattended"              # optional: ask | read_only | unattended
//! standing = [{ tool = "email.send", target = "ana@acme.test" }]   # optional
//! expect = "allow"
//! rule = "mail-inside"             # optional: the rule that must be cited
//! native_tool = "Bash"             # optional: the agent's own tool name
//! cwd = "/home/dev/app"            # optional: where the call happens (also
//! project = "/home/dev/app"        #   `project` and `home`; defaults for every case
//! home = "/home/dev"               #   in a `[context]` table at the top)
//! ```

use crate::condition::toml_to_json;
use crate::evaluate::{Call, StandingRule};
use crate::load::{line_column, LoadError, LoadErrors, Policy};
use airlock_protocol::{Decision, Mode, Verdict};
use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CasesFile {
    /// Defaults for every case: where the calls happen.
    #[serde(default)]
    context: Option<ContextEntry>,
    #[serde(rename = "case", default)]
    cases: Vec<Spanned<CaseEntry>>,
}

/// `[context]` of a cases file, or a case's own `cwd`/`project`/`home`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextEntry {
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    home: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseEntry {
    #[serde(default)]
    name: Option<String>,
    tool: String,
    #[serde(default)]
    args: toml::Table,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    standing: Vec<StandingEntry>,
    expect: Decision,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    native_tool: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    home: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StandingEntry {
    tool: String,
    target: String,
}

/// One case, ready to run.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its `name`, or `case[N] <tool>`.
    pub name: String,
    /// 1-based line of the `[[case]]` entry.
    pub line: usize,
    pub tool: String,
    pub arguments: Value,
    pub agent: Option<String>,
    pub mode: Mode,
    pub standing: Vec<StandingRule>,
    pub expect: Decision,
    pub rule: Option<String>,
    /// The agent's own tool name, for rules with `native_tool`.
    pub native_tool: Option<String>,
    /// Where the call happens (the case's own, else the file's `[context]`).
    pub cwd: Option<String>,
    pub project: Option<String>,
    pub home: Option<String>,
}

/// The result of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub case: Case,
    pub verdict: Verdict,
    /// Why it failed; `None` when it passed.
    pub failure: Option<String>,
}

/// Parses a cases file.
pub fn parse_cases(source: &str, file_name: &str) -> Result<Vec<Case>, LoadErrors> {
    let file: CasesFile = toml::from_str(source).map_err(|error| {
        let (line, column) = line_column(source, error.span().map_or(0, |span| span.start));
        LoadErrors(vec![LoadError {
            file: file_name.to_owned(),
            line,
            column,
            message: error.message().trim_end().to_owned(),
        }])
    })?;
    let defaults = file.context.unwrap_or_default();
    Ok(file
        .cases
        .into_iter()
        .enumerate()
        .map(|(position, entry)| {
            let (line, _) = line_column(source, entry.span().start);
            let entry = entry.into_inner();
            Case {
                name: entry
                    .name
                    .unwrap_or_else(|| format!("case[{position}] {}", entry.tool)),
                line,
                arguments: toml_to_json(&toml::Value::Table(entry.args)),
                tool: entry.tool,
                agent: entry.agent,
                mode: entry.mode.unwrap_or_default(),
                standing: entry
                    .standing
                    .into_iter()
                    .enumerate()
                    .map(|(i, rule)| StandingRule {
                        id: format!("standing[{i}]"),
                        tool: rule.tool,
                        target: rule.target,
                    })
                    .collect(),
                expect: entry.expect,
                rule: entry.rule,
                native_tool: entry.native_tool,
                cwd: entry.cwd.or_else(|| defaults.cwd.clone()),
                project: entry.project.or_else(|| defaults.project.clone()),
                home: entry.home.or_else(|| defaults.home.clone()),
            }
        })
        .collect())
}

/// Runs every case against the policy.
pub fn run_cases(policy: &Policy, cases: Vec<Case>) -> Vec<CaseResult> {
    cases
        .into_iter()
        .map(|case| {
            let verdict = policy.evaluate(&Call {
                tool: &case.tool,
                arguments: &case.arguments,
                agent: case.agent.as_deref(),
                mode: case.mode,
                standing: &case.standing,
                declared: None,
                native_tool: case.native_tool.as_deref(),
                cwd: case.cwd.as_deref(),
                project: case.project.as_deref(),
                home: case.home.as_deref(),
            });
            let mut problems = Vec::new();
            if verdict.decision != case.expect {
                problems.push(format!(
                    "expected {}, got {}",
                    case.expect, verdict.decision
                ));
            }
            if let Some(rule) = &case.rule {
                if verdict.rule.as_deref() != Some(rule.as_str()) {
                    problems.push(format!(
                        "expected rule `{rule}`, got {}",
                        verdict
                            .rule
                            .as_deref()
                            .map_or("no rule".to_owned(), |cited| format!("`{cited}`"))
                    ));
                }
            }
            let failure = (!problems.is_empty()).then(|| {
                let why = verdict.reason.as_deref().unwrap_or("no reason given");
                format!("{} ({why})", problems.join("; "))
            });
            CaseResult {
                case,
                verdict,
                failure,
            }
        })
        .collect()
}
