//! Redirections (`>`, `>>`, `<`, `2>&1`, `<<<`) and here-documents, whose bodies follow
//! the line that announces them.

use super::*;

/// What a redirection operator does with its target.
#[derive(Clone, Copy)]
pub(super) enum Redirection {
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
pub(super) const REDIRECTIONS: &[(&str, Redirection)] = &[
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
pub(in crate::matcher::shell) const HARMLESS_SINKS: &[&str] =
    &["/dev/null", "/dev/stdout", "/dev/stderr"];

/// A here-document announced by `<<` whose body starts after the next newline.
pub(super) struct HereDocument {
    /// Its number among the lexer's here-documents ([`Lexer::here_bodies`]).
    slot: usize,
    delimiter: String,
    /// `<<-`: leading tabs are stripped from body lines and the delimiter line.
    strip_tabs: bool,
    /// The delimiter was unquoted, so the body undergoes substitutions.
    expands: bool,
}

impl Lexer {
    /// Reads a redirection (operator and target) at the current position, the file
    /// descriptor before it already consumed.
    pub(super) fn redirection(&mut self, segment: &mut Segment) -> Result<(), LexError> {
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
        // On Windows `nul` (`2>nul`, any case) is the null device in every folder.
        // `2>$null`, written for PowerShell, is its null sink there; bash finds the variable
        // unset and runs nothing ("ambiguous redirect"): no file is written either way.
        let harmless = (!target.dynamic
            && (HARMLESS_SINKS.contains(&target.text.as_str())
                || (self.windows
                    && matches!(target.text.to_ascii_lowercase().as_str(), "nul" | "nul:"))))
            || (target.dynamic && target.text.eq_ignore_ascii_case("$null"));
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
    pub(super) fn here_document_bodies(&mut self) -> Result<(), LexError> {
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
