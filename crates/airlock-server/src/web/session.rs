//! Web sessions: the cookie a browser gets for a user token, and who it stands for.
//!
//! Signing in exchanges a user token for a random cookie value (`alw_` + 64 hex). The
//! store keeps only the value's SHA-256 with the token's hash and an expiry, so sessions
//! survive a restart, work on every node, and end when the token is revoked. The cookie
//! is `HttpOnly; SameSite=Strict; Path=/`, and `Secure` when the request came over HTTPS
//! (as a reverse proxy says with `X-Forwarded-Proto` or `Forwarded`): plain HTTP on
//! 127.0.0.1 keeps working.
//!
//! CSRF: each session has a token derived from its cookie value,
//! `sha256_hex("airlock-csrf\n" + value)`. Pages put it in a hidden field of every form;
//! [`crate::web::form::Posted`] compares it in constant time. It needs no storage, cannot
//! be computed without the cookie (which scripts cannot read), and differs from the hash
//! the store keeps.

use crate::web::error::WebError;
use crate::AppState;
use airlock_policy::digest::sha256_hex;
use airlock_protocol::Role;
use airlock_protocol::{Principal, Subject};
use airlock_store::WebSession;
use axum::extract::FromRequestParts;
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::request::Parts;
use axum::http::Method;
use rand::RngCore;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "airlock_session";

/// How long a sign-in lasts: a working week, so that a phone stays signed in.
pub const LIFETIME_SECONDS: i64 = 7 * 24 * 3600;

/// The signed-in person behind a page request.
#[derive(Debug, Clone)]
pub struct WebUser {
    pub principal: Principal,
    pub session: WebSession,
    /// The CSRF token every form of this session carries.
    pub csrf: String,
}

impl WebUser {
    /// The user's name and role (a web session is always a user's).
    pub fn name_and_role(&self) -> (&str, Role) {
        match &self.principal.subject {
            Subject::User { name, role, .. } => (name, *role),
            // Unreachable: the store resolves web sessions to users only.
            Subject::Agent { name, .. } => (name, Role::Viewer),
        }
    }

    /// Whether the decision buttons are shown (the gate checks again on every decision).
    pub fn may_decide(&self) -> bool {
        self.name_and_role().1 >= Role::Approver
    }
}

impl FromRequestParts<AppState> for WebUser {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, WebError> {
        if let Some(user) = find(state, &parts.headers).await? {
            return Ok(user);
        }
        // A form posted by a signed-out browser comes back to the page it was on, not to
        // its action (which only takes a POST).
        let next = if parts.method == Method::GET {
            local_target(parts.uri.path_and_query().map(|p| p.as_str()))
        } else {
            page_of_action(parts.uri.path())
        };
        if parts.method == Method::GET && arrived_from_another_site(&parts.headers) {
            return Err(WebError::FromAnotherSite { next });
        }
        Err(WebError::SignedOut { next })
    }
}

/// Whether this request is a browser's top-level navigation that started on another site
/// (a link in a mail client, in Slack, in a chat). The session cookie is `SameSite=Strict`,
/// so the browser did not send it, whether or not it holds one: the page answers with a
/// step that navigates again from this site ([`crate::web::error::continue_page`]), which
/// does carry the cookie.
pub fn arrived_from_another_site(headers: &HeaderMap) -> bool {
    let value = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    value("sec-fetch-site") == Some("cross-site") && value("sec-fetch-mode") == Some("navigate")
}

/// The page a form's action belongs to: an approval's decision → its page, a rule's
/// revocation → the rules, the policy's forms → the policy; anything else → the inbox.
pub fn page_of_action(action: &str) -> String {
    let segments: Vec<&str> = action.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["approvals", id, "decision"] => local_target(Some(&format!("/approvals/{id}"))),
        ["rules", ..] => "/rules".to_owned(),
        ["policy", ..] => "/policy".to_owned(),
        _ => "/".to_owned(),
    }
}

/// The live session the request's cookie names, if any.
pub async fn find(state: &AppState, headers: &HeaderMap) -> Result<Option<WebUser>, WebError> {
    let Some(value) = read_cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    let found = state
        .gate
        .web_session(&cookie_hash(value))
        .await
        .map_err(|error| WebError::Unavailable(error.to_string()))?;
    Ok(found.map(|(session, principal)| WebUser {
        principal,
        session,
        csrf: csrf_token(value),
    }))
}

/// A new cookie value: 32 random bytes.
pub fn new_cookie_value() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("alw_{}", hex::encode(bytes))
}

/// What the store keeps of a cookie value.
pub fn cookie_hash(value: &str) -> String {
    sha256_hex(value.as_bytes())
}

/// The CSRF token of the session whose cookie holds `value`.
pub fn csrf_token(value: &str) -> String {
    sha256_hex(format!("airlock-csrf\n{value}").as_bytes())
}

/// Compares two secrets in time that depends on their lengths only.
pub fn same_secret(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |differences, (a, b)| differences | (a ^ b))
        == 0
}

/// The `Set-Cookie` value that stores `value` for [`LIFETIME_SECONDS`], or (`None`)
/// deletes the cookie.
pub fn set_cookie(value: Option<&str>, secure: bool) -> HeaderValue {
    let (value, max_age) = match value {
        Some(value) => (value, LIFETIME_SECONDS),
        None => ("", 0),
    };
    let secure = if secure { "; Secure" } else { "" };
    let text = format!(
        "{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    );
    // The value is hex and the rest fixed text, so this cannot fail; an empty value
    // (which deletes nothing) is the harmless fallback.
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Whether the browser reached us over HTTPS, as a reverse proxy in front reports it.
/// (A client that lies only gets a cookie its own browser will not send back over HTTP.)
pub fn came_over_https(headers: &HeaderMap) -> bool {
    let forwarded_proto = headers
        .get("x-forwarded-proto")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(',').next())
        .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"));
    let forwarded = headers
        .get(header::FORWARDED)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(',').next())
        .is_some_and(|first| {
            first.split(';').any(|pair| {
                let pair = pair.trim().to_ascii_lowercase();
                pair.strip_prefix("proto=")
                    .is_some_and(|proto| proto.trim_matches('"') == "https")
            })
        });
    forwarded_proto || forwarded
}

/// The value of cookie `name`, if the request carries it.
pub fn read_cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|line| line.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, value)| *key == name && !value.is_empty())
        .map(|(_, value)| value)
}

/// A path of this site to go to after signing in: `target` when it is a local path
/// (`/…`, not `//…`), else `/`. Keeps the sign-in from redirecting anywhere else.
pub fn local_target(target: Option<&str>) -> String {
    match target {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.contains('\\')
                && !path.starts_with("/login")
                && !path.starts_with("/web/")
                && path.len() <= 1000 =>
        {
            path.to_owned()
        }
        _ => "/".to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn cookies_are_read_by_name() {
        let h = headers(&[("cookie", "a=1; airlock_session=alw_x; b=2")]);
        assert_eq!(read_cookie(&h, SESSION_COOKIE), Some("alw_x"));
        let h = headers(&[("cookie", "a=1"), ("cookie", "airlock_session=y")]);
        assert_eq!(read_cookie(&h, SESSION_COOKIE), Some("y"));
        let h = headers(&[("cookie", "xairlock_session=z; airlock_session=")]);
        assert_eq!(read_cookie(&h, SESSION_COOKIE), None);
    }

    #[test]
    fn the_cookie_is_strict_http_only_and_secure_only_over_https() {
        let plain = set_cookie(Some("alw_1"), false);
        assert_eq!(
            plain.to_str().unwrap(),
            "airlock_session=alw_1; Path=/; HttpOnly; SameSite=Strict; Max-Age=604800"
        );
        let secure = set_cookie(Some("alw_1"), true);
        assert!(secure.to_str().unwrap().ends_with("; Secure"));
        let gone = set_cookie(None, false);
        assert!(gone.to_str().unwrap().contains("Max-Age=0"));
    }

    #[test]
    fn https_is_what_the_proxy_says() {
        assert!(!came_over_https(&headers(&[])));
        assert!(came_over_https(&headers(&[("x-forwarded-proto", "https")])));
        assert!(came_over_https(&headers(&[(
            "x-forwarded-proto",
            "HTTPS, http"
        )])));
        assert!(!came_over_https(&headers(&[("x-forwarded-proto", "http")])));
        assert!(came_over_https(&headers(&[(
            "forwarded",
            "for=1.2.3.4;proto=https;by=x"
        )])));
        assert!(!came_over_https(&headers(&[(
            "forwarded",
            "for=1.2.3.4;proto=http"
        )])));
    }

    #[test]
    fn csrf_tokens_are_derived_secret_and_compared_whole() {
        let value = new_cookie_value();
        assert!(value.starts_with("alw_") && value.len() == 68);
        assert_ne!(value, new_cookie_value());
        let csrf = csrf_token(&value);
        assert_ne!(csrf, cookie_hash(&value));
        assert!(same_secret(&csrf, &csrf_token(&value)));
        assert!(!same_secret(&csrf, &csrf[1..]));
        assert!(!same_secret(&csrf, &csrf_token(&new_cookie_value())));
        assert!(!same_secret("", &csrf));
    }

    #[test]
    fn a_signed_out_form_goes_back_to_its_page() {
        assert_eq!(
            page_of_action("/approvals/apr_1/decision"),
            "/approvals/apr_1"
        );
        assert_eq!(page_of_action("/rules/rule_1/revoke"), "/rules");
        assert_eq!(page_of_action("/policy/save"), "/policy");
        assert_eq!(page_of_action("/turns/decision"), "/");
        assert_eq!(page_of_action("/logout"), "/");
    }

    #[test]
    fn only_navigations_from_another_site_are_arrivals_from_elsewhere() {
        assert!(arrived_from_another_site(&headers(&[
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "navigate")
        ])));
        for pairs in [
            vec![],
            vec![("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "cors")],
            vec![
                ("sec-fetch-site", "same-origin"),
                ("sec-fetch-mode", "navigate"),
            ],
            vec![("sec-fetch-site", "none"), ("sec-fetch-mode", "navigate")],
        ] {
            assert!(!arrived_from_another_site(&headers(&pairs)), "{pairs:?}");
        }
    }

    #[test]
    fn sign_in_goes_back_to_local_pages_only() {
        assert_eq!(local_target(Some("/approvals/apr_1")), "/approvals/apr_1");
        assert_eq!(local_target(Some("/audit?kind=x")), "/audit?kind=x");
        for outside in [
            None,
            Some("https://evil.test/"),
            Some("//evil.test"),
            Some("/\\evil.test"),
            Some("/login"),
            Some("/web/events"),
            Some("evil"),
        ] {
            assert_eq!(local_target(outside), "/", "{outside:?}");
        }
    }
}
