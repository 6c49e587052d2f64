//! Codex's patch written as a shell here-document: `bash -lc "apply_patch <<'EOF' … EOF"`.
//!
//! Codex models often send their edits through the shell tool in this form, and Codex
//! intercepts it and applies the patch itself instead of running a shell. Judged as a
//! shell command it is an unknown program (asked every time); judged as what Codex does
//! with it, it is an edit of the files the patch names. So the script is read as a patch
//! only when it is exactly that and nothing else:
//! - the first line is `apply_patch` (or `applypatch`) and a here-document operator with
//!   a plain delimiter word, quoted or not, and nothing more;
//! - the last line is the delimiter, and no line between is (else the document would end
//!   early and the rest would run as commands);
//! - with an unquoted delimiter the shell would expand `$…` and `` `…` `` inside the body,
//!   so a body holding either is left to the shell classification.
//!
//! Codex also reads `cd DIR && apply_patch <<'EOF'` as a patch applied in `DIR`: a `cd`
//! to one literal folder (no `$`, backtick or glob in it) is kept as the patch's folder.
//! Anything else (another command before it, a second command after it) stays a shell
//! command.

use serde_json::Value;

/// A patch carried by a shell script: its text, and the folder a `cd` before it moved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ScriptPatch {
    pub(super) body: String,
    pub(super) folder: Option<String>,
}

/// The patch of a Codex shell call whose script is a lone `apply_patch` here-document.
/// `keys` are where the agent's tool keeps its command (a string or an argv).
pub(super) fn codex_script_patch(input: &Value, keys: &[&str]) -> Option<ScriptPatch> {
    let command = keys.iter().find_map(|key| input.get(*key))?;
    let script = match command {
        Value::String(script) => script.as_str(),
        Value::Array(argv) => match argv.as_slice() {
            [shell, flag, script] => {
                let shell = shell.as_str()?;
                let flag = flag.as_str()?;
                let shell = shell.rsplit('/').next().unwrap_or(shell);
                let login_or_command = flag.len() > 1
                    && flag.starts_with('-')
                    && flag.ends_with('c')
                    && flag[1..].chars().all(|c| matches!(c, 'l' | 'c'));
                if !matches!(shell, "bash" | "sh" | "zsh" | "dash") || !login_or_command {
                    return None;
                }
                script.as_str()?
            }
            _ => return None,
        },
        _ => return None,
    };
    heredoc_patch(script)
}

/// The body of `apply_patch <<DELIM\n…\nDELIM` (after at most `cd DIR && `), when
/// `script` is exactly that.
pub(super) fn heredoc_patch(script: &str) -> Option<ScriptPatch> {
    let script = script.trim();
    let (first, rest) = script.split_once('\n')?;
    let (folder, first) = match first.trim().strip_prefix("cd ") {
        Some(moved) => {
            let (folder, after) = moved.split_once("&&")?;
            (Some(literal_folder(folder.trim())?), after)
        }
        None => (None, first),
    };
    let operator = first
        .trim()
        .strip_prefix("apply_patch")
        .or_else(|| first.trim().strip_prefix("applypatch"))?;
    let word = operator.trim_start().strip_prefix("<<")?.trim();
    let (delimiter, quoted) = match word.as_bytes().first() {
        Some(b'\'') => (word.strip_prefix('\'')?.strip_suffix('\'')?, true),
        Some(b'"') => (word.strip_prefix('"')?.strip_suffix('"')?, true),
        _ => (word, false),
    };
    if delimiter.is_empty()
        || !delimiter
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let (body, last) = rest.rsplit_once('\n').unwrap_or(("", rest));
    if last.trim_end() != delimiter || body.lines().any(|line| line == delimiter) {
        return None;
    }
    if !quoted && (body.contains('$') || body.contains('`')) {
        return None;
    }
    Some(ScriptPatch {
        body: body.to_owned(),
        folder,
    })
}

/// The folder a `cd` word names when it is one literal word: plain, or wholly in single
/// or double quotes, with no expansion, glob or second word in it.
fn literal_folder(word: &str) -> Option<String> {
    let inner = match word.as_bytes().first() {
        Some(b'\'') => word.strip_prefix('\'')?.strip_suffix('\'')?,
        Some(b'"') => word.strip_prefix('"')?.strip_suffix('"')?,
        _ if word.contains(char::is_whitespace) => return None,
        _ => word,
    };
    let plain = !inner.is_empty()
        && !inner.contains([
            '$', '`', '*', '?', '[', '\'', '"', '\\', '~', ';', '&', '|', '<', '>', '(', ')',
        ]);
    plain.then(|| inner.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PATCH: &str = "*** Begin Patch\n*** Update File: src/a.ts\n@@\n-x\n+y\n*** End Patch";

    #[test]
    fn a_lone_here_document_is_its_patch() {
        for (script, want) in [
            (format!("apply_patch <<'PATCH'\n{PATCH}\nPATCH"), Some(PATCH)),
            // Codex applies a patch after `cd DIR &&` in that folder.
            (format!("cd /srv/app && apply_patch <<'EOF'\n{PATCH}\nEOF"), Some(PATCH)),
            (format!("cd 'my app' && apply_patch <<'EOF'\n{PATCH}\nEOF"), Some(PATCH)),
            (format!("apply_patch << 'PATCH'\n{PATCH}\nPATCH\n"), Some(PATCH)),
            (format!("applypatch <<\"EOF\"\n{PATCH}\nEOF"), Some(PATCH)),
            (format!("apply_patch <<EOF\n{PATCH}\nEOF"), Some(PATCH)),
            // Anything beside the document runs as a command: left to the shell judge.
            (format!("cd $HOME && apply_patch <<'EOF'\n{PATCH}\nEOF"), None),
            (format!("cd ~ && apply_patch <<'EOF'\n{PATCH}\nEOF"), None),
            (format!("cd a b && apply_patch <<'EOF'\n{PATCH}\nEOF"), None),
            (format!("cd a; apply_patch <<'EOF'\n{PATCH}\nEOF"), None),
            (format!("cd a && rm -rf b && apply_patch <<'EOF'\n{PATCH}\nEOF"), None),
            (format!("rm -rf ~ && apply_patch <<'EOF'\n{PATCH}\nEOF"), None),
            (format!("apply_patch <<'EOF'\n{PATCH}\nEOF\nrm -rf ~"), None),
            (format!("apply_patch <<'EOF'\n{PATCH}\nEOF\ncurl x | sh\nEOF"), None),
            (format!("apply_patch <<'EOF' && rm -rf ~\n{PATCH}\nEOF"), None),
            (format!("apply_patch <<'EOF'; rm x\n{PATCH}\nEOF"), None),
            (format!("apply_patch <<'E F'\n{PATCH}\nE F"), None),
            (format!("apply_patch <<'EOF'\n{PATCH}\nEOG"), None),
            (format!("apply_patch\n{PATCH}"), None),
            // An unquoted delimiter expands the body: `$(…)` would run.
            ("apply_patch <<EOF\n*** Begin Patch\n*** Add File: a\n+$(rm -rf ~)\n*** End Patch\nEOF".to_string(), None),
            (format!("sh <<'EOF'\n{PATCH}\nEOF"), None),
        ] {
            let got = heredoc_patch(&script);
            assert_eq!(got.as_ref().map(|patch| patch.body.as_str()), want, "{script}");
        }
        let moved = heredoc_patch(&format!("cd 'my app' && apply_patch <<'EOF'\n{PATCH}\nEOF"));
        assert_eq!(
            moved.and_then(|patch| patch.folder).as_deref(),
            Some("my app")
        );
        let here = heredoc_patch(&format!("apply_patch <<'EOF'\n{PATCH}\nEOF"));
        assert_eq!(here.and_then(|patch| patch.folder), None);
    }

    #[test]
    fn only_a_shell_running_a_script_carries_one() {
        let script = format!("apply_patch <<'EOF'\n{PATCH}\nEOF");
        for (input, want) in [
            (json!({"command": ["bash", "-lc", script]}), true),
            (json!({"command": ["/bin/zsh", "-c", script]}), true),
            (json!({"cmd": script}), true),
            (json!({"command": ["python3", "-c", script]}), false),
            (json!({"command": ["bash", "-x", script]}), false),
            (json!({"command": ["bash", "-lc", script, "extra"]}), false),
            (json!({"command": 7}), false),
        ] {
            let got = codex_script_patch(&input, &["command", "cmd"]);
            assert_eq!(got.is_some(), want, "{input}");
        }
    }
}
