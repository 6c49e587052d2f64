//! The `prefix` matcher for command lines (DESIGN.md §4.1).
//!
//! A rule such as `prefix = ["git status"]` is about *every program the command line would
//! run*, so a command line is not compared as a string: it is lexed the way a POSIX shell
//! (bash, in the details) would read it and cut into **segments**, one per simple command:
//! the parts of `&&`, `||`, `;`, `|`, `&` and newline lists, and, each as a segment of its
//! own, the bodies of `$(…)`, backticks, `<(…)`/`>(…)`, `( … )` subshells, the script of
//! `sh -c '…'`/`eval …` and the command of `find -exec … ;`. Each segment is a list of
//! words after quote removal; a word whose value the shell computes at run time
//! (`$HOME`, `$(…)`, `{a,b}`) is marked *dynamic*, and one holding unquoted glob characters
//! keeps its glob.
//!
//! The [`Side`] then decides how the segments and the unknowns count:
//! - **Allow**: every segment must start with the prefix's words, word for word and
//!   literally; a dynamic word never equals anything, a segment that writes a file through
//!   a redirection never matches, and a command line that cannot be lexed never matches.
//! - **Restrict** (deny and ask): one segment is enough, and the matcher sees through the
//!   usual disguises (`sudo`, `env`, `VAR=x`, `/bin/rm`, `\rm`); a dynamic word may stand
//!   for anything, so it matches; a command line that cannot be lexed is cut crudely on
//!   operator characters and whitespace, so an unbalanced quote hides nothing.
//!
//! This is a fail-closed filter, not a shell: it does not expand variables, aliases or
//! functions, and an argument reordering (`rm -r -f`) is a different prefix.

pub mod classify;
pub(crate) mod code;
mod lex;
mod powershell;
mod printers;
mod runners;
use runners::{
    is_runner, loads_secrets, names_production, nix_fetches_expression, strip_runner, strip_system,
};
mod wrappers;
use wrappers::{after_options, is_assignment, strip_one_wrapper, KEYWORDS};
mod windows_lines;
pub(in crate::matcher::shell) use windows_lines::{cmake_command, cmd_script};
#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]
mod tests;

use globset::{GlobBuilder, GlobMatcher};
use std::cell::RefCell;
use std::collections::HashMap;

use self::lex::{LexError, Lexer, LoopItems, Segment, Word};
use super::Side;

/// How deeply subshells, substitutions and `sh -c` scripts may nest before the command
/// counts as unlexable (fail closed). Real commands stay far below; this only bounds the
/// recursion on hostile input.
const MAX_DEPTH: usize = 32;

/// One compiled `prefix` entry, such as `git status` or `rm -rf`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPrefix {
    /// The text as written in the policy.
    text: String,
    /// Its words after quote removal; never empty.
    words: Vec<String>,
}

impl CommandPrefix {
    /// Compiles a prefix: one simple command, lexed like a command line, whose words are
    /// all literal. Operators, redirections, substitutions and `$` expansions are
    /// rejected: they could never be compared word for word with a command.
    pub fn parse(text: &str) -> Result<CommandPrefix, String> {
        let mut lexer = Lexer::new(text, 0);
        lexer
            .sequence(false)
            .map_err(|error| format!("invalid prefix {text:?}: {error}"))?;
        if lexer.nested {
            return Err(format!(
                "prefix {text:?} must be a plain command: subshells and substitutions cannot be matched"
            ));
        }
        let segment = match lexer.segments.as_slice() {
            [] => return Err("empty prefix".to_string()),
            [segment] => segment,
            _ => {
                return Err(format!(
                    "prefix {text:?} must be one command: `;`, `&&`, `||`, `|`, `&` and newlines are not allowed"
                ))
            }
        };
        if segment.redirected {
            return Err(format!("prefix {text:?} must not contain redirections"));
        }
        if segment.words.iter().any(|word| word.dynamic) {
            return Err(format!(
                "prefix {text:?} must be literal: `$` expansions and brace expansions cannot be matched (quote them)"
            ));
        }
        Ok(CommandPrefix {
            text: text.to_string(),
            words: segment.words.iter().map(|word| word.text.clone()).collect(),
        })
    }

    /// The prefix as written in the policy.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The prefix's words after quote removal.
    pub fn words(&self) -> &[String] {
        &self.words
    }
}

/// A command, lexed once and then matched against any number of prefixes (a call's
/// command is the same for every rule that looks at it).
#[derive(Debug, Clone)]
pub struct ParsedCommand {
    /// The segments; for an unlexable command, the crude ones (all marked `crude`).
    segments: Vec<Segment>,
}

impl ParsedCommand {
    /// Lexes a command line. Never fails: an unlexable command keeps crude segments that
    /// only deny and ask rules look at.
    pub fn parse(command: &str) -> ParsedCommand {
        let segments = match parse_command(command, 0) {
            Ok(segments) => segments,
            Err(LexError::TooDeep) => vec![Segment::unknowable()],
            Err(_) => crude_segments(command),
        };
        ParsedCommand { segments }
    }

    /// Takes a command that is already an argv (no shell involved): one segment of
    /// literal words, plus whatever it runs in turn (`sh -c`, `find -exec`).
    pub fn from_argv(argv: &[&str]) -> ParsedCommand {
        let mut segments = Vec::new();
        if !argv.is_empty() {
            let words = argv.iter().map(|arg| Word::literal(arg)).collect();
            push_with_nested(Segment::of(words), 0, &mut segments);
        }
        ParsedCommand { segments }
    }

    /// Whether the command matches `prefixes` for a rule on `side`.
    pub fn matches(&self, prefixes: &[CommandPrefix], side: Side) -> bool {
        // An empty command runs nothing, and an empty prefix list names nothing.
        if self.segments.is_empty() || prefixes.is_empty() {
            return false;
        }
        match side {
            Side::Allow => self.segments.iter().all(|segment| {
                !segment.writes
                    && !segment.crude
                    && prefixes
                        .iter()
                        .any(|prefix| allow_match(&segment.words, prefix))
            }),
            Side::Restrict => self.segments.iter().any(|segment| {
                prefixes
                    .iter()
                    .any(|prefix| restrict_match(&segment.words, prefix))
            }),
        }
    }
}

/// Whether the command line `command` matches `prefixes` for a rule on `side`.
pub fn command_matches(command: &str, prefixes: &[CommandPrefix], side: Side) -> bool {
    ParsedCommand::parse(command).matches(prefixes, side)
}

/// Whether the argv `argv` (one command, no shell parsing of its elements) matches
/// `prefixes` for a rule on `side`.
pub fn argv_matches(argv: &[&str], prefixes: &[CommandPrefix], side: Side) -> bool {
    ParsedCommand::from_argv(argv).matches(prefixes, side)
}

// ---------------------------------------------------------------------------------------
// Matching

/// Allow: the segment starts with exactly the prefix's words. No wrapper stripping and no
/// basename: the rule author allowed `git status`, not `sudo git status` nor `./git status`.
fn allow_match(words: &[Word], prefix: &CommandPrefix) -> bool {
    words.len() >= prefix.words.len()
        && prefix
            .words
            .iter()
            .zip(words)
            .all(|(expected, word)| !word.dynamic && word.text == *expected)
}

/// Restrict: the segment, or what it runs behind wrappers and assignments, starts with
/// the prefix's words, the first compared by basename when the prefix's has no `/`.
fn restrict_match(words: &[Word], prefix: &CommandPrefix) -> bool {
    let by_basename = !prefix
        .words
        .first()
        .is_some_and(|first| first.contains('/'));
    let mut stage = words;
    loop {
        if restrict_match_from(stage, &prefix.words, by_basename) {
            return true;
        }
        match strip_one_wrapper(stage) {
            Some(inner) => stage = inner,
            None => return false,
        }
    }
}

fn restrict_match_from(words: &[Word], prefix: &[String], by_basename: bool) -> bool {
    for (index, expected) in prefix.iter().enumerate() {
        let Some(word) = words.get(index) else {
            return false;
        };
        // `FOO=$(pwd) make` runs `make`, not the assignment: the next stage looks at it.
        if index == 0 && word.dynamic && is_assignment(&word.text) {
            return false;
        }
        // The shell computes this word at run time and may split it into several: it may
        // well be the rest of the prefix (`$(echo rm) -rf /`, `rm $FLAGS /`).
        if word.dynamic {
            return true;
        }
        let basename_here = index == 0 && by_basename;
        let text = if basename_here {
            basename(&word.text)
        } else {
            &word.text
        };
        // An unquoted glob expands to file names, possibly several (`/???/r?`, `rm *` with a
        // file named `-rf`), so a glob that could produce this word may produce the rest.
        if let Some(glob) = &word.glob {
            let could_be = if basename_here {
                basename_glob(glob).is_some_and(|glob| glob.is_match(expected))
            } else {
                glob.is_match(expected)
            };
            if could_be {
                return true;
            }
        }
        if text != expected {
            return false;
        }
    }
    true
}

/// The program a command word names: its last path component (after `/`, or `\\` as
/// Windows writes paths), without the `.exe`/`.cmd`/`.bat`/`.com` Windows adds
/// (`npm.cmd`, `C:\Program Files\Git\bin\bash.exe`).
fn basename(path: &str) -> &str {
    let name = path.rsplit_once(['/', '\\']).map_or(path, |(_, name)| name);
    // (Called for every word judged: the suffix is looked at only after a `.` four from the
    // end.)
    let bytes = name.as_bytes();
    if bytes.len() > 4 && bytes[bytes.len() - 4] == b'.' {
        let (stem, suffix) = name.split_at(name.len() - 4);
        if [".exe", ".cmd", ".bat", ".com"]
            .iter()
            .any(|windows| windows.eq_ignore_ascii_case(suffix))
        {
            return stem;
        }
    }
    name
}

fn basename_glob(glob: &GlobMatcher) -> Option<GlobMatcher> {
    let pattern = glob.glob().glob();
    match pattern.rsplit_once('/') {
        Some((_, name)) => compile_glob(name),
        None => Some(glob.clone()),
    }
}

/// How many compiled word globs a thread keeps (see [`compile_glob`]).
const GLOBS_KEPT: usize = 256;

thread_local! {
    /// Word globs already compiled on this thread, by pattern.
    static GLOBS: RefCell<HashMap<String, Option<GlobMatcher>>> = RefCell::new(HashMap::new());
}

/// A word's glob (`*.rs` in `ls *.rs`), compiled. Compiling one costs far more than
/// matching it and commands repeat their globs, so each thread keeps the last ones it
/// compiled (all forgotten at once when the store is full: simple, and bounded).
pub(crate) fn compile_glob(pattern: &str) -> Option<GlobMatcher> {
    let kept = GLOBS.with(|globs| globs.borrow().get(pattern).cloned());
    if let Some(glob) = kept {
        return glob;
    }
    let glob = compile_glob_now(pattern);
    GLOBS.with(|globs| {
        let mut globs = globs.borrow_mut();
        if globs.len() >= GLOBS_KEPT {
            globs.clear();
        }
        globs.insert(pattern.to_owned(), glob.clone());
    });
    glob
}

fn compile_glob_now(pattern: &str) -> Option<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|glob| glob.compile_matcher())
}

// ---------------------------------------------------------------------------------------
// Segments

/// The folder a command line enters first, written out (`cd ~/app && npm test`, `cd
/// "/srv/my app"; make`): the first segment is `cd` with one literal operand and more of
/// the line follows, not through a pipe. `None` otherwise, and for a line that does not lex.
pub(crate) fn folder_entered_first(command: &str) -> Option<String> {
    let segments = parse_command(command, 0).ok()?;
    let (first, next) = (segments.first()?, segments.get(1)?);
    let [cd, folder] = first.words.as_slice() else {
        return None;
    };
    let literal = !cd.dynamic && !folder.dynamic && folder.glob.is_none();
    (literal && cd.text == "cd" && first.depth == 0 && next.depth == 0 && !next.piped)
        .then(|| folder.text.clone())
}

/// Lexes and expands a command line into its segments: the lexer's segments plus, for
/// each, what it runs in turn.
fn parse_command(command: &str, depth: usize) -> Result<Vec<Segment>, LexError> {
    parse_command_reading(command, depth, None, false).map(|(segments, _)| segments)
}

/// Lexes `command` as [`parse_command`] does, reading the variable of the loop over
/// several items that `reading` names as its item at that index. Also returns the first
/// loop over several known items that `reading` did not name (its variable and how many
/// items), so that the caller can lex the line once per item (`lex/loops.rs`). On
/// `windows`, backslashes in words are path separators.
fn parse_command_reading(
    command: &str,
    depth: usize,
    reading: Option<LoopItems>,
    windows: bool,
) -> Result<(Vec<Segment>, Option<LoopItems>), LexError> {
    if depth > MAX_DEPTH {
        return Err(LexError::TooDeep);
    }
    let mut lexer = Lexer::reading(command, depth, reading, windows);
    lexer.sequence(false)?;
    lexer.fill_here_texts();
    let mut segments = Vec::new();
    for segment in lexer.segments {
        push_with_nested(segment, depth, &mut segments);
    }
    Ok((segments, lexer.several))
}

/// Shells whose `-c` argument is a script.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"];

/// Pushes `segment` and the commands it runs as part of its arguments: the script of
/// `sh -c` (and `su -c`), the words of `eval`, the command of `find -exec … ;`. For Allow these must
/// match too (an allow for `bash` is not an allow for what the script does), for Restrict
/// any of them may match.
fn push_with_nested(segment: Segment, depth: usize, out: &mut Vec<Segment>) {
    let mut runner = segment.words.as_slice();
    while let Some(inner) = strip_one_wrapper(runner) {
        runner = inner;
    }
    if let Some((first, arguments)) = runner.split_first().filter(|(first, _)| !first.dynamic) {
        match basename(&first.text) {
            shell if SHELLS.contains(&shell) => {
                if let Some(script) = shell_script(arguments) {
                    push_script(script, depth, out);
                }
            }
            "powershell" | "pwsh" => {
                if let Some(script) = powershell_script(arguments) {
                    // `powershell -Command "… | Where-Object { $_.Name -like 'x*' }"` from a
                    // POSIX shell: bash puts its last argument for `$_`, which, before any
                    // other command of the line, is the shell's own path, not code; the
                    // agent wrote PowerShell's pipeline variable, which is read so.
                    let first = depth == 0 && out.is_empty();
                    match script {
                        Some(script)
                            if !script.dynamic || (first && only_last_argument(&script.text)) =>
                        {
                            out.extend(
                                powershell::segments(&script.text, depth + 1)
                                    .unwrap_or_else(|| vec![Segment::unknowable()]),
                            );
                        }
                        _ => out.push(Segment::unknowable()),
                    }
                }
            }
            // `cmd /c type x.txt`: Windows' own shell runs the rest of the line.
            "cmd" => {
                if let Some(script) = cmd_script(arguments) {
                    push_script(&script, depth, out);
                }
            }
            // `cmake -E rm -rf build`: CMake's portable commands, read as the POSIX ones.
            "cmake" if arguments.first().is_some_and(|word| word.text == "-E") => {
                match cmake_command(arguments) {
                    Some(script) => push_script(&script, depth, out),
                    None => out.push(Segment::unknowable()),
                }
            }
            // `bun exec 'cmd …'`: a shell line run by Bun's shell.
            "bun" if arguments.first().is_some_and(|word| word.text == "exec") => {
                if let Some(script) = arguments.get(1) {
                    push_script(script, depth, out);
                }
            }
            // `su -c 'x'`; `nix-shell -p jq --run 'jq . x.json'`: the line runs in the shell
            // it makes.
            name @ ("su" | "runuser" | "nix-shell") => {
                let option = if name == "nix-shell" { "--run" } else { "-c" };
                let script = arguments
                    .windows(2)
                    .find(|pair| pair[0].text == option || pair[0].text == "--command")
                    .map(|pair| &pair[1]);
                if let Some(script) = script {
                    push_script(script, depth, out);
                }
            }
            // `hyperfine 'cargo run --release' 'make bench'`: each command it times, and its
            // set-up and clean-up commands, are shell lines.
            "hyperfine" => {
                for script in hyperfine_commands(arguments) {
                    push_script(script, depth, out);
                }
            }
            // `eval "$(brew shellenv)"`: the printer is a segment of its own.
            "eval" if printers::evaluates_printer(arguments) => {}
            "eval" if !arguments.is_empty() => {
                let script = Word {
                    text: arguments
                        .iter()
                        .map(|word| word.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                    dynamic: arguments.iter().any(|word| word.dynamic),
                    glob: None,
                    wild: false,
                };
                push_script(&script, depth, out);
            }
            "find" => {
                for command in find_exec_commands(arguments) {
                    if depth >= MAX_DEPTH {
                        out.push(Segment::unknowable());
                    } else if !command.is_empty() {
                        push_with_nested(Segment::of(command.to_vec()), depth + 1, out);
                    }
                }
            }
            _ => {}
        }
    }
    out.push(segment);
}

/// The script word of a shell invocation: the first operand after options when a `-c`
/// option is among them (`bash -c 'x'`, `sh -ec 'x'`, `bash -o pipefail -c 'x'`).
fn shell_script(arguments: &[Word]) -> Option<&Word> {
    let mut has_c = false;
    let mut index = 0;
    while let Some(word) = arguments.get(index) {
        let text = word.text.as_str();
        if text == "--" || text == "-" {
            index += 1;
            break;
        }
        if word.dynamic || text.len() < 2 || !(text.starts_with('-') || text.starts_with('+')) {
            break;
        }
        if text.starts_with("--") {
            // Long options; two of them take a file name.
            index += if matches!(text, "--rcfile" | "--init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if text.starts_with('-') && text.contains('c') {
            has_c = true;
        }
        // `-o pipefail`, `-euo pipefail`, `+O extglob`: the option name is the next word.
        index += if text[1..].contains(['o', 'O']) { 2 } else { 1 };
    }
    if has_c {
        arguments.get(index)
    } else {
        None
    }
}

/// Pushes the segments of a nested script. A dynamic script (`bash -c "$CMD"`) or one
/// nested too deeply is unknowable; an unlexable one gets the crude treatment, as at top
/// level.
fn push_script(script: &Word, depth: usize, out: &mut Vec<Segment>) {
    if script.dynamic {
        out.push(Segment::unknowable());
        return;
    }
    match parse_command(&script.text, depth + 1) {
        Ok(segments) => out.extend(segments),
        Err(LexError::TooDeep) => out.push(Segment::unknowable()),
        Err(_) => out.extend(crude_segments(&script.text)),
    }
}

/// Whether the only expansions a word's text holds are bash's `$_` (`$_.Name`, `$_ }`).
fn only_last_argument(text: &str) -> bool {
    text.contains("$_")
        && text.match_indices('$').all(|(at, _)| {
            let rest = &text[at + 1..];
            rest.starts_with('_')
                && !rest[1..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// The script `powershell`/`pwsh` runs from its arguments: `Some(Some(word))` for
/// `-Command TEXT` (`-c`, any case; the rest of the line is the script, so only a lone
/// word is read), `Some(None)` for a script that cannot be read (`-EncodedCommand`, more
/// than one word after `-Command`), `None` when it runs no inline script (`-File x.ps1`,
/// an interactive shell).
fn powershell_script(arguments: &[Word]) -> Option<Option<&Word>> {
    let mut index = 0;
    while let Some(word) = arguments.get(index) {
        let lower = word.text.to_ascii_lowercase();
        index += 1;
        match lower.as_str() {
            _ if word.dynamic => return Some(None),
            "-command" | "-c" | "/c" | "-com" | "-comm" | "-comma" | "-comman" => {
                return Some(match &arguments[index..] {
                    [script] => Some(script),
                    _ => None,
                });
            }
            "-encodedcommand" | "-enc" | "-e" | "-ec" => return Some(None),
            "-file" | "-f" => return None,
            "-executionpolicy" | "-ep" | "-windowstyle" | "-w" | "-version" | "-v"
            | "-inputformat" | "-outputformat" | "-configurationname" | "-workingdirectory"
            | "-wd" => index += 1,
            text if text.starts_with('-') || text.starts_with('/') => {}
            // A first word that is no option is the command itself.
            _ => {
                return Some(match &arguments[index - 1..] {
                    [script] => Some(script),
                    _ => None,
                })
            }
        }
    }
    None
}

/// The commands of `find … -exec cmd args ;` (also `-execdir`, `-ok`, `-okdir`, and the
/// `{} +` form).
/// The shell lines `hyperfine ARGUMENTS` runs: its operands, and the values of its
/// `--prepare`, `--setup`, `--cleanup` and `--conclude` (the values of its other options
/// are names, numbers and files; `-L NAME VALUES` takes two words, `-P NAME MIN MAX` three).
fn hyperfine_commands(arguments: &[Word]) -> Vec<&Word> {
    let mut commands = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        let (option, glued) = match word.text.split_once('=') {
            Some((option, _)) if option.starts_with("--") => (option, true),
            _ => (word.text.as_str(), false),
        };
        let takes = match option {
            "-p" | "--prepare" | "-s" | "--setup" | "-c" | "--cleanup" | "--conclude" => {
                if glued {
                    // (`--prepare='make clean'`: the value is in the word.)
                    commands.push(word);
                } else if let Some(value) = words.next() {
                    commands.push(value);
                }
                continue;
            }
            "-L" | "--parameter-list" | "-D" | "--parameter-step-size" => 2,
            "-P" | "--parameter-scan" => 3,
            _ if HYPERFINE_VALUED.contains(&option) => 1,
            _ if option.starts_with('-') => 0,
            _ => {
                commands.push(word);
                0
            }
        };
        let takes = if glued { 0 } else { takes };
        for _ in 0..takes {
            words.next();
        }
    }
    commands
}

/// hyperfine's options that take one value.
const HYPERFINE_VALUED: &[&str] = &[
    "-w",
    "--warmup",
    "-m",
    "--min-runs",
    "-M",
    "--max-runs",
    "-r",
    "--runs",
    "-S",
    "--shell",
    "-n",
    "--command-name",
    "-u",
    "--time-unit",
    "--style",
    "--sort",
    "--export-asciidoc",
    "--export-csv",
    "--export-json",
    "--export-markdown",
    "--export-orgmode",
    "--output",
    "--input",
];

fn find_exec_commands(arguments: &[Word]) -> Vec<&[Word]> {
    let mut commands = Vec::new();
    let mut index = 0;
    while index < arguments.len() {
        let action = &arguments[index].text;
        index += 1;
        if !matches!(action.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            continue;
        }
        let start = index;
        while index < arguments.len() {
            let text = &arguments[index].text;
            if text == ";" || (text == "+" && arguments[index - 1].text == "{}") {
                break;
            }
            index += 1;
        }
        commands.push(&arguments[start..index]);
        index += 1;
    }
    commands
}

/// The fallback for text that cannot be lexed (unbalanced quotes or parentheses): it is
/// cut on every operator character, once keeping and once also cutting on quotes, and
/// stripped of quotes and backslashes, so whatever the text hides is still seen by deny
/// and ask rules. Every segment is `crude`, so an allow never matches; there is at least
/// one, so even text that yields no word is not an empty command.
fn crude_segments(text: &str) -> Vec<Segment> {
    let is_operator = |c: char| matches!(c, ';' | '&' | '|' | '(' | ')' | '`' | '<' | '>' | '\n');
    let mut segments = Vec::new();
    for cut_on_quotes in [false, true] {
        let pieces = text.split(|c| is_operator(c) || (cut_on_quotes && matches!(c, '\'' | '"')));
        for piece in pieces {
            let words: Vec<Word> = piece
                .split_whitespace()
                .map(|word| word.replace(['\'', '"', '\\'], ""))
                .filter(|word| !word.is_empty())
                .map(|word| Word::literal(&word))
                .collect();
            if !words.is_empty() {
                segments.push(Segment {
                    words,
                    crude: true,
                    ..Segment::default()
                });
            }
        }
    }
    if segments.is_empty() {
        segments.push(Segment {
            crude: true,
            ..Segment::default()
        });
    }
    segments
}
