//! Settings files whose values are commands or code: `tox.ini`, `.cargo/config.toml`,
//! `.npmrc`.

use serde_json::Value;

use super::Piece;

/// How a settings file holds its commands: which keys, and whether their values are shell
/// lines or code.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::matcher) struct Settings {
    pub(in crate::matcher) shell: &'static [&'static str],
    pub(in crate::matcher) code: &'static [&'static str],
}

/// tox's commands, run on every `tox` (continuation lines indented).
pub(super) const TOX: Settings = Settings {
    shell: &[
        "commands",
        "commands_pre",
        "commands_post",
        "install_command",
    ],
    code: &[],
};

/// cargo's programs that wrap every build or run.
pub(super) const CARGO: Settings = Settings {
    shell: &["runner", "rustc-wrapper", "rustc-workspace-wrapper"],
    code: &[],
};

/// npm's shell for scripts and the options of every node it starts (`--import=data:…`).
pub(super) const NPMRC: Settings = Settings {
    shell: &["script-shell"],
    code: &["node-options"],
};

/// The commands of `text`, read as `key = value` lines (`=` or `:` TOML/INI style) with
/// indented continuation lines.
pub(super) fn commands(text: &str, settings: &Settings) -> Vec<Piece> {
    let mut out = Vec::new();
    // The key whose value continues on indented lines, and whether it is code.
    let mut open: Option<bool> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(code) = open {
                out.push(piece(trimmed, code));
            }
            continue;
        }
        open = None;
        let Some((key, value)) = trimmed.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"').to_ascii_lowercase();
        let code = settings.code.contains(&key.as_str());
        if !code && !settings.shell.contains(&key.as_str()) {
            continue;
        }
        open = Some(code);
        let value = value.trim();
        if !value.is_empty() {
            out.push(piece(value, code));
        }
    }
    out
}

/// A value as a command: a TOML array of words is an argv, a quoted string its text.
fn piece(value: &str, code: bool) -> Piece {
    let text = match serde_json::from_str::<Value>(value) {
        Ok(Value::Array(words)) => words
            .iter()
            .filter_map(Value::as_str)
            .map(|word| format!("'{}'", word.replace('\'', "'\\''")))
            .collect::<Vec<_>>()
            .join(" "),
        Ok(Value::String(text)) => text,
        _ => value.to_owned(),
    };
    if code {
        Piece::Code(text)
    } else {
        Piece::Shell(text)
    }
}
