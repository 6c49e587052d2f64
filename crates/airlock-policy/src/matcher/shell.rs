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

use std::mem;

use globset::{GlobBuilder, GlobMatcher};

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

fn basename(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

fn basename_glob(glob: &GlobMatcher) -> Option<GlobMatcher> {
    let pattern = glob.glob().glob();
    match pattern.rsplit_once('/') {
        Some((_, name)) => compile_glob(name),
        None => Some(glob.clone()),
    }
}

fn compile_glob(pattern: &str) -> Option<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|glob| glob.compile_matcher())
}

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
];

/// Shell reserved words that may precede a command in a segment (`if rm …`, `then rm …`,
/// `{ rm …; }`, `! rm …`): Restrict looks past them too.
const KEYWORDS: &[&str] = &[
    "!", "{", "if", "then", "elif", "else", "while", "until", "do",
];

/// Removes one layer in front of the command that a segment really runs: a `VAR=value`
/// assignment, a reserved word, or a wrapper with its options. `None` when there is none.
fn strip_one_wrapper(words: &[Word]) -> Option<&[Word]> {
    let (first, rest) = words.split_first()?;
    if is_assignment(&first.text) || KEYWORDS.contains(&first.text.as_str()) {
        return Some(rest);
    }
    if first.dynamic {
        return None;
    }
    let &(_, options_with_value, operands) = WRAPPERS
        .iter()
        .find(|(name, _, _)| *name == basename(&first.text))?;
    let mut rest = rest;
    while let Some((option, after)) = rest.split_first() {
        if option.text == "--" {
            rest = after;
            break;
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
    Some(rest.get(operands..).unwrap_or_default())
}

/// `NAME=value` or `NAME+=value`: a variable assignment in front of a command.
fn is_assignment(word: &str) -> bool {
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

// ---------------------------------------------------------------------------------------
// Segments

/// One simple command of a command line.
#[derive(Debug, Clone, Default)]
struct Segment {
    words: Vec<Word>,
    /// It has a redirection of any kind.
    redirected: bool,
    /// It writes a file through a redirection (`>`, `>>`, `&>`, `2>`, `<>`…): a read-only
    /// allow such as `cat` must not cover `cat a > b`.
    writes: bool,
    /// It comes from the crude fallback for unlexable text: only Restrict looks at it.
    crude: bool,
}

impl Segment {
    fn of(words: Vec<Word>) -> Segment {
        Segment {
            words,
            ..Segment::default()
        }
    }

    /// A command we cannot see (a script in a variable, nesting past [`MAX_DEPTH`]): one
    /// dynamic word, which no allow matches and every deny or ask rule does.
    fn unknowable() -> Segment {
        Segment::of(vec![Word {
            text: "…".to_string(),
            dynamic: true,
            glob: None,
        }])
    }
}

/// One word after quote removal.
#[derive(Debug, Clone, Default)]
struct Word {
    /// The literal value; expansions appear as their source text (`$HOME`, `$(…)`).
    text: String,
    /// The shell computes (part of) it at run time: it may be any word, or several.
    dynamic: bool,
    /// It holds unquoted glob characters: the words it may expand to.
    glob: Option<GlobMatcher>,
}

impl Word {
    fn literal(text: &str) -> Word {
        Word {
            text: text.to_string(),
            ..Word::default()
        }
    }
}

/// Lexes and expands a command line into its segments: the lexer's segments plus, for
/// each, what it runs in turn.
fn parse_command(command: &str, depth: usize) -> Result<Vec<Segment>, LexError> {
    if depth > MAX_DEPTH {
        return Err(LexError::TooDeep);
    }
    let mut lexer = Lexer::new(command, depth);
    lexer.sequence(false)?;
    let mut segments = Vec::new();
    for segment in lexer.segments {
        push_with_nested(segment, depth, &mut segments);
    }
    Ok(segments)
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
            "su" | "runuser" => {
                let script = arguments
                    .windows(2)
                    .find(|pair| matches!(pair[0].text.as_str(), "-c" | "--command"))
                    .map(|pair| &pair[1]);
                if let Some(script) = script {
                    push_script(script, depth, out);
                }
            }
            "eval" if !arguments.is_empty() => {
                let script = Word {
                    text: arguments
                        .iter()
                        .map(|word| word.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                    dynamic: arguments.iter().any(|word| word.dynamic),
                    glob: None,
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

/// The commands of `find … -exec cmd args ;` (also `-execdir`, `-ok`, `-okdir`, and the
/// `{} +` form).
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

// ---------------------------------------------------------------------------------------
// Lexing

/// Why a command line cannot be lexed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum LexError {
    #[error("unbalanced quotes: unterminated single quote")]
    UnterminatedSingleQuote,
    #[error("unbalanced quotes: unterminated double quote")]
    UnterminatedDoubleQuote,
    #[error("unbalanced quotes: unterminated backtick")]
    UnterminatedBacktick,
    #[error("unbalanced parentheses: missing `)`")]
    MissingCloseParenthesis,
    #[error("unbalanced parentheses: unexpected `)`")]
    UnexpectedCloseParenthesis,
    #[error("unexpected `(` inside a command")]
    UnexpectedOpenParenthesis,
    #[error("unterminated `${{`")]
    UnterminatedBrace,
    #[error("redirection without a target")]
    MissingRedirectionTarget,
    #[error("here-document without its closing delimiter")]
    UnterminatedHereDocument,
    #[error("nested too deeply")]
    TooDeep,
}

/// A here-document announced by `<<` whose body starts after the next newline.
struct HereDocument {
    delimiter: String,
    /// `<<-`: leading tabs are stripped from body lines and the delimiter line.
    strip_tabs: bool,
    /// The delimiter was unquoted, so the body undergoes substitutions.
    expands: bool,
}

/// A word being read.
#[derive(Default)]
struct WordBuilder {
    text: String,
    /// The glob pattern: unquoted metacharacters as they are, everything else escaped.
    pattern: String,
    /// Something was read, if only `""`.
    started: bool,
    /// Some of it was quoted or escaped (so `2>` is not a file descriptor, `<<'EOF'`
    /// does not expand).
    quoted: bool,
    dynamic: bool,
    glob: bool,
    /// An unquoted `{` was seen: a following unquoted `,` or `..` makes a brace expansion.
    brace: bool,
}

impl WordBuilder {
    /// A quoted or escaped character: never special.
    fn push_literal(&mut self, c: char) {
        self.started = true;
        self.text.push(c);
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            self.pattern.push('\\');
        }
        self.pattern.push(c);
    }

    /// An unquoted ordinary character.
    fn push_plain(&mut self, c: char) {
        match c {
            '*' | '?' | '[' | ']' => {
                self.started = true;
                self.glob |= c != ']';
                self.text.push(c);
                self.pattern.push(c);
            }
            '{' => {
                self.brace = true;
                self.push_literal(c);
            }
            ',' if self.brace => {
                self.dynamic = true;
                self.push_literal(c);
            }
            '.' if self.brace && self.text.ends_with('.') => {
                self.dynamic = true;
                self.push_literal(c);
            }
            _ => self.push_literal(c),
        }
    }

    /// An expansion: its value is only known at run time.
    fn push_expansion(&mut self, shown: &str) {
        self.started = true;
        self.dynamic = true;
        self.text.push_str(shown);
        for c in shown.chars() {
            self.push_pattern_literal(c);
        }
    }

    fn push_pattern_literal(&mut self, c: char) {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            self.pattern.push('\\');
        }
        self.pattern.push(c);
    }

    /// Digits (or `{name}`) right before `<` or `>`: a file descriptor, not a word.
    fn is_file_descriptor(&self) -> bool {
        let text = self.text.as_str();
        !self.quoted
            && !self.dynamic
            && !text.is_empty()
            && (text.chars().all(|c| c.is_ascii_digit())
                || text
                    .strip_prefix('{')
                    .and_then(|t| t.strip_suffix('}'))
                    .is_some_and(|name| {
                        !name.is_empty()
                            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    }))
    }

    fn finish(self) -> Word {
        let glob = if self.glob && !self.dynamic {
            // A pattern that does not compile (`[` alone) is what bash leaves as it is.
            compile_glob(&self.pattern)
        } else {
            None
        };
        Word {
            text: self.text,
            dynamic: self.dynamic,
            glob,
        }
    }
}

/// What a redirection operator does with its target.
#[derive(Clone, Copy)]
enum Redirection {
    /// Opens the target for writing.
    Write,
    /// `>&`: duplicates a descriptor when the target is a number or `-`, else writes a file.
    Duplicate,
    /// Reads the target (or, for `<<<`, takes it as text).
    Read,
    /// `<<` / `<<-`: a here-document.
    HereDocument { strip_tabs: bool },
}

/// Longest first, so `>>` is not read as `>` `>`.
const REDIRECTIONS: &[(&str, Redirection)] = &[
    ("&>>", Redirection::Write),
    ("<<<", Redirection::Read),
    ("<<-", Redirection::HereDocument { strip_tabs: true }),
    ("&>", Redirection::Write),
    (">>", Redirection::Write),
    (">|", Redirection::Write),
    (">&", Redirection::Duplicate),
    ("<<", Redirection::HereDocument { strip_tabs: false }),
    ("<>", Redirection::Write),
    ("<&", Redirection::Read),
    (">", Redirection::Write),
    ("<", Redirection::Read),
];

/// Redirection targets that writing to changes nothing on disk.
const HARMLESS_SINKS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr"];

/// A hand-written lexer for the shell grammar's word and operator level. It produces the
/// segments in the order they end (substitutions before the command that holds them).
struct Lexer {
    chars: Vec<char>,
    position: usize,
    depth: usize,
    segments: Vec<Segment>,
    here_documents: Vec<HereDocument>,
    /// A subshell or substitution was seen (a prefix must not have one).
    nested: bool,
}

impl Lexer {
    fn new(text: &str, depth: usize) -> Lexer {
        Lexer {
            chars: text.chars().collect(),
            position: 0,
            depth,
            segments: Vec::new(),
            here_documents: Vec::new(),
            nested: false,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.position).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.position + offset).copied()
    }

    /// `<(` or `>(` at the current position: a process substitution, which is a word.
    fn at_process_substitution(&self) -> bool {
        matches!(self.peek(), Some('<' | '>')) && self.peek_at(1) == Some('(')
    }

    /// Runs `lex` one level deeper (subshells, substitutions), failing past [`MAX_DEPTH`].
    fn nested(
        &mut self,
        lex: impl FnOnce(&mut Lexer) -> Result<(), LexError>,
    ) -> Result<(), LexError> {
        if self.depth >= MAX_DEPTH {
            return Err(LexError::TooDeep);
        }
        self.nested = true;
        self.depth += 1;
        let result = lex(self);
        self.depth -= 1;
        result
    }

    fn finish_segment(&mut self, segment: &mut Segment) {
        let segment = mem::take(segment);
        // A segment of redirections only still writes (`(cat a) > b`); otherwise an empty
        // segment (`;;`, a subshell's outer shell) runs nothing.
        if !segment.words.is_empty() || segment.writes {
            self.segments.push(segment);
        }
    }

    /// Lexes a list of commands up to the end of the text or, when `in_parentheses`, up to
    /// and including the `)` that closes a subshell or substitution.
    fn sequence(&mut self, in_parentheses: bool) -> Result<(), LexError> {
        let mut segment = Segment::default();
        loop {
            let Some(c) = self.peek() else {
                if in_parentheses {
                    return Err(LexError::MissingCloseParenthesis);
                }
                if !self.here_documents.is_empty() {
                    return Err(LexError::UnterminatedHereDocument);
                }
                self.finish_segment(&mut segment);
                return Ok(());
            };
            match c {
                ' ' | '\t' => self.position += 1,
                '\n' => {
                    self.position += 1;
                    self.finish_segment(&mut segment);
                    self.here_document_bodies()?;
                }
                '&' if self.peek_at(1) == Some('>') => self.redirection(&mut segment)?,
                ';' | '&' | '|' => {
                    // `&&`, `||`, `|&`, `;;`, `;&`: the second character belongs to the operator.
                    self.position += 1;
                    if matches!(self.peek(), Some(';' | '&' | '|')) && self.peek_at(1) != Some('>')
                    {
                        self.position += 1;
                    }
                    self.finish_segment(&mut segment);
                }
                '(' => {
                    // A subshell only stands where a command starts; elsewhere `(` is a
                    // syntax error for the shell (or syntax we do not follow: arrays,
                    // function definitions), so it fails closed.
                    if !segment.words.is_empty() {
                        return Err(LexError::UnexpectedOpenParenthesis);
                    }
                    self.position += 1;
                    self.nested(|lexer| lexer.sequence(true))?;
                }
                ')' => {
                    if !in_parentheses {
                        return Err(LexError::UnexpectedCloseParenthesis);
                    }
                    self.position += 1;
                    self.finish_segment(&mut segment);
                    return Ok(());
                }
                '<' | '>' if !self.at_process_substitution() => self.redirection(&mut segment)?,
                // Only reached where a word would start: the rest of the line is a comment.
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.position += 1;
                    }
                }
                _ => {
                    let mut word = WordBuilder::default();
                    self.word(&mut word)?;
                    let before_redirection =
                        matches!(self.peek(), Some('<' | '>')) && !self.at_process_substitution();
                    if before_redirection && word.is_file_descriptor() {
                        self.redirection(&mut segment)?;
                    } else if word.started {
                        segment.words.push(word.finish());
                    }
                }
            }
        }
    }

    /// Reads one word (up to a blank or an operator), quotes and expansions included.
    fn word(&mut self, word: &mut WordBuilder) -> Result<(), LexError> {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' => break,
                '<' | '>' => {
                    if !self.at_process_substitution() {
                        break;
                    }
                    self.position += 2;
                    self.nested(|lexer| lexer.sequence(true))?;
                    word.push_expansion("/dev/fd/…");
                }
                '\\' => {
                    self.position += 1;
                    match self.peek() {
                        // A line continuation joins the lines.
                        Some('\n') => self.position += 1,
                        Some(escaped) => {
                            word.quoted = true;
                            word.push_literal(escaped);
                            self.position += 1;
                        }
                        None => word.push_literal('\\'),
                    }
                }
                '\'' => {
                    self.position += 1;
                    word.quoted = true;
                    word.started = true;
                    loop {
                        match self.peek() {
                            None => return Err(LexError::UnterminatedSingleQuote),
                            Some('\'') => break,
                            Some(quoted) => word.push_literal(quoted),
                        }
                        self.position += 1;
                    }
                    self.position += 1;
                }
                '"' => {
                    self.position += 1;
                    word.quoted = true;
                    word.started = true;
                    self.double_quoted(word, true)?;
                }
                '`' => {
                    self.position += 1;
                    self.backtick(word, false)?;
                }
                '$' => self.dollar(word, false)?,
                _ => {
                    word.push_plain(c);
                    self.position += 1;
                }
            }
        }
        Ok(())
    }

    /// Reads the inside of `"…"` (the opening quote already read) up to the closing quote,
    /// or, when `closed` is false, up to the end (a here-document body). Substitutions
    /// inside are still substitutions.
    fn double_quoted(&mut self, word: &mut WordBuilder, closed: bool) -> Result<(), LexError> {
        loop {
            match self.peek() {
                None if closed => return Err(LexError::UnterminatedDoubleQuote),
                None => return Ok(()),
                Some('"') if closed => {
                    self.position += 1;
                    return Ok(());
                }
                Some('\\') => match self.peek_at(1) {
                    Some('\n') => self.position += 2,
                    Some(escaped @ ('$' | '`' | '"' | '\\')) => {
                        word.push_literal(escaped);
                        self.position += 2;
                    }
                    _ => {
                        word.push_literal('\\');
                        self.position += 1;
                    }
                },
                Some('`') => {
                    self.position += 1;
                    self.backtick(word, true)?;
                }
                Some('$') => self.dollar(word, true)?,
                Some(c) => {
                    word.push_literal(c);
                    self.position += 1;
                }
            }
        }
    }

    /// Reads an expansion starting at `$`.
    fn dollar(&mut self, word: &mut WordBuilder, in_double_quotes: bool) -> Result<(), LexError> {
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                self.position += 3;
                self.arithmetic()?;
                word.push_expansion("$((…))");
            }
            Some('(') => {
                self.position += 2;
                self.nested(|lexer| lexer.sequence(true))?;
                word.push_expansion("$(…)");
            }
            Some('{') => {
                self.position += 2;
                self.braced_parameter()?;
                word.push_expansion("${…}");
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
                word.push_expansion(&name);
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
    fn arithmetic(&mut self) -> Result<(), LexError> {
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
    fn braced_parameter(&mut self) -> Result<(), LexError> {
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
    fn backtick(&mut self, word: &mut WordBuilder, in_double_quotes: bool) -> Result<(), LexError> {
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
        self.segments.append(&mut inner.segments);
        self.nested = true;
        word.push_expansion("`…`");
        Ok(())
    }

    /// Reads `$'…'` after its opening: ANSI-C quoting, decoded, because `$'\x72m'` is `rm`.
    fn ansi_c_quoted(&mut self, word: &mut WordBuilder) -> Result<(), LexError> {
        loop {
            let Some(c) = self.peek() else {
                return Err(LexError::UnterminatedSingleQuote);
            };
            self.position += 1;
            if c == '\'' {
                return Ok(());
            }
            if c != '\\' {
                word.push_literal(c);
                continue;
            }
            let Some(escape) = self.peek() else {
                return Err(LexError::UnterminatedSingleQuote);
            };
            self.position += 1;
            let decoded = match escape {
                'n' => Some('\n'),
                't' => Some('\t'),
                'r' => Some('\r'),
                'a' => Some('\u{7}'),
                'b' => Some('\u{8}'),
                'e' | 'E' => Some('\u{1b}'),
                'f' => Some('\u{c}'),
                'v' => Some('\u{b}'),
                'x' => self.digits(16, 2).map(byte_char),
                'u' => self.digits(16, 4).and_then(char::from_u32),
                'U' => self.digits(16, 8).and_then(char::from_u32),
                '0'..='7' => {
                    self.position -= 1;
                    self.digits(8, 3).map(byte_char)
                }
                'c' => self.peek().map(|c| {
                    self.position += 1;
                    char::from(c as u8 & 0x1f)
                }),
                other => {
                    // `\\`, `\'`, `\"`, `\?` are the character; anything else stays as written.
                    if !matches!(other, '\\' | '\'' | '"' | '?') {
                        word.push_literal('\\');
                    }
                    Some(other)
                }
            };
            match decoded {
                // A raw non-ASCII byte has no faithful text form: treat the word as unknown.
                Some(c) if c == char::REPLACEMENT_CHARACTER => word.push_expansion("$'…'"),
                Some(c) => word.push_literal(c),
                None => word.push_expansion("$'…'"),
            }
        }
    }

    /// Reads up to `max` digits in `radix`; `None` when there is none.
    fn digits(&mut self, radix: u32, max: usize) -> Option<u32> {
        let mut value: Option<u32> = None;
        for _ in 0..max {
            let Some(digit) = self.peek().and_then(|c| c.to_digit(radix)) else {
                break;
            };
            value = Some(value.unwrap_or(0) * radix + digit);
            self.position += 1;
        }
        value
    }

    /// Reads a redirection (operator and target) at the current position, the file
    /// descriptor before it already consumed.
    fn redirection(&mut self, segment: &mut Segment) -> Result<(), LexError> {
        segment.redirected = true;
        let ahead: String = self.chars[self.position..].iter().take(3).collect();
        let Some(&(operator, kind)) = REDIRECTIONS.iter().find(|(op, _)| ahead.starts_with(op))
        else {
            return Err(LexError::MissingRedirectionTarget);
        };
        self.position += operator.chars().count();
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.position += 1;
        }
        let mut target = WordBuilder::default();
        self.word(&mut target)?;
        if !target.started {
            return Err(LexError::MissingRedirectionTarget);
        }
        let harmless = !target.dynamic && HARMLESS_SINKS.contains(&target.text.as_str());
        match kind {
            Redirection::Write => segment.writes |= !harmless,
            Redirection::Duplicate => {
                // `2>&1`, `>&2`, `>&-`, `3>&1-` only move descriptors; `>&file` is `&>file`.
                let descriptor = target.text.strip_suffix('-').unwrap_or(&target.text);
                let duplicates = !target.dynamic && descriptor.chars().all(|c| c.is_ascii_digit());
                segment.writes |= !duplicates && !harmless;
            }
            Redirection::Read => {}
            Redirection::HereDocument { strip_tabs } => self.here_documents.push(HereDocument {
                delimiter: target.text,
                strip_tabs,
                expands: !target.quoted,
            }),
        }
        Ok(())
    }

    /// After a newline: reads the bodies of the here-documents announced on that line.
    /// An unquoted delimiter means the body's substitutions run, so they become segments.
    fn here_document_bodies(&mut self) -> Result<(), LexError> {
        for document in mem::take(&mut self.here_documents) {
            let mut body = String::new();
            loop {
                if self.position >= self.chars.len() {
                    return Err(LexError::UnterminatedHereDocument);
                }
                let end = self.chars[self.position..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.chars.len(), |offset| self.position + offset);
                let line: String = self.chars[self.position..end].iter().collect();
                self.position = (end + 1).min(self.chars.len());
                let line = if document.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if line == document.delimiter {
                    break;
                }
                body.push_str(line);
                body.push('\n');
            }
            if document.expands {
                let mut inner = Lexer::new(&body, self.depth);
                inner.double_quoted(&mut WordBuilder::default(), false)?;
                self.segments.append(&mut inner.segments);
            }
        }
        Ok(())
    }
}

/// A `\xHH` or `\NNN` byte as a character; a byte above ASCII stands alone in no encoding
/// we can compare, so it becomes the replacement character (and the word unknown).
fn byte_char(value: u32) -> char {
    match u8::try_from(value) {
        Ok(byte) if byte.is_ascii() => char::from(byte),
        _ => char::REPLACEMENT_CHARACTER,
    }
}

#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn prefixes(texts: &[&str]) -> Vec<CommandPrefix> {
        texts
            .iter()
            .map(|text| CommandPrefix::parse(text).unwrap_or_else(|error| panic!("{error}")))
            .collect()
    }

    /// Each case: (command line, expected match) against `prefix_texts` on `side`.
    #[track_caller]
    fn check(prefix_texts: &[&str], side: Side, cases: &[(&str, bool)]) {
        let compiled = prefixes(prefix_texts);
        let failures: Vec<String> = cases
            .iter()
            .filter(|(command, expected)| command_matches(command, &compiled, side) != *expected)
            .map(|(command, expected)| {
                format!(
                    "{side:?} {prefix_texts:?} on {command:?}: expected {expected}\n  segments: {:?}",
                    ParsedCommand::parse(command)
                        .segments
                        .iter()
                        .map(|s| s.words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>())
                        .collect::<Vec<_>>()
                )
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn allow_is_a_word_prefix_of_every_segment() {
        check(
            &["git status", "git log", "ls", "echo"],
            Side::Allow,
            &[
                ("git status", true),
                ("git status -s", true),
                ("git  status", true),
                ("  git\tstatus  ", true),
                ("'git' \"status\"", true),
                ("g\\it status", true),
                ("git statusx", false),
                ("git", false),
                ("gitstatus", false),
                ("git status && git log --oneline", true),
                ("git status; ls -la | echo done", true),
                ("git status && rm -rf /", false),
                ("git status || rm -rf /", false),
                ("git status; rm -rf /", false),
                ("git status | sh", false),
                ("git status & rm -rf /", false),
                ("git status\nrm -rf /", false),
                ("git status\r\n", false),
                ("echo \"a && b; rm -rf /\"", true),
                ("echo 'a | b' \"c ; d\"", true),
                ("echo a\\;rm", true),
                ("echo $(rm -rf /)", false),
                ("echo \"$(rm -rf /)\"", false),
                ("echo `rm -rf /`", false),
                ("echo \"`rm -rf /`\"", false),
                ("echo $(ls $(rm -rf /))", false),
                ("echo $(ls $(git status))", true),
                ("echo <(rm -rf /)", false),
                ("ls >(rm x)", false),
                ("(rm -rf /)", false),
                ("(ls; git status)", true),
                ("echo ${x:-$(rm -rf /)}", false),
                ("echo $((1 + $(rm -rf /)))", false),
                ("echo $((1 + 2))", true),
                ("echo '$(rm -rf /)'", true),
                ("echo \\$(rm -rf /)", false),
                ("git status # && rm -rf /", true),
                ("git status \\\n  -s", true),
                ("", false),
                ("   \n\t", false),
                ("# only a comment", false),
            ],
        );
    }

    #[test]
    fn allow_fails_closed() {
        check(
            &["git status", "cat", "echo", "bash", "sh", "find", "eval"],
            Side::Allow,
            &[
                // Unlexable: never an allow.
                ("echo 'unbalanced", false),
                ("echo \"unbalanced", false),
                ("echo $(ls", false),
                ("echo `ls", false),
                ("git status)", false),
                ("cat <<EOF\nno end", false),
                // Writing redirections.
                ("cat a > b", false),
                ("cat a >> b", false),
                ("cat a 2> err", false),
                ("cat a &> all", false),
                ("cat a >| b", false),
                ("cat a <> b", false),
                ("cat a >&file", false),
                ("(cat a) > b", false),
                ("cat a>b", false),
                // Redirections that write nothing.
                ("cat a < b", true),
                ("cat a 2>&1", true),
                ("cat a 2>/dev/null", true),
                ("cat <<< hello", true),
                ("cat <<'EOF'\n$(rm -rf /)\nEOF", true),
                ("cat <<EOF\n$(rm -rf /)\nEOF", false),
                ("cat <<-EOF\n\thello $(git status)\n\tEOF\necho done", true),
                // Words the shell computes.
                ("$CMD", false),
                ("git $SUB", false),
                ("g$(echo)it status", false),
                ("{git,status}", false),
                // Exact from the first word: no wrappers, no basename.
                ("sudo git status", false),
                ("FOO=1 git status", false),
                ("/usr/bin/git status", false),
                // Nested scripts must be allowed too.
                ("bash -c 'git status'", true),
                ("bash -c 'git status; rm -rf /'", false),
                ("sh -ec \"echo \\\"$(rm x)\\\"\"", false),
                ("bash -o pipefail -c 'rm -rf /'", false),
                ("bash -c \"$SCRIPT\"", false),
                ("bash -c 'echo \"unbalanced'", false),
                ("bash script.sh", true),
                ("eval git status", true),
                ("eval rm -rf /", false),
                ("find . -name x -exec cat {} \\;", true),
                ("find . -exec rm {} +", false),
            ],
        );
    }

    #[test]
    fn restrict_matches_any_segment() {
        check(
            &["rm -rf", "git push"],
            Side::Restrict,
            &[
                ("rm -rf /", true),
                ("rm -rf", true),
                ("rm -r -f /", false),
                ("rm -rfx /", false),
                ("rm", false),
                ("ls -la", false),
                ("git status && rm -rf /", true),
                ("git status || rm -rf /", true),
                ("ls; rm -rf /tmp/x", true),
                ("ls | rm -rf x", true),
                ("ls & rm -rf x", true),
                ("ls\nrm -rf x", true),
                ("echo $(rm -rf /)", true),
                ("echo \"$(rm -rf /)\"", true),
                ("echo `rm -rf /`", true),
                ("echo $(ls $(rm -rf /))", true),
                ("echo `echo \\`rm -rf /\\``", true),
                ("cat <(rm -rf /)", true),
                ("(cd /; rm -rf x)", true),
                ("echo 'rm -rf /'", false),
                ("echo \"rm -rf /\"", false),
                ("echo rm -rf", false),
                ("git status # rm -rf /", false),
                ("git push origin main", true),
                ("git pushx", false),
                ("cat <<EOF\n$(rm -rf /)\nEOF", true),
                ("cat <<'EOF'\n$(rm -rf /)\nEOF", false),
            ],
        );
    }

    #[test]
    fn restrict_sees_through_disguises() {
        check(
            &["rm -rf"],
            Side::Restrict,
            &[
                ("/bin/rm -rf /", true),
                ("./rm -rf /", true),
                ("\\rm -rf /", true),
                ("'rm' '-rf' /", true),
                ("r\"m\" -r''f /", true),
                ("$'\\x72\\x6d' -rf /", true),
                ("$'\\162m' -rf /", true),
                ("sudo rm -rf /", true),
                ("sudo -u root -E rm -rf /", true),
                ("FOO=1 rm -rf x", true),
                ("FOO=1 BAR=\"a b\" sudo env -i X=2 rm -rf x", true),
                ("env rm -rf x", true),
                ("command rm -rf x", true),
                ("exec rm -rf x", true),
                ("nohup rm -rf x &", true),
                ("time rm -rf x", true),
                ("nice -n 10 rm -rf x", true),
                ("timeout 10 rm -rf x", true),
                ("builtin rm -rf x", true),
                ("ls | xargs rm -rf", true),
                ("ls | xargs -n 1 -I {} rm -rf {}", true),
                ("if true; then rm -rf x; fi", true),
                ("for f in *; do rm -rf $f; done", true),
                ("{ rm -rf x; }", true),
                ("! rm -rf x", true),
                ("bash -c 'rm -rf /'", true),
                ("sh -c \"cd /tmp && rm -rf x\"", true),
                ("sudo bash -c 'ls; rm -rf /'", true),
                ("bash -c \"bash -c 'rm -rf /'\"", true),
                ("eval 'rm -rf /'", true),
                ("eval \"$CMD\"", true),
                ("find / -exec rm -rf {} \\;", true),
                ("xargs sh -c 'rm -rf \"$1\"' _", true),
                ("busybox rm -rf /", true),
                ("busybox sh -c 'rm -rf /'", true),
                ("su -c 'rm -rf /' root", true),
                ("setsid rm -rf x", true),
                ("chroot /mnt rm -rf x", true),
                // Computed words could be anything.
                ("$CMD -rf /", true),
                ("$(echo rm) -rf /", true),
                ("rm $FLAGS /", true),
                ("rm -r$(echo f) /", true),
                ("FOO=$(pwd) rm -rf x", true),
                ("FOO=$(pwd) make", false),
                ("FOO=$BAR ls -la", false),
                ("{rm,-rf,/}", true),
                // Globs that could expand to the prefix's words.
                ("/???/r? -rf /", true),
                ("rm -r? /", true),
                ("rm * /", true),
                ("rm *.txt", false),
                ("/usr/bin/rmdir -rf x", false),
                ("rmx -rf x", false),
                ("echo sudo rm -rf", false),
            ],
        );
    }

    #[test]
    fn restrict_falls_back_to_crude_tokens() {
        check(
            &["rm -rf"],
            Side::Restrict,
            &[
                ("echo 'oops; rm -rf /", true),
                ("rm -rf \"/", true),
                ("echo $(rm -rf /", true),
                ("echo `rm -rf /", true),
                ("bash -c 'rm -rf /", true),
                ("f() { rm -rf /; }", true),
                ("echo 'unbalanced", false),
                ("", false),
                ("  ", false),
            ],
        );
        // A prefix whose first word is a path is compared exactly, not by basename.
        check(
            &["/bin/rm"],
            Side::Restrict,
            &[
                ("/bin/rm x", true),
                ("rm x", false),
                ("/usr/bin/rm x", false),
            ],
        );
    }

    #[test]
    fn argv_is_one_segment_without_shell_parsing() {
        let allow = prefixes(&["git status", "echo", "bash"]);
        let deny = prefixes(&["rm -rf"]);
        let cases: &[(&[&str], bool, bool)] = &[
            // (argv, allow matches, deny matches)
            (&["git", "status", "-s"], true, false),
            (&["git", "status && rm -rf /"], false, false),
            (&["echo", "a && rm -rf /"], true, false),
            (&["echo", "$(rm -rf /)"], true, false),
            (&["echo", ">", "file"], true, false),
            (&["git"], false, false),
            (&["rm", "-rf", "/"], false, true),
            (&["/bin/rm", "-rf", "/"], false, true),
            (&["sudo", "rm", "-rf", "/"], false, true),
            (&["bash", "-c", "git status"], true, false),
            (&["bash", "-c", "git status; rm -rf /"], false, true),
            (&["bash", "-c", "echo 'unbalanced"], false, false),
            (&[], false, false),
        ];
        for (argv, allow_expected, deny_expected) in cases {
            assert_eq!(
                argv_matches(argv, &allow, Side::Allow),
                *allow_expected,
                "allow {argv:?}"
            );
            assert_eq!(
                argv_matches(argv, &deny, Side::Restrict),
                *deny_expected,
                "deny {argv:?}"
            );
        }
    }

    #[test]
    fn prefixes_parse_like_commands() {
        let words = |text: &str| CommandPrefix::parse(text).map(|p| p.words().to_vec());
        assert_eq!(
            words("git status"),
            Ok(vec!["git".to_string(), "status".to_string()])
        );
        assert_eq!(
            words("  rm   -rf "),
            Ok(vec!["rm".to_string(), "-rf".to_string()])
        );
        assert_eq!(
            words("echo 'a b'"),
            Ok(vec!["echo".to_string(), "a b".to_string()])
        );
        assert_eq!(
            words("echo '$HOME'"),
            Ok(vec!["echo".to_string(), "$HOME".to_string()])
        );
        let rejected: &[(&str, &str)] = &[
            ("", "empty prefix"),
            ("   ", "empty prefix"),
            ("# comment", "empty prefix"),
            ("git 'status", "unbalanced quotes"),
            ("git \"status", "unbalanced quotes"),
            ("git status)", "unbalanced parentheses"),
            ("git status && ls", "one command"),
            ("git status; ls", "one command"),
            ("ls | wc", "one command"),
            ("cat > x", "redirections"),
            ("echo $HOME", "literal"),
            ("echo $(date)", "plain command"),
            ("(ls)", "plain command"),
        ];
        for (text, reason) in rejected {
            match CommandPrefix::parse(text) {
                Ok(prefix) => panic!("{text:?} should be rejected, parsed to {prefix:?}"),
                Err(message) => {
                    assert!(
                        message.contains(reason),
                        "{text:?}: {message:?} should say {reason:?}"
                    );
                    assert!(
                        message.chars().next().is_some_and(|c| !c.is_uppercase()),
                        "{message:?} should start in lower case"
                    );
                }
            }
        }
    }

    #[test]
    fn hostile_nesting_is_bounded() {
        let deep = format!("{}rm -rf /{}", "$(".repeat(200), ")".repeat(200));
        check(&["echo"], Side::Allow, &[(deep.as_str(), false)]);
        check(&["rm -rf"], Side::Restrict, &[(deep.as_str(), true)]);
        let evals = format!("{}ls", "eval ".repeat(100));
        check(&["eval"], Side::Allow, &[(evals.as_str(), false)]);
        check(&["git push"], Side::Restrict, &[(evals.as_str(), true)]);
        // Quoting doubles at each level, so a few levels of `bash -c` stay cheap to read.
        let mut script = "rm -rf /".to_string();
        for _ in 0..6 {
            script = format!("bash -c '{}'", script.replace('\'', "'\\''"));
        }
        check(&["bash"], Side::Allow, &[(script.as_str(), false)]);
        check(&["rm -rf"], Side::Restrict, &[(script.as_str(), true)]);
    }
}
