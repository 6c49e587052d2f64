//! The `domain` matcher (DESIGN.md §4.1): host globs for URL arguments.
//!
//! The host is taken the way a browser or an HTTP client would take it — WHATWG URL
//! parsing through the `url` crate — because the attacker's trick is always a URL that a
//! naive reader sees one way and the client another: `http://acme.test@evil.test/`
//! (userinfo), `http://evil.test/acme.test` (path), `http:\\evil.test` (backslashes),
//! `http://ACME.test.` (case, trailing dot), `bücher.test` (Unicode). Hosts and patterns
//! are both brought to the same form (lower-case ASCII, punycode, no trailing dot,
//! canonical IP text) and then compared label by label, so a pattern can only ever match
//! whole labels: `*.acme.test` never matches `evilacme.test`.

use url::{Host, Url};

use super::Side;

/// One compiled host glob such as `acme.test`, `*.acme.test` or `api.*.acme.test`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainPattern {
    /// The normalised pattern text (`*.xn--bcher-kva.test`).
    normalized: String,
    /// The labels, left to right.
    labels: Vec<Label>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Label {
    /// `*`: one or more whole labels.
    Any,
    /// A literal label, normalised.
    Exact(String),
}

impl DomainPattern {
    /// Compiles a host glob. The pattern must be a bare host: no scheme, userinfo, port,
    /// path, query or fragment (those would silently never match, so they are load errors),
    /// no empty label, and `*` only as a whole label.
    pub fn compile(pattern: &str) -> Result<DomainPattern, String> {
        if pattern.is_empty() {
            return Err("empty domain pattern".to_string());
        }
        if pattern.contains("://") {
            return Err(format!(
                "domain pattern {pattern:?} has a scheme: write the host only, such as \"acme.test\""
            ));
        }
        if pattern.chars().any(|c| matches!(c, '/' | '\\' | '?' | '#')) {
            return Err(format!(
                "domain pattern {pattern:?} has a path, query or fragment: write the host only"
            ));
        }
        if pattern.contains('@') {
            return Err(format!(
                "domain pattern {pattern:?} has user info: write the host only"
            ));
        }
        if pattern.chars().any(char::is_whitespace) {
            return Err(format!("domain pattern {pattern:?} contains whitespace"));
        }
        // A colon outside IPv6 brackets introduces a port; ports are ignored when matching,
        // so a pattern with one would mislead its reader.
        // (An unclosed `[` is left to the host parser, which names the real problem.)
        let outside_brackets = match pattern.strip_prefix('[') {
            Some(bracketed) => bracketed.split_once(']').map_or("", |(_, after)| after),
            None => pattern,
        };
        if outside_brackets.contains(':') {
            return Err(format!(
                "domain pattern {pattern:?} has a port: ports are not matched, write the host only"
            ));
        }
        let host = Host::parse(pattern)
            .map_err(|error| format!("invalid domain pattern {pattern:?}: {error}"))?;
        let normalized = host_text(host);
        let mut labels = Vec::new();
        for label in normalized.split('.') {
            labels.push(match label {
                "" => {
                    return Err(format!("domain pattern {pattern:?} has an empty label"));
                }
                "*" => Label::Any,
                label if label.contains('*') => {
                    return Err(format!(
                        "domain pattern {pattern:?}: `*` must be a whole label, as in \"*.acme.test\""
                    ));
                }
                label => Label::Exact(label.to_string()),
            });
        }
        Ok(DomainPattern { normalized, labels })
    }

    /// The pattern as it is matched (lower-case, punycode, no trailing dot).
    pub fn as_str(&self) -> &str {
        &self.normalized
    }

    /// Whether a host already normalised by [`host_of`] matches.
    pub fn is_match(&self, host: &str) -> bool {
        let host: Vec<&str> = host.split('.').collect();
        // Dynamic programming over (pattern label, host label), built from the right:
        // `rest[j]` says whether the labels after the current pattern label match
        // `host[j..]`. Quadratic at worst, never exponential, whatever the stars.
        let mut rest = vec![false; host.len() + 1];
        rest[host.len()] = true;
        for label in self.labels.iter().rev() {
            // `here[host.len()]` stays false: every pattern label needs at least one host label.
            let mut here = vec![false; host.len() + 1];
            for j in (0..host.len()).rev() {
                here[j] = match label {
                    Label::Exact(exact) => exact == host[j] && rest[j + 1],
                    // `*` takes host[j] and then either stops or takes more labels.
                    Label::Any => rest[j + 1] || here[j + 1],
                };
            }
            rest = here;
        }
        rest[0]
    }
}

/// The host a URL-ish `value` points at, normalised for matching: lower-case ASCII
/// (punycode), no trailing dot, IPv4 in dotted decimal, IPv6 in brackets. `None` when
/// there is no host.
///
/// `value` is parsed as a WHATWG URL, exactly as browsers and most HTTP clients do, so the
/// host here is the host a request would go to. A value without `://` that does not parse
/// to a URL with a host (`acme.test/x`, `acme.test:8080`, `127.0.0.1`) is read as if it
/// had been written `http://` + value, since that is how people write hosts in arguments.
pub fn host_of(value: &str) -> Option<String> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let with_scheme = || Url::parse(&format!("http://{value}")).ok();
    let url = match Url::parse(value) {
        // `https:evil.test` and `http:\\evil.test` have a host without `://`.
        Ok(url) if url.host().is_some() => url,
        // `acme.test:8080` parses as scheme `acme.test`; `mailto:` has no host either.
        Ok(_) if !value.contains("://") => with_scheme()?,
        // A value with `://` that parses but has no host (`file:///etc/passwd`) has none.
        Ok(_) => return None,
        // `acme.test/?next=http://x` is not a URL with a scheme at all.
        Err(url::ParseError::RelativeUrlWithoutBase) => with_scheme()?,
        Err(_) => return None,
    };
    // For non-special schemes (`ssh://`, `git://`) the URL holds an opaque, percent-encoded
    // host; parsing it again as a host normalises it like an `http` host. For `http(s)` it
    // changes nothing.
    let host = Host::parse(url.host_str()?).ok()?;
    Some(host_text(host))
}

/// The canonical text of a parsed host, without a trailing dot.
fn host_text(host: Host) -> String {
    match host {
        Host::Domain(domain) => match domain.strip_suffix('.') {
            Some(stripped) => stripped.to_string(),
            None => domain,
        },
        Host::Ipv4(address) => address.to_string(),
        // `[::ffff:169.254.169.254]` reaches the IPv4 address it maps: it is that host.
        Host::Ipv6(address) => match address.to_ipv4_mapped() {
            Some(mapped) => mapped.to_string(),
            None => format!("[{address}]"),
        },
    }
}

/// Whether the host of `value` matches any of `patterns`. Userinfo, port, path, query and
/// fragment play no part. A value without a host never satisfies an allow rule and always
/// satisfies a deny or ask rule (fail closed, see [`Side`]).
pub fn domain_matches(value: &str, patterns: &[DomainPattern], side: Side) -> bool {
    match host_of(value) {
        Some(host) => patterns.iter().any(|pattern| pattern.is_match(&host)),
        None => side == Side::Restrict,
    }
}

#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// Each case: (value, expected match) against `patterns` on `side`.
    #[track_caller]
    fn check(patterns: &[&str], side: Side, cases: &[(&str, bool)]) {
        let compiled: Vec<DomainPattern> = patterns
            .iter()
            .map(|pattern| DomainPattern::compile(pattern))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|error| panic!("{error}"));
        let failures: Vec<String> = cases
            .iter()
            .filter(|(value, expected)| domain_matches(value, &compiled, side) != *expected)
            .map(|(value, expected)| {
                format!(
                    "{side:?} {patterns:?} on {value:?} (host {:?}): expected {expected}",
                    host_of(value)
                )
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn host_of_reads_urls_as_clients_do() {
        let cases: &[(&str, Option<&str>)] = &[
            ("https://acme.test/x", Some("acme.test")),
            ("https://ACME.Test./x", Some("acme.test")),
            ("acme.test", Some("acme.test")),
            ("acme.test/x?y=1", Some("acme.test")),
            ("acme.test:8080/x", Some("acme.test")),
            ("localhost:3000", Some("localhost")),
            ("http://acme.test@evil.test/", Some("evil.test")),
            ("http://user:pw@acme.test:8443/", Some("acme.test")),
            ("http://evil.test/acme.test", Some("evil.test")),
            ("http://evil.test\\@acme.test/", Some("evil.test")),
            ("http:\\\\evil.test\\x", Some("evil.test")),
            ("https:evil.test", Some("evil.test")),
            ("//evil.test/x", Some("evil.test")),
            ("http://acme.test%2eevil.test/", Some("acme.test.evil.test")),
            ("https://bücher.test/", Some("xn--bcher-kva.test")),
            ("https://xn--bcher-kva.test/", Some("xn--bcher-kva.test")),
            ("https://acme。test/", Some("acme.test")),
            ("ssh://git@Bücher.test:22/repo", Some("xn--bcher-kva.test")),
            ("http://127.0.0.1:8080/", Some("127.0.0.1")),
            ("http://0x7f.1/", Some("127.0.0.1")),
            ("http://[::ffff:169.254.169.254]/", Some("169.254.169.254")),
            ("http://[::ffff:a9fe:a9fe]/x", Some("169.254.169.254")),
            ("http://[::1]/", Some("[::1]")),
            ("127.0.0.1", Some("127.0.0.1")),
            ("http://[::1]:8080/", Some("[::1]")),
            ("acme.test/?next=http://evil.test", Some("acme.test")),
            ("mailto:bob@acme.test", Some("acme.test")),
            ("file:///etc/passwd", None),
            ("http://", None),
            ("", None),
            ("   ", None),
            ("http://exa mple.test/", None),
        ];
        let failures: Vec<String> = cases
            .iter()
            .filter(|(value, expected)| host_of(value).as_deref() != *expected)
            .map(|(value, expected)| {
                format!(
                    "host_of({value:?}) = {:?}, expected {expected:?}",
                    host_of(value)
                )
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn exact_pattern_matches_only_that_host() {
        check(
            &["acme.test"],
            Side::Allow,
            &[
                ("https://acme.test", true),
                ("https://acme.test/", true),
                ("acme.test", true),
                ("ACME.TEST", true),
                ("https://acme.test.:443/x", true),
                ("https://bob:secret@acme.test:8443/x?y#z", true),
                ("http://acme.test@evil.test/", false),
                ("http://evil.test/acme.test", false),
                ("http://evil.test?acme.test", false),
                ("http://acme.test.evil.test/", false),
                ("http://acme.test%2eevil.test/", false),
                ("http://evilacme.test/", false),
                ("http://a.acme.test/", false),
                ("http:\\\\evil.test\\acme.test", false),
                ("file:///acme.test", false),
                ("", false),
            ],
        );
    }

    #[test]
    fn star_matches_one_or_more_whole_labels() {
        check(
            &["*.acme.test"],
            Side::Allow,
            &[
                ("https://a.acme.test/", true),
                ("https://a.b.acme.test/", true),
                ("https://acme.test/", false),
                ("https://evilacme.test/", false),
                ("https://a.acme.test.evil.test/", false),
                ("https://acme.test.a/", false),
            ],
        );
        check(
            &["api.*.acme.test"],
            Side::Allow,
            &[
                ("https://api.eu.acme.test/", true),
                ("https://api.eu.west.acme.test/", true),
                ("https://api.acme.test/", false),
                ("https://x.api.eu.acme.test/", false),
            ],
        );
        check(
            &["*"],
            Side::Allow,
            &[
                ("https://anything.test/", true),
                ("http://10.0.0.1/", true),
                ("file:///x", false),
            ],
        );
    }

    #[test]
    fn unicode_and_punycode_are_the_same_host() {
        for pattern in ["bücher.test", "xn--bcher-kva.test", "BÜCHER.test."] {
            check(
                &[pattern],
                Side::Allow,
                &[
                    ("https://bücher.test/", true),
                    ("https://xn--bcher-kva.test/", true),
                    ("https://BÜCHER.TEST/", true),
                    ("https://bucher.test/", false),
                ],
            );
        }
        assert_eq!(
            DomainPattern::compile("*.Bücher.test")
                .map(|p| p.as_str().to_string())
                .as_deref(),
            Ok("*.xn--bcher-kva.test")
        );
    }

    #[test]
    fn ip_patterns() {
        check(
            &["127.0.0.1", "[::1]"],
            Side::Allow,
            &[
                ("http://127.0.0.1/", true),
                ("http://127.1:8080/", true),
                ("http://2130706433/", true),
                ("http://[::1]/", true),
                ("http://[0:0::1]:80/", true),
                ("http://127.0.0.2/", false),
                ("http://localhost/", false),
            ],
        );
    }

    #[test]
    fn restrict_matches_hostless_values() {
        check(
            &["evil.test", "*.evil.test"],
            Side::Restrict,
            &[
                ("https://evil.test/", true),
                ("http://acme.test@evil.test/", true),
                ("https://a.b.evil.test:8080/", true),
                ("https://acme.test/evil.test", false),
                ("https://notevil.test/", false),
                // No host: unknowable, so a deny or ask rule holds.
                ("file:///etc/passwd", true),
                ("http://", true),
                ("", true),
            ],
        );
        check(
            &[],
            Side::Restrict,
            &[("https://evil.test/", false), ("", true)],
        );
    }

    #[test]
    fn bad_patterns_are_rejected_with_a_reason() {
        let cases: &[(&str, &str)] = &[
            ("", "empty"),
            ("https://acme.test", "scheme"),
            ("acme.test/x", "path"),
            ("acme.test?x", "path"),
            ("bob@acme.test", "user info"),
            ("acme.test:443", "port"),
            ("[::1]:443", "port"),
            ("acme..test", "empty label"),
            (".acme.test", "empty label"),
            ("a*b.test", "whole label"),
            ("*acme.test", "whole label"),
            ("acme .test", "whitespace"),
            ("[::1", "invalid"),
        ];
        for (pattern, reason) in cases {
            match DomainPattern::compile(pattern) {
                Ok(compiled) => panic!("{pattern:?} should be rejected, compiled to {compiled:?}"),
                Err(message) => assert!(
                    message.contains(reason),
                    "{pattern:?}: {message:?} should mention {reason:?}"
                ),
            }
        }
    }
}
