//! Expansions inside a word: `$NAME` and `${…}` (a known variable read as its value),
//! `$(…)` and backtick substitutions (lexed as command lines of their own), `$((…))`
//! arithmetic and `$'…'` strings.

use super::*;
use crate::matcher::shell::printers::{prints_environment, PRINTED_ENVIRONMENT};

/// How a word shows `$(git rev-parse --show-toplevel)`: the top of the work tree.
pub(in crate::matcher::shell) const TOPLEVEL: &str = "$(git rev-parse --show-toplevel)";
/// The work tree's git folder, as the judge places it (`is_git_dir_lookup`).
const TOPLEVEL_GIT: &str = "$(git rev-parse --show-toplevel)/.git";

/// Whether a substitution's command prints the top of the work tree (`git rev-parse
/// --show-toplevel`, its errors sent anywhere).
fn is_toplevel_lookup(inside: &str) -> bool {
    let words: Vec<&str> = inside
        .split_whitespace()
        .filter(|word| !word.starts_with("2>"))
        .collect();
    words == ["git", "rev-parse", "--show-toplevel"]
}

/// `git rev-parse --git-dir` (also `--git-common-dir`, `--absolute-git-dir`): the work
/// tree's git folder, `.git` at its top (a linked worktree's common folder is its main
/// repository's; what is done there is judged as git's internals either way).
fn is_git_dir_lookup(inside: &str) -> bool {
    let words: Vec<&str> = inside
        .split_whitespace()
        .filter(|word| !word.starts_with("2>"))
        .collect();
    matches!(
        words.as_slice(),
        [
            "git",
            "rev-parse",
            "--git-dir" | "--git-common-dir" | "--absolute-git-dir"
        ]
    )
}

impl Lexer {
    /// Reads an expansion starting at `$`.
    pub(super) fn dollar(
        &mut self,
        word: &mut WordBuilder,
        in_double_quotes: bool,
    ) -> Result<(), LexError> {
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                self.position += 3;
                self.arithmetic()?;
                word.push_expansion("$((…))");
            }
            Some('(') => {
                self.position += 2;
                let start = self.position;
                self.nested(|lexer| lexer.sequence(true))?;
                let inside: String = self.chars[start..self.position.saturating_sub(1)]
                    .iter()
                    .collect();
                if word.text.is_empty() && !word.dynamic {
                    self.looked_up = program_lookup(&inside);
                }
                // `$(pwd)` is the working directory, as `$PWD` is; `$(git rev-parse
                // --show-toplevel)` is the top of the work tree, kept as written for the
                // judge to place (`classify/files.rs`).
                word.push_expansion(if matches!(inside.trim(), "pwd" | "pwd -L") {
                    "$PWD"
                } else if is_toplevel_lookup(&inside) {
                    TOPLEVEL
                } else if is_git_dir_lookup(&inside) {
                    TOPLEVEL_GIT
                } else if prints_environment(&inside) {
                    PRINTED_ENVIRONMENT
                } else {
                    "$(…)"
                });
            }
            Some('{') => {
                self.position += 2;
                let start = self.position;
                self.braced_parameter()?;
                // `${HOME}` is shown as itself; anything more is shown as `${…}`.
                let inside: String = self.chars[start..self.position.saturating_sub(1)]
                    .iter()
                    .collect();
                let inside = same_value(&inside).unwrap_or(inside);
                if !inside.is_empty()
                    && inside
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    if !self.substitute(&inside, word, in_double_quotes) {
                        word.push_expansion(&format!("${{{inside}}}"));
                    }
                } else if let Some(name) = defaulted_name(&inside) {
                    // `${TOKEN:-unset}` is TOKEN's value when it is set: the name is kept,
                    // so printing it is printing that variable.
                    word.push_expansion(&format!("${{{name}:-…}}"));
                } else if let Some(name) = derived_name(&inside) {
                    // `${TOKEN:0:4}`, `${TOKEN#ghp_}`, `${TOKEN^^}`: a part or a changed
                    // copy of TOKEN's value, which shows it as much.
                    word.push_expansion(&format!("${{{name}:…}}"));
                } else if let Some(name) = inside.strip_prefix('!') {
                    // `${!k}`: the variable `k` names. Inside a loop over known names
                    // (`for k in AWS_SECRET_ACCESS_KEY …`) that is each of them; else any.
                    match self.indirect_target(name) {
                        Some(target) => word.push_expansion(&format!("${{{target}}}")),
                        None => word.push_expansion(INDIRECT),
                    }
                } else {
                    word.push_expansion("${…}");
                }
            }
            Some('\'') if !in_double_quotes => {
                self.position += 2;
                word.quoted = true;
                word.started = true;
                self.ansi_c_quoted(word)?;
            }
            // `$"…"` is a translatable string: lexed as `"…"`.
            Some('"') if !in_double_quotes => self.position += 1,
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.position += 2;
                word.push_expansion(&format!("${c}"));
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.position += 1;
                let mut name = String::from("$");
                while let Some(c) = self
                    .peek()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    name.push(c);
                    self.position += 1;
                }
                if !self.substitute(&name[1..], word, in_double_quotes) {
                    word.push_expansion(&name);
                }
            }
            _ => {
                word.push_literal('$');
                self.position += 1;
            }
        }
        Ok(())
    }

    /// Reads `$(( … ))` after its opening: an arithmetic expression, in which only the
    /// substitutions matter.
    pub(super) fn arithmetic(&mut self) -> Result<(), LexError> {
        let mut scratch = WordBuilder::default();
        let mut open = 0usize;
        loop {
            match self.peek() {
                None => return Err(LexError::MissingCloseParenthesis),
                Some('(') => {
                    open += 1;
                    self.position += 1;
                }
                Some(')') if open > 0 => {
                    open -= 1;
                    self.position += 1;
                }
                Some(')') if self.peek_at(1) == Some(')') => {
                    self.position += 2;
                    return Ok(());
                }
                // `$((a) …)`: bash would retry as a command substitution; we fail closed.
                Some(')') => return Err(LexError::MissingCloseParenthesis),
                Some('$') => self.dollar(&mut scratch, true)?,
                Some('`') => {
                    self.position += 1;
                    self.backtick(&mut scratch, true)?;
                }
                Some(_) => self.position += 1,
            }
        }
    }

    /// Reads `${ … }` after its opening: the parameter's value is unknown, but a default
    /// such as `${x:-$(cmd)}` still runs its substitution.
    pub(super) fn braced_parameter(&mut self) -> Result<(), LexError> {
        let mut scratch = WordBuilder::default();
        loop {
            match self.peek() {
                None => return Err(LexError::UnterminatedBrace),
                Some('}') => {
                    self.position += 1;
                    return Ok(());
                }
                Some('\\') => self.position = (self.position + 2).min(self.chars.len()),
                Some('\'') => {
                    self.position += 1;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.position += 1;
                    }
                    if self.peek().is_none() {
                        return Err(LexError::UnterminatedSingleQuote);
                    }
                    self.position += 1;
                }
                Some('"') => {
                    self.position += 1;
                    self.double_quoted(&mut scratch, true)?;
                }
                Some('$') => self.dollar(&mut scratch, true)?,
                Some('`') => {
                    self.position += 1;
                    self.backtick(&mut scratch, true)?;
                }
                Some(_) => self.position += 1,
            }
        }
    }

    /// Reads a backtick substitution after its opening backtick. Its text is unescaped
    /// (`` \` ``, `\\`, `\$`, and `\"` inside double quotes) and lexed as a command line of
    /// its own, which is how the shell nests backticks.
    pub(super) fn backtick(
        &mut self,
        word: &mut WordBuilder,
        in_double_quotes: bool,
    ) -> Result<(), LexError> {
        let mut script = String::new();
        loop {
            match self.peek() {
                None => return Err(LexError::UnterminatedBacktick),
                Some('`') => break,
                Some('\\') => match self.peek_at(1) {
                    Some(escaped @ ('`' | '\\' | '$')) => {
                        script.push(escaped);
                        self.position += 1;
                    }
                    Some('"') if in_double_quotes => {
                        script.push('"');
                        self.position += 1;
                    }
                    _ => script.push('\\'),
                },
                Some(c) => script.push(c),
            }
            self.position += 1;
        }
        self.position += 1;
        if self.depth >= MAX_DEPTH {
            return Err(LexError::TooDeep);
        }
        let mut inner = Lexer::new(&script, self.depth + 1);
        inner.sequence(false)?;
        inner.fill_here_texts();
        self.segments.append(&mut inner.segments);
        self.nested = true;
        word.push_expansion(if prints_environment(&script) {
            PRINTED_ENVIRONMENT
        } else {
            "`…`"
        });
        Ok(())
    }
}

/// NAME, when `inside` is `which NAME` or `command -v NAME` (a plain program name, no
/// options, nothing else): the program the substitution prints the path of.
fn program_lookup(inside: &str) -> Option<String> {
    let words: Vec<&str> = inside.split_ascii_whitespace().collect();
    let name = match words.as_slice() {
        ["which", name] | ["command", "-v", name] => *name,
        _ => return None,
    };
    let plain = !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
    (plain && !name.is_empty()).then(|| name.to_owned())
}

/// A braced parameter whose value is its variable's: `${NAME:?message}` and `${NAME?}` (the
/// value, or the shell stops), and `${HOME:-…}` (the home is always set). `rm -rf
/// "${HOME:?}"/` deletes the home.
fn same_value(inside: &str) -> Option<String> {
    let name_end = inside
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|end| *end > 0)?;
    let (name, operator) = inside.split_at(name_end);
    let checked = operator.starts_with(":?") || operator.starts_with('?');
    let defaulted = name == "HOME" && (operator.starts_with(":-") || operator.starts_with('-'));
    (checked || defaulted).then(|| name.to_owned())
}

/// The variable of a parameter expansion whose value is that variable's when it is set
/// (`NAME:-default`, `NAME-default`, `NAME:=default`, `NAME:?message`); not an alternative
/// (`NAME:+x`), a length, a slice or a substitution, which show something else.
/// How a word shows `${!NAME}` when the variable it names is not known.
pub(in crate::matcher::shell) const INDIRECT: &str = "${!…}";

/// The variable whose value a substring, pattern removal or case change is taken from:
/// `TOKEN` in `${TOKEN:0:4}`, `${TOKEN#*_}`, `${TOKEN%%x}`, `${TOKEN/a/b}`, `${TOKEN^^}`.
/// Not `${TOKEN:+set}` (the value is not shown), nor `${#TOKEN}` (its length).
fn derived_name(inside: &str) -> Option<&str> {
    let end = inside
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|&end| end > 0)?;
    let (name, operator) = inside.split_at(end);
    let derived = match operator.strip_prefix(':') {
        Some(offset) => offset.starts_with(|c: char| c.is_ascii_digit() || c == ' ' || c == '('),
        None => operator.starts_with(['#', '%', '/', '^', ',', '@']),
    };
    (name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && derived).then_some(name)
}

fn defaulted_name(inside: &str) -> Option<&str> {
    let end = inside
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|&end| end > 0)?;
    let (name, operator) = inside.split_at(end);
    let operator = operator.strip_prefix(':').unwrap_or(operator);
    (name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && operator.starts_with(['-', '=', '?']))
    .then_some(name)
}
