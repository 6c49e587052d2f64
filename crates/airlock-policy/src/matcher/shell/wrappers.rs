//! What stands in front of the command a segment really runs: wrappers with their options
//! (`sudo -u root`, `timeout 10`, `taskset -c 0-3`), runners and systems that run a command
//! (`runners.rs`), `VAR=value` assignments and reserved words.

use super::lex::Word;
use super::{basename, strip_runner, strip_system};

/// Commands that run the rest of their words as another command, with their options that
/// take the next word as a value (`sudo -u root`), space-separated, and the number of
/// operands before the command (`timeout 10 cmd`). Restrict sees through them. Only the
/// usual options are known; an unknown one that takes a value hides the command, which
/// is one reason Restrict also takes a dynamic word for anything.
const WRAPPERS: &[(&str, &str, usize)] = &[
    (
        "sudo",
        "-u -g -C -D -h -p -r -t -T -U -R --user --group --chdir --close-from --host \
         --prompt --role --type --other-user --command-timeout --chroot",
        0,
    ),
    ("doas", "-u -C", 0),
    ("env", "-u -C --unset --chdir", 0),
    ("command", "", 0),
    ("builtin", "", 0),
    ("exec", "-a", 0),
    ("nohup", "", 0),
    ("time", "-f -o --format --output", 0),
    ("nice", "-n --adjustment", 0),
    (
        "xargs",
        "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs --max-chars \
         --max-lines",
        0,
    ),
    ("timeout", "-s -k --signal --kill-after", 1),
    ("stdbuf", "-i -o -e", 0),
    ("setsid", "", 0),
    ("ionice", "-c -n -p -P -u --class --classdata", 0),
    ("chroot", "--userspec --groups", 1),
    ("busybox", "", 0),
    ("flock", "-w -E --wait --timeout --conflict-exit-code", 1),
    ("chronic", "", 0),
    // CPU affinity (`taskset -c 0-3 cargo bench`: the mask or list is its operand), new
    // namespaces (`unshare -rn -- go test`), another process's namespaces (`nsenter -t 1
    // -m -- sh`, privileged) and systemd's `sudo` (`run0`).
    ("taskset", "", 1),
    (
        "unshare",
        "-R --root -w --wd -S --setuid -G --setgid --propagation --setgroups --map-user \
         --map-group --map-users --map-groups",
        0,
    ),
    (
        "nsenter",
        "-t --target -S --setuid -G --setgid -w --wd -R --root",
        0,
    ),
    (
        "run0",
        "-u --user -g --group -D --chdir --unit --property --description --slice --setenv \
         --machine",
        0,
    ),
    // rtk runs a command and shortens its output for the model (`rtk git status`,
    // `rtk proxy gh api …`).
    ("rtk", "", 0),
    // Tracers of the command they start (`strace -f -e trace=openat npm test`). Not their
    // `-o FILE` (a file written unseen) nor `-p PID` (another process attached): those
    // leave the command hidden, and unknown.
    (
        "strace",
        "-e -s -E -u -P -S -a -b -I -X -U --trace --signal --string-limit --env --user \
         --trace-path --summary-sort-by --columns --detach-on --expr --status",
        0,
    ),
    ("ltrace", "-e -s -n -u -A -a -D -F -l -x -L", 0),
    // File watchers that run their command on each change (`ls src/*.rs | entr -c cargo
    // test`); macOS' `caffeinate -i make`, kept awake while it runs.
    ("entr", "", 0),
    ("caffeinate", "-t -w", 0),
];

/// Shell reserved words that may precede a command in a segment (`if rm …`, `then rm …`,
/// `{ rm …; }`, `! rm …`): Restrict looks past them too.
pub(super) const KEYWORDS: &[&str] = &[
    "!", "{", "if", "then", "elif", "else", "while", "until", "do",
];

/// Removes one layer in front of the command that a segment really runs: a `VAR=value`
/// assignment, a reserved word, or a wrapper with its options. `None` when there is none.
pub(super) fn strip_one_wrapper(words: &[Word]) -> Option<&[Word]> {
    let (first, rest) = words.split_first()?;
    if is_assignment(&first.text) || KEYWORDS.contains(&first.text.as_str()) {
        return Some(rest);
    }
    if first.dynamic {
        return None;
    }
    // `function name { …`: the body runs when the function is called; it is judged as if
    // it ran.
    if first.text == "function" && rest.len() > 1 && rest[1].text == "{" {
        return Some(&rest[1..]);
    }
    if let Some(inner) = strip_runner(words).or_else(|| strip_system(words)) {
        return Some(inner);
    }
    let program = basename(&first.text);
    // `ip netns exec NAME cmd` runs `cmd` in a network namespace.
    if program == "ip" {
        if let [netns, exec, _, inner @ ..] = rest {
            if netns.text == "netns" && exec.text == "exec" && !inner.is_empty() {
                return Some(inner);
            }
        }
    }
    let &(_, options_with_value, operands) =
        WRAPPERS.iter().find(|(name, _, _)| *name == program)?;
    // Windows' `timeout /t 5 /nobreak` only waits (GNU's takes no `/t`): `sleep`'s look.
    if program == "timeout"
        && rest
            .first()
            .is_some_and(|word| word.text.eq_ignore_ascii_case("/t"))
    {
        return None;
    }
    // `command -v NAME` and `command -V NAME` only say what NAME is; they run nothing.
    if program == "command"
        && rest
            .iter()
            .take_while(|word| word.text.starts_with('-') && word.text != "--")
            .any(|word| word.text.contains(['v', 'V']))
    {
        return None;
    }
    let inner = after_options(rest, options_with_value)
        .get(operands..)
        .unwrap_or_default();
    match inner.split_first() {
        Some((proxy, command)) if program == "rtk" && proxy.text == "proxy" => Some(command),
        _ => Some(inner),
    }
}

/// `words` after their leading options (and the values of those in `options_with_value`,
/// space-separated) and a `--` that ends them.
pub(super) fn after_options<'w>(words: &'w [Word], options_with_value: &str) -> &'w [Word] {
    let mut rest = words;
    while let Some((option, after)) = rest.split_first() {
        if option.text == "--" {
            return after;
        }
        if !option.text.starts_with('-') || option.text.len() < 2 {
            break;
        }
        rest = after;
        if options_with_value
            .split_whitespace()
            .any(|known| known == option.text)
        {
            rest = rest.get(1..).unwrap_or_default();
        }
    }
    rest
}

/// `NAME=value` or `NAME+=value`: a variable assignment in front of a command.
pub(super) fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
