//! Whether a command line is PowerShell rather than a POSIX shell's: read from its first
//! command's cmdlet, and on Windows from what only PowerShell writes.

/// Whether `command` is PowerShell rather than a POSIX shell line: its first command (or
/// one after a `|` or `;`) is a cmdlet (`Verb-Noun` with a PowerShell verb), which no
/// POSIX system has (Claude Code's `PowerShell` tool runs `pwsh` on any system). On
/// Windows also: an alias only PowerShell (or `cmd`, which reads it alike) has, a line
/// that starts with an assignment (`$x = …`) or the call operator, or one that reads
/// `$env:`.
pub(in crate::matcher::shell) fn looks_like_powershell(command: &str, windows: bool) -> bool {
    let trimmed = command.trim_start();
    // A line that starts PowerShell itself (`/mnt/c/…/powershell.exe -Command "Get-HotFix |
    // Sort-Object …" 2>/dev/null` from WSL's bash) is the shell's line: the script is read
    // as PowerShell where it is passed, its cmdlets are no sign of the line's dialect.
    let first = trimmed.split_whitespace().next().unwrap_or("");
    let program = first.rsplit(['/', '\\']).next().unwrap_or(first);
    if ["powershell", "pwsh", "powershell.exe", "pwsh.exe"]
        .iter()
        .any(|shell| shell.eq_ignore_ascii_case(program))
    {
        // What follows PowerShell's own command on the line tells the dialect.
        return first_command_end(trimmed).is_some_and(|end| {
            let rest = trimmed[end..].trim_start_matches([';', '|', '&', '\n']);
            looks_like_powershell(rest, windows)
        });
    }
    // `cat <<'EOF'`: a here-document is POSIX (PowerShell has no `<<`); its body is text,
    // whatever words it holds (`(copy to .env to customize)`).
    if opens_here_document(command) || closes_posix_compound(command) {
        return false;
    }
    if windows
        && (command.contains("$env:")
            || command.contains("$Env:")
            || command.contains("$ENV:")
            || trimmed.starts_with("& ")
            || assigns_variable(trimmed))
    {
        return true;
    }
    // `if (…) {`, `foreach ($x in …) {`: a statement bash does not write so.
    if windows {
        let keyword_end = trimmed
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(trimmed.len());
        let keyword = &trimmed[..keyword_end];
        if ["if", "elseif", "foreach", "while", "switch"]
            .iter()
            .any(|known| known.eq_ignore_ascii_case(keyword))
            && trimmed[keyword_end..].trim_start().starts_with('(')
        {
            return true;
        }
    }
    // (Run on every command line: no allocation.) A command starts a part, or follows
    // an opening `(` or `{` (`if (Test-Path x) { Get-Content x }`).
    let is_command = |word: &str| {
        let first = word.trim_start_matches(['(', '{']);
        (windows
            && POWERSHELL_ONLY
                .iter()
                .any(|alias| alias.eq_ignore_ascii_case(first)))
            || first.split_once('-').is_some_and(|(verb, noun)| {
                is_noun(noun) && VERBS.iter().any(|known| known.eq_ignore_ascii_case(verb))
            })
    };
    command.split(['|', ';', '\n']).any(|part| {
        is_command(part.split_whitespace().next().unwrap_or(""))
            || part
                .match_indices(['(', '{'])
                .any(|(at, _)| is_command(part[at + 1..].split_whitespace().next().unwrap_or("")))
    })
}

/// Whether a part of `command` (between `;`, `|`, `&` and new lines) starts with a word
/// only a POSIX shell's compound commands and tests have (`done`, `fi`, `then`, `esac`, a
/// bare `[` or `[[`): `for p in a b; do [ -f "$p" ] && echo "$p"; done` is bash even where
/// it also calls `where`. PowerShell writes none of them so (`[int]$x` is one word).
fn closes_posix_compound(command: &str) -> bool {
    command.split([';', '|', '&', '\n']).any(|part| {
        matches!(
            part.split_whitespace().next(),
            Some("done" | "fi" | "then" | "esac" | "[" | "[[")
        )
    })
}

/// Whether a line of `command` opens a POSIX here-document (`<<EOF`, `<<-'EOF'`, `<< "X"`;
/// not a here-string, `<<<`), outside quotes.
fn opens_here_document(command: &str) -> bool {
    command.lines().any(|line| {
        line.match_indices("<<").any(|(at, _)| {
            let before = &line[..at];
            let after = line[at + 2..].trim_start_matches('-').trim_start();
            !before.ends_with('<')
                && !after.starts_with('<')
                && after.starts_with(|c: char| {
                    c.is_ascii_alphabetic() || c == '_' || c == '\'' || c == '"'
                })
                && before.matches('\'').count() % 2 == 0
                && before.matches('"').count() % 2 == 0
        })
    })
}

/// Where a POSIX line's first command ends, when the line goes on past it: the byte of a
/// `;`, `|`, `&` or new line outside quotes. Redirections (`2>&1`, `&>file`) do not end a
/// command.
fn first_command_end(line: &str) -> Option<usize> {
    let mut quote = None;
    let mut escaped = false;
    let mut previous = ' ';
    let mut chars = line.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let was = previous;
        previous = c;
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some('\''), '\'') | (Some('"'), '"') => quote = None,
            (Some('"'), '\\') | (None, '\\') => escaped = true,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ';' | '|' | '\n') => return Some(at),
            (None, '&')
                if !matches!(was, '>' | '<') && chars.peek().map(|&(_, c)| c) != Some('>') =>
            {
                return Some(at);
            }
            _ => {}
        }
    }
    None
}

/// `$name = …` (also `+=`…): a PowerShell assignment, where bash would run `$name`.
fn assigns_variable(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('$') else {
        return false;
    };
    let name_end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(rest.len());
    if name_end == 0 {
        return false;
    }
    let after = rest[name_end..].trim_start();
    let after = after.trim_start_matches(['+', '-', '*', '/']);
    after.starts_with('=') && !after.starts_with("==")
}

fn is_noun(noun: &str) -> bool {
    !noun.is_empty() && noun.chars().all(|c| c.is_ascii_alphanumeric())
}

/// PowerShell's approved verbs that agents' commands start with.
const VERBS: &[&str] = &[
    "add",
    "clear",
    "compare",
    "compress",
    "convert",
    "convertfrom",
    "convertto",
    "copy",
    "disable",
    "enable",
    "expand",
    "export",
    "foreach",
    "format",
    "get",
    "group",
    "import",
    "install",
    "invoke",
    "join",
    "measure",
    "move",
    "new",
    "out",
    "pop",
    "push",
    "register",
    "remove",
    "rename",
    "resolve",
    "restart",
    "select",
    "set",
    "sort",
    "split",
    "start",
    "stop",
    "tee",
    "test",
    "uninstall",
    "unregister",
    "update",
    "where",
    "write",
];

/// Aliases and words only PowerShell (or `cmd`, which reads them alike) has.
const POWERSHELL_ONLY: &[&str] = &[
    "gci",
    "gc",
    "sls",
    "iwr",
    "irm",
    "iex",
    "ni",
    "ri",
    "sl",
    "gl",
    "gi",
    "gp",
    "rvpa",
    "cpi",
    "mi",
    "rni",
    "ren",
    "del",
    "erase",
    "md",
    "rd",
    "spps",
    "gps",
    "ft",
    "fl",
    "select",
    "where",
    "foreach",
    "%",
    "?",
    "ac",
    "copy",
    "move",
    "dir",
    "type",
    "foreach-object",
    "where-object",
];
