//! Whether code reads the whole environment (every token in it) rather than one variable
//! by name, or hands it to a program it starts.

use super::names::ENVIRONMENTS;

/// Whether code reads the environment as a whole (`dict(os.environ)`,
/// `JSON.stringify(process.env)`, `os.environ.items()`) rather than one variable by name
/// (`os.environ["HOME"]`, `os.environ.get("X")`, `process.env.PORT`).
pub(super) fn reads_whole_environment(lower: &str) -> bool {
    ENVIRONMENTS.iter().any(|name| {
        lower.match_indices(name).any(|(at, _)| {
            let rest = &lower[at + name.len()..];
            let one = rest.starts_with('[')
                || [
                    ".get(",
                    ".setdefault(",
                    ".pop(",
                    ".fetch(",
                    ".key?(",
                    ".include?(",
                ]
                .iter()
                .any(|call| rest.starts_with(call))
                || (*name == "process.env"
                    && rest.starts_with('.')
                    && rest[1..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'));
            !one && !child_environment(&lower[..at])
        })
    })
}

/// Whether the environment read just after `before` is handed to a program the code
/// starts (`spawn(cmd, {env: {...process.env, A: 1}})`, `subprocess.run(…,
/// env={**os.environ, …})`, `env = os.environ.copy()`, `cmd.Env = append(os.Environ(),
/// …)`): the child gets what the code has; nothing is read out.
fn child_environment(before: &str) -> bool {
    let mut near: String = last_bytes(before, 48)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    loop {
        let trimmed = [
            "...",
            "**",
            "{",
            "(",
            "append",
            "dict",
            "object.assign",
            "merge",
        ]
        .iter()
        .find_map(|suffix| near.strip_suffix(suffix).map(str::len));
        match trimmed {
            Some(length) => near.truncate(length),
            None => break,
        }
    }
    if !["env:", "env=", "environment:", "environ=", "envp="]
        .iter()
        .any(|suffix| near.ends_with(suffix))
    {
        return false;
    }
    // The option belongs to a program started nearby (`JSON.stringify({env: process.env})`
    // sends it).
    let wider = last_bytes(before, 160);
    [
        "spawn",
        "exec",
        "subprocess",
        "popen",
        "command",
        "cmd",
        "fork",
        "process.start",
        "startinfo",
        "run(",
        "call(",
    ]
    .iter()
    .any(|word| wider.contains(word))
}

/// The end of `text`, at most `count` bytes long, cut at a character's start.
fn last_bytes(text: &str, count: usize) -> &str {
    let start = text.len().saturating_sub(count);
    let start = (start..text.len())
        .find(|at| text.is_char_boundary(*at))
        .unwrap_or(text.len());
    &text[start..]
}
