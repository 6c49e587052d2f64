//! Loop variables (`for f in src/*.ts; do wc -l "$f"; done`): inside its loop, the
//! variable is read as one of the loop's items, when every item is known as written.
//!
//! A loop of one item reads its variable as that item. A loop of several items is judged
//! once per item ([`super::super::parse_command_reading`]): the first lexing only notes the
//! loop ([`Lexer::several`]), and each later lexing reads the variable as one item. A
//! command line is judged by all its readings together, so the strictest item decides.

use super::variables::Known;
use super::{Lexer, Segment, Word};

/// Loops over more items than this are not read item by item: their variable stays
/// unknown (judging a line once per item must stay cheap).
pub(in crate::matcher::shell) const MAX_ITEMS: usize = 32;

/// A loop variable's name and a number: which item it is read as, or how many items its
/// loop has.
pub(in crate::matcher::shell) type LoopItems = (String, usize);

impl Lexer {
    /// Follows the loops a finished segment opens or closes: its leading reserved words
    /// (`do for g in …`, `done`) open and close loops, and a `for NAME in ITEMS` header
    /// binds `NAME` to an item for the words lexed after it, up to the loop's `done`.
    pub(super) fn follow_loops(&mut self, segment: &Segment) {
        for (index, word) in segment.words.iter().enumerate() {
            if word.dynamic {
                return;
            }
            match word.text.as_str() {
                "for" | "select" => {
                    self.open_loops += 1;
                    self.bind(&segment.words[index + 1..]);
                    return;
                }
                "while" | "until" => self.open_loops += 1,
                "done" => self.close_loop(),
                keyword if crate::matcher::shell::KEYWORDS.contains(&keyword) => {}
                _ => return,
            }
        }
    }

    /// `done`: the loop opened last ends, and so does the binding of its variable.
    fn close_loop(&mut self) {
        let open = self.open_loops;
        while let Some((name, _)) = self.bound.pop_if(|(_, level)| *level >= open) {
            self.known.remove(&name);
        }
        self.open_loops = open.saturating_sub(1);
    }

    /// `NAME in ITEM…` after `for`: binds `NAME` when every item is known as written (no
    /// expansion, substitution or brace expansion), there are at most [`MAX_ITEMS`], and
    /// nothing else on the line sets `NAME` (no assignment, `read NAME`, second loop…).
    fn bind(&mut self, header: &[Word]) {
        let [name, in_word, items @ ..] = header else {
            return;
        };
        let identifier = !name.text.is_empty()
            && !name.text.starts_with(|c: char| c.is_ascii_digit())
            && name
                .text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if name.dynamic
            || !identifier
            || in_word.dynamic
            || in_word.text != "in"
            || items.is_empty()
            || items.len() > MAX_ITEMS
            || items.iter().any(|item| item.dynamic)
            || !self.bound_once(&name.text)
        {
            return;
        }
        let index = match &self.reading {
            _ if items.len() == 1 => 0,
            Some((reading, index)) if *reading == name.text && *index < items.len() => *index,
            _ => {
                if self.several.is_none() {
                    self.several = Some((name.text.clone(), items.len()));
                }
                return;
            }
        };
        let item = &items[index];
        let known = Known::Item {
            text: item.text.clone(),
            pattern: item
                .glob
                .as_ref()
                .map(|glob| glob.glob().glob().to_string()),
        };
        self.known.insert(name.text.clone(), known);
        self.bound.push((name.text.clone(), self.open_loops));
    }
}
