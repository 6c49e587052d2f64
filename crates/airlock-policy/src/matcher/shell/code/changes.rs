//! What inline code changes and whom it talks to, read from its text: the files it writes
//! through `open(…, "w")` or `Path(…).write_text(…)`, the paths it deletes by name, and
//! whether its only addresses are this machine's.

use super::*;

/// Whether an argument of `open(…)` after the file is a mode that writes (`'w'`, `"a+"`,
/// `mode='x'`); another keyword's value (`errors='replace'`, `encoding='utf-8'`) is none.
pub(super) fn writing_mode(argument: &str) -> bool {
    let argument = argument.trim();
    let argument = match argument.strip_prefix("mode=") {
        Some(mode) => mode.trim(),
        None if argument.split_once('=').is_some_and(|(name, _)| {
            let name = name.trim();
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }) =>
        {
            return false;
        }
        None => argument,
    };
    let quoted = argument.trim_matches(|c| c == '\'' || c == '"');
    argument.len() != quoted.len() && quoted.contains(['w', 'a', 'x', '+'])
}

pub(super) fn opens_for_writing(lower: &str) -> bool {
    let mut rest = lower;
    while let Some(at) = rest.find("open(") {
        rest = &rest[at + 5..];
        let call: String = rest.chars().take_while(|c| *c != ')').collect();
        let mode_written = call.split(',').skip(1).any(writing_mode);
        if mode_written {
            return true;
        }
    }
    false
}

/// The files code writes, when it writes only through `open(FILE, "w"…)` (and `.dump(`
/// or `.write(` to what it opened) or `Path(FILE).write_text(…)`, and each FILE is a
/// string literal or a name given one string literal once (`p = "src/x.py"`). `None`
/// when any write cannot be named so, or nothing is.
/// Methods that write the file named by their first argument (pandas' writers,
/// matplotlib's `savefig`).
const FIRST_ARGUMENT_WRITERS: &[&str] = &[
    ".to_csv(",
    ".to_json(",
    ".to_excel(",
    ".to_parquet(",
    ".to_feather(",
    ".to_pickle(",
    ".savefig(",
];

pub(super) fn files_written(code: &str, lower: &str) -> Option<Vec<String>> {
    let other_writes = WRITES
        .iter()
        .filter(|name| {
            !matches!(**name, "write" | ".dump(" | "file_put_contents")
                && !FIRST_ARGUMENT_WRITERS
                    .iter()
                    .any(|call| call.trim_matches(['.', '(']) == **name)
        })
        .any(|name| lower.contains(name));
    // A relative name is only known while the code stays in its folder.
    if other_writes || lower.contains("chdir") || lower.contains("process.cwd") {
        return None;
    }
    let mut files = Vec::new();
    for (at, _) in code.match_indices("open(") {
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue;
        }
        let arguments = call_arguments(&code[at + "open(".len()..])?;
        let writes = arguments
            .iter()
            .skip(1)
            .any(|argument| writing_mode(argument));
        if writes {
            files.push(named_file(code, arguments.first()?)?);
        }
    }
    // PHP's `file_put_contents('notes.txt', …)` and Node's `fs.writeFileSync('x', …)`:
    // the file is the first argument.
    for call in [
        "file_put_contents(",
        "writeFileSync(",
        "writeFile(",
        "appendFileSync(",
    ] {
        for (at, _) in code.match_indices(call) {
            if code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                continue;
            }
            let arguments = call_arguments(&code[at + call.len()..])?;
            files.push(named_file(code, arguments.first()?)?);
        }
    }
    // pandas' `df.to_csv('out.csv', index=False)`, matplotlib's `plt.savefig('a.png')`:
    // the file is the first argument; without one (`df.to_csv()`) the text is returned.
    for call in FIRST_ARGUMENT_WRITERS {
        for (at, _) in code.match_indices(call) {
            let arguments = call_arguments(&code[at + call.len()..])?;
            if let Some(first) = arguments.first() {
                files.push(named_file(code, first)?);
            }
        }
    }
    for (at, _) in code.match_indices("Path(") {
        let rest = &code[at + "Path(".len()..];
        let arguments = call_arguments(rest)?;
        let after = rest.split_once(')').map_or("", |(_, after)| after);
        if after.starts_with(".write_text(") || after.starts_with(".write_bytes(") {
            files.push(named_file(code, arguments.first()?)?);
        }
    }
    // `path = Path('src/x.ts')` … `path.write_text(text)`: a name given one path.
    for call in [".write_text(", ".write_bytes("] {
        for (at, _) in code.match_indices(call) {
            let name_start = code[..at]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(0, |index| index + 1);
            let name = &code[name_start..at];
            if name.is_empty() || code[..name_start].ends_with(['.', ')']) {
                continue;
            }
            files.push(named_file(code, name)?);
        }
    }
    let writes_text = lower.contains(".write_text(") || lower.contains(".write_bytes(");
    let named = files.len();
    let paths_written =
        code.matches(".write_text(").count() + code.matches(".write_bytes(").count();
    if files.is_empty() || (writes_text && paths_written > named) {
        return None;
    }
    Some(files)
}

/// Whether code reaches the network only through HTTP clients, at addresses of this
/// machine written out (`fetch('http://localhost:5173/api/health')`), as `curl localhost`
/// does: no raw sockets, no address taken from its arguments, input, environment or a
/// file, and every address it writes is local (a client refuses one without its scheme).
pub(super) fn talks_only_to_this_machine(code: &str, lower: &str) -> bool {
    const ELSEWHERE: &[&str] = &[
        "socket",
        "net.connect",
        "net.createconnection",
        "dgram",
        "tls.connect",
        "argv",
        "input(",
        "stdin",
        "environ",
        "getenv",
        "process.env",
        "smtplib",
        "ftplib",
        "paramiko",
        "websocket",
        // Addresses read from a file (`for u in open('urls.txt'): requests.get(u)`).
        "open(",
        "readfile",
        "read_text(",
        "read_bytes(",
    ];
    // `urllib.request.urlopen(…)` opens an address, not a file.
    let lower = lower.replace("urlopen(", "url_fetch(");
    if ELSEWHERE.iter().any(|name| lower.contains(name)) {
        return false;
    }
    let urls: Vec<String> = string_literals(code)
        .into_iter()
        .filter(|literal| literal.contains("://") || literal.starts_with("//"))
        .collect();
    !urls.is_empty()
        && urls
            .iter()
            .all(|url| crate::matcher::shell::classify::is_local_url(url))
}

/// What inline code deletes, when every call that deletes (every name of [`DELETES`] in
/// it) is one of the known calls given the path as a string literal, wrapped in `Path(…)`
/// or not, or as a name assigned one literal (`shutil.rmtree('build')`, `os.remove(p)`
/// after `p = 'out.log'`, `Path('x.txt').unlink()`); `None` when any target is computed
/// (`os.path.join(root, d)`, a loop's variable) or the code changes its folder.
pub(super) fn files_deleted(code: &str) -> Option<Vec<String>> {
    const CALLS: &[&str] = &[
        "rmtree(",
        "os.remove(",
        "os.unlink(",
        "os.rmdir(",
        "rmSync(",
        "unlinkSync(",
        "rmdirSync(",
        "fs.rm(",
        "removeSync(",
        "fs.remove(",
        "fse.remove(",
        "rimraf.sync(",
        "rimrafSync(",
        "send2trash(",
    ];
    let lower = code.to_ascii_lowercase();
    if lower.contains("chdir") {
        return None;
    }
    let mut files = Vec::new();
    let mut spans = Vec::new();
    for call in CALLS {
        for (at, _) in code.match_indices(call) {
            let rest = &code[at + call.len()..];
            let end = rest.find([',', ')'])?;
            let argument = rest[..end].trim();
            let file = match path_literal(argument) {
                Some(literal) => literal.to_owned(),
                None => named_file(code, argument)?,
            };
            files.push(file);
            spans.push((at, at + call.len() + end));
        }
    }
    // `Path('x.txt').unlink()`, `Path("d").rmdir()`.
    for call in [".unlink(", ".rmdir("] {
        for (at, _) in code.match_indices(call) {
            let before = &code[..at];
            let open = before.rfind("Path(")?;
            let literal = path_literal(&before[open..])?;
            files.push(literal.to_owned());
            spans.push((open, at + call.len()));
        }
    }
    // Every name of a delete must be one of the calls read above.
    let identifier = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let unread = DELETES.iter().any(|name| {
        lower.match_indices(name).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + name.len()..].chars().next();
            let counted = !(before.is_some_and(identifier)
                || (name.ends_with(identifier) && after.is_some_and(identifier)));
            counted
                && !spans
                    .iter()
                    .any(|(start, end)| *start < at + name.len() && at < *end)
        })
    });
    (!unread && !files.is_empty()).then_some(files)
}

/// The comma-separated arguments of a call, from just after its `(` to its `)`; `None`
/// when they hold a nested call or bracket (read no further than plain values).
pub(super) fn call_arguments(after_open: &str) -> Option<Vec<&str>> {
    let end = after_open.find(')')?;
    let inside = &after_open[..end];
    if inside.contains(['(', '[', '{']) {
        return None;
    }
    Some(inside.split(',').collect())
}

/// The file one argument names: a string literal, or a name assigned one string literal
/// exactly once in `code`.
/// A string literal, bare or wrapped in a path (`'x'`, `Path('x')`, `pathlib.Path("x")`).
pub(super) fn path_literal(value: &str) -> Option<&str> {
    let inner = value
        .strip_prefix("pathlib.")
        .unwrap_or(value)
        .strip_prefix("Path(")
        .and_then(|rest| rest.strip_suffix(')'))
        .map(str::trim)
        .unwrap_or(value);
    quoted(inner)
}

pub(super) fn named_file(code: &str, argument: &str) -> Option<String> {
    let argument = argument.trim();
    if let Some(literal) = quoted(argument) {
        return Some(literal.to_owned());
    }
    if argument.is_empty()
        || !argument
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let mut values = Vec::new();
    for (at, _) in code.match_indices(argument) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            continue;
        }
        let rest = code[at + argument.len()..].trim_start_matches([' ', '\t']);
        if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        // `p = …` but not `p == …`; `for p in …`, `p += …` and the like change it too.
        let assigned = rest.starts_with('=') && !rest.starts_with("==");
        let changed = ["+=", "-=", ":="].iter().any(|op| rest.starts_with(op))
            || code[..at].trim_end().ends_with("for")
            || code[..at].trim_end().ends_with("as")
            || code[..at].trim_end().ends_with("global");
        if changed {
            return None;
        }
        if assigned {
            values.push(path_literal(rest[1..].trim_start().lines().next()?.trim())?.to_owned());
        }
    }
    match values.as_slice() {
        [value] => Some(value.clone()),
        _ => None,
    }
}
