//! Codex's `apply_patch` envelope, read strictly enough to name every file it touches.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: docs/new.md
//! +text
//! *** Update File: src/lib.rs
//! *** Move to: src/core.rs
//! @@ fn main
//!  context
//! -old
//! +new
//! *** Delete File: old.txt
//! *** End Patch
//! ```
//!
//! The policy judges an edit by the files it touches, so a patch that cannot be read is
//! never guessed at: any line outside the grammar, a missing envelope, an empty path or a
//! patch that touches nothing is an error, and the call is denied.

use std::fmt;

/// What a patch does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    Add {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
    },
    Delete {
        path: String,
    },
}

impl FileChange {
    /// Every path the change writes or removes (a move touches both ends).
    pub fn paths(&self) -> Vec<&str> {
        match self {
            FileChange::Add { path } | FileChange::Delete { path } => vec![path],
            FileChange::Update { path, move_to } => {
                let mut paths = vec![path.as_str()];
                paths.extend(move_to.as_deref());
                paths
            }
        }
    }
}

/// Why a patch cannot be read; `line` is 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for PatchError {}

/// What the reader is inside of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    /// After `*** Begin Patch` or a finished file: a file header must follow.
    Between,
    /// Inside `*** Add File`: only `+` lines.
    Add,
    /// Inside `*** Update File`: `*** Move to`, hunks and their lines.
    Update,
    /// After `*** Delete File`: nothing but the next header.
    Delete,
}

/// Reads a patch and returns what it does to each file, in order.
pub fn parse(text: &str) -> Result<Vec<FileChange>, PatchError> {
    let error = |line: usize, message: &str| PatchError {
        line,
        message: message.to_owned(),
    };
    // Lenient only on what editors and shells add around a patch: a trailing newline,
    // carriage returns, surrounding blank lines.
    let lines: Vec<&str> = text
        .lines()
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .collect();
    let first = lines
        .iter()
        .position(|line| !line.trim().is_empty())
        .ok_or_else(|| error(1, "the patch is empty"))?;
    let last = lines
        .iter()
        .rposition(|line| !line.trim().is_empty())
        .unwrap_or(first);
    if lines[first].trim() != "*** Begin Patch" {
        return Err(error(first + 1, "a patch starts with `*** Begin Patch`"));
    }
    if last == first || lines[last].trim() != "*** End Patch" {
        return Err(error(last + 1, "a patch ends with `*** End Patch`"));
    }

    let mut changes: Vec<FileChange> = Vec::new();
    let mut section = Section::Between;
    let mut update_has_hunk = false;
    for (index, line) in lines.iter().enumerate().take(last).skip(first + 1) {
        let number = index + 1;
        if let Some(rest) = line.strip_prefix("*** ") {
            if section == Section::Update && !update_has_hunk && !rest.starts_with("Move to:") {
                return Err(error(number, "an `*** Update File` section has no change"));
            }
            if let Some(path) = header_path(rest, "Add File:") {
                changes.push(FileChange::Add {
                    path: checked(path, number)?,
                });
                section = Section::Add;
            } else if let Some(path) = header_path(rest, "Update File:") {
                changes.push(FileChange::Update {
                    path: checked(path, number)?,
                    move_to: None,
                });
                section = Section::Update;
                update_has_hunk = false;
            } else if let Some(path) = header_path(rest, "Delete File:") {
                changes.push(FileChange::Delete {
                    path: checked(path, number)?,
                });
                section = Section::Delete;
            } else if let Some(path) = header_path(rest, "Move to:") {
                match (section, changes.last_mut()) {
                    (Section::Update, Some(FileChange::Update { move_to, .. }))
                        if move_to.is_none() && !update_has_hunk =>
                    {
                        *move_to = Some(checked(path, number)?);
                    }
                    _ => {
                        return Err(error(
                            number,
                            "`*** Move to` must follow an `*** Update File` header",
                        ))
                    }
                }
            } else if rest.trim() == "End of File" && section == Section::Update {
                // Marks a hunk that ends at the end of the file.
            } else {
                return Err(error(number, &format!("unknown patch line `*** {rest}`")));
            }
            continue;
        }
        match section {
            Section::Between | Section::Delete => {
                return Err(error(number, "a line outside any file section"))
            }
            Section::Add if line.starts_with('+') => {}
            Section::Add => return Err(error(number, "added files hold only `+` lines")),
            Section::Update if line.starts_with("@@") => update_has_hunk = true,
            // A hunk may start without an `@@` line in Codex's format.
            Section::Update
                if line.starts_with(' ')
                    || line.starts_with('-')
                    || line.starts_with('+')
                    || line.is_empty() =>
            {
                update_has_hunk = true
            }
            Section::Update => return Err(error(number, "not a line of a hunk")),
        }
    }
    if section == Section::Update && !update_has_hunk {
        return Err(error(
            last + 1,
            "an `*** Update File` section has no change",
        ));
    }
    if changes.is_empty() {
        return Err(error(last + 1, "the patch changes no file"));
    }
    Ok(changes)
}

fn header_path<'a>(rest: &'a str, header: &str) -> Option<&'a str> {
    rest.strip_prefix(header).map(str::trim)
}

fn checked(path: &str, line: usize) -> Result<String, PatchError> {
    if path.is_empty() {
        return Err(PatchError {
            line,
            message: "a file header names no path".into(),
        });
    }
    if path.chars().any(char::is_control) {
        return Err(PatchError {
            line,
            message: "a path holds a control character".into(),
        });
    }
    Ok(path.to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_file_a_patch_touches_is_named() {
        let patch =
            "*** Begin Patch\n*** Add File: docs/new.md\n+hello\n+\n*** Update File: src/lib.rs\n\
                     *** Move to: src/core.rs\n@@ fn main\n context\n-old\n+new\n*** End of File\n\
                     *** Delete File: /etc/passwd\n*** Update File: a.txt\n-x\n+y\n*** End Patch\n";
        let changes = parse(patch).unwrap();
        assert_eq!(
            changes,
            vec![
                FileChange::Add {
                    path: "docs/new.md".into()
                },
                FileChange::Update {
                    path: "src/lib.rs".into(),
                    move_to: Some("src/core.rs".into())
                },
                FileChange::Delete {
                    path: "/etc/passwd".into()
                },
                FileChange::Update {
                    path: "a.txt".into(),
                    move_to: None
                },
            ]
        );
        let paths: Vec<&str> = changes.iter().flat_map(FileChange::paths).collect();
        assert_eq!(
            paths,
            [
                "docs/new.md",
                "src/lib.rs",
                "src/core.rs",
                "/etc/passwd",
                "a.txt"
            ]
        );
        // Windows line endings and blank lines around the envelope are read the same.
        let crlf = "\n*** Begin Patch\r\n*** Delete File: x\r\n*** End Patch\r\n\n";
        assert_eq!(parse(crlf).unwrap().len(), 1);
    }

    #[test]
    fn malformed_patches_are_errors_with_their_line() {
        for (patch, line, says) in [
            ("", 1, "empty"),
            ("*** Add File: a\n+x\n*** End Patch", 1, "starts with"),
            ("*** Begin Patch\n*** Add File: a\n+x", 3, "ends with"),
            ("*** Begin Patch\n*** End Patch", 2, "changes no file"),
            (
                "*** Begin Patch\nrm -rf /\n*** End Patch",
                2,
                "outside any file",
            ),
            (
                "*** Begin Patch\n*** Add File: a\nx\n*** End Patch",
                3,
                "only `+`",
            ),
            (
                "*** Begin Patch\n*** Add File:   \n*** End Patch",
                2,
                "no path",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n*** End Patch",
                3,
                "no change",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n*** Delete File: b\n*** End Patch",
                3,
                "no change",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n#x\n*** End Patch",
                3,
                "hunk",
            ),
            (
                "*** Begin Patch\n*** Add File: a\n*** Move to: b\n*** End Patch",
                3,
                "Move to",
            ),
            (
                "*** Begin Patch\n*** Rename File: a\n*** End Patch",
                2,
                "unknown patch line",
            ),
            (
                "*** Begin Patch\n*** Delete File: a\n+x\n*** End Patch",
                3,
                "outside any file",
            ),
        ] {
            let error = parse(patch).unwrap_err();
            assert_eq!(error.line, line, "{patch:?}: {error}");
            assert!(error.message.contains(says), "{patch:?}: {error}");
        }
    }
}
