//! A line diff for the approval page: what an edit-style tool (`old_string` →
//! `new_string`) would change, as kept, removed and added lines.
//!
//! A longest-common-subsequence table over lines, which is exact and plenty fast for the
//! sizes a person reads; past [`MAX_CELLS`] (two texts of a few thousand lines each) it
//! shows every old line removed and every new line added, which is still true, only
//! less tidy.

/// The largest LCS table computed (old lines × new lines).
const MAX_CELLS: usize = 4_000_000;

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    Kept(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// The lines of `old` and `new`, in order, as kept, removed and added.
pub fn lines<'a>(old: &'a str, new: &'a str) -> Vec<Line<'a>> {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    // Common head and tail first: edits are usually small parts of a larger text.
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old_middle, new_middle) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);

    let mut diff: Vec<Line<'a>> = old[..head].iter().map(|line| Line::Kept(line)).collect();
    if old_middle.len().saturating_mul(new_middle.len()) > MAX_CELLS {
        diff.extend(old_middle.iter().map(|line| Line::Removed(line)));
        diff.extend(new_middle.iter().map(|line| Line::Added(line)));
    } else {
        diff.extend(middle(old_middle, new_middle));
    }
    diff.extend(old[old.len() - tail..].iter().map(|line| Line::Kept(line)));
    diff
}

/// The LCS diff of two slices of lines.
fn middle<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<Line<'a>> {
    let width = new.len() + 1;
    // common[i * width + j]: the LCS length of old[i..] and new[j..].
    let mut common = vec![0u32; (old.len() + 1) * width];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            common[i * width + j] = if old[i] == new[j] {
                common[(i + 1) * width + j + 1] + 1
            } else {
                common[(i + 1) * width + j].max(common[i * width + j + 1])
            };
        }
    }
    let mut diff = Vec::with_capacity(old.len() + new.len());
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        if old[i] == new[j] {
            diff.push(Line::Kept(old[i]));
            i += 1;
            j += 1;
        } else if common[(i + 1) * width + j] >= common[i * width + j + 1] {
            diff.push(Line::Removed(old[i]));
            i += 1;
        } else {
            diff.push(Line::Added(new[j]));
            j += 1;
        }
    }
    diff.extend(old[i..].iter().map(|line| Line::Removed(line)));
    diff.extend(new[j..].iter().map(|line| Line::Added(line)));
    diff
}

#[cfg(test)]
mod tests {
    use super::Line::{Added, Kept, Removed};
    use super::*;

    fn check(old: &str, new: &str, expected: &[Line<'_>]) {
        assert_eq!(lines(old, new), expected, "{old:?} → {new:?}");
    }

    #[test]
    fn diffs_show_kept_removed_and_added_lines() {
        check("a\nb\nc", "a\nb\nc", &[Kept("a"), Kept("b"), Kept("c")]);
        check(
            "a\nb\nc",
            "a\nx\nc",
            &[Kept("a"), Removed("b"), Added("x"), Kept("c")],
        );
        check("", "new", &[Added("new")]);
        check("old", "", &[Removed("old")]);
        check("a\nb", "b\na", &[Removed("a"), Kept("b"), Added("a")]);
        check(
            "fn x() {\n    1\n}\n",
            "fn x() {\n    2\n    3\n}\n",
            &[
                Kept("fn x() {"),
                Removed("    1"),
                Added("    2"),
                Added("    3"),
                Kept("}"),
            ],
        );
    }

    #[test]
    fn every_line_of_both_texts_appears_once() {
        let old = "1\n2\n3\n4\n5\n6";
        let new = "0\n2\n4\nx\n5\n7";
        let diff = lines(old, new);
        let olds: Vec<&str> = diff
            .iter()
            .filter_map(|line| match line {
                Kept(text) | Removed(text) => Some(*text),
                Added(_) => None,
            })
            .collect();
        let news: Vec<&str> = diff
            .iter()
            .filter_map(|line| match line {
                Kept(text) | Added(text) => Some(*text),
                Removed(_) => None,
            })
            .collect();
        assert_eq!(olds.join("\n"), old);
        assert_eq!(news.join("\n"), new);
        assert_eq!(
            diff.iter().filter(|line| matches!(line, Kept(_))).count(),
            3
        );
    }
}
