//! Variables holding what a listing printed: `LOG=$(ls -t logs/*.log | head -1)`, `for f in
//! $(find logs -name '*.log'); do tail "$f"; done`. Such a variable names an entry of the
//! place listed, so a command given `"$LOG"` works there, as a glob over that place would
//! (a read of `~/.npm/_logs/x.log` is a read; of `~/.ssh/…`, a credential read), instead
//! of on a path nobody can know.

use super::*;

/// Listings seen in the substitutions of the segment being read, by depth.
#[derive(Default)]
pub(super) struct Listings {
    pending: Vec<(usize, Vec<FileRef>)>,
}

impl Listings {
    /// Notes what the segment just judged (its facts `judged`) listed, when it is a
    /// listing inside a substitution.
    pub(super) fn note(&mut self, segment: &Segment, judged: &[SegmentFacts]) {
        if segment.depth == 0 || !lists_entries(segment) {
            return;
        }
        let places: Vec<FileRef> = judged
            .iter()
            .flat_map(|facts| facts.files.iter())
            .filter(|file| file.role == Role::Read)
            .cloned()
            .collect();
        self.pending.push((segment.depth, places));
    }

    /// The one place listed in the substitutions `segment` holds (they come before it, one
    /// level deeper), forgetting them.
    pub(super) fn held(&mut self, segment: &Segment) -> Option<FileRef> {
        let mut places: Vec<FileRef> = Vec::new();
        let mut listed = false;
        self.pending.retain(|(depth, found)| {
            if *depth > segment.depth {
                listed = true;
                places.extend(found.iter().cloned());
                false
            } else {
                true
            }
        });
        match places.as_slice() {
            [place] if listed && place.path.is_some() => Some(place.clone()),
            _ => None,
        }
    }
}

/// `ls`, `find` or `fd`, as the first word of a segment, or a search that prints the
/// names of the files it found (`grep -rl x src/`, `rg --files-with-matches x`, `rg
/// --files`).
fn lists_entries(segment: &Segment) -> bool {
    let Some(first) = segment.words.first().filter(|first| !first.dynamic) else {
        return false;
    };
    match basename(&first.text) {
        "ls" | "find" | "fd" | "fdfind" => true,
        "grep" | "egrep" | "fgrep" | "rg" => segment.words[1..].iter().any(|word| {
            let text = word.text.as_str();
            matches!(
                text,
                "--files-with-matches" | "--files-without-match" | "--files"
            ) || (text.starts_with('-')
                && !text.starts_with("--")
                && text[1..].chars().all(|c| c.is_ascii_alphabetic())
                && text[1..].contains(['l', 'L']))
        }),
        _ => false,
    }
}

/// The variable a segment sets from a substitution: `NAME=$(…)` alone, or `for NAME in
/// $(…)`.
pub(super) fn set_from_substitution(segment: &Segment) -> Option<String> {
    let texts: Vec<&str> = segment
        .words
        .iter()
        .map(|word| word.text.as_str())
        .collect();
    let name = match texts.as_slice() {
        [assignment] => assignment.strip_suffix("=$(…)")?,
        ["for", name, "in", "$(…)"] => name,
        _ => return None,
    };
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| name.to_owned())
}

/// The names a segment assigns (`NAME=…` words before its command, or alone), and the
/// variable of a `for` loop.
pub(super) fn assigned(segment: &Segment) -> Vec<String> {
    let mut names: Vec<String> = segment
        .words
        .iter()
        .take_while(|word| is_assignment(&word.text))
        .filter_map(|word| word.text.split_once('=').map(|(name, _)| name.to_owned()))
        .collect();
    if let [first, name, ..] = segment.words.as_slice() {
        if first.text == "for" {
            names.push(name.text.clone());
        }
    }
    names
}

/// The variable a word is, whole: `$NAME` or `${NAME}`.
pub(super) fn variable(word: &Word) -> Option<&str> {
    let text = word.text.as_str();
    let name = text
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
        .or_else(|| text.strip_prefix('$'))?;
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}
