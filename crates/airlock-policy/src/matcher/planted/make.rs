//! Makefiles and justfiles: their recipe lines as the shell gets them, and what make runs
//! while it reads the file.

use super::Kind;

/// The recipe lines of a makefile (as the shell gets them, [`make_to_shell`]) or of a
/// justfile.
pub(in crate::matcher::planted) fn recipe_lines(text: &str, kind: Kind) -> Vec<String> {
    match kind {
        Kind::Make => recipes(text, |line| line.strip_prefix('\t'))
            .into_iter()
            .map(|line| make_to_shell(&line))
            .collect(),
        _ => recipes(text, |line| {
            line.starts_with([' ', '\t']).then(|| line.trim_start())
        }),
    }
}

/// A recipe line as the shell receives it: make replaces a variable (`$(HOME)`, `${CC}`)
/// by its value, from the makefile or the environment, which the shell then sees as
/// `${HOME}` would be; `$$` is a `$` of the shell's own. A function call (`$(shell …)`,
/// `$(wildcard …)`) is left as the substitution it reads as.
pub(super) fn make_to_shell(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        let close = match after.chars().next() {
            Some('(') => Some(')'),
            Some('{') => Some('}'),
            _ => None,
        };
        let name = close.and_then(|close| {
            let inner = &after[1..];
            let end = inner.find(close)?;
            let name = &inner[..end];
            (!name.is_empty()
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then_some(name)
        });
        match name {
            Some(name) => {
                out.push_str("${");
                out.push_str(name);
                out.push('}');
                rest = &after[name.len() + 2..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Recipe lines (those `recipe` accepts, with its prefix gone), continuation lines joined,
/// each without make's `@`, `-` and `+` markers.
fn recipes<'t>(text: &'t str, recipe: impl Fn(&'t str) -> Option<&'t str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut continued = false;
    for line in text.lines() {
        let body = if continued {
            Some(line.trim_start())
        } else {
            recipe(line)
        };
        let Some(body) = body else {
            continue;
        };
        let body = if continued {
            body
        } else {
            body.trim_start_matches(['@', '-', '+', ' '])
        };
        let (body, more) = match body.strip_suffix('\\') {
            Some(body) => (body, true),
            None => (body, false),
        };
        match out.last_mut() {
            Some(last) if continued => {
                last.push(' ');
                last.push_str(body);
            }
            _ => out.push(body.to_owned()),
        }
        continued = more;
    }
    out
}

/// What make runs while it reads the file, before any recipe: `$(shell …)` anywhere and
/// the right side of `VAR != …`.
pub(super) fn make_shell_functions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(at) = rest.find("$(shell ") {
            let body = &rest[at + "$(shell ".len()..];
            // The call ends at the `)` that balances its own `(`.
            let mut depth = 1usize;
            let mut end = body.len();
            for (index, c) in body.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = index;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            out.push(body[..end].to_owned());
            rest = &body[end..];
        }
        if !line.starts_with('\t') {
            if let Some((_, command)) = line.split_once("!=") {
                out.push(command.trim().to_owned());
            }
        }
    }
    out
}
