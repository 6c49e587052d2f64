//! `curl`, `wget` and the like: which URLs a command reaches, whether it can carry local
//! data out, and the files it sends or writes.

use super::*;
use crate::matcher::shell::lex::HARMLESS_SINKS;

impl Judge<'_> {
    /// `curl`/`wget`: literal URLs to anywhere are fetches; a URL computed at run time may
    /// carry local data out; files sent and files written are named.
    pub(super) fn url(
        &mut self,
        name: &str,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        let mut index = 0;
        let mut remote = false;
        let mut urls = 0;
        let mut names_output = false;
        // curl's request beyond the URL: its headers and credentials, whether its method
        // is other than GET, whether it prints the request (`-v`) or hands the credentials
        // on to where it is redirected, and the URLs written out.
        let mut request = Request::default();
        let mut computed_header = false;
        while let Some(word) = arguments.get(index) {
            index += 1;
            let text = word.text.as_str();
            if name == "curl" {
                request.note_flags(text, word.dynamic);
            }
            // wget's `-d` prints the request, headers included.
            if name == "wget" && matches!(text, "-d" | "--debug") {
                request.prints = true;
            }
            let (option, inline) = match text.split_once('=') {
                Some((option, value)) if option.starts_with("--") => (option, Some(value)),
                _ => (text, None),
            };
            // curl's bundled short options (`-sT file`, `-sSLo out`, `-ofile`): the first
            // that takes a value takes the rest of the word, or the next word.
            let cluster;
            let (option, inline) = match curl_cluster(name, option, word.dynamic) {
                Some((letter, rest)) => {
                    cluster = format!("-{letter}");
                    (cluster.as_str(), rest)
                }
                None => (option, inline),
            };
            let kind = url_option(name, option);
            if kind != UrlOption::Not && option.starts_with('-') {
                let value = match inline {
                    Some(value) => Some((value.to_string(), word.dynamic)),
                    None if kind == UrlOption::Flag => None,
                    None => {
                        index += 1;
                        arguments
                            .get(index - 1)
                            .map(|w| (w.text.clone(), w.dynamic))
                    }
                };
                let Some((value, dynamic)) = value else {
                    if kind == UrlOption::Flag {
                        names_output = true;
                    }
                    continue;
                };
                match kind {
                    UrlOption::Output => {
                        names_output = true;
                        // `-o /dev/null`: the body is thrown away, as `> /dev/null` would.
                        let sink = !dynamic && HARMLESS_SINKS.contains(&value.as_str());
                        if value != "-" && !sink {
                            facts.classes.insert(Class::Write);
                            facts
                                .files
                                .push(self.path(&value, dynamic, dir, Role::Change));
                        }
                    }
                    UrlOption::Sends => {
                        // `-d @file`, `-F name=@file`, `-F name=<file`, `-T file`.
                        let file = value
                            .strip_prefix('@')
                            .or_else(|| value.split_once("=@").map(|(_, file)| file))
                            .or_else(|| value.split_once("=<").map(|(_, file)| file));
                        if let Some(file) = file.filter(|file| *file != "-") {
                            // `@$HOME/.aws/credentials`: the home is known.
                            let known = dynamic.then(|| self.known_variables(file, dir)).flatten();
                            facts.files.push(match known {
                                Some(file) => self.path(&file, false, dir, Role::Read),
                                None => self.path(file, dynamic, dir, Role::Read),
                            });
                        }
                        if dynamic {
                            remote = true;
                        }
                    }
                    UrlOption::ReadsFile => {
                        facts
                            .files
                            .push(self.path(&value, dynamic, dir, Role::Read));
                    }
                    UrlOption::Value if matches!(name, "curl" | "wget") => {
                        // (wget's `-e` runs a setting, curl's names a referrer.)
                        let option = match (name, option) {
                            ("wget", "-e") => "--execute",
                            _ => option,
                        };
                        remote |= request.note_value(
                            option,
                            Word {
                                text: value,
                                dynamic,
                                ..Word::default()
                            },
                        );
                    }
                    UrlOption::Value | UrlOption::Flag | UrlOption::Not => {}
                }
                continue;
            }
            if name == "wget"
                && text.starts_with('-')
                && !text.starts_with("--")
                && text.contains('O')
            {
                // `-qO-`, `-qO file`: a cluster ending in `O` and its value.
                let value = text
                    .split_once('O')
                    .map_or("", |(_, value)| value)
                    .to_string();
                let value = if value.is_empty() {
                    index += 1;
                    arguments
                        .get(index - 1)
                        .map_or(String::new(), |w| w.text.clone())
                } else {
                    value
                };
                names_output = true;
                if value != "-" {
                    facts.classes.insert(Class::Write);
                    facts
                        .files
                        .push(self.path(&value, false, dir, Role::Change));
                }
                continue;
            }
            if text.starts_with('-') {
                continue;
            }
            // HTTPie's request items that send a file: `@body.json`, `field=@file`,
            // `field:=@data.json`, `field@upload.bin`; the file is read.
            if matches!(name, "http" | "https" | "xh" | "xhs") && !text.contains("://") {
                let file = text
                    .strip_prefix('@')
                    .or_else(|| text.split_once("=@").map(|(_, file)| file))
                    .or_else(|| {
                        text.split_once('@')
                            .filter(|(field, _)| {
                                !field.is_empty()
                                    && field
                                        .chars()
                                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                            })
                            .map(|(_, file)| file)
                    });
                if let Some(file) = file.filter(|file| !file.is_empty()) {
                    facts
                        .files
                        .push(self.path(file, word.dynamic, dir, Role::Read));
                    continue;
                }
            }
            // HTTPie's header item computed at run time (`"Authorization:Bearer $TOKEN"`):
            // sent with the request, judged with it below.
            if matches!(name, "http" | "https" | "xh" | "xhs")
                && word.dynamic
                && !text.contains("://")
                && text.split_once(':').is_some_and(|(field, _)| {
                    !field.is_empty()
                        && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
            {
                computed_header = true;
                continue;
            }
            urls += 1;
            if !word.dynamic {
                request.urls.push(text.to_string());
            }
            // `file:///home/me/.ssh/id_rsa` is a file of this machine, read.
            if let Some(path) = file_url_path(text) {
                // Another host's file, or one that does not decode, cannot be placed.
                let unplaced = path.is_none() || word.dynamic;
                let path = path.unwrap_or_default();
                facts
                    .files
                    .push(self.path(&path, unplaced, dir, Role::Read));
                continue;
            }
            // The machine's credentials from its metadata service, a secret store's
            // values, or secret material sent in the address, are credential access.
            if !word.dynamic
                && (is_instance_metadata(&url_host(text))
                    || reads_secret_store(text)
                    || !crate::secrets::scan(&serde_json::Value::String(text.to_string()))
                        .is_empty())
            {
                facts.classes.insert(Class::CredentialAccess);
            }
            // An address that carries the project's or the home's path, the user's name or
            // a file's text out with the request sends local data (`local_data.rs`).
            if is_url(text)
                && !word.dynamic
                && !is_local_url(text)
                && crate::matcher::local_data::carries_local_data(text, self.context)
            {
                remote = true;
            }
            let shorthand =
                matches!(name, "http" | "https" | "xh" | "xhs") && localhost_shorthand(text);
            if word.dynamic || !(is_local_url(text) || shorthand) {
                remote |= word.dynamic;
            } else {
                // Requests to this machine are part of the project's own development
                // (HTTPie, a network client in the table, then fetches as curl does).
                facts.classes = remove(facts.classes, Class::Network);
                if facts.classes.is_empty() {
                    facts.classes.insert(Class::Fetch);
                }
            }
        }
        // (What is sent to this machine is the project's own development, as above.)
        let httpie = matches!(name, "http" | "https" | "xh" | "xhs");
        let to_this_machine = request.urls.len() == urls
            && request
                .urls
                .iter()
                .all(|url| is_local_url(url) || (httpie && localhost_shorthand(url)));
        if matches!(name, "curl" | "wget") && !to_this_machine {
            remote |= self.sends_beyond_fetch(&request, urls);
        }
        remote |= computed_header && !to_this_machine && !httpie_only_asks(arguments);
        if remote || urls == 0 {
            facts.classes.insert(Class::Network);
        } else if httpie && httpie_only_asks(arguments) {
            // HTTPie asked for a page with query parameters and headers only (`xh GET
            // URL q==x`): a fetch, as `curl URL?q=x` is.
            facts.classes = remove(facts.classes, Class::Network);
            facts.classes.insert(Class::Fetch);
        }
        if name == "curl"
            && !names_output
            && arguments.iter().any(|word| {
                matches!(
                    word.text.as_str(),
                    "-O" | "--remote-name" | "--remote-name-all"
                ) || (word.text.starts_with('-')
                    && !word.text.starts_with("--")
                    && word.text.contains('O'))
            })
        {
            facts.classes.insert(Class::Write);
        }
        if facts.classes.contains(Class::Write) && !names_output {
            facts.files.push(FileRef {
                path: dir.map(str::to_string),
                tree: true,
                file_only: false,
                role: Role::Change,
            });
        }
        if name == "wget" && !names_output {
            facts.classes.insert(Class::Write);
            facts.files.push(FileRef {
                path: dir.map(str::to_string),
                tree: true,
                file_only: false,
                role: Role::Change,
            });
        }
    }

    /// Whether curl's request sends more than a fetch does: a header or credential that may
    /// carry anything, a method other than GET, or a token anywhere but to its own
    /// service's API (`own_api.rs`). A token printed by the one command substitution the
    /// command holds (`$(gh auth token)`) and sent to its own service is noted, for the line
    /// to judge that substitution as what it is (`line.rs`).
    fn sends_beyond_fetch(&mut self, request: &Request, urls: usize) -> bool {
        let mut tokens = Vec::new();
        let mut other = request.other;
        for header in &request.headers {
            match own_api::header(header) {
                own_api::Header::Plain => {}
                own_api::Header::Token(token) => tokens.push(token),
                own_api::Header::Other => other = true,
            }
        }
        if other || tokens.is_empty() {
            return other;
        }
        let own = !request.prints
            && urls == 1
            && request.urls.len() == 1
            && tokens.iter().all(|token| {
                let hosts = match token {
                    Some(name) => own_api::variable_hosts(name),
                    None => self.substituted_token,
                };
                hosts.is_some_and(|hosts| own_api::reaches_own_api(&request.urls[0], hosts))
            });
        if own && tokens.iter().any(Option::is_none) {
            self.token_to_own_api = true;
        }
        !own
    }
}

/// What a curl command sends besides its URL (see [`Judge::sends_beyond_fetch`]).
#[derive(Default)]
struct Request {
    /// Headers, and credentials written as headers (`--oauth2-bearer`, `-u`'s password).
    headers: Vec<Word>,
    /// Something sent that is no header: a method other than GET or HEAD, a computed user
    /// agent or referrer, a user without a password read from a variable.
    other: bool,
    /// The request is printed (`-v`, `--trace`) or its credentials follow a redirect to
    /// another host (`--location-trusted`).
    prints: bool,
    /// The URLs written out.
    urls: Vec<String>,
}

impl Request {
    /// Notes an option that takes no value (`-v`, `--location-trusted`), alone or in a
    /// cluster (`-sv`), before any letter that takes a value.
    fn note_flags(&mut self, text: &str, dynamic: bool) {
        if dynamic {
            return;
        }
        if matches!(text, "--verbose" | "--location-trusted") || text.starts_with("--trace") {
            self.prints = true;
            return;
        }
        let Some(letters) = text.strip_prefix('-').filter(|l| !l.starts_with('-')) else {
            return;
        };
        for letter in letters.chars() {
            if letter == 'v' {
                self.prints = true;
            }
            if !matches!(
                url_option("curl", &format!("-{letter}")),
                UrlOption::Not | UrlOption::Flag
            ) {
                return;
            }
        }
    }

    /// Notes the value of an option that names nothing on disk; `true` when the value
    /// alone sends something off this machine.
    fn note_value(&mut self, option: &str, value: Word) -> bool {
        match option {
            "-H" | "--header" => self.headers.push(value),
            "--oauth2-bearer" => self.headers.push(Word {
                text: format!("Authorization: Bearer {}", value.text),
                ..value
            }),
            "-u" | "--user" => match value.text.split_once(':') {
                // `-u "$JIRA_EMAIL:$JIRA_API_TOKEN"`, `-u x:$TOKEN`: the password is the
                // credential; a user named by a variable is sent with it.
                Some((user, password))
                    if value.dynamic
                        && (!user.contains('$') || own_api::credential(user).is_some()) =>
                {
                    self.headers.push(Word {
                        text: format!("Authorization: {password}"),
                        ..value
                    });
                }
                _ => self.other = true,
            },
            // wget's settings given on the line (`-e use_proxy=on`) may send it anywhere.
            "--execute" => self.other = true,
            "-X" | "--request" | "--method" => {
                self.other |= value.dynamic
                    || !matches!(value.text.to_ascii_uppercase().as_str(), "GET" | "HEAD");
            }
            "-A" | "--user-agent" | "-e" | "--referer" | "-U" | "--proxy-user" | "--aws-sigv4" => {
                return value.dynamic;
            }
            _ => {}
        }
        false
    }
}

/// HTTPie's and xh's `:8765/metrics`: `http://localhost:8765/metrics`.
fn localhost_shorthand(text: &str) -> bool {
    text.strip_prefix(':')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '/'))
}

/// Whether an HTTPie (`http`, `xh`) line only asks for a page: no method or `GET`/`HEAD`,
/// one URL, and request items that are query parameters (`q==x`) or headers
/// (`Accept:application/json`) only, with options that print or follow and nothing that
/// writes a file, sends a body or keeps a session.
fn httpie_only_asks(arguments: &[Word]) -> bool {
    const FLAGS: &[&str] = &[
        "-b",
        "--body",
        "-h",
        "--headers",
        "-v",
        "--verbose",
        "-F",
        "--follow",
        "-q",
        "--quiet",
        "--check-status",
        "-I",
        "--ignore-stdin",
        "--pretty=all",
        "--pretty=none",
        "--pretty=colors",
        "--pretty=format",
        "-s",
        "--style",
        "--print",
        "-p",
        "--timeout",
        "--all",
        "--offline",
    ];
    const VALUED: &[&str] = &["-p", "--print", "--pretty", "-s", "--style", "--timeout"];
    let mut url: Option<&str> = None;
    let mut words = arguments.iter().peekable();
    let mut first = true;
    // Tokens sent in headers (`"Authorization:Bearer $VERCEL_TOKEN"`): only to their own
    // service's API, and not printed (`-v`).
    let mut tokens = Vec::new();
    let mut prints = false;
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if word.dynamic {
            let token = text.split_once(':').and_then(|(name, value)| {
                let header = Word {
                    text: format!("{name}: {value}"),
                    ..word.clone()
                };
                match own_api::header(&header) {
                    own_api::Header::Token(Some(variable)) if url.is_some() => Some(variable),
                    _ => None,
                }
            });
            match token {
                Some(variable) => {
                    tokens.push(variable);
                    continue;
                }
                None => return false,
            }
        }
        // The request's headers are printed by `-v` and by any `--print` holding `H`
        // (`--print=bH`, `-p Hb`).
        if matches!(text, "-v" | "--verbose")
            || text
                .strip_prefix("--print=")
                .is_some_and(|what| what.contains('H'))
        {
            prints = true;
        }
        if text.starts_with('-') {
            let option = text.split_once('=').map_or(text, |(option, _)| option);
            if !FLAGS.contains(&text) && !FLAGS.contains(&option) {
                return false;
            }
            if VALUED.contains(&text) {
                let value = words.next();
                prints |= matches!(text, "-p" | "--print")
                    && value.is_some_and(|value| value.text.contains('H'));
            }
            continue;
        }
        // The method comes first when given (HTTPie takes any word of letters as one).
        if first && text.chars().all(|c| c.is_ascii_alphabetic()) && !text.contains('.') {
            if !matches!(text.to_ascii_uppercase().as_str(), "GET" | "HEAD") {
                return false;
            }
            first = false;
            continue;
        }
        first = false;
        if url.is_none() {
            url = Some(text);
            continue;
        }
        let query = text
            .split_once("==")
            .is_some_and(|(field, _)| !field.is_empty());
        let header = text.split_once(':').is_some_and(|(field, value)| {
            !field.is_empty()
                && !value.starts_with(['=', '/'])
                && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
        if !(query || header) || text.contains('@') {
            return false;
        }
    }
    url.is_some_and(|url| {
        tokens.is_empty()
            || (!prints
                && tokens.iter().all(|variable| {
                    own_api::variable_hosts(variable)
                        .is_some_and(|hosts| own_api::reaches_own_api(url, hosts))
                }))
    })
}

/// In `curl`'s cluster of short options (`-sT`), the first letter whose option takes a
/// value, and the value when the cluster goes on after it (`-ofile`).
fn curl_cluster<'t>(name: &str, text: &'t str, dynamic: bool) -> Option<(char, Option<&'t str>)> {
    let letters = text.strip_prefix('-')?;
    if name != "curl" || dynamic || letters.starts_with('-') || letters.chars().count() < 2 {
        return None;
    }
    for (at, letter) in letters.char_indices() {
        if !letter.is_ascii_alphanumeric() {
            return None;
        }
        let kind = url_option(name, &format!("-{letter}"));
        if !matches!(kind, UrlOption::Not | UrlOption::Flag) {
            let rest = &letters[at + letter.len_utf8()..];
            return Some((letter, (!rest.is_empty()).then_some(rest)));
        }
    }
    None
}

/// The path a `file:` URL names (`file:///etc/x`, `file://localhost/etc/x`, `FILE:/etc/x`),
/// with `%XX` escapes decoded: `None` when it is no `file:` URL, `Some(None)` when it names
/// another host or does not decode.
fn file_url_path(url: &str) -> Option<Option<String>> {
    let scheme = url.get(..5)?;
    if !scheme.eq_ignore_ascii_case("file:") {
        return None;
    }
    let rest = &url[5..];
    let path = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let (host, path) = authority_and_path
                .find('/')
                .map_or((authority_and_path, ""), |at| {
                    authority_and_path.split_at(at)
                });
            if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
                return Some(None);
            }
            path
        }
        None => rest,
    };
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let mut decoded = Vec::with_capacity(path.len());
    let mut bytes = path.bytes();
    while let Some(byte) = bytes.next() {
        if byte == b'%' {
            let high = bytes.next().and_then(|b| (b as char).to_digit(16));
            let low = bytes.next().and_then(|b| (b as char).to_digit(16));
            match (high, low) {
                (Some(high), Some(low)) => decoded.push((high * 16 + low) as u8),
                _ => return Some(None),
            }
        } else {
            decoded.push(byte);
        }
    }
    Some(
        String::from_utf8(decoded)
            .ok()
            .filter(|path| path.starts_with('/')),
    )
}
