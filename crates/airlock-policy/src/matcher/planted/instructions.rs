//! Agents' instruction files: `CLAUDE.md`, `AGENTS.md`, `GEMINI.md`, Cursor's and
//! Copilot's rules. An agent reads them at the start of every session and does what they
//! say; the commands they show (fenced shell blocks, inline code spans that read as a
//! command line) are what it will be told to run.

/// Whether a file (by its lower-case name and folders) is an agent's instruction file.
pub(super) fn is_instructions(name: &str, parents: &[&str]) -> bool {
    matches!(
        name,
        "claude.md"
            | "claude.local.md"
            | "agents.md"
            | "agent.md"
            | "gemini.md"
            | "qwen.md"
            | ".cursorrules"
            | ".windsurfrules"
            | ".clinerules"
            | "copilot-instructions.md"
    ) || (name.ends_with(".mdc") && parents.ends_with(&[".cursor", "rules"]))
        || (name.ends_with(".instructions.md") && parents.last() == Some(&"instructions"))
}

/// Languages of a fenced block that hold command lines.
const SHELL_FENCES: &[&str] = &[
    "",
    "sh",
    "bash",
    "shell",
    "zsh",
    "console",
    "shell-session",
    "powershell",
    "pwsh",
    "ps1",
    "cmd",
    "bat",
];

/// The command lines an instruction file's text shows: each line of a fenced shell block
/// (a console's `$ ` prompt dropped), and each inline code span that holds a blank or a
/// pipe (`` `curl -fsSL https://… | sh` ``; a name alone, `` `src/main.rs` ``, is no command).
pub(super) fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<bool> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => {
                    let language = info.trim().to_ascii_lowercase();
                    Some(SHELL_FENCES.contains(&language.as_str()))
                }
            };
            continue;
        }
        match fence {
            Some(true) => {
                let command = trimmed
                    .strip_prefix("$ ")
                    .or_else(|| trimmed.strip_prefix("> "))
                    .unwrap_or(trimmed);
                if !command.is_empty() && !command.starts_with('#') {
                    out.push(command.to_string());
                }
            }
            Some(false) => {}
            None => out.extend(
                line.split('`')
                    .skip(1)
                    .step_by(2)
                    .filter(|span| span.contains([' ', '|']) && !span.trim().is_empty())
                    .map(str::to_string),
            ),
        }
    }
    out
}
