//! String literals of inline code: found, joined when added together, decoded from base64.

/// `code` with string literals that are added together (`'cu' + 'rl'`, `"a"+"b"`)
/// written as one literal.
pub(super) fn join_literals(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(['\'', '"']) {
        let quote = rest.as_bytes()[at];
        let after = &rest[at + 1..];
        let trimmed = after.trim_start();
        let joins = trimmed
            .strip_prefix('+')
            .map(str::trim_start)
            .filter(|next| next.as_bytes().first() == Some(&quote));
        match joins {
            // A closing quote, `+`, an opening quote of the same kind: drop all three.
            Some(next) => {
                out.push_str(&rest[..at]);
                rest = &next[1..];
            }
            None => {
                out.push_str(&rest[..=at]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A literal that is base64 of readable text with a blank in it (a command line), as
/// that text.
pub(crate) fn decoded_text(literal: &str) -> Option<String> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let body = literal.trim_end_matches('=');
    if literal.len() < 8 || !literal.len().is_multiple_of(4) || body.is_empty() {
        return None;
    }
    let mut bits: u32 = 0;
    let mut count = 0;
    let mut bytes = Vec::with_capacity(body.len() * 3 / 4);
    for c in body.bytes() {
        let value = ALPHABET.iter().position(|known| *known == c)?;
        bits = (bits << 6) | u32::try_from(value).ok()?;
        count += 6;
        if count >= 8 {
            count -= 8;
            bytes.push(u8::try_from((bits >> count) & 0xff).ok()?);
        }
    }
    let text = String::from_utf8(bytes).ok()?;
    let readable = text
        .chars()
        .all(|c| !c.is_control() || c == '\n' || c == '\t');
    (readable && text.contains(' ')).then_some(text)
}

/// Whether `code` (lower case) holds one of `names` as a whole name: not inside a longer
/// one (`transform(` and `norm(` are not `rm(`, `p.truncated` is not `truncate`;
/// `os.remove(`, `fs.rm(`, `rm(`, `f.truncate()` are).
/// The contents of `'…'` and `"…"` literals (escapes kept as written).
pub(super) fn string_literals(code: &str) -> Vec<String> {
    let mut literals = Vec::new();
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        if c != '\'' && c != '"' {
            continue;
        }
        let mut literal = String::new();
        let mut escaped = false;
        for inner in chars.by_ref() {
            if escaped {
                literal.push(inner);
                escaped = false;
            } else if inner == '\\' {
                escaped = true;
            } else if inner == c {
                break;
            } else {
                literal.push(inner);
            }
        }
        literals.push(literal);
    }
    literals
}

/// Calls that take a program and its arguments as separate strings.
const ARGV_CALLS: &[&str] = &[
    "spawn(",
    "spawnsync(",
    "execfile(",
    "execfilesync(",
    "subprocess.run(",
    "subprocess.call(",
    "check_call(",
    "check_output(",
    "popen(",
    "command::new(",
    "exec.command(",
    "exec.commandcontext(",
    "processbuilder(",
    "execa(",
];

/// The command lines of the program calls in `code` (`lower` is it in lower case) that
/// name their words as string literals: the literals of the call's arguments, joined
/// (each quoted for the shell).
pub(super) fn argv_commands(code: &str, lower: &str) -> Vec<String> {
    let mut out = Vec::new();
    for call in ARGV_CALLS {
        for (at, _) in lower.match_indices(call) {
            let start = at + call.len();
            // The call's arguments: up to its closing parenthesis, at most a few lines.
            let mut depth = 1usize;
            let mut end = start;
            for (offset, c) in code[start..].char_indices().take(2_000) {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = start + offset;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            // `Command::new("x").args([...])`: the builder's chain holds the arguments.
            let chain_end = if call.starts_with("command::new") {
                code[end..]
                    .find(';')
                    .map_or(code.len(), |at| end + at)
                    .min(end + 2_000)
            } else {
                end
            };
            let words = string_literals(&code[start..chain_end]);
            if words.len() >= 2 {
                out.push(
                    words
                        .iter()
                        .map(|word| format!("'{}'", word.replace('\'', "'\\''")))
                        .collect::<Vec<_>>()
                        .join(" "),
                );
            }
        }
    }
    out
}
