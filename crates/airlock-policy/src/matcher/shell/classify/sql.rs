//! Database clients given their query on the command line (`psql -c "SELECT …"`, `mysql -e
//! …`, `sqlite3 app.db "SELECT …"`), and commands run in a container (`docker exec db
//! psql …`). A single query that only reads, sent to a database on this machine (or in a
//! container here), is a read; anything else stays what the table says (`network` for the
//! clients, `deploy` for `docker exec`): a query that writes, runs files or programs, reads
//! server files, or talks to another host is asked.
//!
//! The query is not parsed as SQL. It is read only when every statement starts with a
//! reading verb and no word of it can write, run code, read the server's files or change
//! the session; anything else counts as writing (fail closed).

use super::*;

/// Words that make a query more than a read, in any position (lower case).
const NOT_READING: &[&str] = &[
    "into",
    "insert",
    "update",
    "delete",
    "merge",
    "upsert",
    "replace",
    "drop",
    "alter",
    "create",
    "truncate",
    "grant",
    "revoke",
    "copy",
    "call",
    "do",
    "lock",
    "set",
    "reset",
    "listen",
    "notify",
    "vacuum",
    "analyze",
    "analyse",
    "cluster",
    "reindex",
    "refresh",
    "comment",
    "security",
    "prepare",
    "execute",
    "exec",
    "deallocate",
    "load",
    "import",
    "attach",
    "detach",
    "pragma",
    "begin",
    "commit",
    "rollback",
    "savepoint",
    "release",
    "kill",
    "shutdown",
    "flush",
    "handler",
    "install",
    "uninstall",
    "rename",
    "discard",
    "checkpoint",
    "outfile",
    "dumpfile",
];
/// Functions that write, read the server's files, run other queries or programs, or act
/// on other sessions (prefixes, lower case).
const NOT_READING_FUNCTIONS: &[&str] = &[
    "pg_read",
    "pg_ls_",
    "pg_stat_file",
    "lo_",
    "dblink",
    "pg_terminate",
    "pg_cancel",
    "pg_reload",
    "pg_rotate",
    "set_config",
    "nextval",
    "setval",
    "pg_sleep",
    "pg_advisory",
    "pg_logical",
    "pg_replication",
    "pg_create",
    "pg_drop",
    "pg_switch",
    "pg_promote",
    "query_to_",
    "cursor_to_",
    "load_file",
    "sys_",
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
    "sleep",
    "benchmark",
    "get_lock",
];
/// psql meta-commands and sqlite dot-commands that only describe.
const DESCRIBING: &[&str] = &[
    "\\d",
    "\\l",
    "\\conninfo",
    "\\x",
    ".tables",
    ".schema",
    ".indexes",
    ".indices",
    ".databases",
    ".dbinfo",
    ".headers",
];

/// Whether `sql` only reads: each `;`-separated statement starts with `select`, `with`,
/// `show`, `describe`, `desc`, `table`, `values`, or is a describing meta-command, and no
/// word writes or calls a function that does more. `explain` with its options (`explain
/// (analyze, buffers)`, which runs the statement) is judged by the statement it explains.
pub(crate) fn reads_only(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    let statements: Vec<&str> = lower
        .split(';')
        .map(str::trim)
        .filter(|statement| !statement.is_empty())
        .map(explained)
        .collect();
    let lower = statements.join(";");
    if statements.is_empty() {
        return false;
    }
    // A meta-command on a line of its own after a statement (`select 1` then `.shell …`
    // on the next line) runs as the shell reads it: only a whole statement may be one.
    if statements.iter().any(|statement| {
        statement
            .lines()
            .skip(1)
            .any(|line| line.trim_start().starts_with(['\\', '.']))
    }) {
        return false;
    }
    statements.iter().all(|statement| {
        if statement.starts_with(['\\', '.']) {
            return DESCRIBING.iter().any(|command| {
                statement.strip_prefix(command).is_some_and(|rest| {
                    rest.is_empty()
                        || rest
                            .starts_with(|c: char| c.is_ascii_alphabetic() || c == '+' || c == ' ')
                })
            }) && !statement[1..].contains(['\\', '|', '!', '>', '<']);
        }
        let verb = statement
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .next()
            .unwrap_or_default();
        matches!(
            verb,
            "select" | "with" | "show" | "explain" | "describe" | "desc" | "table" | "values"
        ) && !statement.contains('\\')
    }) && !lower
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|word| {
            NOT_READING.contains(&word)
                || NOT_READING_FUNCTIONS
                    .iter()
                    .any(|function| word.starts_with(function))
        })
}

/// Whether `sql`, run by `sqlite3 FILE`, changes rows or tables of that one file and does
/// nothing else: each statement starts with a verb that reads or changes the database's
/// own contents, no line is a shell meta-command (`.shell`, `.output`), and no word opens
/// another file, loads code or
/// reads or writes files through a function (`attach`, `vacuum into`, `load_extension`,
/// `writefile`). Secret material named anywhere keeps it asked.
pub(crate) fn changes_own_file_only(sql: &str) -> bool {
    const VERBS: &[&str] = &[
        "select",
        "with",
        "insert",
        "update",
        "delete",
        "replace",
        "drop",
        "create",
        "alter",
        "vacuum",
        "reindex",
        "analyze",
        "begin",
        "commit",
        "end",
        "rollback",
        "savepoint",
        "release",
        "pragma",
        "values",
    ];
    const OTHER_FILES: &[&str] = &[
        "attach",
        "load_extension",
        "readfile",
        "writefile",
        "edit",
        "fts3_tokenizer",
        "lsdir",
        "zipfile",
        "sqlar_compress",
    ];
    let lower = sql.to_ascii_lowercase();
    let statements: Vec<&str> = lower
        .split(';')
        .map(str::trim)
        .filter(|statement| !statement.is_empty())
        .collect();
    !statements.is_empty()
        && !lower.contains('\\')
        && !lower.lines().any(|line| line.trim_start().starts_with('.'))
        && statements.iter().all(|statement| {
            let mut words = statement
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .filter(|word| !word.is_empty());
            let verb = words.next().unwrap_or_default();
            VERBS.contains(&verb)
                && !(verb == "vacuum" && statement.split_whitespace().any(|word| word == "into"))
        })
        && !lower
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|word| OTHER_FILES.contains(&word))
        && !names_secrets(sql)
}

/// The statement an `explain` shows or runs, with `explain`'s own options gone (`explain
/// analyze verbose select …`, `explain (analyze, buffers) select …`, `explain query plan
/// select …`); any other statement as it is.
fn explained(statement: &str) -> &str {
    let Some(mut rest) = statement.strip_prefix("explain") else {
        return statement;
    };
    if !rest.starts_with([' ', '\t', '\n', '(']) {
        return statement;
    }
    rest = rest.trim_start();
    if let Some(options) = rest.strip_prefix('(') {
        match options.split_once(')') {
            Some((_, after)) => rest = after.trim_start(),
            None => return statement,
        }
    }
    const OPTIONS: &[&str] = &["analyze", "analyse", "verbose", "query plan", "extended"];
    while let Some(option) = OPTIONS.iter().find(|option| {
        rest.strip_prefix(**option)
            .is_some_and(|after| after.starts_with([' ', '\t', '\n']))
    }) {
        rest = rest[option.len()..].trim_start();
    }
    rest
}

/// Words of a query that name secret material: a column or table of passwords, tokens,
/// keys or credentials (`password_hash`, `api_token`, `vault.decrypted_secrets`), or the
/// server's own logins (`pg_shadow`, `pg_authid`, `sys.sql_logins`).
const SECRET_NAMES: &[&str] = &[
    "passw",
    "passwd",
    "pwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "credential",
    "private_key",
    "privatekey",
    "pg_shadow",
    "pg_authid",
    "sql_logins",
    "authentication_string",
    "otp_",
    "totp",
];

/// Whether a query names secret material (any word containing one of [`SECRET_NAMES`], or
/// MySQL's and MariaDB's own logins, `mysql.user` and `mysql.global_priv`, whose rows hold
/// the password hashes): reading it reads credentials, wherever the database is.
pub(crate) fn names_secrets(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase().replace(['`', '"'], "");
    ["mysql.user", "mysql.global_priv"].iter().any(|table| {
        lower.match_indices(table).any(|(at, _)| {
            !lower[at + table.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        })
    }) || lower
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|word| SECRET_NAMES.iter().any(|name| word.contains(name)))
}

/// Whether a query only reads and names no secret material: what a database tool may run
/// unasked wherever its database is.
pub(crate) fn reads_harmlessly(sql: &str) -> bool {
    reads_only(sql) && !names_secrets(sql)
}

/// Whether a database client's line carries a secret: a variable set on it whose name
/// speaks of one (`PGPASSWORD='…'`, `MYSQL_PWD=…`), a password given as an option
/// (`mysql -pS3cret`, `--password=…`), or anything the secret scan finds (a password in a
/// connection URL).
pub(super) fn secret_on_line(name: &str, words: &[Word]) -> bool {
    words.iter().any(|word| {
        let text = word.text.as_str();
        let assigned = is_assignment(text)
            && text
                .split_once('=')
                .is_some_and(|(variable, value)| !value.is_empty() && names_secrets(variable));
        let option = text.starts_with("--password=")
            || (matches!(name, "mysql" | "mariadb") && text.starts_with("-p") && text.len() > 2);
        assigned
            || option
            || !crate::secrets::scan(&serde_json::Value::String(text.to_owned())).is_empty()
    })
}

/// Whether a database host is this machine: none given (the local socket), a socket
/// folder, or a loopback name.
pub(super) fn local_host(host: Option<&str>) -> bool {
    match host {
        None => true,
        Some(host) => {
            host.starts_with('/')
                || matches!(
                    host.trim_start_matches('[').trim_end_matches(']'),
                    "localhost" | "127.0.0.1" | "::1" | ""
                )
        }
    }
}

/// The host of a connection string (`postgres://u:p@host:5432/db`, `host=x dbname=y`).
pub(super) fn connection_host(text: &str) -> Option<Option<String>> {
    if let Some((_, rest)) = text.split_once("://") {
        let authority = rest.split(['/', '?']).next().unwrap_or_default();
        let host = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        let host = if host.starts_with('[') {
            host.split(']')
                .next()
                .map(|h| format!("{h}]"))
                .unwrap_or_default()
        } else {
            host.split(':').next().unwrap_or_default().to_string()
        };
        return Some(Some(host));
    }
    if text.contains('=') {
        // A conninfo string: a `service=` reads its host from a file nobody sees.
        if text
            .split_whitespace()
            .any(|pair| pair.starts_with("service="))
        {
            return Some(Some("(service)".into()));
        }
        let host = text.split_whitespace().find_map(|pair| {
            pair.strip_prefix("host=")
                .or_else(|| pair.strip_prefix("hostaddr="))
        });
        return Some(host.map(str::to_string));
    }
    None
}

/// The options of the embedded databases' shells (`sqlite3`, `duckdb`) that take a value.
const EMBEDDED_VALUE_OPTIONS: &[&str] = &["-separator", "-newline", "-nullvalue"];

/// Their options that take none (how output is printed, read-only opening).
const EMBEDDED_FLAGS: &[&str] = &[
    "-readonly",
    "-header",
    "-noheader",
    "-csv",
    "-json",
    "-jsonlines",
    "-line",
    "-column",
    "-box",
    "-markdown",
    "-table",
    "-list",
    "-batch",
    "-bail",
    "-html",
    "-tabs",
    "-quote",
    "-no-stdin",
    "-unsigned",
];

/// What a database client line runs, read by [`client_queries`].
pub(super) struct ClientQueries<'a> {
    pub queries: Vec<String>,
    /// The database is on this machine.
    pub local: bool,
    /// An embedded database's file (`sqlite3 FILE`, `duckdb FILE`).
    pub file: Option<&'a Word>,
}

/// The queries a database client line runs and where its database is; `None` when the
/// line runs SQL from a file, standard input or an option airlock does not know, writes
/// output to a file, or has no query.
pub(super) fn client_queries<'a>(name: &str, arguments: &'a [Word]) -> Option<ClientQueries<'a>> {
    let (query_options, host_options, value_options, flags): (&[&str], &[&str], &[&str], &[&str]) =
        match name {
            "psql" => (
                &["-c", "--command"],
                &["-h", "--host"],
                &[
                    "-p",
                    "--port",
                    "-U",
                    "--username",
                    "-d",
                    "--dbname",
                    "-v",
                    "--set",
                    "--variable",
                    "-P",
                    "--pset",
                    "-F",
                    "--field-separator",
                    "-R",
                    "--record-separator",
                    "-T",
                    "--table-attr",
                ],
                &[
                    "-A",
                    "--no-align",
                    "-t",
                    "--tuples-only",
                    "-x",
                    "--expanded",
                    "-q",
                    "--quiet",
                    "-X",
                    "--no-psqlrc",
                    "-e",
                    "--echo-queries",
                    "-E",
                    "--echo-hidden",
                    "-w",
                    "--no-password",
                    "-H",
                    "--html",
                    "--csv",
                    "-b",
                    "--echo-errors",
                    "-a",
                    "--echo-all",
                    "-n",
                    "--no-readline",
                    "-z",
                    "-0",
                    "-1",
                    "--single-transaction",
                    "-l",
                    "--list",
                ],
            ),
            "mysql" | "mariadb" => (
                &["-e", "--execute"],
                &["-h", "--host"],
                &[
                    "-P",
                    "--port",
                    "-u",
                    "--user",
                    "-D",
                    "--database",
                    "-S",
                    "--socket",
                    "--default-character-set",
                    "--login-path",
                ],
                &[
                    "-B",
                    "--batch",
                    "-N",
                    "--skip-column-names",
                    "-s",
                    "--silent",
                    "-t",
                    "--table",
                    "-v",
                    "--verbose",
                    "-E",
                    "--vertical",
                    "-r",
                    "--raw",
                    "--protocol=tcp",
                    "--protocol=socket",
                ],
            ),
            "sqlite3" => (&["-cmd"], &[], EMBEDDED_VALUE_OPTIONS, EMBEDDED_FLAGS),
            // `duckdb [FILE] -c "SELECT …"`: an embedded database, always on this machine.
            "duckdb" => (&["-c", "-s"], &[], EMBEDDED_VALUE_OPTIONS, EMBEDDED_FLAGS),
            _ => return None,
        };
    let mut queries = Vec::new();
    let mut host: Option<String> = None;
    let mut operands = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        if word.dynamic {
            return None;
        }
        let text = word.text.as_str();
        if !text.starts_with('-') || text == "-" {
            operands.push(word);
            continue;
        }
        let (option, glued) = match text.split_once('=') {
            Some((option, value)) if option.starts_with("--") => (option, Some(value.to_string())),
            _ => (text, None),
        };
        // `-cSELECT 1`, `-hdb`: a short option with its value glued on; `-Atc SELECT 1`:
        // flags clustered before it (the first letter that is no flag is the option).
        let cluster;
        let (option, glued) = if glued.is_none()
            && !option.starts_with("--")
            && option.len() > 2
            && !matches!(name, "sqlite3" | "duckdb")
        {
            if !option.is_ascii() {
                return None;
            }
            let letters = &option[1..];
            let flag = |letter: &str| flags.contains(&format!("-{letter}").as_str());
            match (0..letters.len()).find(|&at| !flag(&letters[at..=at])) {
                // Flags only (`-At`).
                None => continue,
                Some(at) => {
                    cluster = format!("-{}", &letters[at..=at]);
                    let rest = &letters[at + 1..];
                    (
                        cluster.as_str(),
                        (!rest.is_empty()).then(|| rest.to_string()),
                    )
                }
            }
        } else {
            (option, glued)
        };
        let takes = |list: &[&str]| list.contains(&option);
        let mut value = || option_value(glued.as_deref(), &mut words);
        if takes(query_options) {
            queries.push(value()?);
        } else if takes(host_options) {
            host = Some(value()?);
        } else if takes(value_options) {
            value()?;
        } else if name.starts_with("m") && (option == "-p" || option.starts_with("--password")) {
            // mysql's password, glued or prompted: the secret scan sees a written one.
        } else if !(flags.contains(&text) || flags.contains(&option)) {
            return None;
        }
    }
    let mut file = None;
    match name {
        "sqlite3" => {
            // `sqlite3 FILE [SQL…]`: the file is on this machine.
            let (database, sql) = operands.split_first()?;
            file = Some(*database);
            queries.extend(sql.iter().map(|word| word.text.clone()));
        }
        // `duckdb [FILE]`: SQL only from its options.
        "duckdb" if operands.len() > 1 => return None,
        "duckdb" => file = operands.first().copied(),
        _ => {
            for operand in operands {
                if let Some(found) = connection_host(&operand.text) {
                    host = found.or(host);
                }
            }
        }
    }
    // `psql -l`: the databases listed, as `\l` lists them.
    if name == "psql"
        && arguments
            .iter()
            .any(|word| matches!(word.text.as_str(), "-l" | "--list"))
    {
        queries.push("\\l".to_owned());
    }
    let local = name == "duckdb" || local_host(host.as_deref());
    (!queries.is_empty()).then_some(ClientQueries {
        queries,
        local,
        file,
    })
}

/// `pg_dump`/`pg_dumpall`/`mysqldump` of a database on this machine (no host, a socket,
/// `localhost`): a read of it, written to the file `-f`/`--file`/`-r`/`--result-file`
/// names (or printed). `None` for another host, a connection string naming one, or a word
/// computed at run time.
pub(super) fn local_dump(name: &str, arguments: &[Word]) -> Option<Vec<Word>> {
    if !matches!(name, "pg_dump" | "pg_dumpall" | "mysqldump") {
        return None;
    }
    let mut host: Option<String> = None;
    let mut outputs = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        if word.dynamic {
            return None;
        }
        let text = word.text.as_str();
        let (option, glued) = match text.split_once('=') {
            Some((option, value)) if option.starts_with("--") => (option, Some(value)),
            _ => (text, None),
        };
        // A host kept in an options file or login path (`--login-path=prod-ro`) is not known
        // here; nor is a connection service's.
        if matches!(
            option,
            "--login-path" | "--defaults-file" | "--defaults-extra-file" | "--service"
        ) {
            return None;
        }
        match option {
            "-h" | "--host" => host = Some(option_value(glued, &mut words)?),
            "-f" | "--file" | "-r" | "--result-file" => match glued {
                Some(value) => outputs.push(Word::literal(value)),
                None => outputs.push(words.next()?.clone()),
            },
            "-d" | "--dbname" => {
                let value = option_value(glued, &mut words)?;
                if let Some(found) = connection_host(&value) {
                    host = found.or(host);
                }
            }
            _ if text.starts_with("-h") && text.len() > 2 && name != "mysqldump" => {
                host = Some(text[2..].to_owned());
            }
            _ if !text.starts_with('-') => {
                if let Some(found) = connection_host(text) {
                    host = found.or(host);
                }
            }
            _ => {}
        }
    }
    local_host(host.as_deref()).then_some(outputs)
}

/// An option's value: glued to it (`--host=db`, `-hdb`), or the next word, unless the shell
/// computes that word (`None`: it may name anything).
fn option_value(glued: Option<&str>, words: &mut std::slice::Iter<'_, Word>) -> Option<String> {
    match glued {
        Some(value) => Some(value.to_owned()),
        None => words
            .next()
            .filter(|word| !word.dynamic)
            .map(|word| word.text.clone()),
    }
}
