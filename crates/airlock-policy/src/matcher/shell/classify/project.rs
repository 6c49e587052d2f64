//! Whole-line checks of what a command does to the project itself, made once every segment
//! is judged:
//! - **destroying the project**: a delete whose target holds the project root or the
//!   folder the shell stands in (`rm -rf ..` from the root, `rm -rf ~/work` above the checkout,
//!   `rm -rf "$PWD"`) deletes the whole project, whether or not it is a git work tree. The
//!   segment is given the project root as a file it changes, so the policy's
//!   `{project}` rules see what is really at stake;
//! - **replacing a checkout**: deleting a directory and cloning a repository into the same
//!   name (`rm -rf app && git clone …/app`) throws away whatever was not pushed in the old
//!   one. It is `discard` (a person decides), not a delete inside the project.

use super::{basename, below, Class, Context, FileRef, Role, SegmentFacts};

/// The project root as a file a delete changes, when deleting `file` deletes the whole
/// project: `file` is the project root, the folder the shell stands in when it deletes
/// (`dir`: the call's folder unless the line moved, `cd ..; rm -rf sub` deletes a named
/// folder), or a folder holding either. A glob (`rm -rf build/*`) stands for what is
/// below its folder, not the folder itself.
pub(super) fn destroyed_project(
    file: &FileRef,
    dir: Option<&str>,
    context: &Context,
) -> Option<FileRef> {
    let project = context.project()?;
    let path = file.path.as_deref()?;
    if file.tree || file.role != Role::Change {
        return None;
    }
    let holds = |inner: &str| below(inner, path).is_some();
    (holds(project) || dir.or(context.cwd()).is_some_and(holds)).then(|| FileRef {
        path: Some(project.to_owned()),
        tree: false,
        file_only: false,
        role: Role::Change,
    })
}

/// Marks as `discard` every delete that a later clone in the same line replaces.
pub(super) fn replaces_checkout(segments: &mut [SegmentFacts]) {
    for later in 1..segments.len() {
        let targets = clone_targets(&segments[later].text);
        if targets.is_empty() {
            continue;
        }
        for segment in &mut segments[..later] {
            if !segment.classes.contains(Class::Delete) {
                continue;
            }
            let replaced = segment.files.iter().any(|file| {
                file.role == Role::Change
                    && file
                        .path
                        .as_deref()
                        .is_some_and(|path| targets.iter().any(|target| basename(path) == target))
            });
            if replaced {
                segment.classes.insert(Class::Discard);
            }
        }
    }
}

/// The folder names a clone may create: its explicit destination and the repository's own
/// name (both, when it cannot be told which is which). Empty when the segment is no clone.
fn clone_targets(text: &str) -> Vec<String> {
    // Most segments are no clone: told from their first two words without collecting.
    let mut head = text.split_whitespace();
    let is_clone = match (head.next(), head.next()) {
        (Some(git), Some("clone")) => basename(git) == "git",
        (Some(gh), Some("repo")) => basename(gh) == "gh",
        _ => false,
    };
    if !is_clone {
        return Vec::new();
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let rest = match words.as_slice() {
        [git, "clone", rest @ ..] if basename(git) == "git" => rest,
        [gh, "repo", "clone", rest @ ..] if basename(gh) == "gh" => rest,
        _ => return Vec::new(),
    };
    let mut targets = Vec::new();
    for word in rest.iter().take_while(|word| **word != "--") {
        if word.starts_with('-') {
            continue;
        }
        let word = word
            .trim_matches(|c| c == '\'' || c == '"')
            .trim_end_matches('/');
        let name = word.rsplit(['/', ':']).next().unwrap_or(word);
        let name = name.strip_suffix(".git").unwrap_or(name);
        if !name.is_empty() {
            targets.push(name.to_owned());
        }
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_targets_name_the_folders_a_clone_creates() {
        for (text, want) in [
            ("gh repo clone heypano/app", vec!["app"]),
            ("git clone https://github.com/o/app.git", vec!["app"]),
            (
                "git clone --depth 1 git@github.com:o/app.git dest",
                vec!["1", "app", "dest"],
            ),
            ("/usr/bin/git clone o/app -- --depth 1", vec!["app"]),
            ("git status", vec![]),
            ("cargo build", vec![]),
        ] {
            assert_eq!(clone_targets(text), want, "{text}");
        }
    }
}
