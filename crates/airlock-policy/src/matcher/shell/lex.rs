//! The lexer behind the `prefix` matcher: it reads a command line at the shell grammar's
//! word and operator level (quotes, escapes, `$` expansions, substitutions, subshells,
//! redirections, here-documents) and cuts it into [`Segment`]s of [`Word`]s after quote
//! removal. What a segment runs in turn (`sh -c`, `eval`, `find -exec`) and how segments
//! match a prefix is the business of the parent module.

use std::collections::HashMap;
use std::mem;

use globset::GlobMatcher;

use super::{compile_glob, MAX_DEPTH};

mod ansi;
mod variables;

pub(super) use variables::holds_temp;
use variables::Known;

/// One simple command of a command line.
#[derive(Debug, Clone, Default)]
pub(super) struct Segment {
    pub(super) words: Vec<Word>,
    /// It has a redirection of any kind.
    pub(super) redirected: bool,
    /// It writes a file through a redirection (`>`, `>>`, `&>`, `2>`, `<>`…): a read-only
    /// allow such as `cat` must not cover `cat a > b`.
    pub(super) writes: bool,
    /// It comes from the crude fallback for unlexable text: only Restrict looks at it.
    pub(super) crude: bool,
    /// The files its redirections name: the target word and whether it is written (`>`,
    /// `>>`, `&>`…) rather than read (`<`). Sinks such as `/dev/null` are left out.
    pub(super) redirections: Vec<(Word, bool)>,
    /// Its standard input comes from the previous command of a pipeline (`a | b`).
    pub(super) piped: bool,
    /// It reads a here-string or here-document (`bash <<< 'rm -rf /'`): the literal text,
    /// or `None` when the text is computed at run time.
    pub(super) here_text: Option<Option<String>>,
    /// How deeply the segment is nested (subshells, substitutions, `sh -c` scripts) below
    /// the command line it came from: a `cd` only holds for the segments at its depth and
    /// deeper that follow it.
    pub(super) depth: usize,
    /// Which here-document of its lexer it reads, until the body is filled in.
    pub(super) here_slot: Option<usize>,
}

impl Segment {
    pub(super) fn of(words: Vec<Word>) -> Segment {
        Segment {
            words,
            ..Segment::default()
        }
    }

    /// A command we cannot see (a script in a variable, nesting past [`MAX_DEPTH`]): one
    /// dynamic word, which no allow matches and every deny or ask rule does.
    pub(super) fn unknowable() -> Segment {
        Segment::of(vec![Word {
            text: "…".to_string(),
            dynamic: true,
            glob: None,
        }])
    }
}

/// One word after quote removal.
#[derive(Debug, Clone, Default)]
pub(super) struct Word {
    /// The literal value; expansions appear as their source text (`$HOME`, `$(…)`).
    pub(super) text: String,
    /// The shell computes (part of) it at run time: it may be any word, or several.
    pub(super) dynamic: bool,
    /// It holds unquoted glob characters: the words it may expand to.
    pub(super) glob: Option<GlobMatcher>,
}

impl Word {
    pub(super) fn literal(text: &str) -> Word {
        Word {
            text: text.to_string(),
            ..Word::default()
        }
    }
}

/// Why a command line cannot be lexed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum LexError {
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
    /// Its number among the lexer's here-documents ([`Lexer::here_bodies`]).
    slot: usize,
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
    /// `None` until the first unquoted metacharacter: until then it is `text` with every
    /// metacharacter escaped, built only if the word turns out to be a glob (most words
    /// are not, and this runs for every character of every command).
    pattern: Option<String>,
    /// Something was read, if only `""`.
    started: bool,
    /// Some of it was quoted or escaped (so `2>` is not a file descriptor, `<<'EOF'`
    /// does not expand).
    quoted: bool,
    dynamic: bool,
    glob: bool,
    /// An unquoted `{` was seen: a following unquoted `,` or `..` makes a brace expansion.
    brace: bool,
    /// It holds a variable set from `mktemp`: were `mktemp` to fail, the variable would be
    /// empty, so a glob after it (`"$dir"/*`) could stand for anything.
    temp: bool,
}

impl WordBuilder {
    /// A quoted or escaped character: never special.
    fn push_literal(&mut self, c: char) {
        self.started = true;
        self.text.push(c);
        self.push_pattern_literal(c);
    }

    /// An unquoted ordinary character.
    fn push_plain(&mut self, c: char) {
        match c {
            '*' | '?' | '[' | ']' => {
                self.started = true;
                self.glob |= c != ']';
                let text = &self.text;
                self.pattern
                    .get_or_insert_with(|| {
                        let mut pattern = String::with_capacity(text.len() + 8);
                        for c in text.chars() {
                            escape_into(&mut pattern, c);
                        }
                        pattern
                    })
                    .push(c);
                self.text.push(c);
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
        if let Some(pattern) = &mut self.pattern {
            escape_into(pattern, c);
        }
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

    fn finish(mut self) -> Word {
        if self.temp && self.glob {
            // Shown as computed, so nothing reads a place from its text.
            self.dynamic = true;
            self.text.insert(0, '…');
        }
        let glob = if self.glob && !self.dynamic {
            // A pattern that does not compile (`[` alone) is what bash leaves as it is.
            self.pattern.as_deref().and_then(compile_glob)
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

/// Appends `c` to a glob pattern as a literal character.
fn escape_into(pattern: &mut String, c: char) {
    if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
        pattern.push('\\');
    }
    pattern.push(c);
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

/// How a segment ended: whether what it set still holds for what follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// `;`, a newline, the end: the next command runs after it, whatever it did.
    Sequence,
    /// `&&`, `||`: the next command runs after it, depending on it.
    Condition,
    /// `|`, `&`: it ran in a subshell of its own.
    Apart,
}

/// A hand-written lexer for the shell grammar's word and operator level. It produces the
/// segments in the order they end (substitutions before the command that holds them).
pub(super) struct Lexer {
    chars: Vec<char>,
    position: usize,
    depth: usize,
    pub(super) segments: Vec<Segment>,
    here_documents: Vec<HereDocument>,
    /// The bodies read so far, by slot: `None` when the body expands at run time.
    here_bodies: Vec<Option<String>>,
    /// A subshell or substitution was seen (a prefix must not have one).
    pub(super) nested: bool,
    /// The depth of the command line itself.
    base_depth: usize,
    /// Variables set by plain assignments earlier on this line that surely ran: their
    /// expansions are read as their values ([`Lexer::learn`]).
    known: HashMap<String, Known>,
    /// The current segment runs whatever came before it (it follows `;`, a newline or
    /// nothing), rather than after `&&`, `||`, `|` or `&`.
    unconditional: bool,
    /// A compound command (`if`, `for`, `while`, `case`, `{`) was seen: what runs after it
    /// may depend on its branches, so no more assignments are learnt.
    compound: bool,
}

impl Lexer {
    pub(super) fn new(text: &str, depth: usize) -> Lexer {
        Lexer {
            chars: text.chars().collect(),
            position: 0,
            depth,
            segments: Vec::new(),
            here_documents: Vec::new(),
            here_bodies: Vec::new(),
            nested: false,
            base_depth: depth,
            known: HashMap::new(),
            unconditional: true,
            compound: false,
        }
    }

    /// Gives each segment that reads a here-document the document's body.
    pub(super) fn fill_here_texts(&mut self) {
        for segment in &mut self.segments {
            if let Some(slot) = segment.here_slot.take() {
                segment.here_text = Some(self.here_bodies.get(slot).cloned().flatten());
            }
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
        let unconditional = self.unconditional;
        let result = lex(self);
        self.unconditional = unconditional;
        self.depth -= 1;
        result
    }

    fn finish_segment(&mut self, segment: &mut Segment, ending: Ending) {
        let mut segment = mem::take(segment);
        segment.depth = self.depth;
        self.learn(&segment, ending);
        self.unconditional = ending == Ending::Sequence;
        // A segment of redirections only still writes (`(cat a) > b`); otherwise an empty
        // segment (`;;`, a subshell's outer shell) runs nothing.
        if !segment.words.is_empty() || segment.writes {
            self.segments.push(segment);
        }
    }

    /// Lexes a list of commands up to the end of the text or, when `in_parentheses`, up to
    /// and including the `)` that closes a subshell or substitution.
    pub(super) fn sequence(&mut self, in_parentheses: bool) -> Result<(), LexError> {
        let mut segment = Segment::default();
        loop {
            let Some(c) = self.peek() else {
                if in_parentheses {
                    return Err(LexError::MissingCloseParenthesis);
                }
                if !self.here_documents.is_empty() {
                    return Err(LexError::UnterminatedHereDocument);
                }
                self.finish_segment(&mut segment, Ending::Sequence);
                return Ok(());
            };
            match c {
                ' ' | '\t' => self.position += 1,
                '\n' => {
                    self.position += 1;
                    self.finish_segment(&mut segment, Ending::Sequence);
                    self.here_document_bodies()?;
                }
                '&' if self.peek_at(1) == Some('>') => self.redirection(&mut segment)?,
                ';' | '&' | '|' => {
                    // `&&`, `||`, `|&`, `;;`, `;&`: the second character belongs to the operator.
                    self.position += 1;
                    let second = self.peek();
                    if matches!(second, Some(';' | '&' | '|')) && self.peek_at(1) != Some('>') {
                        self.position += 1;
                    }
                    // `|` and `|&` feed the next command; `||` does not.
                    let pipe = c == '|' && second != Some('|');
                    let ending = match (c, second) {
                        (';', _) => Ending::Sequence,
                        ('&', Some('&')) | ('|', Some('|')) => Ending::Condition,
                        _ => Ending::Apart,
                    };
                    self.finish_segment(&mut segment, ending);
                    segment.piped = pipe;
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
                    self.finish_segment(&mut segment, Ending::Sequence);
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
                let start = self.position;
                self.braced_parameter()?;
                // `${HOME}` is shown as itself; anything more is shown as `${…}`.
                let inside: String = self.chars[start..self.position.saturating_sub(1)]
                    .iter()
                    .collect();
                if !inside.is_empty()
                    && inside
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    if !self.substitute(&inside, word, in_double_quotes) {
                        word.push_expansion(&format!("${{{inside}}}"));
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
        inner.fill_here_texts();
        self.segments.append(&mut inner.segments);
        self.nested = true;
        word.push_expansion("`…`");
        Ok(())
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
            Redirection::Write => {
                segment.writes |= !harmless;
                if !harmless {
                    segment.redirections.push((target.finish(), true));
                }
            }
            Redirection::Duplicate => {
                // `2>&1`, `>&2`, `>&-`, `3>&1-` only move descriptors; `>&file` is `&>file`.
                let descriptor = target.text.strip_suffix('-').unwrap_or(&target.text);
                let duplicates = !target.dynamic && descriptor.chars().all(|c| c.is_ascii_digit());
                segment.writes |= !duplicates && !harmless;
                if !duplicates && !harmless {
                    segment.redirections.push((target.finish(), true));
                }
            }
            Redirection::Read if operator == "<<<" => {
                segment.here_text = Some((!target.dynamic).then(|| target.text.clone()));
            }
            Redirection::Read => {
                let is_descriptor = operator == "<&"
                    && !target.dynamic
                    && target.text.chars().all(|c| c.is_ascii_digit() || c == '-');
                if !is_descriptor {
                    segment.redirections.push((target.finish(), false));
                }
            }
            Redirection::HereDocument { strip_tabs } => {
                // The body is read after the line ends; what it says is not followed into
                // the command that reads it, so a shell reading one runs unknown text.
                segment.here_text = Some(None);
                let slot = self.here_bodies.len();
                self.here_bodies.push(None);
                segment.here_slot = Some(slot);
                self.here_documents.push(HereDocument {
                    slot,
                    delimiter: target.text,
                    strip_tabs,
                    expands: !target.quoted,
                });
            }
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
                    // Bash ends a here-document at the end of its input when the delimiter
                    // never comes (with a warning) and runs the command: the rest of the
                    // text is the body, data for the command, so no command hides there.
                    break;
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
            let literal = !document.expands || !body.contains(['$', '`']);
            if let Some(slot) = self.here_bodies.get_mut(document.slot) {
                *slot = literal.then(|| body.clone());
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
