//! A pattern's last segment written `!(a|b|…)`: a name of any kind but these, as bash's
//! extended globs write it (`{home}/.ssh/!(*.pub|config|known_hosts*)`: every file of the
//! folder but its public keys and settings). Each alternative is a glob of one name.

use globset::GlobMatcher;

use super::compile_glob;

/// The names a pattern's last segment excepts.
#[derive(Debug, Clone)]
pub(super) struct Except(Vec<GlobMatcher>);

impl Except {
    /// Whether the last name of the path `rest` is one of the excepted names.
    pub(super) fn excepts(&self, rest: &str) -> bool {
        let name = rest.rsplit('/').next().unwrap_or(rest);
        self.0.iter().any(|glob| glob.is_match(name))
    }
}

/// `glob` with a last segment `!(…)` read as `*`, and the names it excepts; `glob` itself
/// and `None` when its last segment is no exception. `!(` anywhere else is an error, as
/// is an empty or nested alternative.
pub(super) fn split(glob: &str, pattern: &str) -> Result<(String, Option<Except>), String> {
    let (head, last) = match glob.rsplit_once('/') {
        Some((head, last)) => (Some(head), last),
        None => (None, glob),
    };
    let invalid = |why: &str| format!("path pattern {pattern:?}: {why}");
    let Some(inner) = last
        .strip_prefix("!(")
        .and_then(|rest| rest.strip_suffix(')'))
    else {
        if glob.contains("!(") {
            return Err(invalid("`!(…)` must be the whole last segment"));
        }
        return Ok((glob.to_owned(), None));
    };
    let names = inner
        .split('|')
        .map(|name| {
            if name.is_empty() || name.contains(['(', ')']) {
                Err(invalid(
                    "`!(…)` takes names or globs of one name, separated by `|`",
                ))
            } else {
                compile_glob(name, pattern)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let glob = match head {
        Some(head) => format!("{head}/*"),
        None => "*".to_owned(),
    };
    Ok((glob, Some(Except(names))))
}
