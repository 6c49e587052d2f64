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

use super::lex::{escape_into, Segment, Word, TOPLEVEL};
use super::{compile_glob, MAX_DEPTH};

mod cmdlet_table;
mod cmdlets;
mod dialect;
mod pure;

pub(super) use dialect::looks_like_powershell;

use pure::{pure_static_call, PURE_METHODS};

use cmdlets::{program, translate};

/// One word of a PowerShell command, before it is read as a POSIX word.
#[derive(Debug, Clone, Default)]
pub(super) struct Token {
    pub(super) text: String,
    /// The glob pattern, when the word holds unquoted wildcards.
    pub(super) pattern: Option<String>,
    /// Computed at run time (a variable, a subexpression).
    pub(super) dynamic: bool,
    /// Written in quotes (so never a parameter name or an operator).
    pub(super) quoted: bool,
    /// A here-string (`@'…'@`, `@"…"@`): text on lines of its own.
    pub(super) here: bool,
}

impl Token {
    pub(super) fn is_parameter(&self) -> bool {
        !self.quoted
            && !self.dynamic
            && self.text.len() > 1
            && self.text.starts_with('-')
            && self.text[1..].starts_with(|c: char| c.is_ascii_alphabetic())
    }

    /// A switch as `cmd` writes it: `/s`, `/q`, `/a:h`.
    pub(super) fn is_cmd_switch(&self) -> bool {
        let bytes = self.text.as_bytes();
        !self.quoted
            && !self.dynamic
            && bytes.first() == Some(&b'/')
            && bytes
                .get(1)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'?')
            && matches!(bytes.get(2), None | Some(b':'))
    }

    pub(super) fn word(&self) -> Word {
        // A path on another PowerShell drive (`HKCU:\Software\…`, `Env:\PATH`, `Cert:\`)
        // or provider (`Registry::HKEY_…`) is no file anyone can place.
        let drive = self.text.split_once(':').is_some_and(|(name, rest)| {
            // (`https://…` is a URL; `"Accept: text/html"`, a header.)
            name.len() > 1
                && name.chars().all(|c| c.is_ascii_alphabetic())
                && !rest.starts_with("//")
                && !rest.starts_with(' ')
        });
        if drive || self.text.contains("::") {
            // (`…` marks it as computed: nothing reads a place from its text.)
            return Word {
                text: format!("{}…", self.text),
                dynamic: true,
                glob: None,
                wild: false,
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
            wild: self.pattern.is_some(),
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
    /// One of its method calls downloads (`.DownloadString(…)`): it fetches, as `curl`.
    downloads: bool,
}

/// What a pipe carries into a command: PowerShell pipes objects, and a cmdlet that takes
/// files binds the files among them (`Get-ChildItem ~ | Get-Content` reads each one).
#[derive(Debug, Clone, Default)]
pub(super) enum Input {
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
        in_hashtable: false,
        depth,
        out: Vec::new(),
        last_output: Input::Nothing,
        last_text: None,
    };
    reader.sequence(None)?;
    Some(reader.out)
}

struct Reader {
    chars: Vec<char>,
    position: usize,
    /// How deeply blocks and subexpressions are nested here.
    nesting: usize,
    /// The innermost block is a hashtable (`@{ key = value; … }`): its statements are
    /// entries, never commands that print.
    in_hashtable: bool,
    /// The segments' depth (below the line that ran `powershell -Command`).
    depth: usize,
    out: Vec<Segment>,
    /// What the command finished last puts out, for a pipe after it.
    last_output: Input,
    /// The text a here-string alone put out (`@'…'@ | python -`): what the command piped
    /// after it reads, as a bash here-document (`None` inside when it is computed).
    last_text: Option<Option<String>>,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.position).copied()
    }

    /// Whether `=` (not `==`) comes next, after blanks.
    fn assigned_next(&self) -> bool {
        let rest = self.chars[self.position.min(self.chars.len())..]
            .iter()
            .skip_while(|c| matches!(c, ' ' | '\t'));
        let mut rest = rest.copied();
        rest.next() == Some('=') && rest.next() != Some('=')
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
                    let start = self.position;
                    self.nested(if c == '{' { '}' } else { ')' })?;
                    if c == '(' {
                        // `(git rev-parse --show-toplevel)` is the top of the work tree,
                        // shown as bash's substitution of it is.
                        let inside: String = self.chars[start..self.position.saturating_sub(1)]
                            .iter()
                            .collect();
                        let toplevel = inside.split_whitespace().collect::<Vec<_>>()
                            == ["git", "rev-parse", "--show-toplevel"];
                        command.tokens.push(Token {
                            text: if toplevel { TOPLEVEL } else { "(…)" }.into(),
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
                    self.nested_block(closing, closing == '}')?;
                    command.tokens.push(Token {
                        text: "$(…)".into(),
                        dynamic: true,
                        ..Token::default()
                    });
                }
                '[' if command.tokens.is_empty() => {
                    // A type literal (`[IO.File]::ReadAllText(…)`, `[void]`); a static call
                    // that only computes (`[Convert]::FromBase64String(…)`) is a value.
                    let start = self.position;
                    self.skip_type()?;
                    let called: String = self.chars[start..self.position].iter().collect();
                    if !pure_static_call(&called) {
                        command.opaque = true;
                    } else if self.assigned_next() {
                        // `[Console]::OutputEncoding = [Text.Encoding]::UTF8`: a setting
                        // assigned, read as `NAME = VALUE`.
                        command.tokens.push(Token {
                            text: called,
                            ..Token::default()
                        });
                    }
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
        self.nested_block(close, false)
    }

    /// [`Self::nested`], saying whether the block is a hashtable's.
    fn nested_block(&mut self, close: char, hashtable: bool) -> Option<()> {
        if self.nesting >= MAX_DEPTH {
            return None;
        }
        self.nesting += 1;
        let outer = std::mem::replace(&mut self.in_hashtable, hashtable);
        let result = self.sequence(Some(close));
        self.in_hashtable = outer;
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
        // `$null` (read as the empty text it holds), and Windows' null device `nul` (also
        // `NUL:`), keep nothing; an empty name is no file either.
        if (!target.text.is_empty() || target.dynamic)
            && !matches!(
                target.text.to_ascii_lowercase().as_str(),
                "$null" | "nul" | "nul:"
            )
        {
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
                    let method = token.text.rsplit(['.', ':']).next().unwrap_or("");
                    // A string's or a list's own methods (`$text.Contains('x')`,
                    // `.Substring(0, 80)`) only compute a value, as an expression does.
                    let computes = (token.text.contains('.')
                        && !token.text.contains("::")
                        && PURE_METHODS.contains(&method.to_ascii_lowercase().as_str()))
                        || pure_static_call(&token.text);
                    if (token.text.contains('.') || token.text.contains("::")) && !computes {
                        command.opaque = true;
                        // `(New-Object Net.WebClient).DownloadString(…)`, `.DownloadFile(…)`.
                        if method.to_ascii_lowercase().starts_with("download") {
                            command.downloads = true;
                        }
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
                '@' if !started && self.at_here_string() => {
                    let (body, expands) = self.here_string()?;
                    started = true;
                    token.quoted = true;
                    token.here = true;
                    token.dynamic = expands && body.contains('$');
                    token.text = body;
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

    /// `@'` or `@"` ending its line: a here-string starts.
    fn at_here_string(&self) -> bool {
        matches!(self.peek_at(1), Some('\'' | '"'))
            && match self.peek_at(2) {
                Some('\n') => true,
                Some('\r') => self.peek_at(3) == Some('\n'),
                _ => false,
            }
    }

    /// A here-string's lines, up to the line that starts with its closing `'@` (`"@`), and
    /// whether it expands variables (`@"`). `None` when it is not closed.
    fn here_string(&mut self) -> Option<(String, bool)> {
        let quote = self.peek_at(1)?;
        self.position += 2;
        while self.peek() != Some('\n') {
            self.position += 1;
        }
        self.position += 1;
        let mut body = String::new();
        loop {
            let line_start = self.position;
            while self.peek().is_some_and(|c| c != '\n') {
                self.position += 1;
            }
            let line: String = self.chars[line_start..self.position].iter().collect();
            if line.starts_with(quote) && line[1..].starts_with('@') {
                self.position = line_start + 2;
                return Some((body, quote == '"'));
            }
            self.peek()?;
            self.position += 1;
            body.push_str(line.trim_end_matches('\r'));
            body.push('\n');
        }
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
            "env:temp" | "env:tmp" if at_start => Some("~/AppData/Local/Temp"),
            "pwd" if at_start => Some("."),
            // The current user's profile, a start-up file (`$PROFILE.AllUsersAllHosts`, a
            // property of it, names another: computed).
            "profile" if at_start && !braced && self.peek() != Some('.') => {
                Some("~/Documents/PowerShell/Microsoft.PowerShell_profile.ps1")
            }
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
        let mut command = std::mem::take(command);
        let input = if command.piped {
            std::mem::take(&mut self.last_output)
        } else {
            Input::Nothing
        };
        self.last_output = Input::Unknown;
        let here_text = self.last_text.take().filter(|_| command.piped);
        if command.tokens.is_empty() && command.redirections.is_empty() && !command.opaque {
            return;
        }
        // A here-string alone prints its text, into the pipe when one follows.
        if let [token] = command.tokens.as_slice() {
            if token.here && command.redirections.is_empty() && !command.opaque {
                self.last_text = Some((!token.dynamic).then(|| token.text.clone()));
                self.last_output = Input::Text;
                return;
            }
        }
        let runs_it = command.tokens.first().is_some_and(|first| {
            matches!(
                first.text.to_ascii_lowercase().as_str(),
                "iex" | "invoke-expression"
            )
        });
        // `@{ 'X-Api-Key'=$env:KEY }`: an entry, written without blanks around `=`; its
        // value is not printed (a subexpression in it was read on its own).
        let entry = self.in_hashtable
            && command
                .tokens
                .first()
                .is_some_and(|first| first.text.find('=').is_some_and(|at| at > 0));
        let words = if entry {
            vec![Word::literal("true")]
        } else if command.opaque && command.downloads {
            // A download whose text is what the statement gives: as `curl` would; run by
            // `iex (…).DownloadString(…)`, as `curl … | sh`.
            let download = vec![
                Word::literal("curl"),
                Word {
                    text: "…".into(),
                    dynamic: true,
                    glob: None,
                    wild: false,
                },
            ];
            if runs_it {
                self.out.push(Segment {
                    words: download,
                    piped: command.piped,
                    depth: self.depth,
                    ..Segment::default()
                });
                command.piped = true;
                vec![Word::literal("sh")]
            } else {
                download
            }
        } else if command.opaque {
            vec![Word {
                text: "…".into(),
                dynamic: true,
                glob: None,
                wild: false,
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
            here_text,
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
