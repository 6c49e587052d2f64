//! Whether a value found by its name (`password=…`, `--token …`) is secret material or
//! code that only names a secret.
//!
//! Agents edit code all day, and code mentions secrets constantly without holding one:
//! `api_key=settings.anthropic_api_key`, `token=os.environ["TOKEN"]`, `--token "$TOKEN"`.
//! Denying those would deny harmless edits. A value counts as a literal secret unless it is
//! one of these shapes.

use super::key_kind;

/// Whether `value` (as found after a secret-naming key) is literal secret material.
pub fn is_literal_secret(value: &str) -> bool {
    // `Bearer $TOKEN`: the credential is the last word.
    let value = value.split_whitespace().last().unwrap_or(value);
    let value = value.trim_matches(|c| c == '"' || c == '\'' || c == '`');
    if value.chars().count() < 3 {
        // `SECRET=1`, `pin=42`: too short to be a credential worth the name.
        return false;
    }
    let lower = value.to_ascii_lowercase();
    // A variable, a template or an environment lookup: `$TOKEN`, `${TOKEN}`, `{{ token }}`,
    // `%TOKEN%`, `process.env.TOKEN`, `os.environ[...]`, `getenv(...)`.
    if value.starts_with('$')
        || value.starts_with("{{")
        || value.starts_with("%(")
        || (value.starts_with('%') && value.ends_with('%'))
        || lower.contains("environ")
        || lower.contains("getenv")
        || lower.contains("process.env")
        || lower.contains("env[")
        || lower.contains("env.")
        || lower.contains("secrets.")
    {
        return false;
    }
    // A path (`./password.txt`), a regular expression (`api_key=.*`), a Rust path
    // (`token::tests`): not a credential.
    let extension = value.rsplit_once('.').is_some_and(|(_, ext)| {
        matches!(
            ext,
            "txt"
                | "json"
                | "pem"
                | "key"
                | "yaml"
                | "yml"
                | "env"
                | "toml"
                | "cfg"
                | "conf"
                | "ini"
                | "gpg"
        )
    });
    if value.starts_with("./")
        || value.starts_with("../")
        || value.starts_with("~/")
        || (value.starts_with('/') && extension)
        || value.contains(".*")
        || value.starts_with(':')
    {
        return false;
    }
    // Code: calls, indexing, attribute access (`settings.api_key`, `cfg["token"]`,
    // `get_token()`).
    if value.contains(['(', ')', '[', ']', '{', '}']) {
        return false;
    }
    if is_identifier_path(value) && value.contains('.') && value.split('.').all(looks_like_name) {
        return false;
    }
    if is_identifier_path(value) {
        // `api_key=api_key`, `token=TOKEN`, `password=DB_PASSWORD`: a name, not a value.
        let constant = value
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && value.chars().any(|c| c.is_ascii_uppercase());
        let names_a_secret =
            key_kind(value).is_some() && !value.chars().any(|c| c.is_ascii_digit());
        if constant || names_a_secret {
            return false;
        }
    }
    // `--secret=db-password`: the name of a secret in a store.
    if value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !value.chars().any(|c| c.is_ascii_digit())
        && key_kind(value).is_some()
    {
        return false;
    }
    // A dependency's version in a manifest, whose package name ends like a secret's
    // (`"@solana/spl-token": "^0.4.6"`, `spl-token = "4.0"`, `"auth-token": "workspace:*"`).
    if is_version(value)
        || [
            "workspace:",
            "file:",
            "link:",
            "npm:",
            "portal:",
            "catalog:",
        ]
        .iter()
        .any(|protocol| lower.starts_with(protocol))
    {
        return false;
    }
    // Placeholders of documentation and examples.
    const PLACEHOLDERS: [&str; 12] = [
        "your",
        "example",
        "placeholder",
        "changeme",
        "redacted",
        "xxxx",
        "****",
        "<",
        ">",
        "dummy",
        "replace",
        "...",
    ];
    if PLACEHOLDERS
        .iter()
        .any(|placeholder| lower.contains(placeholder))
    {
        return false;
    }
    // Types in annotations (`password: str`, `token: string`) and empty values.
    !matches!(
        lower.as_str(),
        "none"
            | "null"
            | "true"
            | "false"
            | "undefined"
            | "nil"
            | "str"
            | "string"
            | "int"
            | "bool"
            | "bytes"
            | "number"
            | "any"
            | "object"
            | "secretstr"
            | "text"
            | "optional"
            | "required"
            | "char"
            | "varchar"
            | "self"
            | "password"
            | "token"
            | "secret"
            // A dependency's release channel: `"x-token": "latest"`.
            | "latest"
            | "next"
            | "canary"
            | "beta"
            | "alpha"
            | "nightly"
            | "stable"
    )
}

/// A version or a version requirement: `1.2.3`, `^0.4.6`, `~1.2`, `>=2.0.0`, `v1.x`,
/// `1.0.0-beta.1`. At least two numbered parts, so a password of digits alone stays one.
fn is_version(value: &str) -> bool {
    let core = value.trim_start_matches(['^', '~', '<', '>', '=', 'v']);
    let (core, label) = match core.split_once(['-', '+']) {
        Some((core, label)) => (core, Some(label)),
        None => (core, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    let numbered = parts
        .first()
        .is_some_and(|first| !first.is_empty() && first.bytes().all(|byte| byte.is_ascii_digit()));
    numbered
        && parts.len() >= 2
        && parts.iter().all(|part| {
            matches!(*part, "x" | "X" | "*")
                || (!part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit()))
        })
        && label.is_none_or(|label| {
            label.len() <= 24
                && label
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'-' | b'+'))
        })
}

/// A name a person wrote (`settings`, `anthropic_api_key`, `SECRET_KEY`, `apiKey`), not
/// a token that happens to use identifier characters (base64 parts of a JWT): few digits
/// and few case changes.
fn looks_like_name(part: &str) -> bool {
    let digits = part.chars().filter(char::is_ascii_digit).count();
    let bytes = part.as_bytes();
    let case_changes = bytes
        .windows(2)
        .filter(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase())
        .count();
    digits <= 2 && case_changes <= 3 && part.len() <= 48
}

/// `name` or `a.b.c` of identifier characters.
fn is_identifier_path(value: &str) -> bool {
    value.split('.').all(|part| {
        let mut chars = part.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Whether a value after `name:` is the first word of a sentence that says where or how a
/// secret is kept (`Token: stored in .mcp.json`, `API key: provided by the user`), not the
/// secret. Notes and memories an agent writes describe secrets this way all the time.
///
/// It takes all of: the `:` form of prose (never `=` or a command-line option, where a
/// word followed by more words is a value and an argument); a value of letters only; a
/// value that is a past participle (`stored`, `kept`) or a word that introduces a place or
/// a source (`in`, `from`, `see`); and more words after it on the same line. A letters-only
/// password followed by a comment (`password: letmein # prod`) or alone on its line stays
/// secret.
pub fn is_prose(separator: &str, value: &str, rest: &str) -> bool {
    const INTRODUCERS: [&str; 14] = [
        "in", "from", "see", "via", "kept", "set", "read", "held", "put", "not", "never", "use",
        "ask", "lives",
    ];
    if !separator.contains(':') || separator.contains('=') {
        return false;
    }
    if value.len() < 2 || !value.bytes().all(|byte| byte.is_ascii_alphabetic()) {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    let participle = lower.len() > 4 && lower.ends_with("ed");
    if !participle && !INTRODUCERS.contains(&lower.as_str()) {
        return false;
    }
    let line = rest.split(['\n', '\r']).next().unwrap_or("");
    let mut words = line.split([' ', '\t']).filter(|word| !word.is_empty());
    line.starts_with([' ', '\t'])
        && words
            .next()
            .is_some_and(|word| word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '.'))
}
