//! The word being read: its text, its glob pattern, and what the lexer learned of it
//! (quoted, computed, a glob, a brace expansion, a temporary folder's variable).

use super::{compile_glob, Segment, Word};

/// A word being read.
#[derive(Default)]
pub(super) struct WordBuilder {
    pub(super) text: String,
    /// The glob pattern: unquoted metacharacters as they are, everything else escaped.
    /// `None` until the first unquoted metacharacter: until then it is `text` with every
    /// metacharacter escaped, built only if the word turns out to be a glob (most words
    /// are not, and this runs for every character of every command).
    pub(super) pattern: Option<String>,
    /// Something was read, if only `""`.
    pub(super) started: bool,
    /// Some of it was quoted or escaped (so `2>` is not a file descriptor, `<<'EOF'`
    /// does not expand).
    pub(super) quoted: bool,
    pub(super) dynamic: bool,
    pub(super) glob: bool,
    /// An unquoted `{` was seen: a following unquoted `,` or `..` makes a brace expansion.
    pub(super) brace: bool,
    /// It holds a variable set from `mktemp`: were `mktemp` to fail, the variable would be
    /// empty, so a glob after it (`"$dir"/*`) could stand for anything.
    pub(super) temp: bool,
}

impl WordBuilder {
    /// A quoted or escaped character: never special.
    pub(super) fn push_literal(&mut self, c: char) {
        self.started = true;
        self.text.push(c);
        self.push_pattern_literal(c);
    }

    /// An unquoted ordinary character.
    pub(super) fn push_plain(&mut self, c: char) {
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

    /// The value of a loop variable whose item is a glob (`for f in src/*.ts`): one of the
    /// names the glob matches, so the word stands for any of them, as the glob would.
    pub(super) fn push_glob_value(&mut self, text: &str, pattern: &str) {
        self.started = true;
        self.glob = true;
        let current = &self.text;
        self.pattern
            .get_or_insert_with(|| {
                let mut escaped = String::with_capacity(current.len() + pattern.len());
                for c in current.chars() {
                    escape_into(&mut escaped, c);
                }
                escaped
            })
            .push_str(pattern);
        self.text.push_str(text);
    }

    /// An expansion: its value is only known at run time.
    pub(super) fn push_expansion(&mut self, shown: &str) {
        self.started = true;
        self.dynamic = true;
        self.text.push_str(shown);
        for c in shown.chars() {
            self.push_pattern_literal(c);
        }
    }

    pub(super) fn push_pattern_literal(&mut self, c: char) {
        if let Some(pattern) = &mut self.pattern {
            escape_into(pattern, c);
        }
    }

    /// Digits (or `{name}`) right before `<` or `>`: a file descriptor, not a word.
    pub(super) fn is_file_descriptor(&self) -> bool {
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

    /// The program `$(which NAME)` names (`looked_up`, what the word began with), when
    /// this word is exactly that substitution and stands where `segment` takes its command
    /// (after any assignments): the shell runs the NAME found on the PATH, as it would for
    /// `NAME` written out. Elsewhere (`rm "$(which tool)"`) the word is a path only known
    /// at run time, and stays dynamic.
    pub(super) fn program_looked_up(&self, looked_up: String, segment: &Segment) -> Option<String> {
        let whole = self.text == "$(…)" && !self.glob && !self.temp;
        let command_position = segment
            .words
            .iter()
            .all(|word| !word.dynamic && super::super::is_assignment(&word.text));
        (whole && command_position).then_some(looked_up)
    }

    pub(super) fn finish(mut self) -> Word {
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
            wild: self.glob,
        }
    }
}

/// Appends `c` to a glob pattern as a literal character.
pub(in crate::matcher::shell) fn escape_into(pattern: &mut String, c: char) {
    if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
        pattern.push('\\');
    }
    pattern.push(c);
}
