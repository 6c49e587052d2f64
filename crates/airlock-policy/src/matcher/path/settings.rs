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

/// Whether `path` (absolute) is, or lies in, a folder of `home` where applications keep
/// their settings ([`APPLICATION_FOLDERS`]).
pub fn application_settings_folder(path: &str, home: Option<&str>) -> bool {
    let (Some(home), Some(path)) = (
        home.and_then(normalize)
            .filter(|_| home.is_some_and(is_absolute)),
        normalize(path).filter(|_| is_absolute(path)),
    ) else {
        return false;
    };
    below(&path, &home).is_some_and(|rest| {
        let rest = rest.to_ascii_lowercase();
        APPLICATION_FOLDERS.iter().any(|folder| {
            rest == *folder
                || rest
                    .strip_prefix(folder)
                    .is_some_and(|after| after.starts_with('/'))
        })
    })
}
