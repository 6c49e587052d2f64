//! Variables set earlier on the same command line (`x=build; rm -rf "$x"`,
//! `d=$(mktemp -d)`): when an assignment surely ran before a use, the use is read as the
//! value, so what a command names can be judged.

use super::{Ending, Lexer, Segment, Word, WordBuilder};

/// What a variable set earlier on the same command line holds, when that can be read.
#[derive(Debug, Clone)]
pub(super) enum Known {
    /// `NAME=text`: the text.
    Text(String),
    /// `NAME=$(mktemp …)`: a new file or folder in the temporary folder.
    Temp,
    /// `NAME=$(git rev-parse --show-toplevel)`: the top of the work tree.
    Toplevel,
    /// `for NAME in … ITEM …`: one item of the loop as written, with its glob pattern when
    /// it is a glob (the variable then holds one of the names the glob matches).
    Item {
        text: String,
        pattern: Option<String>,
    },
}

/// Where [`Known::Temp`] stands in a word: an entry of the temporary folder no other name
/// matches (see `classify::words::any_child`).
pub(super) const TEMP_ENTRY: &str = "/tmp/\u{1}";

/// Whether a word holds a variable set from `mktemp` ([`TEMP_ENTRY`]).
pub(in crate::matcher::shell) fn holds_temp(word: &Word) -> bool {
    word.text.contains('\u{1}')
}

impl Lexer {
    /// Puts the value of a variable set earlier on the line in place of its expansion, when
    /// it is known and stays one word as written: quoted, any text; unquoted, text that
    /// word splitting and globbing leave as it is.
    /// The variable `${!name}` reads, when `name` holds a known variable name (an item of
    /// a loop being read item by item, or a plain assignment).
    pub(super) fn indirect_target(&self, name: &str) -> Option<String> {
        let value = match self.known.get(name)? {
            Known::Text(text) | Known::Item { text, .. } => text,
            Known::Temp | Known::Toplevel => return None,
        };
        let identifier = value.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        identifier.then(|| value.clone())
    }

    pub(super) fn substitute(
        &self,
        name: &str,
        word: &mut WordBuilder,
        in_double_quotes: bool,
    ) -> bool {
        let value = match self.known.get(name) {
            Some(Known::Text(text)) => text.as_str(),
            Some(Known::Item {
                text,
                pattern: Some(pattern),
            }) => {
                // Unquoted, a matched name with blanks would split into other words.
                if !in_double_quotes {
                    return false;
                }
                word.quoted = true;
                word.push_glob_value(text, pattern);
                return true;
            }
            Some(Known::Item {
                text,
                pattern: None,
            }) => text.as_str(),
            Some(Known::Temp) => {
                word.temp = true;
                TEMP_ENTRY
            }
            Some(Known::Toplevel) => {
                word.push_expansion(super::expansions::TOPLEVEL);
                return true;
            }
            None => return false,
        };
        let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:=@%~".contains(c);
        if !in_double_quotes
            && !value.chars().all(plain)
            && !matches!(self.known.get(name), Some(Known::Temp))
        {
            return false;
        }
        word.quoted |= in_double_quotes;
        for c in value.chars() {
            word.push_literal(c);
        }
        true
    }

    /// Learns the variables a finished segment sets, when what follows surely sees them:
    /// a segment of plain assignments only (`F=/tmp/x`, `dir=$(mktemp -d)`) on the line
    /// itself (not in a subshell or substitution), run whatever came before it, ending in
    /// `;`, a newline, `&&` or `||`, before any compound command, and each name assigned
    /// nowhere else on the line and used only as `$NAME`/`${NAME}` (a `read NAME`, `for
    /// NAME in`, `export NAME` or a second assignment leaves it unknown).
    pub(super) fn learn(&mut self, segment: &Segment, ending: Ending) {
        self.follow_loops(segment);
        let Some(first) = segment.words.first() else {
            return;
        };
        if self.depth == self.base_depth
            && crate::matcher::shell::KEYWORDS.contains(&first.text.as_str())
        {
            self.compound = true;
        }
        if self.depth != self.base_depth
            || self.compound
            || !self.unconditional
            || ending == Ending::Apart
            || segment.redirected
            || !segment
                .words
                .iter()
                .all(|word| crate::matcher::shell::is_assignment(&word.text))
        {
            return;
        }
        let single = segment.words.len() == 1;
        for word in &segment.words {
            let Some((name, value)) = word.text.split_once('=') else {
                continue;
            };
            if name.ends_with('+') || !self.assigned_once(name) {
                continue;
            }
            let known = if !word.dynamic {
                Known::Text(value.to_string())
            } else if single && value == "$(…)" && self.last_substitution_is_mktemp() {
                Known::Temp
            } else if value == super::expansions::TOPLEVEL {
                Known::Toplevel
            } else {
                continue;
            };
            self.known.insert(name.to_string(), known);
        }
    }

    /// Whether `name` is assigned once on the line (`name=…` starting a word) and every
    /// other word it starts is a use (`$name`, `${name}`): a word `name` (`read name`, `for
    /// name in`, `export name`, `((name++))`) or a second assignment may change it.
    pub(super) fn assigned_once(&self, name: &str) -> bool {
        self.settings(name) == (1, 0)
    }

    /// Whether `name` is set on the line only by the one loop header `for name in`: no
    /// assignment, and no other word that it starts but `$name`/`${name}`.
    pub(super) fn bound_once(&self, name: &str) -> bool {
        self.settings(name) == (0, 1)
    }

    /// How often `name` starts a word of the line as an assignment (`name=…`) and as a
    /// word of its own (`read name`, `for name in`); uses (`$name`) are neither.
    fn settings(&self, name: &str) -> (usize, usize) {
        let text: String = self.chars.iter().collect();
        let identifier = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let (mut assignments, mut words) = (0, 0);
        let mut from = 0;
        while let Some(at) = text[from..].find(name).map(|at| at + from) {
            from = at + name.len();
            let before = text[..at].chars().next_back();
            let after = text[from..].chars().next();
            let starts_word = before.is_none_or(|c| c.is_whitespace() || ";&|(".contains(c));
            if !starts_word || after.is_some_and(identifier) {
                continue;
            }
            if after == Some('=') {
                assignments += 1;
            } else {
                words += 1;
            }
        }
        (assignments, words)
    }

    /// Whether the segments lexed for the assignment being finished are one plain `mktemp`
    /// that creates a name in the temporary folder (`mktemp`, `mktemp -d`, `mktemp -t
    /// x.XXXX`, `mktemp --tmpdir x.XXXX`), not one placed elsewhere (`-p DIR`, a template
    /// with a folder or without `-t`).
    pub(super) fn last_substitution_is_mktemp(&self) -> bool {
        let inner: Vec<&Segment> = self
            .segments
            .iter()
            .rev()
            .take_while(|segment| segment.depth > self.base_depth)
            .collect();
        let [only] = inner.as_slice() else {
            return false;
        };
        if only.piped || only.redirected {
            return false;
        }
        let Some((command, arguments)) = only.words.split_first() else {
            return false;
        };
        if command.dynamic || command.text != "mktemp" {
            return false;
        }
        let mut in_tmp = false;
        let mut template = None;
        for word in arguments {
            match word.text.as_str() {
                _ if word.dynamic => return false,
                "-d" | "--directory" | "-q" | "--quiet" => {}
                "-t" | "--tmpdir" => in_tmp = true,
                text if text.starts_with('-') => {
                    // Bundled short options (`-dt`, `-qd`) of the ones above only.
                    if text.starts_with("--") || !text[1..].chars().all(|c| "dqt".contains(c)) {
                        return false;
                    }
                    in_tmp |= text.contains('t');
                }
                text => {
                    if template.replace(text).is_some() {
                        return false;
                    }
                }
            }
        }
        template.is_none_or(|template| in_tmp && !template.contains('/'))
    }
}
