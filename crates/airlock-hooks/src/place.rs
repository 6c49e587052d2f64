//! What `airlock hook` reports from the agent's machine about where a call happens, and
//! the headers it reports it in. The server may run elsewhere, so the hook looks for the
//! project there and sends it; the server's reading of these headers (and its own look,
//! for hooks that post straight to it) is `airlock-server`'s `handlers/hooks/place.rs`.
//!
//! [`work_tree_of`] is this crate's one look at a file system: whether a folder holds
//! `.git`.

use std::path::Path;

/// The header `airlock hook` puts the project root in.
pub const PROJECT_HEADER: &str = "airlock-project";
/// The header `airlock hook` puts the user's home folder in.
pub const HOME_HEADER: &str = "airlock-home";
/// Set (to `true`) on a hook's answer when the deny in it is a failure to decide (a bad
/// token, an unreadable payload, a gate error), not a verdict.
pub const UNDECIDED_HEADER: &str = "airlock-undecided";

/// The nearest folder at or above `cwd` that holds `.git` (a folder, or the file of a
/// linked work tree), when `cwd` is an absolute folder on this machine. `airlock hook`
/// calls it on the agent's machine, the server on its own.
pub fn work_tree_of(cwd: &Path) -> Option<String> {
    if !cwd.is_absolute() || !cwd.is_dir() {
        return None;
    }
    cwd.ancestors()
        .find(|folder| folder.join(".git").exists())
        .and_then(|folder| folder.to_str())
        .map(str::to_owned)
}
