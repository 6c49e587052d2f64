//! Clients of services on this machine: `nc localhost 6379` and `redis-cli GET k` talk to a
//! process of the developer's own, as `curl localhost` does, and send nothing off the
//! machine; `open` and `xdg-open` show the person a file, a folder or a page, and an
//! editor's launcher shows the files it opens (`editors.rs`).

use super::super::lex::Segment;
use super::super::lex::Word;
use super::sql::local_host;
use super::{remove, Class, Judge, Role, SegmentFacts};

impl Judge<'_> {
    /// `open report.pdf` on macOS, `xdg-open http://localhost:3000`: what is shown to the
    /// person is read (see [`shown_files`]); `false` when the command is not such a look.
    pub(super) fn shown(
        &self,
        name: &str,
        arguments: &[Word],
        cwd: Option<&str>,
        facts: &mut SegmentFacts,
    ) -> bool {
        if let Some(files) = super::editors::opened(name, arguments) {
            facts.classes.insert(Class::ReadOnly);
            for word in files {
                let mut word = word.clone();
                word.text = super::editors::without_position(&word.text).to_owned();
                facts.files.push(self.file(&word, cwd, Role::Read));
            }
            return true;
        }
        if name == "start" {
            // Windows' `start report.html`, `start "" chart.png`, `start chrome page.html`.
            let Some(shown) = started_documents(arguments) else {
                return false;
            };
            facts.classes.insert(Class::ReadOnly);
            for word in shown.into_iter().filter(|word| !word.text.contains("://")) {
                facts.files.push(self.file(word, cwd, Role::Read));
            }
            return true;
        }
        if !matches!(name, "open" | "xdg-open") {
            return false;
        }
        let macos = [self.context.home(), cwd]
            .into_iter()
            .flatten()
            .any(|folder| folder.starts_with("/Users/"));
        let Some(shown) = shown_files(name, arguments, macos) else {
            return false;
        };
        facts.classes.insert(Class::ReadOnly);
        for word in shown.into_iter().filter(|word| !word.text.contains("://")) {
            facts.files.push(self.file(word, cwd, Role::Read));
        }
        true
    }
}

/// `nc`, `ncat`, `netcat` or `telnet` connecting to a loopback address, without listening
/// (`-l` opens a port to others) or running a program for the connection (`-e`, `-c`).
pub(super) fn local_socket(name: &str, arguments: &[Word]) -> bool {
    socket_operands(name, arguments).is_some_and(|(operands, _)| {
        operands
            .first()
            .is_some_and(|host| loopback(host) && operands.len() <= 2)
    })
}

/// `nc -zv 198.51.100.23 1-1024`, `nc -z host 22 80 443`: a probe of a range or a list of
/// another machine's ports, a scan of it (one port is a check that a service is up).
pub(super) fn port_scan(name: &str, arguments: &[Word]) -> bool {
    socket_operands(name, arguments).is_some_and(|(operands, probe)| {
        probe
            && operands.first().is_some_and(|host| !loopback(host))
            && (operands.len() > 2
                || operands
                    .iter()
                    .skip(1)
                    .any(|port| port.contains(['-', ','])))
    })
}

/// The operands of `nc`, `ncat`, `netcat` or `telnet` (host, then ports), and whether it
/// only probes (`-z`); `None` when it listens, runs a program or is computed.
fn socket_operands<'w>(name: &str, arguments: &'w [Word]) -> Option<(Vec<&'w str>, bool)> {
    if !matches!(name, "nc" | "ncat" | "netcat" | "telnet") {
        return None;
    }
    let mut probe = false;
    // Short options that take a value: the word after them is not the host.
    const VALUED: &str = "wqpsixXWIOTVMgGP";
    let mut operands = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if word.dynamic {
            return None;
        }
        if let Some(long) = text.strip_prefix("--") {
            if long.starts_with("listen") || long.contains("exec") || long.starts_with("keep") {
                return None;
            }
            probe |= long == "zero";
            continue;
        }
        match text.strip_prefix('-') {
            Some(letters) if !letters.is_empty() => {
                if letters.contains(['l', 'e', 'c', 'k', 'L', 'R']) {
                    return None;
                }
                probe |= letters.contains('z');
                if letters.ends_with(|c: char| VALUED.contains(c)) {
                    words.next();
                }
            }
            _ => operands.push(text),
        }
    }
    Some((operands, probe))
}

/// `redis-cli` on this machine (no `-h`, or a loopback one; no URL elsewhere) given a
/// command that only reads (`GET`, `KEYS`, `SCAN`, `INFO`…) or a read-only mode (`--scan`,
/// `--bigkeys`, `--stat`). `CONFIG GET` may print the password, so it is no read here.
pub(super) fn local_redis_read(name: &str, arguments: &[Word]) -> bool {
    if name != "redis-cli" {
        return false;
    }
    const VALUED: &[&str] = &[
        "-h",
        "-p",
        "-s",
        "-a",
        "-u",
        "-n",
        "-r",
        "-i",
        "-d",
        "--user",
        "--pass",
        "--pattern",
        "--count",
        "--cacert",
        "--cacertdir",
        "--cert",
        "--key",
        "--sni",
        "--tls-ciphers",
        "--tls-ciphersuites",
        "-t",
        "--delim",
    ];
    const MODES: &[&str] = &[
        "--scan",
        "--bigkeys",
        "--memkeys",
        "--hotkeys",
        "--stat",
        "--latency",
    ];
    const READS: &[&str] = &[
        "get",
        "mget",
        "exists",
        "ttl",
        "pttl",
        "type",
        "strlen",
        "getrange",
        "keys",
        "scan",
        "hget",
        "hgetall",
        "hkeys",
        "hvals",
        "hlen",
        "hexists",
        "hmget",
        "hscan",
        "lrange",
        "llen",
        "lindex",
        "smembers",
        "scard",
        "sismember",
        "sscan",
        "zrange",
        "zrangebyscore",
        "zrevrange",
        "zcard",
        "zscore",
        "zscan",
        "xrange",
        "xrevrange",
        "xlen",
        "xinfo",
        "info",
        "ping",
        "dbsize",
        "time",
        "echo",
        "memory",
        "object",
        "pubsub",
        "role",
        "lastsave",
    ];
    let mut host = None;
    let mut mode = false;
    let mut command = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        if word.dynamic {
            return false;
        }
        let text = word.text.as_str();
        if !command.is_empty() {
            command.push(text);
            continue;
        }
        if text == "--eval" || text == "-x" {
            return false;
        }
        if MODES.contains(&text) {
            mode = true;
        } else if VALUED.contains(&text) {
            let value = words.next().map(|value| value.text.as_str());
            match text {
                "-h" => host = value,
                // `redis://host:port/db`: the host between `@`/`//` and `:`.
                "-u" => host = value.map(url_host),
                _ => {}
            }
        } else if !text.starts_with('-') {
            command.push(text);
        }
    }
    if !local_host(host) && !host.is_some_and(loopback) {
        return false;
    }
    match command.split_first() {
        None => mode,
        Some((verb, rest)) => {
            let verb = verb.to_ascii_lowercase();
            READS.contains(&verb.as_str())
                && !(verb == "memory"
                    && rest
                        .first()
                        .is_some_and(|sub| !sub.eq_ignore_ascii_case("usage")))
        }
    }
}

/// `mongosh` (or the old `mongo`) on this machine (no host, or a loopback one in
/// `--host` or a `mongodb://` address; never `mongodb+srv://`, which is a cluster
/// elsewhere) given `--eval` code that only reads: every function it calls is a read
/// ([`MONGO_READS`]), no aggregation stage writes (`$out`, `$merge`), no server-side code
/// runs (`$where`, `$function`, `$accumulator`), and nothing names the users collection or
/// secret material.
pub(super) fn local_mongo_read(name: &str, arguments: &[Word]) -> bool {
    if !matches!(name, "mongosh" | "mongo") {
        return false;
    }
    const VALUED: &[&str] = &[
        "--host",
        "--port",
        "--username",
        "-u",
        "--authenticationDatabase",
        "--authenticationMechanism",
        "--tlsCAFile",
    ];
    const FLAGS: &[&str] = &[
        "--quiet",
        "--norc",
        "--json",
        "--json=relaxed",
        "--json=canonical",
    ];
    let mut host: Option<&str> = None;
    let mut code = None;
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        if word.dynamic {
            return false;
        }
        let text = word.text.as_str();
        if text == "--eval" {
            if code.is_some() {
                return false;
            }
            code = words
                .next()
                .filter(|word| !word.dynamic)
                .map(|word| word.text.as_str());
        } else if VALUED.contains(&text) {
            let value = words.next().map(|value| value.text.as_str());
            if text == "--host" {
                host = value.map(|value| value.split(['/', ':']).next().unwrap_or(value));
            }
        } else if FLAGS.contains(&text) {
            continue;
        } else if text.starts_with('-') || text.starts_with("mongodb+srv:") {
            return false;
        } else if let Some(rest) = text.strip_prefix("mongodb://") {
            let rest = rest.split('/').next().unwrap_or(rest);
            let rest = rest.rsplit_once('@').map_or(rest, |(_, rest)| rest);
            // Several hosts (`a:27017,b:27017`): a replica set, local only if all are.
            if !rest
                .split(',')
                .all(|each| loopback(each.rsplit_once(':').map_or(each, |(host, _)| host)))
            {
                return false;
            }
        } else if text.contains(['/', ':'])
            && !loopback(text.split(['/', ':']).next().unwrap_or(text))
        {
            // `host:27017/db` or `host/db`: another machine unless a loopback one.
            return false;
        }
    }
    let Some(code) = code else {
        return false;
    };
    (local_host(host) || host.is_some_and(loopback)) && mongo_code_reads(code)
}

/// Functions `mongosh` code may call and still only read.
const MONGO_READS: &[&str] = &[
    "find",
    "findOne",
    "countDocuments",
    "count",
    "estimatedDocumentCount",
    "distinct",
    "aggregate",
    "getCollectionNames",
    "getCollectionInfos",
    "getIndexes",
    "stats",
    "explain",
    "toArray",
    "limit",
    "sort",
    "skip",
    "pretty",
    "map",
    "forEach",
    "hasNext",
    "next",
    "itcount",
    "size",
    "getSiblingDB",
    "getCollection",
    "getName",
    "printjson",
    "print",
    "tojson",
    "stringify",
    "version",
    "serverStatus",
    "hostInfo",
    "isMaster",
    "hello",
    "projection",
    "batchSize",
    "maxTimeMS",
    "hint",
    "ObjectId",
    "ISODate",
    "Date",
    "keys",
    "log",
    "getMongo",
    "getDBNames",
    "listCollections",
    "project",
    "filter",
];

/// Whether `mongosh` code only reads (see [`local_mongo_read`]).
fn mongo_code_reads(code: &str) -> bool {
    let lower = code.to_ascii_lowercase();
    if [
        "$out",
        "$merge",
        "$where",
        "$function",
        "$accumulator",
        "system.users",
        "system.js",
    ]
    .iter()
    .any(|word| lower.contains(word))
        || super::sql::names_secrets(code)
        || code.contains('`')
    {
        return false;
    }
    // Every name followed by `(` is a function called.
    let mut calls = 0;
    for (at, _) in code.match_indices('(') {
        let before = &code[..at];
        let trimmed = before.trim_end();
        let start = trimmed
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .map_or(0, |at| at + 1);
        let called = &trimmed[start..];
        if called.is_empty() {
            // A grouping parenthesis or an arrow function's parameters.
            continue;
        }
        if !MONGO_READS.contains(&called) {
            return false;
        }
        calls += 1;
    }
    calls > 0
}

/// A loopback address: `localhost`, `127.x.x.x`, `::1`.
fn loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.starts_with("127.") || host == "::1"
}

/// The host of a `redis://` or `rediss://` URL.
fn url_host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, rest)| rest);
    rest.split(['/', ':']).next().unwrap_or(rest)
}

/// What `open` (macOS) or `xdg-open` shows the person, when all it does is show it: files,
/// folders and web pages opened in the application that views them (`open report.pdf`,
/// `open -a Preview chart.png`, `open .`, `xdg-open http://localhost:3000`). `None` when it
/// may run something: an application bundle, an installer, a script or a launcher named
/// (or given to a terminal), arguments handed on to the application (`--args`), a
/// computed word; `open` off macOS is another program (Linux's `openvt` runs commands).
fn shown_files<'w>(name: &str, arguments: &'w [Word], macos: bool) -> Option<Vec<&'w Word>> {
    const RUNNABLE: &[&str] = &[
        ".app",
        ".command",
        ".tool",
        ".terminal",
        ".pkg",
        ".mpkg",
        ".dmg",
        ".workflow",
        ".scpt",
        ".applescript",
        ".sh",
        ".bash",
        ".zsh",
        ".py",
        ".rb",
        ".pl",
        ".jar",
        ".exe",
        ".prefpane",
        ".mobileconfig",
        ".desktop",
        ".appimage",
        ".run",
        ".bin",
        ".deb",
        ".rpm",
        ".webloc",
        ".inetloc",
        ".fileloc",
        ".shortcut",
        ".action",
        ".definition",
    ];
    const TERMINALS: &[&str] = &[
        "terminal",
        "iterm",
        "iterm2",
        "script editor",
        "automator",
        "warp",
        "alacritty",
        "kitty",
        "wezterm",
        "ghostty",
    ];
    let valued_app = match name {
        "open" if macos => true,
        "xdg-open" => false,
        _ => return None,
    };
    let runnable = |text: &str| {
        let lower = text.trim_end_matches('/').to_ascii_lowercase();
        RUNNABLE.iter().any(|suffix| lower.ends_with(suffix))
    };
    let mut shown = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        if word.dynamic {
            return None;
        }
        let text = word.text.as_str();
        match text {
            "--args" | "--stdin" | "-i" | "--stdout" | "-o" | "--stderr" | "--env" => return None,
            // `-a APP`, also at the end of a cluster (`-na APP`, `-gb ID`).
            _ if valued_app
                && text.starts_with('-')
                && !text.starts_with("--")
                && text.ends_with(['a', 'b']) =>
            {
                let app = words.next()?;
                let lower = app.text.to_ascii_lowercase();
                let bare = lower.trim_end_matches('/').trim_end_matches(".app");
                let bare = bare.rsplit('/').next().unwrap_or(bare);
                if app.dynamic || TERMINALS.iter().any(|terminal| bare.starts_with(terminal)) {
                    return None;
                }
            }
            _ if text.starts_with('-') => {}
            _ if runnable(text) => return None,
            _ => shown.push(word),
        }
    }
    Some(shown)
}

/// What Windows' `start` shows the person, when all it does is open documents or web
/// pages in the application that views them (`start report.html`, `start "" chart.png`,
/// `start chrome index.html`, `start https://localhost:3000`): every file a document by its
/// extension, after an empty window title and a browser named. `None` for anything that
/// may run (a program, a script, a shortcut, an installer, a title or a folder given).
fn started_documents(arguments: &[Word]) -> Option<Vec<&Word>> {
    const DOCUMENTS: &[&str] = &[
        ".html", ".htm", ".pdf", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".txt", ".md",
        ".csv", ".json", ".xml", ".log", ".docx", ".xlsx", ".pptx", ".mp3", ".mp4",
    ];
    const BROWSERS: &[&str] = &["chrome", "msedge", "firefox", "brave"];
    let mut shown = Vec::new();
    for (index, word) in arguments.iter().enumerate() {
        let text = word.text.as_str();
        let lower = text.to_ascii_lowercase();
        if word.dynamic {
            return None;
        }
        if matches!(lower.as_str(), "/b" | "/min" | "/max" | "/wait") {
            continue;
        }
        if text.is_empty() && index == 0 {
            continue;
        }
        if shown.is_empty() && BROWSERS.contains(&lower.trim_end_matches(".exe")) {
            continue;
        }
        if !super::words::is_url(text) && !DOCUMENTS.iter().any(|suffix| lower.ends_with(suffix)) {
            return None;
        }
        shown.push(word);
    }
    (!shown.is_empty()).then_some(shown)
}

/// `openssl s_client -connect host:443 </dev/null`: a TLS handshake that prints the
/// server's certificate and sends nothing (no input, or only `/dev/null`), as `curl -I`
/// fetches headers; fed anything else, it sends that.
pub(super) fn tls_look(
    name: &str,
    arguments: &[Word],
    segment: &Segment,
    facts: &mut SegmentFacts,
) {
    let empty_input = !segment.piped
        && segment.here_text.is_none()
        && segment
            .redirections
            .iter()
            .filter(|(_, writes)| !writes)
            .all(|(target, _)| !target.dynamic && target.text == "/dev/null");
    if name == "openssl"
        && arguments
            .first()
            .is_some_and(|word| word.text == "s_client")
        && empty_input
        && facts.classes.contains(Class::Network)
    {
        facts.classes = remove(facts.classes, Class::Network);
        facts.classes.insert(Class::Fetch);
    }
}

/// `npm run dev -- --host 0.0.0.0`, `manage.py runserver 0.0.0.0:8000`, `node
/// --inspect=0.0.0.0:9229`, `gunicorn -b 0.0.0.0:8000`: a server or debugger listening on
/// every interface, reachable from the network rather than from this machine only. Only
/// an address given to a listening option, or as a bare `0.0.0.0:PORT` operand, counts;
/// programs that only print or search text (`grep 0.0.0.0 /etc/hosts`) and clients are not
/// servers.
pub(super) fn listens_on_every_interface(name: &str, arguments: &[Word]) -> bool {
    const OPTIONS: &[&str] = &[
        "--host",
        "--bind",
        "--ip",
        "--listen",
        "--address",
        "--addr",
        "--hostname",
        "--inspect",
        "--inspect-brk",
        "--api-port",
        "--listen-address",
        "--http-address",
        "--server.address",
        "-b",
        "-a",
    ];
    if matches!(
        name,
        "echo"
            | "printf"
            | "grep"
            | "egrep"
            | "rg"
            | "ag"
            | "sed"
            | "awk"
            | "curl"
            | "wget"
            | "ssh"
            | "ping"
            | "nc"
            | "ncat"
            | "ss"
            | "netstat"
            | "lsof"
            | "git"
    ) {
        return false;
    }
    let every = |value: &str| {
        let host = value
            .strip_prefix("tcp://")
            .or_else(|| value.strip_prefix("http://"))
            .unwrap_or(value);
        let host = match host.strip_prefix('[') {
            Some(bracketed) => bracketed.split(']').next().unwrap_or(bracketed),
            None if host.matches(':').count() <= 1 => host.split(':').next().unwrap_or(host),
            None => host,
        };
        matches!(host, "0.0.0.0" | "::")
    };
    arguments.iter().enumerate().any(|(at, word)| {
        let text = word.text.as_str();
        if let Some((option, value)) = text.split_once('=') {
            if OPTIONS.contains(&option) && every(value) {
                return true;
            }
        }
        if OPTIONS.contains(&text) {
            return arguments.get(at + 1).is_some_and(|next| every(&next.text));
        }
        text.strip_prefix("0.0.0.0:")
            .is_some_and(|port| !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()))
    })
}
