//! Secret detection and redaction in call arguments and free text (G9: no secrets at rest).
//!
//! Every evaluation scans the call's arguments ([`scan`]); everything that is stored, shown
//! or logged goes through [`redact`] or [`redact_text`] first. Two signals are combined:
//! - **the key**: a value whose object key says it is secret (`password`, `apiKey`,
//!   `Authorization`…) is replaced whole, whatever it looks like;
//! - **the value**: a pattern found inside any string (an AWS key in a command line, a
//!   password in a URL) is replaced on its own, and the rest of the string is kept so the
//!   person deciding still sees what the call does. Object keys are scanned for patterns
//!   too (a token used as a key is redacted in the key, and never shown in a path).
//!   Beside an AWS access key id, any 40-character word of its alphabet is its secret key.
//!
//! A replaced secret reads `[REDACTED:<kind>]`. The kinds are stable slugs (they appear in
//! verdict reasons, previews and the audit log):
//!
//! | kind                   | what is found                                                       |
//! |------------------------|---------------------------------------------------------------------|
//! | `aws_access_key`       | `AKIA…`/`ASIA…` followed by 16 upper-case letters or digits         |
//! | `aws_secret_key`       | value of a key like `aws_secret_access_key`, or its `=`/`:` in text |
//! | `github_token`         | `ghp_ gho_ ghu_ ghs_ ghr_` tokens and `github_pat_…`                |
//! | `gitlab_token`         | `glpat-…`                                                           |
//! | `slack_token`          | `xoxb- xoxp- xoxa- xoxr- xoxs-` tokens, `hooks.slack.com/services/…` |
//! | `api_key`              | `sk-…`, `sk-proj-…`, `sk-ant-…` (≥ 20 characters, with a digit)     |
//! | `stripe_key`           | `sk_live_…`, `rk_live_…` (and `_test_`), `whsec_…`                   |
//! | `google_api_key`       | `AIza…` (35 more characters)                                        |
//! | `google_oauth_token`   | `ya29.…` access tokens                                              |
//! | `azure_key`            | `AccountKey=`/`SharedAccessKey=` of connection strings, SAS `sig=`  |
//! | `npm_token`            | `npm_…` (36 characters)                                             |
//! | `pypi_token`           | `pypi-AgE…` upload tokens                                           |
//! | `huggingface_token`    | `hf_…`                                                              |
//! | `sendgrid_key`         | `SG.<id>.<secret>`                                                  |
//! | `service_token`        | DigitalOcean `dop_v1_`, Shopify `shpat_`, Docker `dckr_pat_`, Doppler `dp.st.`, Linear `lin_api_` |
//! | `jwt`                  | three base64url parts, the header starting `eyJ`                    |
//! | `private_key`          | PEM `-----BEGIN … PRIVATE KEY-----` through its END line (or to the end) |
//! | `url_password`         | the password in `scheme://user:password@host`                       |
//! | `authorization_header` | value after `Authorization:`/`Proxy-Authorization:`, a `Bearer` token, a key named so |
//! | `cookie`               | value of `Cookie:`/`Set-Cookie:` headers and of keys named so      |
//! | `secret_field`         | value of a key whose last name component is secret (see [`key_kind`]), also as a command-line option (`--token X`, `--token=X`) |
//! | `password_option`      | `sshpass -p X`, `mysql -pX`, `redis-cli -a X`, `docker login -p X`, `curl -u user:X` |
//! | `unscanned`            | everything, if the patterns failed to compile (fail closed)         |
//!
//! Key names are also recognised inside text: `--db-password=x`, `?access_token=x`,
//! `"apiKey": "x"` (JSON held in a string) redact their value as `secret_field`.
//!
//! A value found by its key must be a literal to count: code that only *names* a secret
//! (`api_key=settings.anthropic_api_key`, `token=$TOKEN`, `password=os.environ["PW"]`,
//! `process.env.TOKEN`, `<your-token>`) is not secret material (see
//! [`values::is_literal_secret`]).
//!
//! Not secrets: `null`, empty strings, booleans (one bit of information: hiding
//! `"rotate_token": true` would only hide what the call does), and values that already are
//! a redaction marker, so that redacting twice changes nothing and a redacted value scans
//! clean.

use std::sync::LazyLock;

use airlock_protocol::SecretFinding;
use regex::{Regex, RegexSet};
use serde_json::{Map, Value};

/// How a pattern's match is confirmed once the regex has matched.
#[derive(Debug, Clone, Copy)]
enum Confirm {
    /// The match stands as found.
    Always,
    /// The secret must hold a digit: tells `sk-…` keys from hyphenated words such as
    /// `sk-learn-compatible-estimators`.
    HasDigit,
    /// The capture group `name` is a key name; [`key_kind`] decides whether it is secret
    /// and which kind (`max_tokens=100` is not, `db_password=x` is), and the value must be
    /// a literal rather than code that only names a secret (`settings.api_key`, `$TOKEN`).
    KeyName,
    /// The value must be a literal (see [`values::is_literal_secret`]).
    Literal,
}

/// One pattern. The capture group `secret`, when present, is the part replaced; otherwise
/// the whole match is.
struct Pattern {
    kind: &'static str,
    source: &'static str,
    confirm: Confirm,
}

// Word boundaries are ASCII (`(?-u:\b)`): every pattern is ASCII, and a Unicode boundary
// would push the regex engine off its fast DFA path on any non-ASCII haystack.
const PATTERNS: &[Pattern] = &[
    Pattern {
        kind: "aws_access_key",
        source: r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "aws_secret_key",
        source: r#"(?i)(?-u:\b)aws_?secret_?access_?key\\?["']?[ \t]*[:=][ \t]*\\?["']?(?P<secret>[A-Za-z0-9/+=]{16,})"#,
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "github_token",
        source: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "gitlab_token",
        source: r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "slack_token",
        source: r"(?-u:\b)xox[abprs]-[A-Za-z0-9-]{10,}",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "slack_token",
        source: r"(?i)(?-u:\b)hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9/_-]+)",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "api_key",
        source: r"(?-u:\b)sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        confirm: Confirm::HasDigit,
    },
    Pattern {
        kind: "stripe_key",
        // Secret and restricted keys, and webhook signing secrets (`pk_` keys are public).
        source: r"(?-u:\b)(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,})",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "google_api_key",
        source: r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "google_oauth_token",
        source: r"(?-u:\b)ya29\.[0-9A-Za-z_-]{20,}",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "azure_key",
        // Storage and Service Bus connection strings.
        source: r"(?i)(?-u:\b)(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/=]{20,})",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "azure_key",
        // The signature of a shared access signature (SAS) URL.
        source: r"[?&]sig=(?P<secret>[A-Za-z0-9%+/=]{16,})",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "npm_token",
        source: r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "pypi_token",
        source: r"(?-u:\b)pypi-AgE[A-Za-z0-9_-]{20,}",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "huggingface_token",
        source: r"(?-u:\b)hf_[A-Za-z0-9]{30,}",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "sendgrid_key",
        source: r"(?-u:\b)SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "service_token",
        // DigitalOcean, Shopify, Docker Hub, Doppler, Linear, Vercel-style prefixed tokens.
        source: r"(?-u:\b)(?:do[opr]_v1_[a-f0-9]{64}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|dckr_pat_[A-Za-z0-9_-]{20,}|dp\.(?:st|sa|ct)\.[A-Za-z0-9_.-]{20,}|lin_api_[A-Za-z0-9]{30,})",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "jwt",
        source: r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "private_key",
        // Lazy, so the block ends at the first END line; `\z` covers a truncated key.
        source: r"(?s)-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "url_password",
        // The password runs to the last `@` before the path, as URL parsers read it.
        // `[` and `]` cannot stand unescaped in a URL's user name (RFC 3986); excluding
        // them keeps the colon of a redaction marker from ending a "user name". The
        // password may hold them: a fake marker must not hide what follows it.
        source: r"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:\[\]]*:(?P<secret>[^\s/?#]+)@",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "authorization_header",
        // A known scheme and its credentials to the end of the line or quote, or a bare
        // token: prose such as "Authorization: pending review" is left alone.
        source: r#"(?i)(?-u:\b)(?:proxy-)?authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?P<secret>(?:bearer|basic|token|digest|negotiate|ntlm|bot|oauth|dpop|apikey|api-key|key|jwt|ssws|splunk|aws4-hmac-sha256|hoba|mutual|vapid|gnap|scram-sha-[0-9]+)[ \t]+[^\r\n"'\\]+|[A-Za-z0-9._~+/=-]{16,})"#,
        confirm: Confirm::Literal,
    },
    Pattern {
        kind: "authorization_header",
        source: r"(?-u:\b)Bearer[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{16,})",
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "cookie",
        // A cookie header holds `name=value` pairs; requiring the `=` spares prose.
        source: r#"(?i)(?-u:\b)(?:set-)?cookie\\?["']?[ \t]*:[ \t]*\\?["']?(?P<secret>[^\s=;"'\\]+=[^\r\n"'\\]*)"#,
        confirm: Confirm::Always,
    },
    Pattern {
        kind: "secret_field",
        // `--token X`, `--api-key "X"`: a secret passed as the value of a command-line
        // option, separated by blanks (`--token=X` is the `name=value` pattern below).
        source: r#"(?:^|[\s(])--?(?P<name>[A-Za-z0-9_.-]*(?i:password|passwd|pwd|secret|token|key|credentials?|passphrase))[ \t]+(?:"(?P<dq>[^"\s]+)"|'(?P<sq>[^'\s]+)'|(?P<secret>[^\s"'-][^\s"';|&)]*))"#,
        confirm: Confirm::KeyName,
    },
    Pattern {
        kind: "secret_field",
        // Assignments in code, YAML and `KEY="value"` shell: `API_TOKEN = "x"`,
        // `password: x`, `const apiKey = 'x'`, `export KEY="x"`.
        source: r#"(?P<name>[A-Za-z0-9_.-]*(?i:password|passwd|pwd|secret|token|key|credentials?|passphrase|secret_key_base))["']?[ \t]*(?::|=|:=)[ \t]*(?:"(?P<dq>[^"\s]+)"|'(?P<sq>[^'\s]+)'|(?P<secret>[^\s"'&;,)]+))"#,
        confirm: Confirm::KeyName,
    },
    Pattern {
        kind: "secret_field",
        // `config set KEY VALUE` and friends (`npm config set //host/:_authToken X`,
        // `aws configure set aws_secret_access_key X`, `vault kv put path password=X`).
        source: r#"(?i)(?:config(?:ure)?[ \t]+set|secret[ \t]+set|kv[ \t]+put[ \t]+\S+)[ \t]+(?P<name>[^\s=]+)(?:[ \t]+(?:--body|-b)[ \t]+|[ \t]+|=)(?P<secret>[^\s"']+)"#,
        confirm: Confirm::KeyName,
    },
    Pattern {
        kind: "password_option",
        // `.netrc` lines and tools whose password option is a short letter.
        source: r#"(?-u:\b)(?:machine[ \t]+\S+[^\n]*?[ \t]password[ \t]+|openssl[^\n;|&]*?[ \t]-pass(?:in|out)?[ \t]+pass:|zip[^\n;|&]*?[ \t]-P[ \t]+|7z[^\n;|&]*?[ \t]-p|twine[^\n;|&]*?[ \t]-p[ \t]+|ssh-keygen[^\n;|&]*?[ \t]-[PN][ \t]+|sqlcmd[^\n;|&]*?[ \t]-P[ \t]+|ldap(?:search|modify|add|delete|passwd)[^\n;|&]*?[ \t]-w[ \t]+|lftp[^\n;|&]*?[ \t]-u[ \t]+[^\s,]+,|smbclient[^\n;|&]*?[ \t]-U[ \t]+[^\s%]+%|[A-Za-z]?sonar\.(?:login|token|password)=|[A-Za-z-]*pass[A-Za-z-]*[= \t]+<\([ \t]*(?:echo|printf)[ \t]+)["']?(?P<secret>[^\s"';|&)]+)"#,
        confirm: Confirm::Literal,
    },
    Pattern {
        kind: "password_option",
        // Tools known to take a password in a short option: `sshpass -p X`, `mysql -pX`,
        // `redis-cli -a X`, `docker login -p X`, `curl -u user:X`.
        source: r#"(?-u:\b)(?:sshpass[ \t]+-p[ \t]*|(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)[^\n;|&]*?[ \t]-p|redis-cli[^\n;|&]*?[ \t]-a[ \t]+|docker[ \t]+login[^\n;|&]*?[ \t]-p[ \t]+|curl[^\n;|&]*?[ \t](?:-u|--user)[ \t]+["']?[^\s:"']+:)["']?(?P<secret>[^\s"';|&]+)"#,
        confirm: Confirm::Literal,
    },
    Pattern {
        kind: "secret_field",
        // `name=value` in command lines, environment assignments and query strings.
        source: r#"(?P<name>[A-Za-z0-9_.-]*(?i:password|passwd|pwd|secret|token|key|credentials?|passphrase))=(?P<secret>[^\s"'&;]+)"#,
        confirm: Confirm::KeyName,
    },
    Pattern {
        kind: "secret_field",
        // `"name": "value"`, JSON (or a Python dict) held in a string, escaped or not.
        source: r#"["'](?P<name>[A-Za-z0-9_.-]*(?i:password|passwd|pwd|secret|token|key|credentials?|passphrase))\\?["'][ \t]*:[ \t]*\\?["'](?P<secret>[^"'\\]+)"#,
        confirm: Confirm::KeyName,
    },
];

/// The patterns, compiled once. `None` if any failed to compile: then every string is
/// treated as secret (kind `unscanned`). A unit test pins that they compile.
struct Compiled {
    /// Fast pre-check: one pass over a string tells which patterns can match at all, so a
    /// string without secrets costs a single DFA scan.
    any: RegexSet,
    each: Vec<Regex>,
}

static COMPILED: LazyLock<Option<Compiled>> = LazyLock::new(|| {
    let any = RegexSet::new(PATTERNS.iter().map(|pattern| pattern.source)).ok()?;
    let each = PATTERNS
        .iter()
        .map(|pattern| Regex::new(pattern.source).ok())
        .collect::<Option<Vec<_>>>()?;
    Some(Compiled { any, each })
});

const MARKER_PREFIX: &str = "[REDACTED:";
const UNSCANNED: &str = "unscanned";

fn marker(kind: &str) -> String {
    format!("{MARKER_PREFIX}{kind}]")
}

/// A value that is exactly a redaction marker is not secret material (idempotence).
/// Exactly: a slug of lower-case letters and `_`, so wrapping a real secret as
/// `[REDACTED:<the secret>]` does not hide it from the scan.
fn is_marker(text: &str) -> bool {
    text.strip_prefix(MARKER_PREFIX)
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|kind| {
            !kind.is_empty()
                && kind
                    .bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte == b'_')
        })
}

/// Every secret found in `arguments`: its kind and the dotted path of the value holding it
/// (`headers.Authorization`, `items.0.key`; the root value itself has path ``). One finding
/// per kind and path.
pub fn scan(arguments: &Value) -> Vec<SecretFinding> {
    let mut findings = Vec::new();
    scan_value(arguments, &mut String::new(), &mut findings);
    findings
}

/// `arguments` with every secret replaced by `[REDACTED:<kind>]`, in the same shape.
pub fn redact(arguments: &Value) -> Value {
    match arguments {
        Value::String(text) => Value::String(redact_text(text)),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::Object(members) => {
            let mut redacted = Map::with_capacity(members.len());
            for (key, member) in members {
                let value = match key_kind(key) {
                    Some(kind) => redact_whole(member, kind).unwrap_or_else(|| member.clone()),
                    None => redact(member),
                };
                // A secret key is redacted too; two keys redacted alike stay two members.
                let mut name = if may_hold_secret(key) {
                    redact_text(key)
                } else {
                    key.clone()
                };
                if name != *key {
                    let base = name.clone();
                    let mut copy = 2;
                    while redacted.contains_key(&name) || members.contains_key(&name) {
                        name = format!("{base}#{copy}");
                        copy += 1;
                    }
                }
                redacted.insert(name, value);
            }
            Value::Object(redacted)
        }
        other => other.clone(),
    }
}

/// How many passes [`redact_text`] makes at most before it stops at a fixed point.
const REDACTION_PASSES: usize = 8;

/// `text` with every secret pattern replaced by `[REDACTED:<kind>]`: for logs, previews and
/// error messages.
///
/// Repeated until nothing more is found: a marker put in one pass can complete a pattern
/// with the text around it (its colon ending a URL's `user:`), which the next pass
/// redacts. So redacting twice gives what redacting once gave (found by `cargo fuzz`).
pub fn redact_text(text: &str) -> String {
    let mut current = redact_once(text);
    for _ in 1..REDACTION_PASSES {
        let next = redact_once(&current);
        if next == current {
            break;
        }
        current = next;
    }
    current
}

/// One pass of [`redact_text`].
fn redact_once(text: &str) -> String {
    let spans = secret_spans(text);
    if spans.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for span in merge(spans) {
        out.push_str(&text[copied..span.start]);
        out.push_str(&marker(span.kind));
        copied = span.end;
    }
    out.push_str(&text[copied..]);
    out
}

fn scan_value(value: &Value, path: &mut String, findings: &mut Vec<SecretFinding>) {
    match value {
        Value::String(text) => {
            for span in secret_spans(text) {
                push_finding(findings, span.kind, path);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let parent = enter(path, &index.to_string());
                scan_value(item, path, findings);
                path.truncate(parent);
            }
        }
        Value::Object(members) => {
            for (key, member) in members {
                // A key can be secret material too (`{"sk-proj-…": "x"}`): found, and
                // never shown in a finding's path.
                let spans = if may_hold_secret(key) {
                    secret_spans(key)
                } else {
                    Vec::new()
                };
                let shown = if spans.is_empty() {
                    std::borrow::Cow::Borrowed(key.as_str())
                } else {
                    std::borrow::Cow::Owned(redact_text(key))
                };
                let parent = enter(path, &shown);
                for span in spans {
                    push_finding(findings, span.kind, path);
                }
                match key_kind(key) {
                    Some(kind) if redact_whole(member, kind).is_some() => {
                        push_finding(findings, kind, path);
                    }
                    Some(_) => {}
                    None => scan_value(member, path, findings),
                }
                path.truncate(parent);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Appends `.segment` (or `segment` at the root) to `path`; returns the length to restore.
fn enter(path: &mut String, segment: &str) -> usize {
    let parent = path.len();
    if parent > 0 {
        path.push('.');
    }
    path.push_str(segment);
    parent
}

fn push_finding(findings: &mut Vec<SecretFinding>, kind: &str, path: &str) {
    if !findings
        .iter()
        .any(|found| found.kind == kind && found.path == path)
    {
        findings.push(SecretFinding {
            kind: kind.to_owned(),
            path: path.to_owned(),
        });
    }
}

/// The value under a secret key with every non-empty string and number replaced, keeping
/// arrays and objects in shape; `None` when there was nothing to replace.
fn redact_whole(value: &Value, kind: &str) -> Option<Value> {
    match value {
        Value::String(text) if text.is_empty() || is_marker(text) => None,
        Value::String(_) | Value::Number(_) => Some(Value::String(marker(kind))),
        Value::Null | Value::Bool(_) => None,
        Value::Array(items) => {
            let redacted: Vec<Option<Value>> =
                items.iter().map(|item| redact_whole(item, kind)).collect();
            if redacted.iter().all(Option::is_none) {
                return None;
            }
            Some(Value::Array(
                redacted
                    .into_iter()
                    .zip(items)
                    .map(|(redacted, item)| redacted.unwrap_or_else(|| item.clone()))
                    .collect(),
            ))
        }
        Value::Object(members) => {
            let mut changed = false;
            let mut redacted = Map::with_capacity(members.len());
            for (key, member) in members {
                let value = match redact_whole(member, kind) {
                    Some(value) => {
                        changed = true;
                        value
                    }
                    None => member.clone(),
                };
                redacted.insert(key.clone(), value);
            }
            changed.then_some(Value::Object(redacted))
        }
    }
}

/// A secret's byte range in a string, and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
    kind: &'static str,
}

/// Every secret pattern found in `text`, unmerged, in pattern order.
fn secret_spans(text: &str) -> Vec<Span> {
    let spans = plain_secret_spans(text);
    if !spans.is_empty() || !text.contains('%') {
        return spans;
    }
    // Percent-encoded (`?text=DB_PASSWORD%3Dhunter2`): a secret the decoded text shows is
    // held by the whole text, which is where the encoding hides it.
    match encoded::percent_decoded(text) {
        Some(decoded) => plain_secret_spans(&decoded)
            .first()
            .map(|span| {
                vec![Span {
                    start: 0,
                    end: text.len(),
                    kind: span.kind,
                }]
            })
            .unwrap_or_default(),
        None => Vec::new(),
    }
}

fn plain_secret_spans(text: &str) -> Vec<Span> {
    if text.is_empty() || is_marker(text) {
        return Vec::new();
    }
    let Some(compiled) = COMPILED.as_ref() else {
        return vec![Span {
            start: 0,
            end: text.len(),
            kind: UNSCANNED,
        }];
    };
    // Most texts hold no secret: one search that stops at the first match of any pattern
    // settles them, where collecting every matching pattern walks the whole text in the
    // costlier overlapping mode.
    if !compiled.any.is_match(text) {
        return Vec::new();
    }
    let mut spans = Vec::new();
    for index in compiled.any.matches(text).iter() {
        let (Some(pattern), Some(regex)) = (PATTERNS.get(index), compiled.each.get(index)) else {
            continue;
        };
        for captures in regex.captures_iter(text) {
            let Some(secret) = captures
                .name("secret")
                .or_else(|| captures.name("dq"))
                .or_else(|| captures.name("sq"))
                .or_else(|| captures.get(0))
            else {
                continue;
            };
            if is_marker(secret.as_str()) {
                continue;
            }
            let kind = match pattern.confirm {
                Confirm::Always => Some(pattern.kind),
                Confirm::HasDigit => secret
                    .as_str()
                    .bytes()
                    .any(|byte| byte.is_ascii_digit())
                    .then_some(pattern.kind),
                Confirm::KeyName => captures
                    .name("name")
                    .and_then(|name| {
                        // `//registry.npmjs.org/:_authToken`: the key is the last part.
                        let name = name.as_str();
                        key_kind(name.rsplit([':', '/']).next().unwrap_or(name))
                    })
                    .filter(|_| values::is_literal_secret(secret.as_str()))
                    .filter(|_| {
                        let separator = captures
                            .name("name")
                            .and_then(|name| text.get(name.end()..secret.start()))
                            .unwrap_or("");
                        let rest = text.get(secret.end()..).unwrap_or("");
                        !values::is_prose(separator, secret.as_str(), rest)
                    }),
                Confirm::Literal => {
                    values::is_literal_secret(secret.as_str()).then_some(pattern.kind)
                }
            };
            if let Some(kind) = kind {
                spans.push(Span {
                    start: secret.start(),
                    end: secret.end(),
                    kind,
                });
            }
        }
    }
    if spans.iter().any(|span| span.kind == "aws_access_key") {
        spans.extend(unlabelled_aws_secrets(text));
    }
    spans
}

/// Whether an object key is worth scanning: every pattern's shortest match is 20
/// characters or holds a character no identifier has (`:`, `/`, `@`, `=`, a blank), so a
/// short identifier (`command`, `file_path`, every key of an ordinary call) holds none.
/// Keys are scanned on every evaluation; this keeps that free.
fn may_hold_secret(key: &str) -> bool {
    key.len() >= 20
        || key
            .bytes()
            .any(|byte| !(byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.')))
}

/// Beside an AWS access key id, an AWS secret access key needs no label to be one: every
/// word of exactly 40 of its characters (`A-Z a-z 0-9 / +`) in the same text.
fn unlabelled_aws_secrets(text: &str) -> Vec<Span> {
    let is_key_char = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'/' || byte == b'+';
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !is_key_char(bytes[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && is_key_char(bytes[at]) {
            at += 1;
        }
        let word = &text[start..at];
        let bounded = bytes.get(at).is_none_or(|next| *next != b'=');
        if at - start == 40 && bounded && !is_marker(word) {
            spans.push(Span {
                start,
                end: at,
                kind: "aws_secret_key",
            });
        }
    }
    spans
}

/// Sorted, non-overlapping spans. Where two overlap (an `Authorization:` value that is also
/// a JWT), one marker covers both, named after the one that starts first (the outer one).
fn merge(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by(|left, right| left.start.cmp(&right.start).then(right.end.cmp(&left.end)));
    let mut merged: Vec<Span> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start < last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// The kind of secret a key names, if any. The name is split on `_`, `-`, `.`, spaces and
/// camelCase, lower-cased, with trailing digits dropped (`password2`); it is secret when
///
/// - it is `authorization`/`proxy-authorization` (`authorization_header`) or
///   `cookie`/`cookies`/`set-cookie` (`cookie`);
/// - it ends with `secret access key`, or holds `aws` and ends with `secret key`
///   (`aws_secret_key`);
/// - its last component is `password passwd pwd secret token apikey credential(s)
///   passphrase`, or its last two are `api key`, `access key`, `private key`, `secret key`,
///   `account key` (Azure), `signing key` or `master key` (`secret_field`).
///
/// So `db_password`, `apiKey`, `X-Api-Key`, `refresh_token`, `client_secret` are secret and
/// `max_tokens`, `token_count`, `tokenizer`, `secretary_name`, `sort_key` are not. The
/// upper-case `PWD` alone is the shell's working directory, not a password.
pub fn key_kind(key: &str) -> Option<&'static str> {
    // Most keys hold none of these fragments; skip the split for them.
    const FRAGMENTS: [&str; 7] = [
        "pass",
        "pwd",
        "secret",
        "token",
        "key",
        "credential",
        "auth",
    ];
    // Compared without folding the key into a new string: this runs for every key of
    // every call.
    let holds = |fragment: &str| {
        key.as_bytes()
            .windows(fragment.len())
            .any(|window| window.eq_ignore_ascii_case(fragment.as_bytes()))
    };
    if !FRAGMENTS.iter().any(|fragment| holds(fragment)) && !holds("cookie") {
        return None;
    }
    if key == "PWD" {
        return None;
    }
    let components = split_key(key);
    let words: Vec<&str> = components.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["authorization"] | ["proxy", "authorization"] => return Some("authorization_header"),
        ["cookie"] | ["cookies"] | ["set", "cookie"] => return Some("cookie"),
        [.., "secret", "access", "key"] => return Some("aws_secret_key"),
        [.., "secret", "key", "base"] | [.., "master", "key"] => return Some("secret_field"),
        [.., "secret", "key"] if words.contains(&"aws") => return Some("aws_secret_key"),
        _ => {}
    }
    match words.as_slice() {
        [.., "password" | "passwd" | "pwd" | "secret" | "token" | "apikey" | "credential"
        | "credentials" | "passphrase"]
        | [.., "api" | "access" | "private" | "secret" | "account" | "signing" | "master", "key"] => {
            Some("secret_field")
        }
        _ => None,
    }
}

/// `X-Api-Key` → `x api key`, `DBPassword2` → `db password`, `apiKEY` → `api key`.
fn split_key(key: &str) -> Vec<String> {
    let characters: Vec<char> = key.chars().collect();
    let mut components = Vec::new();
    let mut current = String::new();
    for (index, &character) in characters.iter().enumerate() {
        if matches!(character, '_' | '-' | '.' | ' ') {
            components.push(std::mem::take(&mut current));
            continue;
        }
        if character.is_uppercase() && !current.is_empty() {
            let previous = characters.get(index.wrapping_sub(1)).copied();
            let next = characters.get(index + 1).copied();
            let after_lower = previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit());
            // The last capital of an acronym starts the next word: `APIKey` → `API Key`.
            let ends_acronym =
                previous.is_some_and(char::is_uppercase) && next.is_some_and(char::is_lowercase);
            if after_lower || ends_acronym {
                components.push(std::mem::take(&mut current));
            }
        }
        current.extend(character.to_lowercase());
    }
    components.push(current);
    components
        .into_iter()
        .map(|component| {
            component
                .trim_end_matches(|c: char| c.is_ascii_digit())
                .to_owned()
        })
        .filter(|component| !component.is_empty())
        .collect()
}

mod encoded;
mod values;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod fuzz_found {
    use super::*;

    /// Found by `cargo fuzz` (secrets_redact): a `[REDACTED:…]` marker's colon made the
    /// text around it read as `user:password@` on a second pass.
    #[test]
    fn a_redaction_marker_never_reads_as_a_url_password() {
        for text in [
            "https://user)te&token=atedb:hunter2bd@.acmetps://us?Paser:nuru&ter2@token=abs",
            "https://user)te&token=atedb:hunter2bd@.acmetps::nuru&ter2@token=abs",
        ] {
            let once = redact_text(text);
            assert_eq!(redact_text(&once), once);
            let arguments = serde_json::json!({"body": text});
            let redacted = redact(&arguments);
            assert_eq!(redact(&redacted), redacted);
            assert!(scan(&redacted).is_empty());
        }
        // A real URL password is still found.
        assert_eq!(
            redact_text("see https://bob:s3cr3t-pw@example.com/x"),
            "see https://bob:[REDACTED:url_password]@example.com/x"
        );
    }
}
