//! Unit tests of secret detection and redaction.

use super::*;
use serde_json::json;

// Fixtures are assembled from pieces so that this file does not itself look like it
// leaks credentials to scanners run over the repository.
fn fake(prefix: &str, body: &str, length: usize) -> String {
    let mut value = prefix.to_owned();
    while value.len() < prefix.len() + length {
        value.push_str(body);
    }
    value.truncate(prefix.len() + length);
    value
}

fn jwt() -> String {
    format!(
        "{}.{}.{}",
        "eyJhbGciOiJIUzI1NiJ9",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    )
}

fn kinds(value: &Value) -> Vec<String> {
    scan(value)
        .into_iter()
        .map(|finding| finding.kind)
        .collect()
}

/// One check for every case: the finding, the redaction, and that redaction is final.
fn check(arguments: Value, expected_findings: &[(&str, &str)], expected_redacted: Value) {
    let findings: Vec<(String, String)> = scan(&arguments)
        .into_iter()
        .map(|finding| (finding.kind, finding.path))
        .collect();
    let expected: Vec<(String, String)> = expected_findings
        .iter()
        .map(|(kind, path)| ((*kind).to_owned(), (*path).to_owned()))
        .collect();
    assert_eq!(findings, expected, "findings for {arguments}");
    let redacted = redact(&arguments);
    assert_eq!(redacted, expected_redacted, "redaction of {arguments}");
    assert!(
        scan(&redacted).is_empty(),
        "redacted value still scans dirty: {redacted}"
    );
    assert_eq!(
        redact(&redacted),
        redacted,
        "redaction is not idempotent: {redacted}"
    );
}

#[test]
fn patterns_compile() {
    for pattern in PATTERNS {
        assert!(
            Regex::new(pattern.source).is_ok(),
            "pattern for {} fails",
            pattern.kind
        );
    }
    assert!(COMPILED.is_some());
}

/// Secrets found inside text: (text, kind, redacted text).
#[test]
fn text_positives() {
    let aws = fake("AKIA", "IOSFODNN7EXAMPLE", 16);
    let asia = fake("ASIA", "Z2X3C4V5B6N7M8Q9", 16);
    let aws_secret = fake("", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY", 40);
    let ghp = fake("ghp_", "a1B2c3D4e5F6g7H8i9J0", 36);
    let ghs = fake("ghs_", "Zy9Xw8Vu7Ts6", 36);
    let github_pat = fake("github_pat_", "11ABCDEFG0_abc123", 82);
    let glpat = fake("glpat-", "xY7_zW6-", 20);
    let xoxb = fake("xoxb-", "1234567890-", 40);
    let xoxp = fake("xoxp-", "98765-abcde-", 50);
    let sk = fake("sk-", "T3BlbkFJ4x9Z", 48);
    let sk_proj = fake("sk-proj-", "Ab3_De6-Gh9", 100);
    let sk_ant = fake("sk-ant-api03-", "q1W2e3R4t5Y6", 95);
    let jwt = jwt();
    let hook_path = "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX";
    let pem_body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7";
    let pem = format!("-----BEGIN PRIVATE KEY-----\n{pem_body}\n-----END PRIVATE KEY-----");
    let rsa = format!("-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----");
    let cases: Vec<(String, &str, String)> = vec![
        (
            format!("key {aws} here"),
            "aws_access_key",
            "key [REDACTED:aws_access_key] here".into(),
        ),
        (
            asia.clone(),
            "aws_access_key",
            "[REDACTED:aws_access_key]".into(),
        ),
        (
            format!("export AWS_SECRET_ACCESS_KEY={aws_secret}"),
            "aws_secret_key",
            "export AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]".into(),
        ),
        (
            format!("aws_secret_access_key: {aws_secret}"),
            "aws_secret_key",
            "aws_secret_access_key: [REDACTED:aws_secret_key]".into(),
        ),
        (
            format!("git push https://x@y {ghp}"),
            "github_token",
            "git push https://x@y [REDACTED:github_token]".into(),
        ),
        (
            ghs.clone(),
            "github_token",
            "[REDACTED:github_token]".into(),
        ),
        (
            format!("token {github_pat}."),
            "github_token",
            "token [REDACTED:github_token].".into(),
        ),
        (
            format!("PRIVATE-TOKEN {glpat}"),
            "gitlab_token",
            "PRIVATE-TOKEN [REDACTED:gitlab_token]".into(),
        ),
        (
            format!("slack {xoxb}"),
            "slack_token",
            "slack [REDACTED:slack_token]".into(),
        ),
        (xoxp.clone(), "slack_token", "[REDACTED:slack_token]".into()),
        (
            format!("curl -X POST https://hooks.slack.com/services/{hook_path} -d x"),
            "slack_token",
            "curl -X POST https://hooks.slack.com/services/[REDACTED:slack_token] -d x".into(),
        ),
        (
            format!("OPENAI {sk}"),
            "api_key",
            "OPENAI [REDACTED:api_key]".into(),
        ),
        (sk_proj.clone(), "api_key", "[REDACTED:api_key]".into()),
        (
            format!("use {sk_ant} now"),
            "api_key",
            "use [REDACTED:api_key] now".into(),
        ),
        (
            format!("token={jwt}&x=1"),
            "jwt",
            "token=[REDACTED:jwt]&x=1".into(),
        ),
        (format!("id {jwt}"), "jwt", "id [REDACTED:jwt]".into()),
        (
            format!("before\n{pem}\nafter"),
            "private_key",
            "before\n[REDACTED:private_key]\nafter".into(),
        ),
        (rsa.clone(), "private_key", "[REDACTED:private_key]".into()),
        (
            format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{pem_body}"),
            "private_key",
            "[REDACTED:private_key]".into(),
        ),
        (
            "https://bob:hunter2@host/".into(),
            "url_password",
            "https://bob:[REDACTED:url_password]@host/".into(),
        ),
        (
            "psql postgres://app:s3cr3t@db.internal:5432/prod".into(),
            "url_password",
            "psql postgres://app:[REDACTED:url_password]@db.internal:5432/prod".into(),
        ),
        (
            "https://:p@ss@host".into(),
            "url_password",
            "https://:[REDACTED:url_password]@host".into(),
        ),
        (
            "curl -H \"Authorization: Bearer abc123def456\" https://api.test".into(),
            "authorization_header",
            "curl -H \"Authorization: [REDACTED:authorization_header]\" https://api.test".into(),
        ),
        (
            "Proxy-Authorization: Basic dXNlcjpwYXNz".into(),
            "authorization_header",
            "Proxy-Authorization: [REDACTED:authorization_header]".into(),
        ),
        (
            "authorization: 0123456789abcdef0123".into(),
            "authorization_header",
            "authorization: [REDACTED:authorization_header]".into(),
        ),
        (
            "{\"Authorization\": \"token abcdef\"}".into(),
            "authorization_header",
            "{\"Authorization\": \"[REDACTED:authorization_header]\"}".into(),
        ),
        (
            "bearer: Bearer Zm9vYmFyYmF6cXV4MTIz".into(),
            "authorization_header",
            "bearer: Bearer [REDACTED:authorization_header]".into(),
        ),
        (
            "curl -H 'Cookie: session=abc123; theme=dark' x".into(),
            "cookie",
            "curl -H 'Cookie: [REDACTED:cookie]' x".into(),
        ),
        (
            "Set-Cookie: sid=31d4d96e407aad42; Secure".into(),
            "cookie",
            "Set-Cookie: [REDACTED:cookie]".into(),
        ),
        (
            "mysql --password=hunter2 -u root".into(),
            "secret_field",
            "mysql --password=[REDACTED:secret_field] -u root".into(),
        ),
        (
            "DB_PASSWORD=hunter2 ./run".into(),
            "secret_field",
            "DB_PASSWORD=[REDACTED:secret_field] ./run".into(),
        ),
        (
            "GET /x?access_token=abc&page=2".into(),
            "secret_field",
            "GET /x?access_token=[REDACTED:secret_field]&page=2".into(),
        ),
        (
            "{\"user\":\"bob\",\"apiKey\":\"k-42\"}".into(),
            "secret_field",
            "{\"user\":\"bob\",\"apiKey\":\"[REDACTED:secret_field]\"}".into(),
        ),
        (
            "-d \"{\\\"password\\\": \\\"hunter2\\\"}\"".into(),
            "secret_field",
            "-d \"{\\\"password\\\": \\\"[REDACTED:secret_field]\\\"}\"".into(),
        ),
    ];
    for (text, kind, expected) in cases {
        assert_eq!(redact_text(&text), expected, "redacting {text:?}");
        let found = kinds(&json!(text));
        assert!(
            found.contains(&kind.to_owned()),
            "{kind} not found in {text:?}: {found:?}"
        );
        assert!(
            secret_spans(&redact_text(&text)).is_empty(),
            "{text:?} redacts to a secret"
        );
    }
}

/// Look-alikes and prose that must not be taken for secrets.
#[test]
fn text_negatives() {
    let cases = [
        "Please reset your password before Monday.",
        "The token count is 512 and max_tokens=1024.",
        "token_count=12 tokenizer=bpe sort_key=name secretary_name=Ann",
        "Authorization: pending review by legal",
        "Cookie: chocolate chip, two of them",
        "the secret ingredient is love",
        "pip install sk-learn-compatible-estimators-are-fine",
        "task-1234567890abcdefghijklmnop risk-0123456789abcdefghijkl",
        "ghp_short gho_ ghs_tooshort",
        "akiaiosfodnn7example AKIA123",
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        "http://host:8080/path?q=1 ssh://git@github.com/org/repo.git https://user@host/",
        "mailto:bob@acme.test and bob:pass@host without scheme",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----",
        "eyJ is how base64 JSON starts; a.b.c is not a token",
        "xoxb- is a slack prefix",
        "the bearer of bad news",
        "PWD=/home/bob ls",
        "password= (empty)",
        "[REDACTED:jwt] and https://bob:[REDACTED:url_password]@host/",
        "Grüße, café ☕ — nothing secret here",
    ];
    for text in cases {
        assert_eq!(redact_text(text), text, "redacted {text:?}");
        assert!(scan(&json!(text)).is_empty(), "found secrets in {text:?}");
    }
}

#[test]
fn key_names() {
    let secret = [
        ("password", "secret_field"),
        ("db_password", "secret_field"),
        ("DBPassword2", "secret_field"),
        ("passwd", "secret_field"),
        ("pwd", "secret_field"),
        ("apiKey", "secret_field"),
        ("api_key", "secret_field"),
        ("apikey", "secret_field"),
        ("X-Api-Key", "secret_field"),
        ("APIKey", "secret_field"),
        ("refresh_token", "secret_field"),
        ("x-auth-token", "secret_field"),
        ("GITHUB_TOKEN", "secret_field"),
        ("client_secret", "secret_field"),
        ("clientSecret", "secret_field"),
        ("secret", "secret_field"),
        ("secret_key", "secret_field"),
        ("access_key", "secret_field"),
        ("private_key", "secret_field"),
        ("credentials", "secret_field"),
        ("gcp.credentials", "secret_field"),
        ("passphrase", "secret_field"),
        ("aws_secret_access_key", "aws_secret_key"),
        ("AWS_SECRET_ACCESS_KEY", "aws_secret_key"),
        ("awsSecretAccessKey", "aws_secret_key"),
        ("aws_secret_key", "aws_secret_key"),
        ("Authorization", "authorization_header"),
        ("proxy-authorization", "authorization_header"),
        ("Proxy_Authorization", "authorization_header"),
        ("Cookie", "cookie"),
        ("Set-Cookie", "cookie"),
    ];
    for (key, kind) in secret {
        assert_eq!(key_kind(key), Some(kind), "key {key}");
    }
    let ordinary = [
        "max_tokens",
        "token_count",
        "tokenizer",
        "secretary_name",
        "tokens",
        "sort_key",
        "key",
        "keys",
        "monkey",
        "passenger",
        "password_hint_url",
        "author",
        "authority",
        "auth_method",
        "cookie_policy",
        "PWD",
        "OLDPWD",
        "primary_key",
        "command",
        "",
    ];
    for key in ordinary {
        assert_eq!(key_kind(key), None, "key {key}");
    }
}

#[test]
fn split_key_components() {
    let table = [
        ("X-Api-Key", vec!["x", "api", "key"]),
        ("DBPassword2", vec!["db", "password"]),
        ("apiKEY", vec!["api", "key"]),
        ("oauth2Token", vec!["oauth", "token"]),
        ("a..b__c", vec!["a", "b", "c"]),
    ];
    for (key, expected) in table {
        assert_eq!(split_key(key), expected, "key {key}");
    }
}

#[test]
fn secret_keys_redact_whole_values() {
    check(
        json!({"user": "bob", "password": "hunter2", "db_password": "", "token": null}),
        &[("secret_field", "password")],
        json!({"user": "bob", "password": "[REDACTED:secret_field]", "db_password": "", "token": null}),
    );
    check(
        json!({"pin_secret": 1234, "rotate_token": true, "max_tokens": 100}),
        &[("secret_field", "pin_secret")],
        json!({"pin_secret": "[REDACTED:secret_field]", "rotate_token": true, "max_tokens": 100}),
    );
    check(
        json!({"headers": {"Authorization": "Bearer x", "Accept": "text/html", "Cookie": "a=b"}}),
        &[
            ("authorization_header", "headers.Authorization"),
            ("cookie", "headers.Cookie"),
        ],
        json!({"headers": {"Authorization": "[REDACTED:authorization_header]", "Accept": "text/html", "Cookie": "[REDACTED:cookie]"}}),
    );
    check(
        json!({"credentials": {"user": "bob", "pass": "x", "port": 5432, "tls": true}}),
        &[("secret_field", "credentials")],
        json!({"credentials": {"user": "[REDACTED:secret_field]", "pass": "[REDACTED:secret_field]", "port": "[REDACTED:secret_field]", "tls": true}}),
    );
    check(
        json!({"env": {"AWS_SECRET_ACCESS_KEY": "abc", "PWD": "/home/bob", "HOME": "/home/bob"}}),
        &[("aws_secret_key", "env.AWS_SECRET_ACCESS_KEY")],
        json!({"env": {"AWS_SECRET_ACCESS_KEY": "[REDACTED:aws_secret_key]", "PWD": "/home/bob", "HOME": "/home/bob"}}),
    );
    check(
        json!({"tokens": ["a", "b"], "token": ["a", ""]}),
        &[("secret_field", "token")],
        json!({"tokens": ["a", "b"], "token": ["[REDACTED:secret_field]", ""]}),
    );
    // An object key that is secret material is found and redacted, and never shown in a
    // finding's path (G9).
    let aws = fake("AKIA", "QWERTYUIOP123456", 16);
    check(
        json!({aws: "value"}),
        &[("aws_access_key", "[REDACTED:aws_access_key]")],
        json!({"[REDACTED:aws_access_key]": "value"}),
    );
}

#[test]
fn patterns_in_values_keep_the_rest() {
    let aws = fake("AKIA", "IOSFODNN7EXAMPLE", 16);
    check(
        json!({"items": [{"key": "ok"}, {"key": aws}]}),
        &[("aws_access_key", "items.1.key")],
        json!({"items": [{"key": "ok"}, {"key": "[REDACTED:aws_access_key]"}]}),
    );
    check(
        json!({"command": "curl -H \"Authorization: Bearer abc123def456\" x", "n": 3}),
        &[("authorization_header", "command")],
        json!({"command": "curl -H \"Authorization: [REDACTED:authorization_header]\" x", "n": 3}),
    );
    check(
        json!({"url": "https://bob:hunter2@host/"}),
        &[("url_password", "url")],
        json!({"url": "https://bob:[REDACTED:url_password]@host/"}),
    );
    check(
        json!("https://bob:hunter2@host/"),
        &[("url_password", "")],
        json!("https://bob:[REDACTED:url_password]@host/"),
    );
    check(
        json!([[format!("x {aws} y {aws}")]]),
        &[("aws_access_key", "0.0")],
        json!([["x [REDACTED:aws_access_key] y [REDACTED:aws_access_key]"]]),
    );
}

#[test]
fn overlapping_secrets_make_one_marker_and_every_kind_is_reported() {
    let text = format!("Authorization: Bearer {}", jwt());
    assert_eq!(
        redact_text(&text),
        "Authorization: [REDACTED:authorization_header]"
    );
    let mut found = kinds(&json!({ "cmd": text }));
    found.sort();
    assert_eq!(found, ["authorization_header", "jwt"]);
}

#[test]
fn nothing_secret_is_unchanged() {
    check(
        json!({"to": "bob@acme.test", "subject": "Hi", "n": 1.5, "ok": false, "x": null, "list": [1, "two"]}),
        &[],
        json!({"to": "bob@acme.test", "subject": "Hi", "n": 1.5, "ok": false, "x": null, "list": [1, "two"]}),
    );
    check(json!(""), &[], json!(""));
    check(json!(42), &[], json!(42));
}

/// A secret dressed up as a redaction marker is still a secret.
#[test]
fn marker_look_alikes_do_not_hide_secrets() {
    let sk = fake("sk-proj-", "Ab3_De6-Gh9", 60);
    let aws = fake("AKIA", "IOSFODNN7EXAMPLE", 16);
    check(
        json!({"a": format!("[REDACTED:{sk}]"), "b": format!("[REDACTED:x {aws}]")}),
        &[("api_key", "a"), ("aws_access_key", "b")],
        json!({"a": "[REDACTED:[REDACTED:api_key]]", "b": "[REDACTED:x [REDACTED:aws_access_key]]"}),
    );
    check(
        json!({"password": "[REDACTED:Hunter2]", "url": "https://bob:[REDACTED:url_password]hunter2@host/"}),
        &[("secret_field", "password"), ("url_password", "url")],
        json!({"password": "[REDACTED:secret_field]", "url": "https://bob:[REDACTED:url_password]@host/"}),
    );
    assert!(is_marker("[REDACTED:aws_access_key]"));
    for text in [
        "[REDACTED:]",
        "[REDACTED:a b]",
        "[REDACTED:x]]",
        "[REDACTED:X]",
        "REDACTED:x]",
    ] {
        assert!(!is_marker(text), "{text:?}");
    }
}

#[test]
fn merge_spans() {
    let span = |start, end, kind| Span { start, end, kind };
    assert_eq!(
        merge(vec![
            span(5, 9, "b"),
            span(0, 3, "a"),
            span(2, 4, "c"),
            span(5, 12, "d")
        ]),
        vec![span(0, 4, "a"), span(5, 12, "d")]
    );
}

/// The service-specific kinds added with the security harness (issue 10): each is found,
/// named, and gone from the redacted text; look-alikes are left alone.
#[test]
fn service_token_kinds() {
    let hex64 = fake("", "0123456789abcdef", 64);
    let azure = fake(
        "",
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1",
        88,
    );
    let sendgrid = format!(
        "{}.{}",
        fake("SG.", "ngeVfQFYQlKU0u", 22),
        fake("", "TTgCm0-xU9eKz9oP", 43)
    );
    // (text before the secret, the secret, its kind)
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "",
            fake("sk_live_", "4eC39HqLyjWDarjtT1zdp7dc", 24),
            "stripe_key",
        ),
        ("", fake("rk_test_", "51H8xYzAbCdEf", 30), "stripe_key"),
        (
            "",
            fake("whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLYR", 32),
            "stripe_key",
        ),
        (
            "",
            fake("AIza", "SyD-9tSrke72PouQMnMX7a7eZSW0jkFMBWY", 35),
            "google_api_key",
        ),
        (
            "",
            fake("ya29.", "a0AfH6SMBx-3jT9", 60),
            "google_oauth_token",
        ),
        (
            "Protocol=https;AccountName=acme;AccountKey=",
            azure,
            "azure_key",
        ),
        (
            "https://acme.blob.core.windows.net/c?sv=2022&sig=",
            fake("", "a%2Bb9Qz7Kx", 44),
            "azure_key",
        ),
        ("", fake("npm_", "Xy7Ab3Cd9Ef1Gh5Ij", 36), "npm_token"),
        ("", fake("pypi-AgE", "IcHlwaS5vcmcCJDk5", 120), "pypi_token"),
        (
            "",
            fake("hf_", "AbCdEfGhIjKlMnOpQrSt", 34),
            "huggingface_token",
        ),
        ("", sendgrid, "sendgrid_key"),
        ("", format!("dop_v1_{hex64}"), "service_token"),
        ("", fake("shpat_", "0123456789abcdef", 32), "service_token"),
        ("", fake("dckr_pat_", "Ab3-De6_Gh9", 27), "service_token"),
        ("", fake("lin_api_", "Zx9Yw8Vu7Ts6", 40), "service_token"),
    ];
    for (before, secret, kind) in &cases {
        let text = format!("use {before}{secret} now");
        // (`AccountKey=` is also a secret key name: both kinds are reported.)
        assert!(kinds(&json!(text)).contains(&(*kind).to_owned()), "{text}");
        let redacted = redact_text(&text);
        assert!(
            redacted.contains(&format!("[REDACTED:{kind}]")),
            "{redacted}"
        );
        assert!(
            redacted.starts_with("use ") && redacted.ends_with(" now"),
            "{redacted}"
        );
        // Nothing of the secret's distinctive tail survives.
        let tail = &secret[secret.len() - 12..];
        assert!(!redacted.contains(tail), "{redacted} keeps {tail}");
        assert!(scan(&json!(redacted)).is_empty(), "{redacted}");
    }
    for benign in [
        fake("pk_live_", "4eC39HqLyjWDarjtT1zdp7dc", 24),
        "AIzaShort".to_owned(),
        "hf_hub_download".to_owned(),
        "npm_config_cache".to_owned(),
        "SG.A.B".to_owned(),
        "https://acme.test/?sig=abc".to_owned(),
    ] {
        assert!(kinds(&json!(benign)).is_empty(), "{benign}");
    }
    assert_eq!(key_kind("AccountKey"), Some("secret_field"));
    assert_eq!(key_kind("signing_key"), Some("secret_field"));
    assert_eq!(key_kind("sort_key"), None);
}

/// Beside an access key id, an unlabelled 40-character AWS secret access key is redacted
/// too; without the key id, a 40-character word (a commit id) is left alone.
#[test]
fn an_unlabelled_aws_secret_beside_its_key_id() {
    let aws = fake("AKIA", "IOSFODNN7EXAMPLE", 16);
    let secret = fake("", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY", 40);
    let text = format!("{aws} {secret}");
    let redacted = redact_text(&text);
    assert_eq!(
        redacted,
        "[REDACTED:aws_access_key] [REDACTED:aws_secret_key]"
    );
    let commit = "0123456789abcdef0123456789abcdef01234567";
    assert_eq!(
        redact_text(&format!("commit {commit}")),
        format!("commit {commit}")
    );
}

/// A secret that is an object's key is found and redacted; the members stay distinct.
#[test]
fn a_secret_used_as_a_key() {
    let key = fake("sk-proj-", "Ab3dEf6hIj9kLm2nOp5qRs8t", 48);
    let other = fake("sk-proj-", "Zz3dEf6hIj9kLm2nOp5qRs8t", 48);
    let arguments =
        json!({ "to": "s@example.test", key.clone(): "as a key name", other.clone(): "another" });
    let findings = scan(&arguments);
    assert!(
        findings.iter().any(|found| found.kind == "api_key"),
        "{findings:?}"
    );
    let redacted = redact(&arguments);
    let text = redacted.to_string();
    assert!(!text.contains(&key) && !text.contains(&other), "{text}");
    assert_eq!(
        redacted.as_object().map(serde_json::Map::len),
        Some(3),
        "{text}"
    );
    assert!(scan(&redacted).is_empty(), "{redacted}");
}
