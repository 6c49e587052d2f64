//! Editors and IDEs opened on files (`code -r src/app.ts`, `cursor .`, `idea .`, `code -g
//! main.rs:120`, `code --diff a b`): the files are shown to the person, as `open` shows them.
//! Installing or removing extensions, a tunnel, another profile's folders, or any option
//! not known here is no such look.

use super::super::lex::Word;

/// Launchers of editors and IDEs that open the files and folders they are given.
const EDITORS: &[&str] = &[
    "code",
    "code-insiders",
    "codium",
    "cursor",
    "windsurf",
    "subl",
    "zed",
    "idea",
    "idea64",
    "webstorm",
    "pycharm",
    "goland",
    "clion",
    "rider",
    "phpstorm",
    "rubymine",
    "rustrover",
    "fleet",
    "mate",
    "gedit",
    "kate",
    "notepad",
    "notepad++",
];

/// Options that only choose how the files are shown (or print what is installed).
const SHOWING: &[&str] = &[
    "-r",
    "--reuse-window",
    "-n",
    "--new-window",
    "-g",
    "--goto",
    "-d",
    "--diff",
    "-w",
    "--wait",
    "-a",
    "--add",
    "--list-extensions",
    "--show-versions",
    "-v",
    "--version",
    "-h",
    "--help",
    "--status",
];

/// Commands of the launchers themselves (a tunnel, a web server, an agent, a chat, an
/// update, JetBrains' formatter and inspector), not files to open.
const SUBCOMMANDS: &[&str] = &[
    "tunnel",
    "serve-web",
    "agent",
    "chat",
    "mcp",
    "update",
    "format",
    "inspect",
    "installPlugins",
    "merge",
];

/// The files an editor launcher shows (none for `code --list-extensions`); `None` when
/// the command is not only an editor opening files.
pub(super) fn opened<'w>(name: &str, arguments: &'w [Word]) -> Option<Vec<&'w Word>> {
    let bare = [".exe", ".cmd", ".bat"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name);
    if !EDITORS.contains(&bare.to_ascii_lowercase().as_str()) {
        return None;
    }
    let mut files = Vec::new();
    for (index, word) in arguments.iter().enumerate() {
        if word.dynamic {
            return None;
        }
        let text = word.text.as_str();
        if text.starts_with('-') {
            SHOWING.contains(&text).then_some(())?;
            continue;
        }
        // `code tunnel`, `code serve-web`, `cursor agent`: the launcher's own commands.
        if files.is_empty() && SUBCOMMANDS.contains(&text) {
            return None;
        }
        // JetBrains' `idea diff a b`: a comparison of the files that follow.
        if index == 0 && text == "diff" && !bare.starts_with("code") {
            continue;
        }
        files.push(word);
    }
    Some(files)
}

/// `main.rs:120:4` as `code -g` takes it: the file without its line and column.
pub(super) fn without_position(text: &str) -> &str {
    let mut file = text;
    for _ in 0..2 {
        match file.rsplit_once(':') {
            Some((before, digits))
                if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) =>
            {
                file = before;
            }
            _ => break,
        }
    }
    file
}
