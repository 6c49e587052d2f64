//! ANSI-C quoting (`$'…'`), decoded the way bash does, because `$'\x72m'` is `rm`: the
//! escapes, the digits of numeric escapes, and bytes as characters.

use super::*;

impl Lexer {
    /// Reads `$'…'` after its opening: ANSI-C quoting, decoded, because `$'\x72m'` is `rm`.
    pub(super) fn ansi_c_quoted(&mut self, word: &mut WordBuilder) -> Result<(), LexError> {
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
    pub(super) fn digits(&mut self, radix: u32, max: usize) -> Option<u32> {
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
}

/// A `\xHH` or `\NNN` byte as a character; a byte above ASCII stands alone in no encoding
/// we can compare, so it becomes the replacement character (and the word unknown).
fn byte_char(value: u32) -> char {
    match u8::try_from(value) {
        Ok(byte) if byte.is_ascii() => char::from(byte),
        _ => char::REPLACEMENT_CHARACTER,
    }
}
