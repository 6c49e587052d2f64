//! CI files, hook managers' and task runners' YAML: the commands their keys hold (`run:`,
//! `script:`, `cmds:`…, inline, as lists and as `|` blocks), with CI expressions read as
//! the shell sees them once filled in.

use super::Piece;

/// Keys whose values are commands in CI files, hook managers and task runners.
const COMMAND_KEYS: &[&str] = &[
    "run",
    "script",
    "scripts",
    "before_script",
    "after_script",
    "before_install",
    "install",
    "after_install",
    "before_deploy",
    "after_deploy",
    "after_success",
    "after_failure",
    "command",
    "commands",
    "cmd",
    "cmds",
    // Taskfile's dynamic variables (`vars: X: sh: …`), run on every task.
    "sh",
    "entry",
    "bash",
    "init",
    "before",
    "prebuild",
    "build_script",
    "test_script",
    "on_finish",
];

/// Keys whose values are PowerShell.
const POWERSHELL_KEYS: &[&str] = &["pwsh", "powershell", "ps"];

/// `key: value` at the start of a YAML line: the key (lower-cased) and the rest.
fn yaml_key(line: &str) -> Option<(String, &str)> {
    let (key, rest) = line.split_once(':')?;
    let key = key.trim().trim_matches(['"', '\'']);
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    (plain && (rest.is_empty() || rest.starts_with([' ', '\t'])))
        .then(|| (key.to_ascii_lowercase(), rest.trim()))
}

/// A YAML scalar without its quotes.
fn unquote(value: &str) -> String {
    let value = value.trim();
    if value.len() >= 2 {
        if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            return inner.replace("\\\"", "\"").replace("\\n", "\n");
        }
        if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            return inner.replace("''", "'");
        }
    }
    value.to_owned()
}

/// A CI expression (`${{ … }}`, GitHub and Gitea) as the shell sees it once it is filled
/// in: an unknown value, except the whole secrets context (`toJSON(secrets)`), which is
/// every credential the pipeline holds.
fn ci_expressions(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 3..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let expression = after[..end].to_ascii_lowercase().replace(' ', "");
        out.push_str(if expression.contains("(secrets)") {
            "${CI_ALL_SECRETS}"
        } else {
            "${CI_VALUE}"
        });
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    // What a step appends to its job's summary (`>> $GITHUB_STEP_SUMMARY`) is shown on the
    // run's page, as its log is: read as printed.
    for target in [
        " >> \"$GITHUB_STEP_SUMMARY\"",
        " >> $GITHUB_STEP_SUMMARY",
        " > \"$GITHUB_STEP_SUMMARY\"",
        " > $GITHUB_STEP_SUMMARY",
        ">>$GITHUB_STEP_SUMMARY",
    ] {
        out = out.replace(target, "");
    }
    out
}

/// Whether a CI line prints a secret of the pipeline to the log (see [`yaml_commands`]):
/// `echo`/`printf` of a `${{ secrets.… }}` expression, not redirected to a file, piped into
/// nothing or only into encoders (`base64`, `xxd`, `rev`…); masking it (`::add-mask::`) or
/// handing it to a program on its input (`| docker login --password-stdin`) prints nothing.
fn prints_ci_secret(line: &str) -> bool {
    const ENCODERS: &[&str] = &[
        "base64", "base32", "xxd", "od", "hexdump", "rev", "tr", "sed", "cut", "fold", "cat",
        "tee", "awk",
    ];
    let line = line.trim();
    let line = line.strip_prefix("- ").unwrap_or(line).trim_start();
    let line = ["run:", "script:", "command:"]
        .iter()
        .find_map(|key| line.strip_prefix(key))
        .unwrap_or(line)
        .trim_start();
    let lower = line.to_ascii_lowercase();
    if !(lower.starts_with("echo ") || lower.starts_with("printf "))
        || lower.contains("::add-mask::")
        || !lower
            .match_indices("${{")
            .any(|(at, _)| lower[at + 3..].trim_start().starts_with("secrets."))
    {
        return false;
    }
    let mut stages = line.split('|');
    let printed = stages.next().unwrap_or_default();
    !printed.replace(">&2", "").contains('>')
        && stages.all(|stage| {
            let program = stage.split_whitespace().next().unwrap_or_default();
            ENCODERS.contains(&program) && !stage.contains('>')
        })
}

/// The commands of a CI, hook-manager or task-runner YAML text, whole or a fragment. List
/// items outside any known key are read as commands too when `items` (a file of nothing
/// else) or when they look like one (a fragment of a CI file's `script:` list).
pub(super) fn yaml_commands(text: &str, items: bool) -> Vec<Piece> {
    let mut out = Vec::new();
    // The whole secrets context put anywhere (`env: ALL: ${{ toJSON(secrets) }}`) hands
    // every credential of the pipeline to what runs next: a read of them.
    if ci_expressions(text).contains("${CI_ALL_SECRETS}") {
        out.push(Piece::Shell("printenv CI_ALL_SECRETS".into()));
    }
    // A step that prints one of the pipeline's secrets into the job's log, plainly or
    // encoded past the log's masking (`echo "${{ secrets.TOKEN }}" | base64`): a read of it
    // that anyone who can see the log shares.
    if text.lines().any(prints_ci_secret) {
        out.push(Piece::Shell("printenv CI_SECRET_PRINTED".into()));
    }
    // The open block under a command key: its indentation, whether it is PowerShell,
    // and the lines gathered so far.
    let mut block: Option<(usize, bool, Vec<String>)> = None;
    let close = |block: &mut Option<(usize, bool, Vec<String>)>, out: &mut Vec<Piece>| {
        if let Some((_, powershell, lines)) = block.take() {
            if !lines.is_empty() {
                let script = ci_expressions(&lines.join("\n"));
                out.push(if powershell {
                    Piece::PowerShell(script)
                } else {
                    Piece::Shell(script)
                });
            }
        }
    };
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        let item = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix('-').filter(|rest| rest.is_empty()))
            .map(str::trim_start);
        let body = item.unwrap_or(trimmed);
        let keyed = yaml_key(body);
        if let Some((open, _, lines)) = &mut block {
            if indent > *open {
                match &keyed {
                    // A mapping inside the block (`lint:` under `commands:`): a command
                    // key in it is read below; any other key is not a command.
                    Some((key, _)) if !COMMAND_KEYS.contains(&key.as_str()) => continue,
                    Some(_) => {}
                    None => {
                        lines.push(unquote(body));
                        continue;
                    }
                }
            }
        }
        if block.as_ref().is_some_and(|(open, _, _)| indent <= *open) {
            close(&mut block, &mut out);
        }
        let Some((key, value)) = keyed else {
            if let Some(item) = item.filter(|item| items || item.contains(' ')) {
                let command = ci_expressions(&unquote(item));
                if !command.is_empty() && !command.starts_with(['{', '[']) {
                    out.push(Piece::Shell(command));
                }
            }
            continue;
        };
        let powershell = POWERSHELL_KEYS.contains(&key.as_str());
        if !powershell && !COMMAND_KEYS.contains(&key.as_str()) {
            continue;
        }
        // The key's own column: a list item's key sits after its `- `.
        let column = indent + (trimmed.len() - body.len());
        if value.is_empty() || value.starts_with(['|', '>']) {
            close(&mut block, &mut out);
            block = Some((column, powershell, Vec::new()));
        } else if let Some(list) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            for item in list.split(',') {
                let command = ci_expressions(&unquote(item));
                if !command.is_empty() {
                    out.push(Piece::Shell(command));
                }
            }
        } else {
            let command = ci_expressions(&unquote(value));
            out.push(if powershell {
                Piece::PowerShell(command)
            } else {
                Piece::Shell(command)
            });
        }
    }
    close(&mut block, &mut out);
    out
}
