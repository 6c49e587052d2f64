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
mod builder;
mod expansions;
mod loops;
mod redirections;
mod variables;

pub(super) use builder::escape_into;
use builder::WordBuilder;
use redirections::HereDocument;

pub(super) use expansions::{INDIRECT, TOPLEVEL};
pub(super) use loops::LoopItems;
pub(super) use redirections::HARMLESS_SINKS;
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
    /// `cat FILE | this`: the one file the previous command of the pipeline prints whole,
    /// so a shell reading its script from the pipe runs that file.
    pub(super) piped_file: Option<Word>,
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
            wild: false,
        }])
    }
}

/// `cat FILE`, with no option and no redirection: the one file it prints whole.
fn printed_file(segment: &Segment) -> Option<Word> {
    match segment.words.as_slice() {
        [cat, file]
            if cat.text == "cat"
                && !cat.dynamic
                && !segment.redirected
                && !file.text.starts_with('-') =>
        {
            Some(file.clone())
        }
        _ => None,
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
    /// It holds unquoted glob characters, computed or not (`$TEMP/*`).
    pub(super) wild: bool,
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
    /// The word being read began with `$(which NAME)` or `$(command -v NAME)`: NAME.
    looked_up: Option<String>,
    /// How many `case … in` are open: a `)` then ends a pattern, not a subshell.
    open_cases: usize,
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
    /// How many loops (`for`, `select`, `while`, `until`) are open here.
    open_loops: usize,
    /// Loop variables read as one of their items, each with the `open_loops` inside its
    /// loop: the binding ends at the loop's `done` ([`Lexer::follow_loops`]).
    bound: Vec<(String, usize)>,
    /// In this reading, the loop over several items whose variable is read as one item:
    /// its name and the item's index (see [`super::parse_command_reading`]).
    reading: Option<LoopItems>,
    /// The first loop over several known items that no reading chose: its variable's
    /// name and how many items it has.
    pub(super) several: Option<LoopItems>,
    /// The command runs on Windows: an unquoted backslash before anything but the
    /// characters of [`ESCAPED_ON_WINDOWS`] is a path separator, not an escape.
    windows: bool,
}

/// Characters a backslash still escapes on Windows: blanks, quotes, `$`, backticks and
/// operators, which a command line in Git Bash escapes and a path does not hold.
const ESCAPED_ON_WINDOWS: &str = " \t\"'$`;&|()<>{}#";

impl Lexer {
    pub(super) fn new(text: &str, depth: usize) -> Lexer {
        Lexer {
            chars: text.chars().collect(),
            open_cases: 0,
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
            open_loops: 0,
            bound: Vec::new(),
            reading: None,
            several: None,
            windows: false,
            looked_up: None,
        }
    }

    /// A lexer that reads the variable of the loop `reading` names as that loop's item at
    /// the given index, and backslashes as path separators when `windows`.
    pub(super) fn reading(
        text: &str,
        depth: usize,
        reading: Option<LoopItems>,
        windows: bool,
    ) -> Lexer {
        Lexer {
            reading,
            windows,
            ..Lexer::new(text, depth)
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

    /// At `(`: the length of `(name)` when a plain name (letters, digits, `.`, `_`, `-`)
    /// is closed there and the word goes on with `/` or ends.
    fn group_name_length(&self) -> Option<usize> {
        let mut offset = 1;
        while let Some(c) = self.peek_at(offset) {
            match c {
                ')' if offset > 1 => {
                    return match self.peek_at(offset + 1) {
                        None | Some('/' | ' ' | '\t' | '\n' | ';' | '&' | '|') => Some(offset + 1),
                        Some(_) => None,
                    };
                }
                c if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') => offset += 1,
                _ => return None,
            }
        }
        None
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

    /// At the `(` of `name()` or `function name()` (the name a plain, literal word):
    /// moves past the `()` and says so.
    fn at_function_definition(&mut self, segment: &Segment) -> bool {
        let name = match segment.words.as_slice() {
            [name] => name,
            [keyword, name] if keyword.text == "function" && !keyword.dynamic => name,
            _ => return false,
        };
        let plain = !name.dynamic
            && !name.text.is_empty()
            && name
                .text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
        let mut after = self.position + 1;
        while matches!(self.chars.get(after), Some(' ' | '\t')) {
            after += 1;
        }
        if !plain || self.chars.get(after) != Some(&')') {
            return false;
        }
        self.position = after + 1;
        true
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
                    let printed = pipe.then(|| printed_file(&segment)).flatten();
                    self.finish_segment(&mut segment, ending);
                    segment.piped = pipe;
                    segment.piped_file = printed;
                }
                '(' if self.at_arithmetic(&segment) => {}
                '(' => {
                    // `name() { …; }`, `function name() …`: a function definition. Its
                    // body follows as a command of its own and is judged as if it ran.
                    if self.at_function_definition(&segment) {
                        segment.words.clear();
                        continue;
                    }
                    // A subshell only stands where a command starts; elsewhere `(` is a
                    // syntax error for the shell (or syntax we do not follow: arrays),
                    // so it fails closed.
                    if !segment.words.is_empty() {
                        return Err(LexError::UnexpectedOpenParenthesis);
                    }
                    self.position += 1;
                    self.nested(|lexer| lexer.sequence(true))?;
                }
                // `pattern)` of an open `case`: the pattern is no command (one with `|`
                // in it leaves its first part as a segment, which only makes doubt).
                ')' if !in_parentheses && self.open_cases > 0 => {
                    self.position += 1;
                    segment.words.clear();
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
                    self.looked_up = None;
                    self.word(&mut word)?;
                    let before_redirection =
                        matches!(self.peek(), Some('<' | '>')) && !self.at_process_substitution();
                    if before_redirection && word.is_file_descriptor() {
                        self.redirection(&mut segment)?;
                    } else if word.started {
                        let program = self
                            .looked_up
                            .take()
                            .and_then(|looked_up| word.program_looked_up(looked_up, &segment));
                        segment.words.push(match program {
                            Some(program) => Word::literal(&program),
                            None => word.finish(),
                        });
                        if let [first] = segment.words.as_slice() {
                            match first.text.as_str() {
                                "case" if !first.dynamic => self.open_cases += 1,
                                "esac" if !first.dynamic => {
                                    self.open_cases = self.open_cases.saturating_sub(1);
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
    }

    /// `(( n > 0 ))` where a command starts, or `for (( i = 0; i < n; i++ ))`: arithmetic,
    /// which runs nothing, is skipped (with the `for`). Arithmetic holding a substitution
    /// (`$(…)`, a backtick), which runs a command, is not: it is lexed as subshells, which
    /// fails closed.
    fn at_arithmetic(&mut self, segment: &Segment) -> bool {
        let c_style_for =
            matches!(segment.words.as_slice(), [word] if word.text == "for" && !word.dynamic);
        // After keywords only: `if (( n > 0 ))`, `while ! (( done ))`.
        let command_starts = segment.words.iter().all(|word| {
            !word.dynamic
                && matches!(
                    word.text.as_str(),
                    "if" | "elif" | "while" | "until" | "then" | "do" | "else" | "!"
                )
        });
        if self.peek_at(1) != Some('(') || !(command_starts || c_style_for) {
            return false;
        }
        let mut depth = 0usize;
        let mut end = None;
        for (offset, c) in self.chars[self.position..].iter().enumerate() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = Some(self.position + offset);
                        break;
                    }
                }
                '$' if self.chars.get(self.position + offset + 1) == Some(&'(') => return false,
                '`' | '\'' | '"' | '\n' => return false,
                ';' if !c_style_for => return false,
                _ => {}
            }
        }
        // It ends with `))`: the last two characters close the two that opened it.
        let Some(end) = end.filter(|end| *end > self.position + 2 && self.chars[end - 1] == ')')
        else {
            return false;
        };
        self.position = end + 1;
        true
    }

    /// The items of an array assignment, after its `(`, up to and with its `)`.
    fn array_items(&mut self) -> Result<(), LexError> {
        loop {
            match self.peek() {
                None => return Err(LexError::MissingCloseParenthesis),
                Some(' ' | '\t' | '\n') => self.position += 1,
                Some(')') => {
                    self.position += 1;
                    return Ok(());
                }
                Some('#') => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.position += 1;
                    }
                }
                Some(_) => {
                    let mut item = WordBuilder::default();
                    let at = self.position;
                    self.word(&mut item)?;
                    // An operator inside the list (`a=(x; y)`) is no array bash reads.
                    if self.position == at {
                        return Err(LexError::UnexpectedOpenParenthesis);
                    }
                }
            }
        }
    }

    /// Reads one word (up to a blank or an operator), quotes and expansions included.
    fn word(&mut self, word: &mut WordBuilder) -> Result<(), LexError> {
        while let Some(c) = self.peek() {
            match c {
                // `files=(a "$b")`, `cmd+=(--x "$(y)")`: an array assignment. Its items are
                // read as words (their substitutions run); the value is shown as computed.
                '(' if !word.dynamic
                    && word
                        .text
                        .split_once('=')
                        .is_some_and(|(_, value)| value.is_empty())
                    && super::is_assignment(&word.text) =>
                {
                    self.position += 1;
                    self.array_items()?;
                    word.push_expansion("(…)");
                }
                // `app/(dashboard)/page.tsx`: a folder whose name is in parentheses (a
                // Next.js route group), written unquoted. bash refuses the line (nothing
                // runs); zsh reads a pattern matching the name alone (`/(usr)` is `/usr`):
                // no command starts there, and the word is judged as naming that name.
                '(' if word.text.ends_with('/') && !word.dynamic => {
                    let Some(length) = self.group_name_length() else {
                        break;
                    };
                    // `(`, the name, `)`: the name alone is kept.
                    for &c in &self.chars[self.position + 1..self.position + length - 1] {
                        word.push_literal(c);
                    }
                    self.position += length;
                }
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
                        // On Windows, `..\..\x`, `C:\Users` and `\\server` are paths: the
                        // backslash is kept as the separator PowerShell and cmd read it as,
                        // where bash would drop it (see `windows`).
                        Some(next) if self.windows && !ESCAPED_ON_WINDOWS.contains(next) => {
                            word.push_literal('\\');
                            if next == '\\' {
                                word.push_literal('\\');
                                self.position += 1;
                            }
                        }
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
}
