//! Text that makes a command run other programs or load other code although the command
//! itself only reads: environment settings (`GIT_SSH_COMMAND=…`, `PAGER=…`,
//! `LD_PRELOAD=…`), `sed` programs (`e`, `s///e`, `w file`) and `awk` programs
//! (`system()`, `print | "cmd"`, `print > "file"`).
//!
//! These readers are not parsed as languages. What is looked for is the handful of ways
//! their text reaches outside the command; text that cannot be read that far is treated
//! as reaching out (fail closed). `sed` and `awk` programs are read in `sed_awk.rs`.

use super::sed_awk::{awk_reaches_out, sed_effects};
use super::{is_assignment, Role, Word};
use crate::context::Context;
use crate::matcher::path::below;

/// What the text of one command makes it do besides its own work.
#[derive(Debug, Default)]
pub(super) struct Reach {
    /// It runs other programs or loads other code, or its program could not be read.
    pub runs: bool,
    /// Files its program writes (`Role::Change`) or reads into its output.
    pub files: Vec<(String, Role)>,
    /// Its program prints environment variables: all of them, or one named like a secret.
    pub environment: Option<Environment>,
}

/// What of the environment a program prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Environment {
    /// The whole environment (`jq -n env`, `awk '… for (k in ENVIRON) …'`).
    Whole,
    /// A variable named like a secret (`ENVIRON["GITHUB_TOKEN"]`, `$ENV.API_KEY`).
    Secret,
}

/// Whether a variable's name says it holds a secret (`GITHUB_TOKEN`, `db_password`).
pub(crate) fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "PRIVATE",
        "DATABASE_URL",
        "DB_URL",
        "_DSN",
        "CONNECTION_STRING",
        // .NET's `ConnectionStrings__Default` (`ConnectionStrings:Default` in its settings).
        "CONNECTIONSTRING",
        "WEBHOOK",
        "AUTHORIZATION",
    ]
    .iter()
    .any(|word| upper.contains(word))
        // `COMPOSER_AUTH`, `NPM_AUTH`: credentials a tool reads from its environment;
        // `VSCE_PAT`, `GH_PAT`: personal access tokens.
        || upper.ends_with("_AUTH")
        || upper.ends_with("_PAT")
        // A kubeconfig's content (`KUBECONFIG_B64`, `KUBE_CONFIG_DATA`; `KUBECONFIG` alone
        // is its path) and the base64 a pipeline keeps its keys and certificates in.
        || upper.contains("KUBECONFIG_")
        || upper.contains("KUBE_CONFIG")
        || upper.ends_with("_B64")
        || upper.ends_with("_BASE64")
}

/// What of the environment a program's text reads through `name` (`ENVIRON` in awk,
/// `env`/`$ENV` in jq): each use must be followed by one literal variable name
/// (`ENVIRON["HOME"]`, `$ENV.HOME`, `env.PATH`), or it may be all of them.
fn environment_in(program: &str, names: &[&str], jq: bool) -> Option<Environment> {
    let bytes = program.as_bytes();
    let mut found = None;
    for name in names {
        let mut from = 0;
        while let Some(at) = program[from..].find(name).map(|at| at + from) {
            from = at + name.len();
            let before = at.checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(from).copied();
            let word_char =
                |b: Option<u8>| b.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
            // `.env` is a field in jq, `myENVIRON` another name.
            if word_char(before) || word_char(after) || (jq && before == Some(b'.')) {
                continue;
            }
            let rest = &program[from..];
            let variable: Option<String> = if let Some(field) = rest.strip_prefix('.') {
                Some(
                    field
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect(),
                )
            } else if let Some(index) = rest.strip_prefix('[') {
                let index = index.trim_start();
                let quote = index.chars().next().filter(|c| *c == '"' || *c == '\'');
                quote.and_then(|quote| {
                    let inner = &index[1..];
                    let end = inner.find(quote)?;
                    let name = &inner[..end];
                    name.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                        .then(|| name.to_string())
                })
            } else {
                None
            };
            let this = match variable.filter(|name| !name.is_empty()) {
                None => Environment::Whole,
                Some(name) if secret_name(&name) => Environment::Secret,
                Some(_) => continue,
            };
            if this == Environment::Whole {
                return Some(Environment::Whole);
            }
            found = Some(this);
        }
    }
    found
}

/// What `name arguments` reaches beyond its own work: an `export`/`declare` of a setting
/// that runs programs, a `sed` or `awk` program that runs, writes or reads files, and
/// `less +'!cmd'` (commands the pager runs at start).
pub(super) fn reach(name: &str, arguments: &[Word]) -> Reach {
    let mut reach = Reach::default();
    let texts = arguments.iter().map(|word| word.text.as_str());
    match name {
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            reach.runs = texts
                .into_iter()
                .any(|text| is_assignment(text) && assignment_runs_code(text));
        }
        "less" | "more" => {
            reach.runs = texts
                .into_iter()
                .any(|text| text.starts_with('+') && text.contains(['!', '|']));
        }
        "awk" | "gawk" | "mawk" | "nawk" => {
            let programs = program_words(true, arguments);
            reach.runs = programs
                .iter()
                .any(|(program, dynamic)| *dynamic || awk_reaches_out(program));
            reach.environment = programs
                .iter()
                .filter_map(|(program, _)| environment_in(program, &["ENVIRON"], false))
                .max_by_key(|found| *found == Environment::Whole);
        }
        "jq" | "gojq" | "jaq" | "yq" => {
            // Its filter is one of its words; any word that reads the environment does.
            reach.environment = arguments
                .iter()
                .filter(|word| !word.dynamic)
                .filter_map(|word| environment_in(&word.text, &["$ENV", "env"], true))
                .max_by_key(|found| *found == Environment::Whole);
        }
        "sed" | "gsed" => {
            for (program, dynamic) in program_words(false, arguments) {
                let effects = sed_effects(&program);
                reach.runs |= dynamic || effects.runs;
                reach
                    .files
                    .extend(effects.writes.into_iter().map(|file| (file, Role::Change)));
                reach
                    .files
                    .extend(effects.reads.into_iter().map(|file| (file, Role::Read)));
            }
        }
        _ => {}
    }
    reach
}

/// The programs given on an `awk` or `sed` command line: the values of `-e` (and
/// `--expression`, `--source`), else the first word that is neither an option nor an
/// option's value; none when the program comes from a file (`-f`).
pub(super) fn program_words(awk: bool, arguments: &[Word]) -> Vec<(String, bool)> {
    let takes_value: &[&str] = if awk {
        &[
            "-F",
            "-v",
            "-f",
            "-i",
            "-l",
            "--field-separator",
            "--assign",
            "--file",
            "--include",
            "--load",
        ]
    } else {
        &["-f", "--file", "-l", "--line-length"]
    };
    let mut programs: Vec<(String, bool)> = Vec::new();
    let whole = |word: &Word| (word.text.clone(), word.dynamic);
    let mut from_file = false;
    let mut first_operand = None;
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if text == "--" {
            if first_operand.is_none() {
                first_operand = words.next();
            }
            break;
        }
        let cluster_ends_in_e = !text.starts_with("--")
            && text.len() > 1
            && text.starts_with('-')
            && text.ends_with('e')
            && text[1..].chars().all(|c| c.is_ascii_alphabetic());
        if matches!(text, "--expression" | "--source") || cluster_ends_in_e {
            programs.extend(words.next().map(whole));
        } else if let Some(value) = text
            .strip_prefix("--expression=")
            .or_else(|| text.strip_prefix("--source="))
        {
            programs.push((value.to_string(), word.dynamic));
        } else if matches!(text, "-f" | "--file") || text.starts_with("--file=") {
            from_file = true;
            if text == "-f" || text == "--file" {
                words.next();
            }
        } else if takes_value.contains(&text) {
            words.next();
        } else if text.starts_with('-') && !word.dynamic {
            continue;
        } else if first_operand.is_none() {
            first_operand = Some(word);
        }
    }
    if programs.is_empty() && !from_file {
        programs.extend(first_operand.map(whole));
    }
    programs
}

/// Variables whose value names a program something runs (a pager, an editor, an ssh
/// command, a diff driver, a password prompt).
const RUNS_VALUE: &[&str] = &[
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "BAT_PAGER",
    "DELTA_PAGER",
    "EDITOR",
    "VISUAL",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "SVN_EDITOR",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "GIT_PROXY_COMMAND",
    "LESSOPEN",
    "LESSCLOSE",
    "PROMPT_COMMAND",
    "BROWSER",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
];

/// Variables through which a program loads code or settings that run code.
const LOADS_CODE: &[&str] = &[
    "LD_PRELOAD",
    "LD_AUDIT",
    "DYLD_INSERT_LIBRARIES",
    "BASH_ENV",
    "ENV",
    "PERL5OPT",
    "RUBYOPT",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
];

/// Whether `NAME=value` preloads libraries (`LD_PRELOAD`, `DYLD_INSERT_LIBRARIES`) that all
/// lie inside the call's project: the command then runs code the project built, as running
/// the project's own program does. A library outside it, a variable or an empty entry keeps
/// the setting unknown.
pub(super) fn preloads_project_code(word: &str, context: &Context, cwd: Option<&str>) -> bool {
    let Some((name, value)) = word.split_once('=') else {
        return false;
    };
    let (Some(project), true) = (
        context.project(),
        matches!(name, "LD_PRELOAD" | "DYLD_INSERT_LIBRARIES"),
    ) else {
        return false;
    };
    let value = value.trim_matches(|c| c == '"' || c == '\'');
    !value.is_empty()
        && value.split([':', ' ']).all(|library| {
            !library.is_empty()
                && !library.contains(['$', '`', '*', '?'])
                && context.resolve_from(library, cwd).is_some_and(|path| {
                    below(&path, project).is_some_and(|inside| !inside.is_empty())
                })
        })
}

/// Pagers and editors that only show text or do nothing.
const QUIET_PROGRAMS: &[&str] = &["", "cat", "less", "more", "true", ":", "head", "tail"];

/// Node options that change limits or warnings, never what code is loaded.
const QUIET_NODE_OPTIONS: &[&str] = &[
    "--max-old-space-size",
    "--max-semi-space-size",
    "--stack-size",
    "--enable-source-maps",
    "--no-warnings",
    "--no-deprecation",
    "--trace-warnings",
    "--trace-deprecation",
    "--openssl-legacy-provider",
    "--experimental-vm-modules",
    "--unhandled-rejections",
];

/// Whether the assignment `NAME=value` makes what runs beside it run another program or
/// load other code.
/// `GIT_TRACE_REDACT=0` (or `false`, `no`): git's traces (`GIT_TRACE_CURL`,
/// `GIT_TRACE_PACKET`) print the `Authorization` headers and cookies they carry.
/// Whether an assignment points Docker (or Podman) at a daemon that may be another
/// machine's: `DOCKER_HOST` other than a local socket or loopback address, a
/// `DOCKER_CONTEXT` other than the local ones, anything computed.
pub(super) fn names_remote_docker(word: &str, dynamic: bool) -> bool {
    word.split_once('=')
        .is_some_and(|(name, value)| docker_elsewhere(name, value, dynamic))
}

/// Whether Docker's daemon setting `name` (`DOCKER_HOST`, `CONTAINER_HOST`,
/// `DOCKER_CONTEXT`) set to `value` may be another machine's: not a local socket or
/// loopback address, not a local context, or computed.
pub(super) fn docker_elsewhere(name: &str, value: &str, dynamic: bool) -> bool {
    match name {
        "DOCKER_HOST" | "CONTAINER_HOST" => {
            let local = value.is_empty()
                || value.starts_with("unix://")
                || value.starts_with("npipe://")
                || ["tcp://localhost", "tcp://127.0.0.1", "tcp://[::1]"]
                    .iter()
                    .any(|prefix| {
                        value
                            .strip_prefix(prefix)
                            .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
                    });
            dynamic || !local
        }
        "DOCKER_CONTEXT" => {
            dynamic
                || !matches!(
                    value,
                    "" | "default" | "desktop-linux" | "colima" | "orbstack" | "rancher-desktop"
                )
        }
        _ => false,
    }
}

pub(super) fn assignment_reveals_secrets(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, value)| {
        name == "GIT_TRACE_REDACT"
            && matches!(
                value.to_ascii_lowercase().as_str(),
                "0" | "false" | "no" | "off"
            )
    })
}

/// A coding agent started where it can change nothing: Codex in its read-only sandbox
/// (`--sandbox read-only`, which the operating system enforces), Claude Code in plan mode
/// (`--permission-mode plan`), each given once, with nothing on the line that widens it
/// (`--full-auto`, a `-c`/`--config` override, `--add-dir`, `--allowedTools`). Its prompt
/// is no command.
pub(super) fn agent_reads_only(name: &str, texts: &[&str]) -> bool {
    let (options, value): (&[&str], &str) = match name {
        "codex" => (&["--sandbox", "-s"], "read-only"),
        "claude" => (&["--permission-mode"], "plan"),
        _ => return false,
    };
    let mut values = Vec::new();
    for (index, text) in texts.iter().enumerate() {
        let (option, attached) = match text.split_once('=') {
            Some((option, attached)) => (option, Some(attached)),
            None => (*text, None),
        };
        if matches!(
            option,
            "--full-auto" | "-c" | "--config" | "--add-dir" | "--allowedTools" | "--allowed-tools"
        ) {
            return false;
        }
        if options.contains(&option) {
            values.push(attached.or_else(|| texts.get(index + 1).copied()));
        }
    }
    values == [Some(value)]
}

/// `osascript -e 'display notification "Tests passed" with title "app"'`: AppleScript
/// that only shows the person something (a notification, a dialog or an alert, a beep,
/// spoken text), every line of it, with no variable, command or other application named.
pub(super) fn osascript_only_notifies(name: &str, texts: &[&str]) -> bool {
    if name != "osascript" || texts.is_empty() {
        return false;
    }
    let mut scripts = Vec::new();
    let mut at = 0;
    while let Some(text) = texts.get(at) {
        if *text != "-e" {
            return false;
        }
        match texts.get(at + 1) {
            Some(script) => scripts.push(*script),
            None => return false,
        }
        at += 2;
    }
    scripts
        .iter()
        .flat_map(|script| script.lines())
        .all(|line| {
            let line = line.trim();
            // What is shown is text in quotes; outside them only the statement's own words.
            let outside: String = line.split('"').step_by(2).collect::<Vec<_>>().join(" ");
            let words: Vec<&str> = outside.split_whitespace().collect();
            let shows = matches!(
                words.as_slice(),
                ["display", "notification" | "dialog" | "alert", ..] | ["beep", ..] | ["say", ..]
            );
            shows
                && line.matches('"').count() % 2 == 0
                && words.iter().skip(2).all(|word| {
                    matches!(
                        *word,
                        "with"
                            | "title"
                            | "subtitle"
                            | "sound"
                            | "name"
                            | "buttons"
                            | "default"
                            | "button"
                            | "giving"
                            | "up"
                            | "after"
                            | "as"
                            | "critical"
                            | "warning"
                            | "informational"
                            | "message"
                            | "{"
                            | "}"
                            | ","
                            | "{}"
                    ) || word
                        .chars()
                        .all(|c| c.is_ascii_digit() || matches!(c, '{' | '}' | ','))
                })
        })
}

pub(super) fn assignment_runs_code(word: &str) -> bool {
    let Some((name, value)) = word.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    if RUNS_VALUE.contains(&name) {
        let mut parts = value.split_whitespace();
        let program = parts.next().unwrap_or("");
        // An editor is handed the file being edited: `cat` as the editor prints it
        // (`EDITOR=cat rails credentials:edit` prints the decrypted credentials); only an
        // editor that does nothing (`GIT_EDITOR=true`) is quiet.
        let quiet_programs: &[&str] = if name.contains("EDITOR") || name == "VISUAL" {
            &["true", ":"]
        } else {
            QUIET_PROGRAMS
        };
        let quiet = quiet_programs.contains(&program)
            && parts.all(|part| part.starts_with('-') && part.chars().all(is_option_char));
        return !quiet;
    }
    if LOADS_CODE.contains(&name) {
        return !value.is_empty();
    }
    if name == "NODE_OPTIONS" {
        return !value.split_whitespace().all(|option| {
            let option = option.split_once('=').map_or(option, |(head, _)| head);
            QUIET_NODE_OPTIONS.contains(&option)
        });
    }
    name.starts_with("GIT_CONFIG_KEY_")
        || name.starts_with("GIT_CONFIG_VALUE_")
        || name.starts_with("BASH_FUNC_")
        || (name.starts_with("CARGO_TARGET_") && name.ends_with("_RUNNER"))
}

fn is_option_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '=' | '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // The readers take whatever text a command carries, and never panic on it: any
        // printable text, and text made of the characters `sed` programs are made of.
        #[test]
        fn the_readers_never_panic(text in "[ -~\n]{0,64}", sed in "[0-9$/,;!{}~+aisydeprwgI:\\ \n]{0,32}") {
            let _ = sed_effects(&text);
            let _ = sed_effects(&sed);
            let _ = awk_reaches_out(&text);
            let _ = assignment_runs_code(&text);
        }
    }

    #[test]
    fn settings_that_run_programs_are_told_from_quiet_ones() {
        for word in [
            "GIT_SSH_COMMAND=rm -rf ~",
            "PAGER=sh -c id",
            "GIT_EDITOR=vim",
            "LD_PRELOAD=/tmp/x.so",
            "BASH_ENV=/tmp/x",
            "NODE_OPTIONS=--require /tmp/x.js",
            "NODE_OPTIONS=-r ./x",
            "GIT_CONFIG_KEY_0=core.pager",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=rm",
            "LESSOPEN=|id %s",
        ] {
            assert!(assignment_runs_code(word), "{word}");
        }
        for word in [
            "PAGER=cat",
            "GIT_PAGER=",
            "PAGER=less -R",
            "EDITOR=true",
            "NODE_OPTIONS=--max-old-space-size=8192",
            "RUST_LOG=debug",
            "LD_LIBRARY_PATH=target/release",
            "PYTHONPATH=src",
            "CI=1",
        ] {
            assert!(!assignment_runs_code(word), "{word}");
        }
    }
}
