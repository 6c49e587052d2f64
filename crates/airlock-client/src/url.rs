//! The gateway's URL as messages show it.

/// `url` without its user information (`http://user:password@host` → `http://host`), for
/// messages: a password in `AIRLOCK_URL` must not reach a terminal or a model (G9).
pub fn without_userinfo(url: &str) -> String {
    hide_userinfo(url, url)
}

/// `text` (an error quoting `url`, say) without `url`'s user information.
pub fn hide_userinfo(text: &str, url: &str) -> String {
    match userinfo(url) {
        Some(userinfo) => text.replace(&format!("{userinfo}@"), ""),
        None => text.to_owned(),
    }
}

/// The `user:password` of `url`, when it has one.
fn userinfo(url: &str) -> Option<&str> {
    let start = url.find("://").map_or(0, |scheme| scheme + 3);
    let rest = &url[start..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    authority.rfind('@').map(|at| &authority[..at])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_user_and_password() {
        for (url, shown) in [
            ("http://admin:hunter2@127.0.0.1:1", "http://127.0.0.1:1"),
            (
                "https://me@airlock.example/base",
                "https://airlock.example/base",
            ),
            ("http://a:b@c@host:7070/x?y=1", "http://host:7070/x?y=1"),
            ("http://127.0.0.1:7070", "http://127.0.0.1:7070"),
            (
                "http://host/path@not-userinfo",
                "http://host/path@not-userinfo",
            ),
            ("http://host?q=a@b", "http://host?q=a@b"),
        ] {
            assert_eq!(without_userinfo(url), shown, "{url}");
        }
        assert_eq!(
            hide_userinfo(
                "invalid uri http://admin:hunter2@host:1/v1/calls",
                "http://admin:hunter2@host:1"
            ),
            "invalid uri http://host:1/v1/calls"
        );
    }
}
