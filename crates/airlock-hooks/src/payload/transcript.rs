//! Where a transcript path places the session: the user's home and the folder the agent
//! was started in, read from the agent's own folder layout when the hook call does not say.

/// The user's home folder, as far as the agent's payload shows it: each agent keeps its
/// transcripts under a dot-folder of the home (`~/.claude/projects/…`, `~/.codex/sessions/…`,
/// `~/.gemini/tmp/…`, Qwen Code's `~/.qwen/tmp/…`; on Windows
/// `C:\\Users\\me\\.codex\\sessions\\…`).
pub fn home_from_transcript(transcript_path: &str) -> Option<String> {
    for marker in [".claude", ".codex", ".gemini", ".qwen"] {
        let mut from = 0;
        while let Some(at) = transcript_path[from..].find(marker).map(|at| at + from) {
            from = at + marker.len();
            let home = &transcript_path[..at];
            let separated = |text: Option<char>| matches!(text, Some('/' | '\\'));
            if !separated(home.chars().last()) || !separated(transcript_path[from..].chars().next())
            {
                continue;
            }
            let home = &home[..home.len() - 1];
            let posix = home.starts_with('/') && home.len() > 1;
            if posix || is_drive_folder(home) {
                return match users_home(home) {
                    Some(home) => Some(home.to_owned()),
                    None if never_a_home(home) => None,
                    None => Some(home.to_owned()),
                };
            }
        }
    }
    None
}

/// [`home_from_transcript`] for a call made in `cwd`: an agent folder kept in the very
/// folder the session works in (`CODEX_HOME=/srv/app/.codex` with `cwd` `/srv/app`) lies in
/// the project, not in a home, unless that folder is where systems put homes (`/home/me`,
/// `/Users/me`, `/root`, `C:\\Users\\me`, Termux's home): a session started in its home
/// keeps it.
pub fn home_from_transcript_at(transcript_path: &str, cwd: Option<&str>) -> Option<String> {
    let home = home_from_transcript(transcript_path)?;
    let trim = |path: &str| {
        path.trim_end_matches(['/', '\\'])
            .to_ascii_lowercase()
            .replace('\\', "/")
    };
    let in_cwd = cwd.is_some_and(|cwd| trim(cwd) == trim(&home));
    (!in_cwd || is_home_place(&home)).then_some(home)
}

/// A folder where systems put users' homes.
fn is_home_place(folder: &str) -> bool {
    let lower = folder.to_ascii_lowercase().replace('\\', "/");
    let lower = lower.trim_end_matches('/');
    let parts: Vec<&str> = lower.split('/').collect();
    matches!(
        lower,
        "/root" | "/var/root" | "/data/data/com.termux/files/home"
    ) || matches!(parts.as_slice(), ["", "home" | "users", name] if !name.is_empty())
        || (is_drive_path(lower)
            && matches!(parts.as_slice(), [_, "users", name] if !name.is_empty()))
}

/// The user's home holding `folder` when `folder` lies deeper in one (`/home/me/app`,
/// `/Users/me/src/app`, `C:\\Users\\me\\app`): an agent told to keep its folder in a
/// project (`CODEX_HOME=/home/me/app/.codex`) writes its transcripts there, and the
/// project is then not the home.
fn users_home(folder: &str) -> Option<&str> {
    // Root's home (`/root/capsule/.claude`, a container's or a cloud notebook's project
    // under `/root`): the home is `/root`.
    if folder
        .strip_prefix("/root/")
        .is_some_and(|rest| !rest.is_empty())
    {
        return Some("/root");
    }
    let separators: Vec<usize> = folder
        .char_indices()
        .filter(|(_, c)| matches!(c, '/' | '\\'))
        .map(|(at, _)| at)
        .collect();
    let root = |index: usize| separators.get(index).map(|&at| &folder[..at]);
    let home_root = |root: &str| {
        let root = root.to_ascii_lowercase().replace('\\', "/");
        matches!(root.as_str(), "/home" | "/users")
            || root.len() == 8 && is_drive_path(&root) && root.ends_with(":/users")
    };
    // `/home/me/app`: the separators at 0 and 5 and 8; the home ends before the third.
    let home_end = separators.get(2).copied()?;
    root(1).filter(|root| home_root(root))?;
    Some(&folder[..home_end])
}

/// A folder no system gives a user for a home, so an agent folder in it was put there by
/// the user (`CODEX_HOME=/workspaces/app/.codex`) and shows no home: Windows keeps every
/// home in a drive's `\\Users` (a transcript in `E:\\app\\.codex` lies in a project);
/// macOS mounts other disks in `/Volumes`, WSL the Windows drives in `/mnt/<drive>`, and
/// Codespaces, dev containers and Gitpod check projects out in `/workspaces` or `/workspace`.
/// Other POSIX folders may be homes (`/srv/team/me`, a cloud notebook's
/// `/teamspace/studios/this_studio`) and are kept.
fn never_a_home(folder: &str) -> bool {
    if is_drive_path(folder) {
        // `users_home` found no `X:\\Users\\<name>` holding it.
        let lower = folder.to_ascii_lowercase().replace('\\', "/");
        return !(lower.len() > 9 && lower[2..].starts_with("/users/"));
    }
    let mut parts = folder.split('/').skip(1);
    match (parts.next(), parts.next()) {
        (Some("workspaces" | "workspace" | "Volumes"), Some(_)) => true,
        (Some("mnt"), Some(drive)) => drive.len() == 1,
        _ => false,
    }
}

/// `C:\\Users\\me` or `c:/users/me`: a folder below a Windows drive's root.
fn is_drive_folder(path: &str) -> bool {
    path.len() > 3 && is_drive_path(path)
}

/// `D:\\`, `D:\\work` or `d:/work`: a path written from a Windows drive's root.
pub(crate) fn is_drive_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'/' | b'\\')
}

/// The folder Claude Code was started in, when the transcript path names it and it holds
/// `cwd`: Claude Code keeps a session's transcript under `~/.claude/projects/<folder>/`,
/// the folder's path with every character but ASCII letters and digits written as `-`
/// (`C:\\Users\\me\\app` as `c--Users-me-app`; a Windows drive in either case). The encoding
/// loses characters, so the name is only matched against `cwd` and its ancestors, never
/// decoded on its own.
pub fn launch_folder(transcript_path: &str, cwd: &str) -> Option<String> {
    let rest = ["/.claude/projects/", "\\.claude\\projects\\"]
        .iter()
        .find_map(|marker| transcript_path.split_once(marker).map(|(_, rest)| rest))?;
    let (name, _) = rest.split_once(['/', '\\'])?;
    let windows = is_drive_folder(cwd) || cwd.len() == 3 && is_drive_folder(&format!("{cwd}x"));
    // Claude Code writes every character but an ASCII letter or digit as `-`, one for each
    // UTF-16 unit it takes (`搜索` is `--`), so a folder is compared character by character.
    let fold = |c: char| if windows { c.to_ascii_lowercase() } else { c };
    let encodes_as_name = |folder: &str| {
        let mut expected = name.chars();
        folder.chars().all(|c| {
            if c.is_ascii_alphanumeric() {
                expected.next().map(fold) == Some(fold(c))
            } else {
                (0..c.len_utf16()).all(|_| expected.next() == Some('-'))
            }
        }) && expected.next().is_none()
    };
    // `cwd` and its ancestors, as prefixes of `cwd` ending before a separator.
    let trimmed = cwd.trim_end_matches(['/', '\\']);
    let mut folders = vec![trimmed];
    folders.extend(
        trimmed
            .char_indices()
            .filter(|(_, c)| matches!(c, '/' | '\\'))
            .map(|(at, _)| &trimmed[..at])
            .rev(),
    );
    folders
        .into_iter()
        .filter(|folder| folder.len() > 1 && !(windows && folder.len() <= 2))
        .find(|folder| encodes_as_name(folder))
        .map(str::to_owned)
}
