//! The environment: commands that print all of it, or one variable, and lines that print
//! a variable named like a credential.

use super::super::basename;
use super::super::lex::{Segment, Word};
use super::programs;
use super::words::unwrapped;
use crate::classes::Class;

/// The class of a command about the shell's own state that prints no secret, when it is
/// one: `set -e`, `set -o pipefail`, `set -- a b` change options or arguments (only a
/// bare `set` prints the variables); `printenv NAME` prints one variable, a look at
/// `PATH` or a read of `API_KEY`.
pub(super) fn variables_read(name: &str, arguments: &[Word], job_pids: &[String]) -> Option<Class> {
    match name {
        // `kill %1`, `kill $!`, `kill $PID` after `PID=$!`: a job this shell started
        // (`npm run dev & sleep 3; kill %1`) is its own to stop.
        "kill" if kills_own_jobs(arguments, job_pids) => Some(Class::ReadOnly),
        "set" if !arguments.is_empty() => Some(Class::ReadOnly),
        // `mount` alone lists what is mounted.
        "mount" if arguments.iter().all(|word| word.text == "-l") => Some(Class::ReadOnly),
        // `sysctl hw.model`, `sysctl -n kern.ostype`, `sysctl -a`: a look at kernel settings;
        // a value given (`name=value`) or loaded (`-w`, `-p`, `--system`, `-f`) sets them.
        "sysctl" if !arguments.iter().any(sets_kernel_setting) => Some(Class::ReadOnly),
        "printenv" if arguments.iter().any(|word| !word.text.starts_with('-')) => {
            let secret = arguments
                .iter()
                .any(|word| word.dynamic || programs::secret_name(&word.text));
            Some(if secret {
                Class::CredentialAccess
            } else {
                Class::ReadOnly
            })
        }
        _ => None,
    }
}

/// A command that prints the whole environment: `env`, `printenv`, `set`, `export -p`,
/// `declare -px` (with no names).
pub(super) fn dumps_environment(segment: &Segment) -> bool {
    let words = unwrapped(&segment.words);
    let Some((first, arguments)) = words.split_first() else {
        return false;
    };
    if first.dynamic {
        return false;
    }
    let names = arguments.iter().any(|word| !word.text.starts_with('-'));
    match basename(&first.text) {
        "env" | "printenv" | "set" | "export" => !names,
        "declare" | "typeset" => {
            !names && arguments.iter().any(|word| word.text.contains(['p', 'x']))
        }
        "compgen" => arguments
            .iter()
            .any(|word| word.text == "-e" || word.text == "-v"),
        _ => false,
    }
}

/// A filter of the environment's lines that keeps only the variables it names, none named
/// like a credential (`env | grep -E '^(LANG|DISPLAY)='`, `env | rg '^PATH='`): what
/// passes is those values. One pattern, anchored at the line's start and closed by `=`,
/// of names alone, read from the pipe; any other option (`-v` keeps the rest) or operand
/// is not such a filter.
pub(super) fn keeps_named_variables(segment: &Segment) -> bool {
    let words = unwrapped(&segment.words);
    let Some((first, arguments)) = words.split_first() else {
        return false;
    };
    if first.dynamic || !matches!(basename(&first.text), "grep" | "egrep" | "rg") {
        return false;
    }
    let mut patterns = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        if word.dynamic {
            return false;
        }
        match word.text.as_str() {
            "-e" | "--regexp" => match words.next() {
                Some(pattern) if !pattern.dynamic => patterns.push(pattern.text.as_str()),
                _ => return false,
            },
            "-E" | "-P" | "-i" | "-n" | "-N" | "-x" | "--color=never" | "--no-line-number" => {}
            text if text.starts_with('-') => return false,
            text => patterns.push(text),
        }
    }
    let [pattern] = patterns.as_slice() else {
        return false;
    };
    let Some(names) = pattern
        .strip_prefix('^')
        .and_then(|rest| rest.strip_suffix('='))
    else {
        return false;
    };
    let names = names
        .strip_prefix('(')
        .and_then(|inner| inner.strip_suffix(')'))
        .unwrap_or(names);
    names.split('|').all(|name| {
        let upper = name.to_ascii_uppercase();
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !programs::secret_name(name)
            && !["AUTH", "PASS", "URL", "URI", "COOKIE", "CERT", "SIGN"]
                .iter()
                .any(|word| upper.contains(word))
    })
}

/// Whether a segment prints the value of a variable named like a credential
/// (`echo "KEY=$OPENAI_API_KEY"`, `printf %s "${GITHUB_TOKEN}"`): the secret lands in the
/// transcript, which is reading it.
pub(super) fn prints_secret_variable(segment: &str) -> bool {
    let Some(first) = segment.split_whitespace().next() else {
        return false;
    };
    if !matches!(basename(first), "echo" | "printf" | "print") {
        return false;
    }
    let mut rest = segment;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let name: String = rest
            .trim_start_matches('{')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if programs::secret_name(&name) {
            return true;
        }
    }
    false
}

/// `ps e`, `ps eww`: BSD-style options that print every process's environment, secrets
/// included.
pub(super) fn lists_process_environments(name: &str, arguments: &[Word]) -> bool {
    name == "ps"
        && arguments.iter().any(|word| {
            !word.text.starts_with('-')
                && word.text.contains('e')
                && word.text.chars().all(|c| c.is_ascii_alphabetic())
        })
}

/// Whether a word of `sysctl` sets a kernel setting rather than reading one: a value given
/// (`name=value`), or one of the options that write or load (`-w`, `-p`, `--system`, `-f`,
/// also clustered as in `-wq`); a word nobody can read counts.
fn sets_kernel_setting(word: &Word) -> bool {
    let text = word.text.as_str();
    let short_cluster = text.starts_with('-') && !text.starts_with("--");
    word.dynamic
        || text.contains('=')
        || matches!(text, "--write" | "--load" | "--system")
        || (short_cluster && text.contains(['w', 'p', 'f']))
}

/// The variable a segment that is only `NAME=$!` sets to the process id of the job just
/// started.
pub(super) fn job_pid_variable(words: &[Word]) -> Option<String> {
    match words {
        [word] => word
            .text
            .strip_suffix("=$!")
            .filter(|name| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            .map(str::to_owned),
        _ => None,
    }
}

/// Every target of `kill` is a job of this shell (`%1`, `%+`, `$!`, or a variable the line
/// set to `$!`), after its signal options (`-9`, `-TERM`, `-s TERM`).
fn kills_own_jobs(arguments: &[Word], job_pids: &[String]) -> bool {
    let mut targets = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        match word.text.as_str() {
            "-s" | "-n" => {
                words.next();
            }
            text if text.starts_with('-') && !word.dynamic => {}
            _ => targets.push(word),
        }
    }
    !targets.is_empty()
        && targets.iter().all(|word| {
            let variable = word.text.strip_prefix('$').map(|name| {
                name.strip_prefix('{')
                    .and_then(|name| name.strip_suffix('}'))
                    .unwrap_or(name)
            });
            word.text == "$!"
                || variable.is_some_and(|name| job_pids.iter().any(|pid| pid == name))
                || (!word.dynamic && word.text.starts_with('%'))
        })
}
