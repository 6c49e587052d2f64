//! Read globs aimed at credential names (`cat .env*`, `cat ~/.ssh/id_*`): the credential
//! file such a glob may stand for.

/// One name of each kind of credential file found in any folder (the `**/…` entries of
/// `[files] credentials`), to try a glob on.
const CREDENTIAL_NAMES: &[&str] = &[
    ".env",
    ".env.local",
    ".env.production",
    ".env.production.local",
    ".env.development",
    ".env.staging",
    ".env.test",
    "app.env",
    ".netrc",
    ".git-credentials",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "server.key",
    "master.key",
    "store.p12",
    "store.pfx",
    "release.jks",
    "release.keystore",
    "putty.ppk",
    "keystore.properties",
    "terraform.tfstate",
    "prod.tfstate",
    "serviceAccountKey.json",
    "service-account.json",
    "credentials.json",
    "client_secret.json",
    "secrets.yml",
    "secrets.yaml",
    "owner.token",
];

/// Names of ordinary files: a glob that matches one of them is a glob over a folder's
/// files at large, not one aimed at credentials.
const ORDINARY_NAMES: &[&str] = &[
    "README.md",
    "main.rs",
    "index.js",
    "app.py",
    "package.json",
    "config.yml",
    "config.yaml",
    "config.toml",
    "config.ini",
    "index.html",
    "main.go",
    "main.ts",
    "App.tsx",
    "main.tf",
    "schema.sql",
    "app.log",
    "notes.txt",
    "Makefile",
    "data.csv",
    "logo.png",
];

/// The credential file a read glob may stand for, as a path in the glob's folder: a glob
/// aimed at credential names (`.env*`, `id_*`, `*.key`, `[.]env`). Wildcards only in the
/// last name; a name with a leading dot is only matched by a glob that starts with one (or
/// a bracket), as the shell matches it; a glob that also matches ordinary names (`*`,
/// `*.json`) stays a read of the folder.
pub(super) fn credential_glob(text: &str, glob: &globset::GlobMatcher) -> Option<String> {
    let (folder, name) = match text.rfind('/') {
        Some(slash) => text.split_at(slash + 1),
        None => ("", text),
    };
    if folder.contains(['*', '?', '[']) {
        return None;
    }
    let dotted = name.starts_with(['.', '[']);
    let ordinary = ORDINARY_NAMES
        .iter()
        .any(|ordinary| glob.is_match(format!("{folder}{ordinary}")));
    CREDENTIAL_NAMES
        .iter()
        .filter(|credential| {
            if credential.starts_with('.') {
                dotted
            } else {
                !ordinary
            }
        })
        .map(|credential| format!("{folder}{credential}"))
        .find(|path| glob.is_match(path))
}

/// Whether a glob over one folder's entries also matches ordinary hidden names
/// (`~/.*`, `~/.[a-z]*` match `.config` and `.cache`): it names the hidden entries at
/// large, not credential files.
pub(super) fn names_hidden_entries_at_large(text: &str, glob: &globset::GlobMatcher) -> bool {
    let (folder, _) = match text.rfind('/') {
        Some(slash) => text.split_at(slash + 1),
        None => ("", text),
    };
    !folder.contains(['*', '?', '['])
        && [".config", ".cache", ".local"]
            .iter()
            .all(|name| glob.is_match(format!("{folder}{name}")))
}
