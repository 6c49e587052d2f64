//! Inline code in another language (`python -c '…'`, `perl -e '…'`, `node -e '…'`, a
//! here-document into `python`): what it may do, read from its text.
//!
//! This is not a parser for five languages. It looks for the few names through which
//! code reaches outside itself (running programs, deleting or writing files, the network,
//! decoding and evaluating more code, the environment) and for credential paths in it.
//! Code with none of them only computes and prints (`import json; print(…)`), which is
//! `read_only`. Code with any of them is `unknown` (never allowed), plus what it seems to
//! do (`delete`, `write`, `network`) so deny rules see it; the string literals of code that
//! runs programs are read as command lines, so `os.system("curl … | sh")` is judged as
//! the command it runs.

use crate::classes::{Class, ClassSet};

use super::classify::Role;

/// What inline code seems to do.
#[derive(Debug, Default)]
pub struct CodeFacts {
    pub classes: ClassSet,
    /// Paths named in string literals, with what the code seems to do to them.
    pub paths: Vec<(String, Role)>,
    /// String literals of code that runs programs, to be judged as command lines.
    pub commands: Vec<String>,
}

/// Whether inline code may print code it does not show: it decodes, reaches the network,
/// runs programs or hides what it calls. Reading a file it names is not hiding.
pub fn may_produce_code(code: &str) -> bool {
    let lower = join_literals(code).to_ascii_lowercase();
    [DECODERS, NETWORK, RUNS]
        .iter()
        .any(|names| names.iter().any(|name| lower.contains(name)))
        || OPAQUE
            .iter()
            .any(|name| *name != "open(" && lower.contains(name))
}

/// Whether code deletes data held in a store: a statement that drops or empties it, or a
/// `.delete(` beside a store's client or query (a list's or a map's `delete` is none).
fn drops_data(lower: &str) -> bool {
    const DROPS: &[&str] = &[
        "flushall",
        "flushdb",
        "drop_all(",
        "drop_table(",
        "drop_database(",
        "dropdatabase(",
        "drop_collection(",
        "delete_many(",
        "deletemany(",
        "delete from ",
        "drop table ",
        "drop schema ",
        "drop database ",
        "truncate table ",
    ];
    const STORES: &[&str] = &[
        "query(",
        "objects.",
        "redis",
        "cursor",
        "collection",
        "session",
        "db.",
        "table(",
    ];
    DROPS.iter().any(|name| lower.contains(name))
        || (lower.contains(".delete(") && STORES.iter().any(|name| lower.contains(name)))
}

/// The language inline code is written in, where that changes what its text does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Language {
    /// Python, JavaScript and TypeScript: a backtick quotes text (JavaScript's template
    /// strings, a regular expression's literal backtick), it runs nothing.
    Quoting,
    /// Anything else (Ruby, Perl, PHP, a shell): a backtick, `qx` and `%x(` run a command.
    #[default]
    Other,
}

impl Language {
    /// The language of the code an interpreter runs, by the interpreter's name.
    pub fn of_interpreter(name: &str) -> Language {
        let name = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        match name {
            "python" | "py" | "pypy" | "node" | "nodejs" | "bun" | "deno" | "tsx" | "ts-node" => {
                Language::Quoting
            }
            _ => Language::Other,
        }
    }
}

/// The names in [`RUNS`] that run a command line in code written in `language`.
fn runs_in(language: Language) -> impl Iterator<Item = &'static &'static str> {
    RUNS.iter()
        .filter(move |name| language == Language::Other || !matches!(**name, "`" | "qx" | "%x("))
}

/// Reads inline code whose language is not known.
#[cfg(test)]
pub fn inspect(code: &str) -> CodeFacts {
    inspect_at(code, Language::Other, 0)
}

/// Reads inline code written in `language`.
pub fn inspect_in(code: &str, language: Language) -> CodeFacts {
    inspect_at(code, language, 0)
}

/// [`inspect`], `depth` levels into code hidden in base64 literals of other code.
/// Perl's `kill SIGNAL, PID…` (`kill "TERM", 2231`, `kill(9, $pid)`): a signal sent to
/// processes by their ids. Signal 0 only asks whether they live.
fn perl_kill(lower: &str) -> bool {
    lower.match_indices("kill").any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$') {
            return false;
        }
        let rest = lower[at + 4..].trim_start();
        let rest = rest.strip_prefix('(').unwrap_or(rest).trim_start();
        let signal = rest.split(',').next().unwrap_or("").trim();
        rest.contains(',') && signal.starts_with(['\'', '"', '-'])
            || (signal.starts_with(|c: char| c.is_ascii_digit()) && signal != "0")
    })
}

fn inspect_at(code: &str, language: Language, depth: usize) -> CodeFacts {
    // `'child_' + 'process'`, `'sy' + 'stem'`: literals cut in pieces are read whole.
    let joined = join_literals(code);
    let code = joined.as_str();
    let lower = code.to_ascii_lowercase();
    let has = |names: &[&str]| names.iter().any(|name| lower.contains(name));
    let mut facts = CodeFacts::default();
    if has(CREDENTIALS)
        || string_literals(code).iter().any(|literal| {
            let name = literal.trim_start_matches("~/").trim_matches('/');
            CREDENTIAL_NAMES
                .iter()
                .any(|known| name.eq_ignore_ascii_case(known))
        })
        || printed::prints_secret_key(code, &lower)
    {
        facts.classes.insert(Class::CredentialAccess);
    }
    // Rows, keys or tables deleted in a data store (`db.query(X).delete()`,
    // `r.flushall()`, `Base.metadata.drop_all(engine)`, `cur.execute("DELETE FROM t")`):
    // data thrown away, as `DROP TABLE` in a database's client is.
    if drops_data(&lower) {
        facts.classes.insert(Class::Discard);
    }
    // A signal sent to a process by its id (`process.kill(48211, 'SIGTERM')`,
    // `os.kill(pid, 9)`), as `kill PID` sends one: it may be anyone's process. Signal 0
    // only asks whether the process lives (`kill -0`).
    if [
        "process.kill(",
        "os.kill(",
        "os.killpg(",
        "signal.pthread_kill(",
        "posix_kill(",
    ]
    .iter()
    .any(|call| {
        lower.match_indices(call).any(|(at, _)| {
            let arguments = &lower[at + call.len()..];
            let arguments = &arguments[..arguments.find(')').unwrap_or(arguments.len())];
            arguments.rsplit(',').next().map(str::trim) != Some("0")
        })
    }) || (language == Language::Other && perl_kill(&lower))
    {
        facts.classes.insert(Class::Privilege);
    }
    let runs = runs_in(language).any(|name| lower.contains(name));
    let deletes = has_word(&lower, DELETES);
    // A copy of an object (`df[mask].copy()`, `d.copy()`) and writing to the standard
    // streams (`sys.stdout.write(…)`) touch no file; `unlink(` deletes (no `link(`).
    let writes = {
        let written = lower
            .replace(".copy()", "")
            .replace("unlink(", "")
            .replace("stdout.write", "")
            .replace("stderr.write", "");
        WRITES.iter().any(|name| written.contains(name)) || opens_for_writing(&lower)
    };
    // `import requests, socket; print(requests.__version__)`: a module imported or its
    // version read opens no connection.
    let network = has(NETWORK)
        && {
            let used = beyond_imports(&lower);
            let used = without_fetch_methods(&used);
            let used = without_address_parsing(&used);
            let used = without_names_as_text(&used);
            NETWORK.iter().any(|name| used.contains(name))
        }
        && !talks_only_to_this_machine(code, &lower);
    let home = has(HOME).then(|| home_paths(code));
    // Decoded text hides a file's name only where a file is opened by a name computed
    // at run time: `open('nb.ipynb')` beside `s.split(chr(10))` opens what it says.
    let decodes_a_name = has(DECODERS) && opens_computed_name(&lower);
    // `compile(` is Python's own only when called bare: `re.compile(…)`, `model.compile(…)`
    // build a pattern or a model.
    let unmethoded = if lower.contains(".compile(") {
        std::borrow::Cow::Owned(lower.replace(".compile(", "."))
    } else {
        std::borrow::Cow::Borrowed(lower.as_str())
    };
    // `config.environment`, `Environment.PROD`: a word of its own, not `os.environ`.
    let unmethoded = if unmethoded.contains("environment") {
        std::borrow::Cow::Owned(unmethoded.replace("environment", "setting"))
    } else {
        unmethoded
    };
    // `importlib.util.find_spec('torch')`, `importlib.metadata.version('x')` only look a
    // package up; loading a module from a file or by a computed name stays opaque.
    let unmethoded = if ["spec_from", "module_from_spec", "exec_module", "loader"]
        .iter()
        .any(|name| unmethoded.contains(name))
    {
        unmethoded
    } else {
        std::borrow::Cow::Owned(
            unmethoded
                .replace("importlib.util", "")
                .replace("importlib.metadata", ""),
        )
    };
    let opaque = ((OPAQUE.iter().any(|name| unmethoded.contains(name)) || decodes_a_name)
        && !only_reads_files(&unmethoded))
        || matches!(home, Some(None));
    // Code that only writes files it names (`p = "src/x.py"; open(p, "w").write(t)`)
    // writes those files, as `sed -i` does.
    let opaque_beyond_open = OPAQUE
        .iter()
        .filter(|name| **name != "open(")
        .any(|name| unmethoded.contains(name))
        || decodes_a_name
        || matches!(home, Some(None));
    if writes && !(runs || deletes || network || opaque_beyond_open) {
        if let Some(files) = files_written(code, &lower) {
            facts.classes.insert(Class::Write);
            facts
                .paths
                .extend(files.into_iter().map(|file| (file, Role::Change)));
            facts.paths.extend(paths_read(code, home));
            return facts;
        }
    }
    // Code that only deletes paths it names (`shutil.rmtree('build')`,
    // `fs.rmSync('dist', {recursive: true})`) deletes those paths, as `rm -rf` would.
    if deletes && !(runs || writes || network || opaque_beyond_open) {
        if let Some(files) = files_deleted(code) {
            facts.classes.insert(Class::Delete);
            let read: Vec<(String, Role)> = paths_read(code, home)
                .into_iter()
                .filter(|(path, _)| !files.contains(path))
                .collect();
            facts
                .paths
                .extend(files.into_iter().map(|file| (file, Role::Change)));
            facts.paths.extend(read);
            return facts;
        }
    }
    if !(runs || deletes || writes || network || opaque) {
        if facts.classes.is_empty() {
            facts.classes.insert(Class::ReadOnly);
        }
        // What it reads is judged like any file read: credential material is not.
        facts.paths.extend(paths_read(code, home));
        return facts;
    }
    facts.classes.insert(Class::Unknown);
    // Fetching and evaluating (`fetch(u).then(eval)`, `exec(urlopen(u).read())`) runs code
    // that arrives at run time.
    if network
        && ["eval(", "exec(", ".then(eval", "new function", "runpy"]
            .iter()
            .any(|name| lower.contains(name))
    {
        facts.classes.insert(Class::RemoteCode);
    }
    // The whole environment sent over the network carries every token in it.
    if network && reads_whole_environment(&lower) {
        facts.classes.insert(Class::CredentialAccess);
    }
    if deletes {
        facts.classes.insert(Class::Delete);
    }
    if writes {
        facts.classes.insert(Class::Write);
    }
    if network {
        facts.classes.insert(Class::Network);
    }
    let role = if deletes || writes {
        Role::Change
    } else {
        Role::Read
    };
    facts.paths.extend(
        home.flatten()
            .unwrap_or_default()
            .into_iter()
            .map(|path| (path, role)),
    );
    // A program and its arguments given as a list (`spawn('claude', ['--x', '-p', …])`,
    // `subprocess.run(['rm', '-rf', p])`) is the command line of its words.
    if runs {
        facts.commands.extend(argv_commands(code, &lower));
    }
    for literal in string_literals(code) {
        // Code that runs programs or hides what it calls (`getattr(__import__('os'),
        // 'system')`) runs its command-like strings, also one in base64.
        if runs || opaque_beyond_open {
            if let Some(decoded) = decoded_text(&literal) {
                // Code in base64 handed to an evaluator (`new Function(Buffer.from('…',
                // 'base64').toString())()`) is read as the code it is, one level down.
                if depth == 0 && decoded.contains('(') {
                    let inner = inspect_at(&decoded, language, depth + 1);
                    facts.classes.extend(inner.classes);
                    facts.commands.extend(inner.commands);
                    facts.paths.extend(inner.paths);
                }
                facts.commands.push(decoded);
            }
        }
        if (runs || opaque_beyond_open) && literal.contains(' ') {
            facts.commands.push(literal.clone());
        }
        if path_like(&literal) {
            facts.paths.push((literal, role));
        }
    }
    // Code that deletes below the working folder it names only as a base (`root =
    // Path('.'); shutil.rmtree(root / name)`, `os.path.join(os.getcwd(), 'build')`)
    // deletes some entry of that folder, not the folder: only a delete given the folder
    // itself (`shutil.rmtree('.')`, `rmtree(os.getcwd())`) deletes the project. A folder
    // changed at run time (`os.chdir`) leaves `.` unknown.
    if deletes && !lower.contains("chdir") {
        let bases = working_folder_uses(&lower);
        if !bases.is_empty() {
            let whole = bases.iter().any(|at| deleted_directly(&lower, *at));
            facts.paths.retain(|(path, _)| !is_working_folder(path));
            facts.paths.push((
                if whole { "." } else { "./\u{1}" }.to_string(),
                Role::Change,
            ));
        }
    }
    facts
}

/// The spellings of the working folder in code.
const WORKING_FOLDER: &[&str] = &[
    "'.'",
    "\".\"",
    "'./'",
    "\"./\"",
    "os.getcwd()",
    "path.cwd()",
    "process.cwd()",
    "dir.pwd",
];

fn is_working_folder(path: &str) -> bool {
    matches!(path, "." | "./")
}

/// Where code names the working folder.
fn working_folder_uses(lower: &str) -> Vec<usize> {
    WORKING_FOLDER
        .iter()
        .flat_map(|name| lower.match_indices(name).map(|(at, _)| at))
        .collect()
}

/// Whether the working folder named at `at` is the argument of a delete call, bare or
/// wrapped in `Path(…)` (`shutil.rmtree(Path('.'))`).
fn deleted_directly(lower: &str, at: usize) -> bool {
    let mut before = lower[..at].trim_end();
    if let Some(rest) = before.strip_suffix("path(") {
        before = rest.strip_suffix("pathlib.").unwrap_or(rest).trim_end();
    }
    let Some(call) = before.strip_suffix('(') else {
        return false;
    };
    DELETES.iter().any(|name| {
        let name = name.trim_end_matches('(');
        call.strip_suffix(name).is_some_and(|start| {
            !start.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') || name.contains('.')
        })
    })
}

fn has_word(code: &str, names: &[&str]) -> bool {
    let identifier = |c: char| c.is_ascii_alphanumeric() || c == '_';
    names.iter().any(|name| {
        code.match_indices(name).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            let after = code[at + name.len()..].chars().next();
            let inside_longer = before.is_some_and(identifier)
                || (name.ends_with(identifier) && after.is_some_and(identifier));
            // `Order::truncate()`, `$q->truncate()`: a PHP model's table, no file.
            let table =
                *name == "truncate" && (code[..at].ends_with("::") || code[..at].ends_with("->"));
            !inside_longer && !table
        })
    })
}

/// What code that otherwise only computes reads: the paths it builds from the home
/// (`home`, from [`home_paths`]) and the string literals written as paths.
fn paths_read(code: &str, home: Option<Option<Vec<String>>>) -> Vec<(String, Role)> {
    home.flatten()
        .unwrap_or_default()
        .into_iter()
        .chain(
            string_literals(code)
                .into_iter()
                .filter(|literal| path_like(literal)),
        )
        .map(|path| (path, Role::Read))
        .collect()
}

/// A string literal written as a path (`/etc/x`, `~/x`, `./x`, `..`).
fn path_like(literal: &str) -> bool {
    const CREDENTIAL_SUFFIXES: &[&str] = &[
        ".pem",
        ".key",
        ".p12",
        ".pfx",
        ".jks",
        ".keystore",
        ".tfstate",
        "id_rsa",
        "id_ed25519",
        "id_ecdsa",
        "id_dsa",
        "credentials.json",
        "secrets.yml",
        "secrets.yaml",
    ];
    if literal.is_empty() || literal.contains(char::is_whitespace) || literal.contains("://") {
        return false;
    }
    literal.starts_with('/')
        || literal.starts_with("~/")
        || literal == "~"
        || literal.starts_with("./")
        || literal.starts_with("../")
        || literal == "."
        || literal == ".."
        // Relative to the working folder: `data/a.csv`, a dotfile (`.env.local`), a file
        // named like a credential (`server.key`).
        || (literal.len() < 256
            && !literal.starts_with(['-', '%', '{', '<'])
            && (literal.contains('/')
                || (literal.starts_with('.') && literal[1..].starts_with(|c: char| c.is_ascii_alphabetic()))
                || CREDENTIAL_SUFFIXES.iter().any(|suffix| literal.ends_with(suffix))))
}

/// The paths code builds from the home folder, as `~/…`, when every use of the home is
/// one of the plain shapes: `Path.home()` followed by `/ 'name'` steps,
/// `os.path.expanduser('~/…')`, `os.path.join(os.path.expanduser('~'), 'a', 'b')`,
/// `os.homedir()` followed by `+ '/a'` or inside `path.join(…, 'a')`. `None` when any use
/// is another shape (the path comes from a variable, a call, a format string).
fn home_paths(code: &str) -> Option<Vec<String>> {
    let lower = code.to_ascii_lowercase();
    let mut paths = Vec::new();
    let mut from = 0;
    while let Some(at) = HOME
        .iter()
        .filter_map(|name| lower[from..].find(name).map(|at| at + from))
        .min()
    {
        let (path, end) = home_path_at(code, &lower, at)?;
        paths.push(path);
        from = end.max(at + 1);
    }
    Some(paths)
}

/// The path one use of the home at `at` builds, and where the use ends.
fn home_path_at(code: &str, lower: &str, at: usize) -> Option<(String, usize)> {
    let rest = &lower[at..];
    // `os.path.join(os.path.expanduser('~'), 'a')`, `path.join(os.homedir(), 'a')`: the
    // join around the home takes the literals after it. The home's call starts at the
    // module name before the matched name (`os.path.expanduser`, `require('os').homedir`).
    let mut start = lower[..at]
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
        .map_or(0, |i| i + 1);
    for module in ["require('os')", "require(\"os\")"] {
        if lower[..start].ends_with(module) {
            start -= module.len();
        }
    }
    let joined = lower[..start].trim_end().ends_with("path.join(");
    let (mut path, mut end) = if rest.starts_with("expanduser") {
        let (literal, after) = literal_call(code, at + "expanduser".len())?;
        if literal != "~" && !literal.starts_with("~/") {
            return None;
        }
        (literal, after)
    } else if rest.starts_with("path.home()") || rest.starts_with("homedir()") {
        (String::from("~"), at + rest.find(')')? + 1)
    } else {
        return None;
    };
    // Then `/ 'a' / 'b'` or `.joinpath('a', 'b')` (pathlib), `+ '/a'` (strings), or `,
    // 'a', 'b'` inside a join.
    loop {
        let tail = &code[end..];
        let trimmed = tail.trim_start();
        if let Some(mut inside) = trimmed.strip_prefix(".joinpath(") {
            let mut any = false;
            loop {
                inside = inside.trim_start();
                let Some((literal, used)) = leading_literal(inside) else {
                    break;
                };
                path.push('/');
                path.push_str(&literal);
                any = true;
                inside = inside[used..].trim_start();
                inside = inside.strip_prefix(',').unwrap_or(inside);
            }
            let after = inside.trim_start().strip_prefix(')').filter(|_| any)?;
            end = code.len() - after.len();
            continue;
        }
        let step = if let Some(after) = trimmed.strip_prefix('/') {
            Some(("/", after))
        } else if let Some(after) = trimmed.strip_prefix('+') {
            Some(("", after))
        } else if joined {
            trimmed.strip_prefix(',').map(|after| ("/", after))
        } else {
            None
        };
        let Some((separator, after)) = step else {
            break;
        };
        let after_trimmed = after.trim_start();
        let (literal, used) = leading_literal(after_trimmed)?;
        path.push_str(separator);
        path.push_str(&literal);
        end = code.len() - after_trimmed.len() + used;
    }
    // The home alone given to a delete (`fs.rmSync(os.homedir(), …)`,
    // `shutil.rmtree(Path.home())`) deletes the home itself.
    let deleted = lower[..start]
        .trim_end()
        .strip_suffix('(')
        .is_some_and(|call| {
            [
                "rmsync",
                "rmtree",
                "rm_rf",
                "remove_dir_all",
                "removeall",
                "rimraf",
                "rm",
            ]
            .iter()
            .any(|name| call.ends_with(name))
        });
    if path == "~" && deleted {
        return Some((path, end));
    }
    // The home alone (`p = Path.home()`) is joined to something later that the text does
    // not show.
    let path = path.replace("//", "/");
    (path != "~" && path != "~/" && !path.contains(['{', '%', '$'])).then_some((path, end))
}

/// The one string literal argument of the call whose name ends at `open`
/// (`expanduser('~/x')`), and where the call ends.
fn literal_call(code: &str, open: usize) -> Option<(String, usize)> {
    let inner = code.get(open..)?.trim_start().strip_prefix('(')?;
    let inner_trimmed = inner.trim_start();
    let (literal, used) = leading_literal(inner_trimmed)?;
    let after = inner_trimmed[used..].trim_start().strip_prefix(')')?;
    Some((literal, code.len() - after.len()))
}

/// A `'…'` or `"…"` literal at the start of `text`, without escapes, and its length.
fn leading_literal(text: &str) -> Option<(String, usize)> {
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let end = text[1..].find(quote)? + 1;
    let literal = &text[1..end];
    (!literal.contains('\\')).then(|| (literal.to_string(), end + 1))
}

/// `open(x, 'w')` and friends.
/// Whether inline code shows a value it looks up under a secret's name, also one it
/// parses from its input (`… | python3 -c "print(json.load(sys.stdin)['apiKey'])"`).
pub fn shows_secret_key(code: &str) -> bool {
    let joined = join_literals(code);
    printed::shows_secret_key(&joined, &joined.to_ascii_lowercase())
}

/// The text of a string literal that is the whole of `text` (`"x"`, `'x'`, optionally
/// followed by `;` or a comment), without escapes.
fn quoted(text: &str) -> Option<&str> {
    let quote = text.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let inner = &text[1..];
    let end = inner.find(quote)?;
    let literal = &inner[..end];
    let after = inner[end + 1..].trim_start();
    let ends = after.is_empty() || after.starts_with(';') || after.starts_with('#');
    (ends && !literal.contains('\\')).then_some(literal)
}

/// Code whose only opaque name is `open(` used to read (`json.load(open('x'))`).
fn only_reads_files(lower: &str) -> bool {
    let others = OPAQUE
        .iter()
        .filter(|name| **name != "open(")
        .any(|name| lower.contains(name))
        || (DECODERS.iter().any(|name| lower.contains(name)) && opens_computed_name(lower));
    !others && lower.contains("open(") && !opens_for_writing(lower)
}

/// Whether some `open(` takes a name that is not a plain string literal (`open(p)`,
/// `open(f'{d}/x')`, `open(chr(47) + 'etc/passwd')`, a literal with escapes): a name
/// computed at run time.
fn opens_computed_name(lower: &str) -> bool {
    lower.match_indices("open(").any(|(at, call)| {
        let argument = lower[at + call.len()..].trim_start();
        let mut chars = argument.trim_start_matches(['r', 'b']).chars();
        let Some(quote @ ('\'' | '"')) = chars.next() else {
            return true;
        };
        let rest = chars.as_str();
        // The literal must be the whole name, as written: `open('/etc/' + x)` computes
        // it, and escapes decode it (`open('\\x2e\\x65\\x6e\\x76')` opens `.env`).
        let plain = rest.find(quote).is_some_and(|end| {
            !rest[..end].contains('\\') && rest[end + 1..].trim_start().starts_with([',', ')'])
        });
        !plain
    })
}

mod changes;
mod environment;
pub(crate) mod literals;
mod names;
mod printed;
mod sends;

pub(crate) use sends::sends_credentials;

use changes::{files_deleted, files_written, opens_for_writing, talks_only_to_this_machine};
use environment::reads_whole_environment;
use literals::{argv_commands, decoded_text, join_literals, string_literals};
use names::{
    CREDENTIALS, CREDENTIAL_NAMES, DECODERS, DELETES, HOME, NETWORK, OPAQUE, RUNS, WRITES,
};

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

/// Python code without its plain import statements (`import a, b`; one that renames, `import
/// a as b`, or takes names out, `from a import b`, stays: the module is then used by
/// another name) and the module attributes that only describe a module (`x.__version__`,
/// `x.__file__`, `x.__path__`): what it does with what it imported, by the modules' names.
/// `lower` with an object's own `fetch` method (Ruby's `Hash#fetch`, `ENV.fetch(…)`, a
/// map's `.fetch(key)`) renamed: only the global `fetch(…)` (also `window.fetch`,
/// `globalThis.fetch`, `self.fetch`) reaches the network.
fn without_fetch_methods(lower: &str) -> String {
    let mut out = String::with_capacity(lower.len());
    let mut rest = lower;
    while let Some(at) = rest.find(".fetch(") {
        let receiver = rest[..at]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        out.push_str(&rest[..at]);
        out.push_str(if matches!(receiver, "window" | "globalthis" | "self") {
            ".fetch("
        } else {
            ".lookup("
        });
        rest = &rest[at + ".fetch(".len()..];
    }
    out.push_str(rest);
    out
}

/// Python's `urllib.parse` and `urllib.error` only take addresses apart and name errors
/// (`from urllib.parse import urlparse`, `urllib.parse.quote(x)`): they open nothing.
/// `urllib.request`, a bare `urllib` (`from urllib import request`) and `urllib3` still
/// reach the network.
fn without_address_parsing(lower: &str) -> String {
    lower
        .replace("urllib.parse", "url_text")
        .replace("urllib.error", "url_text")
}

/// A network library's name as a quoted string is text (`find_spec('requests')`,
/// `version('httpx')`, `'requests' in open('requirements.txt').read()`): it opens nothing
/// unless something loads the module by it (`require('axios')`, `import(…)`, `from
/// 'axios'`, `__import__(…)`, `import_module(…)`), where it is kept.
fn without_names_as_text(lower: &str) -> String {
    const LOADERS: &[&str] = &["__import__", "import_module", "require(", "import("];
    if LOADERS.iter().any(|loader| lower.contains(loader)) {
        return lower.to_owned();
    }
    let mut text = lower.to_owned();
    for name in NETWORK.iter().filter(|name| {
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    }) {
        for quote in ['\'', '"'] {
            let quoted = format!("{quote}{name}{quote}");
            while let Some(at) = text.find(&quoted) {
                // `import axios from 'axios'`: the module loaded by its name.
                let before = text[..at].trim_end();
                if before.ends_with("from") || before.ends_with("import") {
                    return lower.to_owned();
                }
                text.replace_range(at..at + quoted.len(), "''");
            }
        }
    }
    text
}

fn beyond_imports(lower: &str) -> String {
    let mut kept = String::with_capacity(lower.len());
    for statement in lower.split_inclusive(['\n', ';']) {
        let trimmed = statement.trim_start();
        let plain_import = trimmed.strip_prefix("import ").is_some_and(|modules| {
            !modules.contains(" as ")
                && !modules.contains(" from ")
                && !modules.contains(['\'', '"', '{', '*'])
        });
        if !plain_import {
            kept.push_str(statement);
        }
    }
    for attribute in [".__version__", ".__file__", ".__path__"] {
        while let Some(at) = kept.find(attribute) {
            let start = kept[..at]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .map_or(0, |before| before + 1);
            kept.replace_range(start..at + attribute.len(), " ");
        }
    }
    kept
}
