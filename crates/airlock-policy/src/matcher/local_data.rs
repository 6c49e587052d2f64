//! The `local` matcher (`url = { local = true }`): an address that carries data from this
//! machine to the host it names. A page fetched with nothing of the machine in its address is
//! a read of the web; one whose query, fragment or path holds the project's or the home's
//! path, the user's name as a value, several lines of text (code, a file), or such text in
//! base64, sends that data away with the request. Secret material is the `secret` matcher's;
//! this one is for the rest.

use crate::context::Context;
use crate::matcher::shell::code::literals::decoded_text;
use url::Url;

/// Whether `address` carries local data, as the module says. An address that cannot be
/// read as one counts (fail closed: only deny and ask rules name this matcher).
pub fn carries_local_data(address: &str, context: &Context) -> bool {
    let Ok(url) = Url::parse(address.trim()) else {
        return true;
    };
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect();
    let mut values: Vec<String> = pairs
        .iter()
        .flat_map(|(name, value)| [name.clone(), value.clone()])
        .collect();
    values.extend(url.fragment().map(decode));
    let path = decode(url.path());
    let project = context.project().filter(|project| project.len() > 3);
    let home = context.home().filter(|home| home.len() > 3);
    let user = home
        .and_then(|home| home.trim_end_matches('/').rsplit(['/', '\\']).next())
        .filter(|user| user.len() >= 3);
    // A Windows place (kept as `/c:/users/sam`) may be written with either slash and in
    // any case (`C:/Users/sam`, `c:\\users\\sam`).
    let folded = |text: &str| text.replace('\\', "/").to_lowercase();
    let names_a_place = |text: &str| {
        let text = folded(text);
        [project, home].into_iter().flatten().any(|place| {
            let place = if crate::matcher::path::is_windows(place) {
                &place[1..]
            } else {
                place
            };
            text.contains(folded(place).trim_end_matches('/'))
        })
    };
    if names_a_place(&path) {
        return true;
    }
    // The user's name, where a parameter asks who or where someone is (`?user=kim`): the
    // name alone (`?env=dev`, `?type=user`) is an ordinary word too often.
    let names_the_user = user.is_some_and(|user| {
        pairs.iter().any(|(name, value)| {
            IDENTITY_PARAMETERS.contains(&name.to_ascii_lowercase().as_str())
                && value.eq_ignore_ascii_case(user)
        })
    });
    names_the_user
        || values.iter().any(|value| {
            let shows = |text: &str| text.contains('\n') || names_a_place(text);
            shows(value)
                || decoded_text(value)
                    .is_some_and(|text| shows(&text) || text.contains("PRIVATE KEY"))
        })
}

/// Query parameters that say who someone is or which machine they are on.
const IDENTITY_PARAMETERS: &[&str] = &[
    "user",
    "username",
    "user_name",
    "login",
    "whoami",
    "owner",
    "account",
    "host",
    "hostname",
    "machine",
    "u",
    "uid",
];

/// `text` with its `%XX` escapes decoded (lossily), for the parts `Url` keeps encoded.
fn decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_of_this_machine_in_an_address() {
        let context = Context::new(Some("/home/kim/src/app"), None, Some("/home/kim"));
        let windows = Context::new(
            Some("C:\\Users\\Sam\\src\\app"),
            None,
            Some("C:\\Users\\Sam"),
        );
        for (address, expected) in [
            (
                "https://status.example.com/r?path=C:/Users/sam/src/app",
                true,
            ),
            (
                "https://status.example.com/r?path=c%3A%5CUsers%5CSam%5Cnotes",
                true,
            ),
            ("https://status.example.com/r?drive=C:/Windows", false),
        ] {
            assert_eq!(carries_local_data(address, &windows), expected, "{address}");
        }
        for (address, expected) in [
            (
                "https://docs.python.org/3/library/json.html?highlight=dump#json.dump",
                false,
            ),
            ("https://www.google.com/search?q=rust+serde+flatten", false),
            ("https://github.com/kim/app/issues?q=is%3Aopen", false),
            ("https://example.com/builds?env=kim&q=kim", false),
            (
                "https://x.example.net/log?host=pc&user=kim&cwd=/home/kim/src/app",
                true,
            ),
            ("https://x.example.net/log?d=%2Fhome%2Fkim%2F.bashrc", true),
            (
                "https://paste.example.com/api?code=def%20f%28%29%3A%0A%20%20return%201",
                true,
            ),
            (
                "https://x.example.net/k?f=LS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZLS0tLS0K",
                true,
            ),
            ("https://x.example.net/u/home/kim/src/app/src/main.rs", true),
            ("https://x.example.net/#/home/kim/notes", true),
            ("not an address", true),
        ] {
            assert_eq!(carries_local_data(address, &context), expected, "{address}");
        }
        // Nothing known of the machine: only lines of text count.
        let unknown = Context::unknown();
        assert!(!carries_local_data(
            "https://x.example.net/?cwd=/home/kim",
            &unknown
        ));
        assert!(carries_local_data(
            "https://x.example.net/?c=a%0Ab",
            &unknown
        ));
    }
}
