//! Folders of the home that are no project: where applications keep their settings.

use super::{below, is_absolute, normalize};

/// Folders of the home where applications keep their own settings and data, by the
/// path below the home (lower case): the user's editor settings (`Library/Application
/// Support/Code/User`, `AppData/Roaming/Code/User`, `.config/Code/User`) are one. An agent
/// started there works in no project (a work tree found there still is one).
const APPLICATION_FOLDERS: &[&str] = &[
    "library/application support",
    "library/preferences",
    "library/containers",
    "library/group containers",
    "appdata",
    ".config/code",
    ".config/code - insiders",
    ".config/cursor",
    ".config/vscodium",
    ".vscode",
    ".vscode-server",
];

/// The folders Claude's desktop app gives each of its agent ("Cowork") sessions to work
/// in, below its settings folder (`Library/Application Support/Claude/…` on macOS,
/// `AppData/Roaming/Claude/…` on Windows): workspaces, so a project, not settings.
const AGENT_WORKSPACES: &str = "claude/local-agent-mode-sessions/";

/// Whether `path` (absolute) is, or lies in, a folder of `home` where applications keep
/// their settings ([`APPLICATION_FOLDERS`]); also of a home the path itself shows
/// (`/Users/<name>`, `/home/<name>`, `C:\Users\<name>`, and WSL's view of a Windows home,
/// `/mnt/c/Users/<name>`), whichever home the call reports.
pub fn application_settings_folder(path: &str, home: Option<&str>) -> bool {
    let Some(path) = normalize(path).filter(|_| is_absolute(path)) else {
        return false;
    };
    let in_settings = |rest: &str| {
        let rest = rest.to_ascii_lowercase();
        if rest.contains(AGENT_WORKSPACES) {
            return false;
        }
        APPLICATION_FOLDERS.iter().any(|folder| {
            rest == *folder
                || rest
                    .strip_prefix(folder)
                    .is_some_and(|after| after.starts_with('/'))
        })
    };
    let home = home.filter(|home| is_absolute(home)).and_then(normalize);
    if home
        .as_deref()
        .and_then(|home| below(&path, home))
        .is_some_and(in_settings)
    {
        return true;
    }
    home_shown_in(&path).is_some_and(in_settings)
}

/// The rest of a normalised path below a home its own folders show: `/Users/<name>/…`,
/// `/home/<name>/…`, a drive's `/c:/users/<name>/…` and WSL's `/mnt/c/Users/<name>/…`.
fn home_shown_in(path: &str) -> Option<&str> {
    let lower = path.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    // A drive (`/c:/…`) or WSL's mount of one (`/mnt/c/…`) before the home's folders.
    let skip = if lower.starts_with("/mnt/")
        && bytes.get(5).is_some_and(u8::is_ascii_alphabetic)
        && bytes.get(6) == Some(&b'/')
    {
        6
    } else if bytes.get(1).is_some_and(u8::is_ascii_alphabetic) && bytes.get(2) == Some(&b':') {
        3
    } else {
        0
    };
    let base = ["/users/", "/home/"]
        .into_iter()
        .find(|base| lower[skip..].starts_with(base))?;
    let (_, below_home) = path.get(skip + base.len()..)?.split_once('/')?;
    Some(below_home)
}
