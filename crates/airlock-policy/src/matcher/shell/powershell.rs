//! PowerShell command lines: what Codex and Gemini CLI run on Windows, Claude Code's
//! `PowerShell` tool, and the script of `powershell -Command …`.
//!
//! A line is read into the same segments a POSIX line gives, each cmdlet as the POSIX
//! command that does the same to the same files (`Get-Content f` is `cat f`,
//! `Remove-Item -Recurse d` is `rm -rf d`, `Invoke-WebRequest -OutFile f URL` is
//! `curl -o f URL`), so one judge decides both. A cmdlet or parameter not known here is
//! kept as written (an unknown parameter's value counts as one more file), and a
//! command the classification does not know is `unknown`, which asks.
//!
//! Script blocks (`{ … }`), subexpressions (`(…)`, `$(…)`, `@(…)`) and hashtables are
//! read as command lines of their own; their values are unknown words. `Set-Location`
//! inside one makes the working directory unknown from there on (PowerShell blocks are no
//! subshells: a location set in one holds after it, when it ran). Method calls on .NET
//! types or objects (`[IO.File]::Delete(…)`, `$x.Delete()`) are unknown.

use super::lex::{escape_into, Segment, Word};
use super::{compile_glob, MAX_DEPTH};

/// Whether `command` is PowerShell rather than a POSIX shell line: its first command (or
/// one after a `|` or `;`) is a cmdlet (`Verb-Noun` with a PowerShell verb), which no
/// POSIX system has (Claude Code's `PowerShell` tool runs `pwsh` on any system). On
/// Windows also: an alias only PowerShell (or `cmd`, which reads it alike) has, a line
/// that starts with an assignment (`$x = …`) or the call operator, or one that reads
/// `$env:`.
pub(super) fn looks_like_powershell(command: &str, windows: bool) -> bool {
    let trimmed = command.trim_start();
    if windows
        && (command.contains("$env:")
            || command.contains("$Env:")
            || command.contains("$ENV:")
            || trimmed.starts_with("& ")
            || assigns_variable(trimmed))
    {
        return true;
    }
    command.split(['|', ';', '\n']).any(|part| {
        let first = part
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_start_matches('(');
        let lower = first.to_ascii_lowercase();
        (windows && POWERSHELL_ONLY.contains(&lower.as_str()))
            || lower
                .split_once('-')
                .is_some_and(|(verb, noun)| VERBS.contains(&verb) && is_noun(noun))
    })
}

/// `$name = …` (also `+=`…): a PowerShell assignment, where bash would run `$name`.
fn assigns_variable(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('$') else {
        return false;
    };
    let name_end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(rest.len());
    if name_end == 0 {
        return false;
    }
    let after = rest[name_end..].trim_start();
    let after = after.trim_start_matches(['+', '-', '*', '/']);
    after.starts_with('=') && !after.starts_with("==")
}

fn is_noun(noun: &str) -> bool {
    !noun.is_empty() && noun.chars().all(|c| c.is_ascii_alphanumeric())
}

/// PowerShell's approved verbs that agents' commands start with.
const VERBS: &[&str] = &[
    "add",
    "clear",
    "compare",
    "compress",
    "convert",
    "convertfrom",
    "convertto",
    "copy",
    "disable",
    "enable",
    "expand",
    "export",
    "foreach",
    "format",
    "get",
    "group",
    "import",
    "install",
    "invoke",
    "join",
    "measure",
    "move",
    "new",
    "out",
    "pop",
    "push",
    "register",
    "remove",
    "rename",
    "resolve",
    "restart",
    "select",
    "set",
    "sort",
    "split",
    "start",
    "stop",
    "tee",
    "test",
    "uninstall",
    "unregister",
    "update",
    "where",
    "write",
];

/// Aliases and words only PowerShell (or `cmd`, which reads them alike) has.
const POWERSHELL_ONLY: &[&str] = &[
    "gci",
    "gc",
    "sls",
    "iwr",
    "irm",
    "iex",
    "ni",
    "ri",
    "sl",
    "gl",
    "gi",
    "gp",
    "rvpa",
    "cpi",
    "mi",
    "rni",
    "ren",
    "del",
    "erase",
    "md",
    "rd",
    "spps",
    "gps",
    "ft",
    "fl",
    "select",
    "where",
    "foreach",
    "%",
    "?",
    "ac",
    "copy",
    "move",
    "dir",
    "type",
    "foreach-object",
    "where-object",
];

/// One word of a PowerShell command, before it is read as a POSIX word.
#[derive(Debug, Clone, Default)]
struct Token {
    text: String,
    /// The glob pattern, when the word holds unquoted wildcards.
    pattern: Option<String>,
    /// Computed at run time (a variable, a subexpression).
    dynamic: bool,
    /// Written in quotes (so never a parameter name or an operator).
    quoted: bool,
}

impl Token {
    fn is_parameter(&self) -> bool {
        !self.quoted
            && !self.dynamic
            && self.text.len() > 1
            && self.text.starts_with('-')
            && self.text[1..].starts_with(|c: char| c.is_ascii_alphabetic())
    }

    fn word(&self) -> Word {
        // A path on another PowerShell drive (`HKCU:\Software\…`, `Env:\PATH`, `Cert:\`)
        // or provider (`Registry::HKEY_…`) is no file anyone can place.
        let drive = self.text.split_once(':').is_some_and(|(name, rest)| {
            // (`https://…` is a URL.)
            name.len() > 1
                && name.chars().all(|c| c.is_ascii_alphabetic())
                && !rest.starts_with("//")
        });
        if drive || self.text.contains("::") {
            // (`…` marks it as computed: nothing reads a place from its text.)
            return Word {
                text: format!("{}…", self.text),
                dynamic: true,
                glob: None,
            };
        }
        // `~\x` is the home's `x`: the judge reads `~/x`.
        let text = match self.text.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with(['\\', '/']) => {
                format!("~{}", rest.replace('\\', "/"))
            }
            _ => self.text.clone(),
        };
        let glob = match &self.pattern {
            Some(pattern) if !self.dynamic => compile_glob(pattern),
            _ => None,
        };
        Word {
            text,
            dynamic: self.dynamic,
            glob,
        }
    }
}

/// One command as read: its words, redirections, and whether a pipe feeds it.
#[derive(Default)]
struct Command {
    tokens: Vec<Token>,
    redirections: Vec<(Token, bool)>,
    piped: bool,
    /// Run with the call operator (`& "C:\tools\x.exe" arg`, `& $script`).
    called: bool,
    /// A method call or type literal: what it does cannot be read.
    opaque: bool,
}

/// What a pipe carries into a command: PowerShell pipes objects, and a cmdlet that takes
/// files binds the files among them (`Get-ChildItem ~ | Get-Content` reads each one).
#[derive(Debug, Clone, Default)]
enum Input {
    /// Not fed by a pipe.
    #[default]
    Nothing,
    /// The entries of these places (from `Get-ChildItem`).
    Places(Vec<Token>),
    /// Lines of text (from `Get-Content`, `Write-Output`).
    Text,
    /// Objects nobody can say anything about.
    Unknown,
}

/// Reads a PowerShell command line into segments; `None` when it cannot be read (the
/// caller treats it as unknowable).
pub(super) fn segments(command: &str, depth: usize) -> Option<Vec<Segment>> {
    let mut reader = Reader {
        chars: command.chars().collect(),
        position: 0,
        nesting: 0,
        depth,
        out: Vec::new(),
        last_output: Input::Nothing,
    };
    reader.sequence(None)?;
    Some(reader.out)
}

struct Reader {
    chars: Vec<char>,
    position: usize,
    /// How deeply blocks and subexpressions are nested here.
    nesting: usize,
    /// The segments' depth (below the line that ran `powershell -Command`).
    depth: usize,
    out: Vec<Segment>,
    /// What the command finished last puts out, for a pipe after it.
    last_output: Input,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.position).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.position + offset).copied()
    }

    /// Statements up to `close` (or the end): pipelines of commands.
    fn sequence(&mut self, close: Option<char>) -> Option<()> {
        let mut command = Command::default();
        loop {
            let Some(c) = self.peek() else {
                if close.is_some() {
                    return None;
                }
                self.finish(&mut command);
                return Some(());
            };
            match c {
                _ if Some(c) == close => {
                    self.position += 1;
                    self.finish(&mut command);
                    return Some(());
                }
                ' ' | '\t' | '\r' => self.position += 1,
                '`' if self.peek_at(1) == Some('\n') => self.position += 2,
                '\n' | ';' => {
                    self.position += 1;
                    self.finish(&mut command);
                }
                '|' | '&' if self.peek_at(1) == Some(c) => {
                    self.position += 2;
                    self.finish(&mut command);
                }
                '|' => {
                    self.position += 1;
                    self.finish(&mut command);
                    command.piped = true;
                }
                '&' if command.tokens.is_empty() => {
                    self.position += 1;
                    command.called = true;
                }
                '&' => {
                    // A background job: what it runs is read like any command.
                    self.position += 1;
                    self.finish(&mut command);
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.position += 1;
                    }
                }
                '<' if self.peek_at(1) == Some('#') => {
                    while self.position < self.chars.len()
                        && !(self.peek() == Some('#') && self.peek_at(1) == Some('>'))
                    {
                        self.position += 1;
                    }
                    self.position += 2;
                }
                '{' | '(' => {
                    self.position += 1;
                    self.nested(if c == '{' { '}' } else { ')' })?;
                    if c == '(' {
                        command.tokens.push(Token {
                            text: "(…)".into(),
                            dynamic: true,
                            ..Token::default()
                        });
                    }
                }
                '@' if matches!(self.peek_at(1), Some('(' | '{')) => {
                    let closing = if self.peek_at(1) == Some('(') {
                        ')'
                    } else {
                        '}'
                    };
                    // (`$(…)` is read by `token`, as part of a word.)
                    self.position += 2;
                    self.nested(closing)?;
                    command.tokens.push(Token {
                        text: "$(…)".into(),
                        dynamic: true,
                        ..Token::default()
                    });
                }
                '[' if command.tokens.is_empty() => {
                    // A type literal (`[IO.File]::ReadAllText(…)`, `[void]`).
                    command.opaque = true;
                    self.skip_type()?;
                }
                '>' | '2' | '*' | '1' | '3' | '4' | '5' | '6'
                    if self.at_redirection() && !command.tokens.is_empty() =>
                {
                    self.redirection(&mut command)?;
                }
                '>' => self.redirection(&mut command)?,
                ')' | '}' => return None,
                _ => {
                    let tokens = self.token(&mut command)?;
                    command.tokens.extend(tokens);
                }
            }
        }
    }

    fn nested(&mut self, close: char) -> Option<()> {
        if self.nesting >= MAX_DEPTH {
            return None;
        }
        self.nesting += 1;
        let result = self.sequence(Some(close));
        self.nesting -= 1;
        result
    }

    /// `[Type.Name]` and what follows it up to a blank or an operator.
    fn skip_type(&mut self) -> Option<()> {
        let mut brackets = 0usize;
        while let Some(c) = self.peek() {
            match c {
                '[' => brackets += 1,
                ']' => brackets = brackets.checked_sub(1)?,
                ' ' | '\t' | '\n' | ';' | '|' | '(' if brackets == 0 => return Some(()),
                _ => {}
            }
            self.position += 1;
        }
        Some(())
    }

    /// `>`, `>>`, `2>`, `*>`, `2>&1` at the current position.
    fn at_redirection(&self) -> bool {
        match self.peek() {
            Some('>') => true,
            Some(c) if c == '*' || c.is_ascii_digit() => self.peek_at(1) == Some('>'),
            _ => false,
        }
    }

    fn redirection(&mut self, command: &mut Command) -> Option<()> {
        while self.peek().is_some_and(|c| c == '*' || c.is_ascii_digit()) {
            self.position += 1;
        }
        while self.peek() == Some('>') {
            self.position += 1;
        }
        if self.peek() == Some('&') {
            // `2>&1`: one stream into another.
            self.position += 1;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.position += 1;
            }
            return Some(());
        }
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.position += 1;
        }
        let mut scratch = Command::default();
        let target = self.token(&mut scratch)?.into_iter().next()?;
        if !target.text.eq_ignore_ascii_case("$null") {
            command.redirections.push((target, true));
        }
        Some(())
    }

    /// One word (or several, for `a,b`): quotes, backtick escapes, variables.
    fn token(&mut self, command: &mut Command) -> Option<Vec<Token>> {
        let mut tokens = Vec::new();
        let mut token = Token::default();
        let mut started = false;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '|' | '{' | '}' | ')' => break,
                '&' | '>' if started => break,
                '(' if started => {
                    // `.Method(`, `::Method(`: a call on an object or type.
                    if token.text.contains('.') || token.text.contains("::") {
                        command.opaque = true;
                    }
                    break;
                }
                '(' => break,
                ',' => {
                    self.position += 1;
                    if started {
                        tokens.push(std::mem::take(&mut token));
                        started = false;
                    }
                }
                '\'' => {
                    self.position += 1;
                    started = true;
                    token.quoted = true;
                    loop {
                        match self.peek() {
                            None => return None,
                            Some('\'') if self.peek_at(1) == Some('\'') => {
                                push_literal(&mut token, '\'');
                                self.position += 2;
                            }
                            Some('\'') => {
                                self.position += 1;
                                break;
                            }
                            Some(c) => {
                                push_literal(&mut token, c);
                                self.position += 1;
                            }
                        }
                    }
                }
                '"' => {
                    self.position += 1;
                    started = true;
                    token.quoted = true;
                    loop {
                        match self.peek() {
                            None => return None,
                            Some('"') => {
                                self.position += 1;
                                break;
                            }
                            Some('`') => {
                                self.position += 1;
                                let escaped = self.peek()?;
                                push_literal(&mut token, escaped);
                                self.position += 1;
                            }
                            Some('$') => self.dollar(&mut token)?,
                            Some(c) => {
                                push_literal(&mut token, c);
                                self.position += 1;
                            }
                        }
                    }
                }
                '`' => {
                    self.position += 1;
                    let escaped = self.peek()?;
                    push_literal(&mut token, escaped);
                    started = true;
                    self.position += 1;
                }
                '$' => {
                    started = true;
                    self.dollar(&mut token)?;
                }
                '*' | '?' | '[' => {
                    started = true;
                    let text = &token.text;
                    token
                        .pattern
                        .get_or_insert_with(|| {
                            let mut pattern = String::new();
                            for c in text.chars() {
                                escape_into(&mut pattern, c);
                            }
                            pattern
                        })
                        .push(c);
                    token.text.push(c);
                    self.position += 1;
                }
                _ => {
                    started = true;
                    push_literal(&mut token, c);
                    self.position += 1;
                }
            }
        }
        if started {
            tokens.push(token);
        }
        Some(tokens)
    }

    /// A variable (`$name`, `$env:NAME`, `${name}`) or `$(…)` inside a word.
    fn dollar(&mut self, token: &mut Token) -> Option<()> {
        self.position += 1;
        if self.peek() == Some('(') {
            self.position += 1;
            self.nested(')')?;
            token.dynamic = true;
            token.text.push_str("$(…)");
            return Some(());
        }
        let braced = self.peek() == Some('{');
        if braced {
            self.position += 1;
        }
        let mut name = String::new();
        while let Some(c) = self.peek() {
            let part = c.is_ascii_alphanumeric() || c == '_' || (c == ':' && !name.contains(':'));
            if braced && c == '}' {
                self.position += 1;
                break;
            }
            if !braced && !part {
                break;
            }
            name.push(c);
            self.position += 1;
        }
        let lower = name.to_ascii_lowercase();
        let at_start = token.text.is_empty();
        let known = match lower.as_str() {
            "home" | "env:userprofile" | "env:home" if at_start => Some("~"),
            "env:appdata" if at_start => Some("~/AppData/Roaming"),
            "env:localappdata" if at_start => Some("~/AppData/Local"),
            "pwd" if at_start => Some("."),
            "null" | "true" | "false" => Some(""),
            _ => None,
        };
        match known {
            Some(text) => {
                for c in text.chars() {
                    push_literal(token, c);
                }
            }
            None => {
                token.dynamic = true;
                // `$env:GITHUB_TOKEN` is shown as `$GITHUB_TOKEN`, the name the judge knows
                // secret variables by.
                let shown = name.strip_prefix("env:").unwrap_or(&name);
                token.text.push('$');
                token.text.push_str(shown);
            }
        }
        Some(())
    }

    /// Reads a finished command into segments.
    fn finish(&mut self, command: &mut Command) {
        let command = std::mem::take(command);
        let input = if command.piped {
            std::mem::take(&mut self.last_output)
        } else {
            Input::Nothing
        };
        self.last_output = Input::Unknown;
        if command.tokens.is_empty() && command.redirections.is_empty() && !command.opaque {
            return;
        }
        let words = if command.opaque {
            vec![Word {
                text: "…".into(),
                dynamic: true,
                glob: None,
            }]
        } else if command.called {
            match command.tokens.split_first() {
                Some((first, rest)) => program(first, rest),
                None => return,
            }
        } else {
            let (words, output) = translate(&command.tokens, self.nesting > 0, &input);
            self.last_output = output;
            words
        };
        if words.is_empty() && command.redirections.is_empty() {
            return;
        }
        let redirections: Vec<(Word, bool)> = command
            .redirections
            .iter()
            .map(|(target, writes)| (target.word(), *writes))
            .collect();
        let segment = Segment {
            words,
            redirected: !redirections.is_empty(),
            writes: redirections.iter().any(|(_, writes)| *writes),
            redirections,
            piped: command.piped,
            depth: self.depth,
            ..Segment::default()
        };
        // What the command runs in turn (`bash -c '…'`, `powershell -Command '…'`,
        // `find … -exec`) is judged too, as for a POSIX line.
        super::push_with_nested(segment, self.depth, &mut self.out);
    }
}

fn push_literal(token: &mut Token, c: char) {
    token.text.push(c);
    if let Some(pattern) = &mut token.pattern {
        escape_into(pattern, c);
    }
}

fn literal(text: &str) -> Word {
    Word::literal(text)
}

fn dynamic(text: &str) -> Word {
    Word {
        text: text.into(),
        dynamic: true,
        glob: None,
    }
}

/// What a cmdlet does to its operands, as a POSIX command.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    List,
    Search,
    Test,
    Stat,
    Resolve,
    Location,
    PopLocation,
    Filter,
    Echo,
    Write,
    Append,
    NewItem,
    MakeDirectory,
    Delete,
    Copy,
    Move,
    Rename,
    Fetch,
    Expression,
    Kill,
    Processes,
    Sleep,
}

/// Cmdlets and aliases, with the POSIX reading of each.
const CMDLETS: &[(&str, Kind)] = &[
    ("get-content", Kind::Read),
    ("gc", Kind::Read),
    ("cat", Kind::Read),
    ("type", Kind::Read),
    ("get-childitem", Kind::List),
    ("gci", Kind::List),
    ("ls", Kind::List),
    ("dir", Kind::List),
    ("select-string", Kind::Search),
    ("sls", Kind::Search),
    ("test-path", Kind::Test),
    ("get-item", Kind::Stat),
    ("gi", Kind::Stat),
    ("get-itemproperty", Kind::Stat),
    ("gp", Kind::Stat),
    ("resolve-path", Kind::Resolve),
    ("rvpa", Kind::Resolve),
    ("get-location", Kind::Filter),
    ("gl", Kind::Filter),
    ("pwd", Kind::Filter),
    ("set-location", Kind::Location),
    ("sl", Kind::Location),
    ("cd", Kind::Location),
    ("chdir", Kind::Location),
    ("push-location", Kind::Location),
    ("pushd", Kind::Location),
    ("pop-location", Kind::PopLocation),
    ("popd", Kind::PopLocation),
    ("select-object", Kind::Filter),
    ("select", Kind::Filter),
    ("sort-object", Kind::Filter),
    ("sort", Kind::Filter),
    ("measure-object", Kind::Filter),
    ("measure", Kind::Filter),
    ("format-table", Kind::Filter),
    ("ft", Kind::Filter),
    ("format-list", Kind::Filter),
    ("fl", Kind::Filter),
    ("format-wide", Kind::Filter),
    ("out-string", Kind::Filter),
    ("out-host", Kind::Filter),
    ("out-null", Kind::Filter),
    ("convertto-json", Kind::Filter),
    ("convertfrom-json", Kind::Filter),
    ("convertto-csv", Kind::Filter),
    ("convertfrom-csv", Kind::Filter),
    ("get-unique", Kind::Filter),
    ("group-object", Kind::Filter),
    ("where-object", Kind::Filter),
    ("where", Kind::Filter),
    ("?", Kind::Filter),
    ("foreach-object", Kind::Filter),
    ("foreach", Kind::Filter),
    ("%", Kind::Filter),
    ("get-date", Kind::Filter),
    ("get-command", Kind::Filter),
    ("gcm", Kind::Filter),
    ("get-help", Kind::Filter),
    ("get-filehash", Kind::Read),
    ("join-path", Kind::Filter),
    ("split-path", Kind::Filter),
    ("get-member", Kind::Filter),
    ("compare-object", Kind::Filter),
    ("select-xml", Kind::Filter),
    ("get-host", Kind::Filter),
    ("write-output", Kind::Echo),
    ("echo", Kind::Echo),
    ("write", Kind::Echo),
    ("write-host", Kind::Echo),
    ("write-error", Kind::Echo),
    ("write-warning", Kind::Echo),
    ("write-verbose", Kind::Echo),
    ("set-content", Kind::Write),
    ("out-file", Kind::Write),
    ("tee-object", Kind::Write),
    ("tee", Kind::Write),
    ("add-content", Kind::Append),
    ("ac", Kind::Append),
    ("new-item", Kind::NewItem),
    ("ni", Kind::NewItem),
    ("mkdir", Kind::MakeDirectory),
    ("md", Kind::MakeDirectory),
    ("remove-item", Kind::Delete),
    ("ri", Kind::Delete),
    ("rm", Kind::Delete),
    ("rmdir", Kind::Delete),
    ("rd", Kind::Delete),
    ("del", Kind::Delete),
    ("erase", Kind::Delete),
    ("copy-item", Kind::Copy),
    ("copy", Kind::Copy),
    ("cp", Kind::Copy),
    ("cpi", Kind::Copy),
    ("move-item", Kind::Move),
    ("move", Kind::Move),
    ("mv", Kind::Move),
    ("mi", Kind::Move),
    ("rename-item", Kind::Rename),
    ("ren", Kind::Rename),
    ("rni", Kind::Rename),
    ("invoke-webrequest", Kind::Fetch),
    ("iwr", Kind::Fetch),
    ("invoke-restmethod", Kind::Fetch),
    ("irm", Kind::Fetch),
    ("invoke-expression", Kind::Expression),
    ("iex", Kind::Expression),
    ("stop-process", Kind::Kill),
    ("kill", Kind::Kill),
    ("spps", Kind::Kill),
    ("get-process", Kind::Processes),
    ("gps", Kind::Processes),
    ("ps", Kind::Processes),
    ("start-sleep", Kind::Sleep),
    ("sleep", Kind::Sleep),
];

/// Parameters whose value is not a file, by cmdlet kind (any kind: the common ones).
const VALUE_PARAMETERS: &[&str] = &[
    "totalcount",
    "head",
    "first",
    "tail",
    "last",
    "skip",
    "encoding",
    "delimiter",
    "readcount",
    "stream",
    "filter",
    "include",
    "exclude",
    "depth",
    "attributes",
    "context",
    "pattern",
    "pathtype",
    "name",
    "property",
    "expandproperty",
    "value",
    "width",
    "inputobject",
    "variable",
    "itemtype",
    "type",
    "method",
    "body",
    "headers",
    "contenttype",
    "useragent",
    "timeoutsec",
    "maximumredirection",
    "sessionvariable",
    "websession",
    "credential",
    "proxy",
    "newname",
    "id",
    "seconds",
    "milliseconds",
    "erroraction",
    "warningaction",
    "outvariable",
    "errorvariable",
    "stackname",
    "target",
    "uri",
    "outfile",
    "infile",
    "destination",
    "literalpath",
    "path",
    "filepath",
];

/// Parameters whose value is a file.
const PATH_PARAMETERS: &[&str] = &["path", "literalpath", "filepath"];

/// The PowerShell parameter a written one names, lower case, and the value `-Name:value`
/// carries. PowerShell also takes any unambiguous prefix of a cmdlet's own parameter
/// (`-Rec`, `-Lit`); those are not resolved here: an unresolved name counts as a switch,
/// so the word after it stays an operand (a file), which only ever judges more strictly.
fn parameter(token: &Token) -> (String, Option<String>) {
    let body = &token.text[1..];
    match body.split_once(':') {
        Some((name, value)) => (name.to_ascii_lowercase(), Some(value.to_string())),
        None => (body.to_ascii_lowercase(), None),
    }
}

/// `input`: what a pipe feeds it; a cmdlet that takes files and names none binds the files
/// the pipe carries. Returns the words and what the command puts out.
fn translate(tokens: &[Token], nested: bool, input: &Input) -> (Vec<Word>, Input) {
    let Some((first, rest)) = tokens.split_first() else {
        return (Vec::new(), Input::Unknown);
    };
    let words = translate_words(first, rest, nested, input);
    let lower = first.text.to_ascii_lowercase();
    let kind = CMDLETS
        .iter()
        .find(|(name, _)| *name == lower)
        .map(|(_, kind)| *kind);
    let output = match kind {
        _ if first.quoted || first.dynamic => Input::Unknown,
        Some(Kind::List) => listed_places(rest),
        Some(Kind::Filter) => input.clone(),
        Some(Kind::Read | Kind::Echo) => Input::Text,
        _ => Input::Unknown,
    };
    (words, output)
}

/// The places a plain `Get-ChildItem` lists (its operands and `-Path`/`-LiteralPath`
/// values, or the working directory), when every parameter is one known here.
fn listed_places(rest: &[Token]) -> Input {
    let mut places = Vec::new();
    let mut index = 0;
    while let Some(token) = rest.get(index) {
        index += 1;
        if !token.is_parameter() {
            places.push(token.clone());
            continue;
        }
        let (name, inline) = parameter(token);
        match name.as_str() {
            "recurse" | "force" | "file" | "directory" | "name" | "hidden" | "readonly"
            | "system" | "r" | "rec" => {}
            "filter" | "include" | "exclude" | "depth" | "attributes" if inline.is_none() => {
                index += 1;
            }
            "filter" | "include" | "exclude" | "depth" | "attributes" => {}
            "path" | "literalpath" => match inline {
                Some(value) => places.push(Token {
                    text: value,
                    pattern: None,
                    ..token.clone()
                }),
                None => {
                    let Some(value) = rest.get(index) else {
                        return Input::Unknown;
                    };
                    places.push(value.clone());
                    index += 1;
                }
            },
            _ => return Input::Unknown,
        }
    }
    if places.is_empty() {
        places.push(Token {
            text: ".".into(),
            ..Token::default()
        });
    }
    Input::Places(places)
}

fn translate_words(first: &Token, rest: &[Token], nested: bool, input: &Input) -> Vec<Word> {
    // `$x = …`, `$env:X = …`, `key = …` in a hashtable: what is assigned is what runs.
    if let Some(at) = rest.first().filter(|token| {
        !token.quoted && matches!(token.text.as_str(), "=" | "+=" | "-=" | "*=" | "/=")
    }) {
        let _ = at;
        let name = first.text.to_ascii_lowercase();
        let assigned = &rest[1..];
        if let [value] = assigned {
            if value.quoted || value.dynamic || value.text.starts_with(|c: char| c.is_ascii_digit())
            {
                return vec![literal("true")];
            }
        }
        if [
            "$path",
            "$pathext",
            "$psmodulepath",
            "$node_options",
            "$pythonpath",
        ]
        .iter()
        .any(|sensitive| name == *sensitive)
        {
            return vec![dynamic("…")];
        }
        let value = translate(assigned, nested, input).0;
        return if value.is_empty() {
            vec![literal("true")]
        } else {
            value
        };
    }
    let number = first.text.starts_with(|c: char| c.is_ascii_digit());
    if first.dynamic || first.quoted || number || first.text.starts_with('-') || first.text == "!" {
        // `$tool arg`: no PowerShell expression (an operator would follow), but what a
        // POSIX shell runs.
        if first.dynamic && !first.quoted && rest.first().is_some_and(|next| !next.is_parameter()) {
            return vec![dynamic(&first.text)];
        }
        // An expression: a value printed (`$x`, `'text'`, `$a -eq 1`, `-not (…)`).
        let mut words = vec![literal("echo"), first.word()];
        words.extend(rest.iter().map(Token::word));
        return words;
    }
    let lower = first.text.to_ascii_lowercase();
    match lower.as_str() {
        "if" | "elseif" | "else" | "while" | "do" | "until" | "for" | "switch" | "try"
        | "catch" | "finally" | "return" | "exit" | "break" | "continue" | "throw" | "param"
        | "begin" | "process" | "end" => return vec![literal("true")],
        "function" | "filter" => return vec![dynamic("…")],
        "." => {
            let mut words = vec![literal("source")];
            words.extend(rest.iter().map(Token::word));
            return words;
        }
        _ => {}
    }
    let Some(kind) = CMDLETS
        .iter()
        .find(|(name, _)| *name == lower)
        .map(|(_, kind)| *kind)
    else {
        return program(first, rest);
    };
    // `curl -sSL …` in PowerShell 7 is curl.exe; only `curl -Uri …` is the cmdlet alias.
    let mut operands: Vec<Token> = Vec::new();
    let mut values: Vec<(String, Token)> = Vec::new();
    let mut switches: Vec<String> = Vec::new();
    let mut index = 0;
    while let Some(token) = rest.get(index) {
        index += 1;
        if !token.is_parameter() {
            operands.push(token.clone());
            continue;
        }
        let (name, inline) = parameter(token);
        let takes_value = VALUE_PARAMETERS.contains(&name.as_str());
        match inline {
            // `-Path:x`: the value is in the word itself.
            Some(value) if takes_value => values.push((
                name,
                Token {
                    text: value,
                    pattern: None,
                    ..token.clone()
                },
            )),
            // `-Recurse:$true`, `-Confirm:$false`.
            Some(_) => switches.push(name),
            None if takes_value => {
                if let Some(value) = rest.get(index).filter(|value| !value.is_parameter()) {
                    values.push((name, value.clone()));
                    index += 1;
                }
            }
            None => switches.push(name),
        }
    }
    let value = |wanted: &str| {
        values
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, token)| token)
    };
    let paths: Vec<&Token> = values
        .iter()
        .filter(|(name, _)| PATH_PARAMETERS.contains(&name.as_str()))
        .map(|(_, token)| token)
        .collect();
    let files = |operands: &[Token]| -> Vec<Word> {
        let mut files: Vec<Word> = paths
            .iter()
            .copied()
            .chain(operands)
            .map(Token::word)
            .collect();
        if files.is_empty() {
            files.extend(piped_files(input));
        }
        files
    };
    let command = |name: &str, mut extra: Vec<Word>| {
        let mut words = vec![literal(name)];
        words.append(&mut extra);
        words
    };
    match kind {
        Kind::Read => command("cat", files(&operands)),
        Kind::List => {
            let all = files(&operands);
            if all.iter().any(|word| {
                word.text.to_ascii_lowercase().starts_with("env:")
                    || word.text.to_ascii_lowercase().starts_with("variable:")
            }) {
                return vec![literal("env")];
            }
            // Filtered or recursive, it searches by name, as `find` does (`find`'s judge
            // knows names that hunt for credentials).
            let patterns: Vec<&Token> = ["filter", "include"]
                .iter()
                .filter_map(|name| value(name))
                .collect();
            let recursive = switches
                .iter()
                .any(|name| matches!(name.as_str(), "recurse" | "r" | "rec" | "recu"));
            if recursive || !patterns.is_empty() {
                let mut words = vec![literal("find")];
                words.extend(if all.is_empty() {
                    vec![literal(".")]
                } else {
                    all
                });
                for pattern in patterns {
                    words.push(literal("-name"));
                    words.push(Word {
                        glob: None,
                        ..pattern.word()
                    });
                }
                return words;
            }
            command("ls", all)
        }
        Kind::Search => {
            let (pattern, operands) = match value("pattern") {
                Some(pattern) => (Some(pattern), &operands[..]),
                None => match operands.split_first() {
                    Some((pattern, rest)) => (Some(pattern), rest),
                    None => (None, &operands[..]),
                },
            };
            let mut words = vec![literal("grep")];
            if let Some(pattern) = pattern {
                words.push(literal("-e"));
                words.push(Word {
                    glob: None,
                    ..pattern.word()
                });
            }
            // Text from a pipe is searched as text; anything else may be files.
            let mut searched: Vec<Word> = paths
                .iter()
                .copied()
                .chain(operands)
                .map(Token::word)
                .collect();
            if searched.is_empty() && !matches!(input, Input::Text) {
                searched.extend(piped_files(input));
            }
            words.extend(searched);
            words
        }
        Kind::Test => {
            let mut words = vec![literal("test"), literal("-e")];
            words.extend(files(&operands));
            words
        }
        Kind::Stat => command("stat", files(&operands)),
        Kind::Resolve => command("realpath", files(&operands)),
        Kind::Location => {
            let target = files(&operands).into_iter().next();
            match target {
                _ if nested => vec![literal("cd"), dynamic("$(…)")],
                Some(target) => vec![literal("cd"), target],
                None => vec![literal("cd"), dynamic("$(…)")],
            }
        }
        Kind::PopLocation => vec![literal("cd"), dynamic("$(…)")],
        Kind::Filter => vec![literal("true")],
        Kind::Echo => command("echo", rest.iter().map(Token::word).collect()),
        Kind::Write | Kind::Append => {
            let append = kind == Kind::Append || switches.iter().any(|name| name == "append");
            // The first operand is the file (`Set-Content f 'text'`); the second is
            // `-Value` (or `-Encoding` for `Out-File`).
            let target: Vec<Word> = if paths.is_empty() {
                operands
                    .first()
                    .map(|token| token.word())
                    .into_iter()
                    .collect()
            } else {
                paths.iter().map(|token| token.word()).collect()
            };
            let mut words = vec![literal("tee")];
            if append {
                words.push(literal("-a"));
            }
            words.extend(target);
            words
        }
        Kind::NewItem => {
            let item_type = value("itemtype")
                .or_else(|| value("type"))
                .map(|token| token.text.to_ascii_lowercase())
                .unwrap_or_default();
            let mut places = files(&operands);
            if let Some(name) = value("name") {
                places = match places.pop() {
                    Some(folder) => vec![Token {
                        text: format!("{}\\{}", folder.text, name.text),
                        dynamic: folder.dynamic || name.dynamic,
                        ..Token::default()
                    }
                    .word()],
                    None => vec![name.word()],
                };
            }
            if item_type.contains("link") || item_type.contains("junction") {
                let mut words = vec![literal("ln"), literal("-s")];
                words.push(
                    value("target")
                        .or(value("value"))
                        .map_or_else(|| dynamic("…"), Token::word),
                );
                words.extend(places);
                return words;
            }
            if item_type.starts_with("dir") {
                let mut words = vec![literal("mkdir"), literal("-p")];
                words.extend(places);
                return words;
            }
            command("touch", places)
        }
        Kind::MakeDirectory => {
            let mut words = vec![literal("mkdir"), literal("-p")];
            words.extend(files(&operands));
            words
        }
        Kind::Delete => {
            let mut words = vec![literal("rm"), literal("-rf")];
            words.extend(files(&operands));
            words
        }
        Kind::Copy | Kind::Move => {
            let mut sources = files(&operands);
            let destination = match value("destination") {
                Some(destination) => Some(destination.word()),
                None if sources.len() > 1 => sources.pop(),
                None => None,
            };
            let mut words = if kind == Kind::Copy {
                vec![literal("cp"), literal("-r")]
            } else {
                vec![literal("mv")]
            };
            words.extend(sources);
            words.push(destination.unwrap_or_else(|| literal(".")));
            words
        }
        Kind::Rename => {
            let mut sources = files(&operands);
            let new_name = value("newname")
                .map(Token::word)
                .or_else(|| (sources.len() > 1).then(|| sources.pop()).flatten());
            let Some(source) = sources.into_iter().next() else {
                return vec![dynamic("…")];
            };
            let destination = match new_name {
                Some(name) if name.dynamic => name,
                Some(name) if name.text.contains(['\\', '/']) => name,
                Some(name) => {
                    let folder = source
                        .text
                        .rfind(['\\', '/'])
                        .map_or("", |at| &source.text[..=at]);
                    Word {
                        text: format!("{folder}{}", name.text),
                        dynamic: source.dynamic,
                        glob: None,
                    }
                }
                None => dynamic("…"),
            };
            vec![literal("mv"), source, destination]
        }
        Kind::Fetch => {
            let mut words = vec![literal("curl")];
            if let Some(method) = value("method") {
                if !matches!(method.text.to_ascii_lowercase().as_str(), "get" | "head") {
                    words.push(literal("-X"));
                    words.push(method.word());
                }
            }
            if value("body").is_some() {
                words.push(literal("-d"));
                words.push(literal("…"));
            }
            if let Some(file) = value("infile") {
                words.push(literal("--data-binary"));
                let file = file.word();
                words.push(Word {
                    text: format!("@{}", file.text),
                    dynamic: file.dynamic,
                    glob: None,
                });
            }
            if let Some(file) = value("outfile") {
                words.push(literal("-o"));
                words.push(file.word());
            }
            match value("uri").or(operands.first()) {
                Some(url) => words.push(url.word()),
                None => words.push(dynamic("$url")),
            }
            words
        }
        Kind::Expression => match rest {
            [] => vec![literal("sh")],
            // A string written out is a PowerShell line like any other.
            [script] if !script.dynamic => {
                vec![
                    literal("pwsh"),
                    literal("-Command"),
                    Word::literal(&script.text),
                ]
            }
            _ => vec![literal("sh"), literal("-c"), dynamic("…")],
        },
        Kind::Kill => {
            let mut words = vec![literal("kill")];
            words.extend(values.iter().map(|(_, token)| token.word()));
            words.extend(operands.iter().map(|token| token.word()));
            words
        }
        Kind::Processes => vec![literal("ps")],
        Kind::Sleep => vec![literal("sleep"), literal("1")],
    }
}

/// The files a pipe hands a cmdlet that takes files and names none: the entries of the
/// places listed before it, or something unknown. Text handed to it names files too
/// (`'a.txt' | Get-Content`), so that is unknown as well.
fn piped_files(input: &Input) -> Vec<Word> {
    match input {
        Input::Nothing => Vec::new(),
        Input::Places(places) => places
            .iter()
            .map(|place| {
                let mut pattern = String::new();
                for c in place.text.chars() {
                    escape_into(&mut pattern, c);
                }
                pattern.push_str("/*");
                Token {
                    text: format!("{}/*", place.text),
                    pattern: Some(pattern),
                    dynamic: place.dynamic,
                    quoted: false,
                }
                .word()
            })
            .collect(),
        Input::Text | Input::Unknown => vec![dynamic("$input")],
    }
}

/// A program run by name or path (`git status`, `npm.cmd run build`, `.\build.ps1`): its
/// words as given, the name without the `.exe`/`.cmd`/`.bat`/`.com` Windows adds.
fn program(first: &Token, rest: &[Token]) -> Vec<Word> {
    let mut name = first.word();
    if !name.text.contains(['\\', '/']) {
        let lower = name.text.to_ascii_lowercase();
        for suffix in [".exe", ".cmd", ".bat", ".com"] {
            if let Some(stem) = lower.strip_suffix(suffix) {
                name.text = stem.to_string();
                break;
            }
        }
    }
    let mut words = vec![name];
    words.extend(rest.iter().map(Token::word));
    words
}
