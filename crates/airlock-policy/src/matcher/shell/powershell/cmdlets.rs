//! Cmdlets read as the POSIX commands that do the same to the same files
//! (`Get-Content f` is `cat f`), with their parameters: which name files, which take other
//! values, and what a pipe hands a cmdlet that names no file.

use super::{Input, Token, Word, TOPLEVEL};

fn literal(text: &str) -> Word {
    Word::literal(text)
}

fn dynamic(text: &str) -> Word {
    Word {
        text: text.into(),
        dynamic: true,
        glob: None,
        wild: false,
    }
}

use super::cmdlet_table::{cmdlet_kind, Kind};

mod pipes;
mod programs;

use pipes::{keeps_only_names, listed_places, piped_files};
pub(super) use programs::program;
use programs::start_process;

/// Parameters whose value is not a file, by cmdlet kind (any kind: the common ones).
const VALUE_PARAMETERS: &[&str] = &[
    "totalcount",
    "head",
    "first",
    "tail",
    "last",
    "skip",
    "encoding",
    "delimiter",
    "readcount",
    "stream",
    "filter",
    "include",
    "exclude",
    "depth",
    "attributes",
    "context",
    "pattern",
    "pathtype",
    "name",
    "property",
    "expandproperty",
    "value",
    "width",
    "inputobject",
    "variable",
    "itemtype",
    "type",
    "method",
    "body",
    "headers",
    "contenttype",
    "useragent",
    "timeoutsec",
    "maximumredirection",
    "sessionvariable",
    "websession",
    "credential",
    "proxy",
    "newname",
    "id",
    "seconds",
    "milliseconds",
    "erroraction",
    "warningaction",
    "outvariable",
    "errorvariable",
    "stackname",
    "target",
    "uri",
    "outfile",
    "infile",
    "destination",
    "destinationpath",
    "literalpath",
    "path",
    "filepath",
];

/// Parameters whose value is a file.
const PATH_PARAMETERS: &[&str] = &["path", "literalpath", "filepath"];

/// The PowerShell parameter a written one names, lower case, and the value `-Name:value`
/// carries. PowerShell also takes any unambiguous prefix of a cmdlet's own parameter
/// (`-Rec`, `-Lit`); those are not resolved here: an unresolved name counts as a switch,
/// so the word after it stays an operand (a file), which only ever judges more strictly.
fn parameter(token: &Token) -> (String, Option<String>) {
    let body = &token.text[1..];
    match body.split_once(':') {
        Some((name, value)) => (name.to_ascii_lowercase(), Some(value.to_string())),
        None => (body.to_ascii_lowercase(), None),
    }
}

/// `input`: what a pipe feeds it; a cmdlet that takes files and names none binds the files
/// the pipe carries. Returns the words and what the command puts out.
pub(super) fn translate(tokens: &[Token], nested: bool, input: &Input) -> (Vec<Word>, Input) {
    let Some((first, rest)) = tokens.split_first() else {
        return (Vec::new(), Input::Unknown);
    };
    let words = translate_words(first, rest, nested, input);
    let lower = first.text.to_ascii_lowercase();
    let kind = cmdlet_kind(&lower);
    let output = match kind {
        _ if first.quoted || first.dynamic => Input::Unknown,
        Some(Kind::List) => listed_places(rest),
        Some(Kind::Filter) => input.clone(),
        Some(Kind::Read | Kind::Echo) => Input::Text,
        _ => Input::Unknown,
    };
    (words, output)
}

/// A cmdlet's arguments: operands, parameters with their values, switches. A parameter
/// known to take a value takes the next word unless that is a parameter too.
struct Arguments {
    operands: Vec<Token>,
    values: Vec<(String, Token)>,
    switches: Vec<String>,
}

fn arguments(rest: &[Token]) -> Arguments {
    let mut operands: Vec<Token> = Vec::new();
    let mut values: Vec<(String, Token)> = Vec::new();
    let mut switches: Vec<String> = Vec::new();
    let mut index = 0;
    while let Some(token) = rest.get(index) {
        index += 1;
        // `rd /s /q build`: the switches of cmd's commands, which PowerShell's aliases of
        // them are written with by habit, are no paths (nor Git Bash's drives `/s`, `/q`).
        if token.is_cmd_switch() {
            switches.push(token.text.to_ascii_lowercase());
            continue;
        }
        if !token.is_parameter() {
            operands.push(token.clone());
            continue;
        }
        let (name, inline) = parameter(token);
        let takes_value = VALUE_PARAMETERS.contains(&name.as_str());
        match inline {
            // `-Path:x`: the value is in the word itself.
            Some(value) if takes_value => values.push((
                name,
                Token {
                    text: value,
                    pattern: None,
                    ..token.clone()
                },
            )),
            // `-Recurse:$true`, `-Confirm:$false`.
            Some(_) => switches.push(name),
            None if takes_value => {
                if let Some(value) = rest.get(index).filter(|value| !value.is_parameter()) {
                    values.push((name, value.clone()));
                    index += 1;
                }
            }
            None => switches.push(name),
        }
    }
    Arguments {
        operands,
        values,
        switches,
    }
}

fn translate_words(first: &Token, rest: &[Token], nested: bool, input: &Input) -> Vec<Word> {
    // `$x = …`, `$env:X = …`, `key = …` in a hashtable: what is assigned is what runs.
    if rest.first().is_some_and(|token| {
        !token.quoted && matches!(token.text.as_str(), "=" | "+=" | "-=" | "*=" | "/=")
    }) {
        return assignment(&first.text, &rest[1..], nested, input);
    }
    // `$env:BASE_URL='https://…'`: one word, set for the commands after it, as `export` is.
    if rest.is_empty() {
        if let Some((variable, value)) = first
            .text
            .strip_prefix('$')
            .and_then(|text| text.split_once('='))
            .filter(|(variable, value)| {
                !variable.is_empty()
                    && variable
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !value.is_empty()
                    && !value.contains("(…)")
            })
        {
            return exported(variable, value, value.contains('$'));
        }
    }
    // `$key=(Get-Content -Raw key.txt).Trim()`: the same, without a blank before the value.
    if let Some(name) = first.text.strip_suffix('=').filter(|name| {
        !first.quoted
            && name.len() > 1
            && name.starts_with('$')
            && name[1..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }) {
        if !rest.is_empty() {
            return assignment(name, rest, nested, input);
        }
    }
    translate_statement(first, rest, nested, input)
}

/// `$env:NAME = VALUE` as the POSIX line that sets it for the commands after it: `export
/// NAME=VALUE` (PowerShell's names are caseless; the judge reads them in capitals).
fn exported(variable: &str, value: &str, dynamic: bool) -> Vec<Word> {
    vec![
        literal("export"),
        Word {
            text: format!("{}={value}", variable.to_ascii_uppercase()),
            dynamic,
            glob: None,
            wild: false,
        },
    ]
}

/// `NAME = VALUE`: what runs is what computes the value.
fn assignment(name: &str, assigned: &[Token], nested: bool, input: &Input) -> Vec<Word> {
    {
        let name = name.to_ascii_lowercase();
        // `$env:BASE_URL = 'https://…'`, `$env:DATABASE_URL = $env:PROD_DATABASE_URL`: set
        // for the commands after it, as `export` is.
        let variable = name.strip_prefix('$').filter(|variable| {
            !variable.is_empty()
                && variable
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if let ([value], Some(variable)) = (assigned, variable) {
            if (value.quoted || value.dynamic) && !value.text.contains("(…)") {
                return exported(variable, &value.text, value.dynamic);
            }
        }
        if let [value] = assigned {
            if value.quoted
                || value.dynamic
                || value.text.starts_with(|c: char| c.is_ascii_digit())
                || (value.text.starts_with('[') && super::pure_static_call(&value.text))
            {
                return vec![literal("true")];
            }
        }
        if [
            "$path",
            "$pathext",
            "$psmodulepath",
            "$node_options",
            "$pythonpath",
        ]
        .iter()
        .any(|sensitive| name == *sensitive)
        {
            return vec![dynamic("…")];
        }
        let value = translate(assigned, nested, input).0;
        if value.is_empty() {
            vec![literal("true")]
        } else {
            value
        }
    }
}

/// A statement that is no assignment: a command, or an expression whose value is printed.
fn translate_statement(first: &Token, rest: &[Token], nested: bool, input: &Input) -> Vec<Word> {
    let number = !first.quoted && number_literal(&first.text);
    if first.dynamic || first.quoted || number || first.text.starts_with('-') || first.text == "!" {
        // `(Get-Command python).Source`: a property of a subexpression's value (whose
        // commands are read on their own) is printed, not run; a method call is not read
        // (`(New-Object Net.WebClient).DownloadString(…)`).
        // A string's or a list's own methods called on it (`(Get-Content f).Trim()`)
        // compute a value too.
        let properties = first.text == "(…)" && {
            let mut method: Option<&str> = None;
            rest.iter().all(|token| match token.text.strip_prefix('.') {
                Some(name) if !name.contains('(') => {
                    method = Some(name);
                    true
                }
                Some(_) => false,
                None => {
                    token.text == "(…)"
                        && method.take().is_some_and(|name| {
                            super::PURE_METHODS.contains(&name.to_ascii_lowercase().as_str())
                        })
                }
            })
        };
        if properties {
            return vec![literal("echo"), first.word()];
        }
        // `$found=$text.Contains($name)`: an assignment written without blanks, of an
        // expression (a variable, a quoted string, a number), prints nothing and runs
        // nothing.
        let expression_assigned = first.text.split_once('=').is_some_and(|(name, value)| {
            name.starts_with('$')
                && name[1..]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
                && value.starts_with([
                    '$', '\'', '"', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
                ])
        });
        if expression_assigned {
            return vec![literal("true")];
        }
        // `$line.Trim()`, `$text.Split(',')[0]`: a method of the value called (one that
        // could do anything made the command opaque before it came here), so a value.
        let method_called = first.text.starts_with('$')
            && first.text.contains('.')
            && rest.first().is_some_and(|next| next.text == "(…)");
        // `$tool arg`: no PowerShell expression (an operator would follow), but what a
        // POSIX shell runs.
        if first.dynamic
            && !first.quoted
            && !method_called
            && rest.first().is_some_and(|next| !next.is_parameter())
        {
            return vec![dynamic(&first.text)];
        }
        // An expression: a value printed (`$x`, `'text'`, `$a -eq 1`, `-not (…)`).
        let mut words = vec![literal("echo"), first.word()];
        words.extend(rest.iter().map(Token::word));
        return words;
    }
    let lower = first.text.to_ascii_lowercase();
    match lower.as_str() {
        // PowerShell's conditions and loops take their condition in parentheses; `for /f
        // … in (…) do taskkill …` and `if exist x del y` are cmd's, whose command is
        // hidden in the statement: unknown.
        "if" | "elseif" | "while" | "until" | "for"
            if rest.first().is_none_or(|next| next.text != "(…)") =>
        {
            return vec![dynamic("…")]
        }
        "if" | "elseif" | "else" | "while" | "do" | "until" | "for" | "switch" | "try"
        | "catch" | "finally" | "return" | "exit" | "break" | "continue" | "throw" | "param"
        | "begin" | "process" | "end" => return vec![literal("true")],
        "function" | "filter" => return vec![dynamic("…")],
        // The policy for this PowerShell process only, gone when it ends (`Set-ExecutionPolicy
        // -Scope Process Bypass; .\build.ps1`): the scripts it then runs are judged.
        "set-executionpolicy"
            if rest.windows(2).any(|pair| {
                pair[0].text.eq_ignore_ascii_case("-scope")
                    && pair[1].text.eq_ignore_ascii_case("process")
            }) || rest
                .iter()
                .any(|token| token.text.eq_ignore_ascii_case("-scope:process")) =>
        {
            return vec![literal("true")]
        }
        "." => {
            let mut words = vec![literal("source")];
            words.extend(rest.iter().map(Token::word));
            return words;
        }
        _ => {}
    }
    if matches!(lower.as_str(), "start-process" | "saps") {
        if let Some(words) = start_process(rest) {
            return words;
        }
    }
    let Some(kind) = cmdlet_kind(&lower) else {
        return program(first, rest);
    };
    // `curl -sSL …` in PowerShell 7 is curl.exe; only `curl -Uri …` is the cmdlet alias.
    let Arguments {
        operands,
        values,
        switches,
    } = arguments(rest);
    let value = |wanted: &str| {
        values
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, token)| token)
    };
    let paths: Vec<&Token> = values
        .iter()
        .filter(|(name, _)| PATH_PARAMETERS.contains(&name.as_str()))
        .map(|(_, token)| token)
        .collect();
    let files = |operands: &[Token]| -> Vec<Word> {
        let mut files: Vec<Word> = paths
            .iter()
            .copied()
            .chain(operands)
            .map(Token::word)
            .collect();
        if files.is_empty() {
            files.extend(piped_files(input));
        }
        files
    };
    let command = |name: &str, mut extra: Vec<Word>| {
        let mut words = vec![literal(name)];
        words.append(&mut extra);
        words
    };
    // `Get-ItemProperty HKLM:\Software\…`, `Get-ChildItem HKCU:\…`: a look into the
    // registry, which `reg query` is.
    let registry = paths.iter().copied().chain(&operands).any(|token| {
        let lower = token.text.to_ascii_lowercase();
        ["hklm:", "hkcu:", "hkcr:", "hku:", "hkcc:", "registry::"]
            .iter()
            .any(|hive| lower.starts_with(hive))
    });
    if registry && matches!(kind, Kind::Read | Kind::List | Kind::Stat) {
        // The keys as `reg` writes them (`HKCU\Software\…`): what they hold is judged by
        // their names (stored credentials, `windows.rs`).
        let keys = paths.iter().copied().chain(&operands).map(|token| {
            let text = token.text.replacen(":\\", "\\", 1).replacen(":/", "\\", 1);
            literal(text.trim_start_matches("Registry::"))
        });
        return [literal("reg"), literal("query")]
            .into_iter()
            .chain(keys)
            .collect();
    }
    match kind {
        Kind::Read => command("cat", files(&operands)),
        Kind::List => {
            let all = files(&operands);
            if all.iter().any(|word| {
                word.text.to_ascii_lowercase().starts_with("env:")
                    || word.text.to_ascii_lowercase().starts_with("variable:")
            }) {
                return vec![literal("env")];
            }
            // Filtered or recursive, it searches by name, as `find` does (`find`'s judge
            // knows names that hunt for credentials).
            let patterns: Vec<&Token> = ["filter", "include"]
                .iter()
                .filter_map(|name| value(name))
                .collect();
            let recursive = switches
                .iter()
                .any(|name| matches!(name.as_str(), "recurse" | "r" | "rec" | "recu"));
            if recursive || !patterns.is_empty() {
                let mut words = vec![literal("find")];
                words.extend(if all.is_empty() {
                    vec![literal(".")]
                } else {
                    all
                });
                // `-Include *.kdbx,*.pfx`: a list, each pattern a name searched for.
                for pattern in patterns {
                    let word = pattern.word();
                    for text in word.text.split(',').map(str::trim) {
                        words.push(literal("-name"));
                        words.push(Word {
                            text: text.to_owned(),
                            glob: None,
                            wild: false,
                            dynamic: word.dynamic,
                        });
                    }
                }
                return words;
            }
            command("ls", all)
        }
        Kind::Search => {
            let (pattern, operands) = match value("pattern") {
                Some(pattern) => (Some(pattern), &operands[..]),
                None => match operands.split_first() {
                    Some((pattern, rest)) => (Some(pattern), rest),
                    None => (None, &operands[..]),
                },
            };
            let mut words = vec![literal("grep")];
            if let Some(pattern) = pattern {
                words.push(literal("-e"));
                words.push(Word {
                    glob: None,
                    wild: false,
                    ..pattern.word()
                });
            }
            // Text from a pipe is searched as text; anything else may be files.
            let mut searched: Vec<Word> = paths
                .iter()
                .copied()
                .chain(operands)
                .map(Token::word)
                .collect();
            if searched.is_empty() && !matches!(input, Input::Text) {
                searched.extend(piped_files(input));
            }
            words.extend(searched);
            words
        }
        Kind::Test => {
            let mut words = vec![literal("test"), literal("-e")];
            words.extend(files(&operands));
            words
        }
        Kind::Stat => command("stat", files(&operands)),
        Kind::Resolve => command("realpath", files(&operands)),
        Kind::Location => {
            let target = files(&operands).into_iter().next();
            match target {
                Some(target) if target.text == TOPLEVEL => vec![literal("cd"), target],
                _ if nested => vec![literal("cd"), dynamic("$(…)")],
                Some(target) => vec![literal("cd"), target],
                None => vec![literal("cd"), dynamic("$(…)")],
            }
        }
        Kind::PopLocation => vec![literal("cd"), dynamic("$(…)")],
        // `Get-ChildItem env: | Select-Object -ExpandProperty Name`: only the names go
        // on, as `env | cut -d= -f1` keeps them.
        Kind::Filter | Kind::Echo
            if matches!(
                lower.as_str(),
                "select-object" | "select" | "format-table" | "ft" | "format-wide" | "fw"
            ) && keeps_only_names(rest) =>
        {
            ["cut", "-d", "=", "-f", "1"]
                .into_iter()
                .map(literal)
                .collect()
        }
        Kind::Filter => vec![literal("true")],
        Kind::Echo => command("echo", rest.iter().map(Token::word).collect()),
        Kind::Write | Kind::Append => {
            let append = kind == Kind::Append || switches.iter().any(|name| name == "append");
            // The first operand is the file (`Set-Content f 'text'`); the second is
            // `-Value` (or `-Encoding` for `Out-File`).
            let target: Vec<Word> = if paths.is_empty() {
                operands
                    .first()
                    .map(|token| token.word())
                    .into_iter()
                    .collect()
            } else {
                paths.iter().map(|token| token.word()).collect()
            };
            let mut words = vec![literal("tee")];
            if append {
                words.push(literal("-a"));
            }
            words.extend(target);
            words
        }
        Kind::NewItem => {
            let item_type = value("itemtype")
                .or_else(|| value("type"))
                .map(|token| token.text.to_ascii_lowercase())
                .unwrap_or_default();
            let mut places = files(&operands);
            if let Some(name) = value("name") {
                places = match places.pop() {
                    Some(folder) => vec![Token {
                        text: format!("{}\\{}", folder.text, name.text),
                        dynamic: folder.dynamic || name.dynamic,
                        ..Token::default()
                    }
                    .word()],
                    None => vec![name.word()],
                };
            }
            if item_type.contains("link") || item_type.contains("junction") {
                let mut words = vec![literal("ln"), literal("-s")];
                words.push(
                    value("target")
                        .or(value("value"))
                        .map_or_else(|| dynamic("…"), Token::word),
                );
                words.extend(places);
                return words;
            }
            if item_type.starts_with("dir") {
                let mut words = vec![literal("mkdir"), literal("-p")];
                words.extend(places);
                return words;
            }
            command("touch", places)
        }
        Kind::MakeDirectory => {
            let mut words = vec![literal("mkdir"), literal("-p")];
            words.extend(files(&operands));
            words
        }
        Kind::Delete => {
            let mut words = vec![literal("rm"), literal("-rf")];
            words.extend(files(&operands));
            words
        }
        Kind::Copy | Kind::Move => {
            let mut sources = files(&operands);
            // (`Expand-Archive x.zip -DestinationPath dir` unpacks into `dir`.)
            let destination = match value("destination").or_else(|| value("destinationpath")) {
                Some(destination) => Some(destination.word()),
                None if sources.len() > 1 => sources.pop(),
                None => None,
            };
            let mut words = if kind == Kind::Copy {
                vec![literal("cp"), literal("-r")]
            } else {
                vec![literal("mv")]
            };
            words.extend(sources);
            words.push(destination.unwrap_or_else(|| literal(".")));
            words
        }
        Kind::Rename => {
            let mut sources = files(&operands);
            let new_name = value("newname")
                .map(Token::word)
                .or_else(|| (sources.len() > 1).then(|| sources.pop()).flatten());
            let Some(source) = sources.into_iter().next() else {
                return vec![dynamic("…")];
            };
            let destination = match new_name {
                Some(name) if name.dynamic => name,
                Some(name) if name.text.contains(['\\', '/']) => name,
                Some(name) => {
                    let folder = source
                        .text
                        .rfind(['\\', '/'])
                        .map_or("", |at| &source.text[..=at]);
                    Word {
                        text: format!("{folder}{}", name.text),
                        dynamic: source.dynamic,
                        glob: None,
                        wild: false,
                    }
                }
                None => dynamic("…"),
            };
            vec![literal("mv"), source, destination]
        }
        Kind::Fetch => {
            let mut words = vec![literal("curl")];
            if let Some(method) = value("method") {
                if !matches!(method.text.to_ascii_lowercase().as_str(), "get" | "head") {
                    words.push(literal("-X"));
                    words.push(method.word());
                }
            }
            if value("body").is_some() {
                words.push(literal("-d"));
                words.push(literal("…"));
            }
            // What the request carries in its headers or as its credentials goes to the
            // host too (`-Headers @{Authorization = "Bearer $env:API_KEY"}`, `-Token`).
            for name in ["headers", "token", "credential"] {
                if let Some(header) = value(name) {
                    words.push(literal("-H"));
                    words.push(header.word());
                }
            }
            if let Some(file) = value("infile") {
                words.push(literal("--data-binary"));
                let file = file.word();
                words.push(Word {
                    text: format!("@{}", file.text),
                    dynamic: file.dynamic,
                    glob: None,
                    wild: false,
                });
            }
            if let Some(file) = value("outfile") {
                words.push(literal("-o"));
                words.push(file.word());
            }
            match value("uri").or(operands.first()) {
                Some(url) => words.push(url.word()),
                None => words.push(dynamic("$url")),
            }
            words
        }
        Kind::Expression => match rest {
            [] => vec![literal("sh")],
            // A string written out is a PowerShell line like any other.
            [script] if !script.dynamic => {
                vec![
                    literal("pwsh"),
                    literal("-Command"),
                    Word::literal(&script.text),
                ]
            }
            _ => vec![literal("sh"), literal("-c"), dynamic("…")],
        },
        Kind::Kill => {
            let mut words = vec![literal("kill")];
            words.extend(values.iter().map(|(_, token)| token.word()));
            words.extend(operands.iter().map(|token| token.word()));
            words
        }
        Kind::Processes => vec![literal("ps")],
        Kind::Sleep => vec![literal("sleep"), literal("1")],
    }
}

/// Whether a word is a PowerShell number (`7`, `2.5`, `1e3`, `0x1F`, `10kb`, `5L`): a
/// word that only starts with a digit (`7z`, `7za`) is a command.
fn number_literal(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let lower = ["kb", "mb", "gb", "tb", "pb"]
        .iter()
        .find_map(|multiplier| lower.strip_suffix(multiplier))
        .unwrap_or(&lower);
    if let Some(hex) = lower.strip_prefix("0x") {
        let hex = hex.trim_end_matches(['l', 'u', 'n', 'y', 's']);
        return !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit());
    }
    let digits = lower.trim_end_matches(['l', 'd', 'u', 'n', 'y', 's']);
    digits.starts_with(|c: char| c.is_ascii_digit()) && digits.parse::<f64>().is_ok()
}
