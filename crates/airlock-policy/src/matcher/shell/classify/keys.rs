//! Keys and certificates made here: `ssh-keygen -t ed25519 -f FILE` and `openssl req -x509
//! -newkey … -keyout FILE -out FILE`, `openssl genrsa -out FILE` write new key material into
//! the files they name and read none. They are judged as the writes they are, where the
//! files lie (a fresh key in `/tmp` or a throwaway certificate in the project, or over the
//! person's own key in `~/.ssh`). Anything else they do (print a private key's public half,
//! convert, sign with a key they are given) stays as the table has it.

use super::*;

/// `ssh-keygen` options that make it do something other than generate a key pair.
const SSH_KEYGEN_MODES: &[&str] = &[
    "-l", "-y", "-R", "-F", "-H", "-p", "-c", "-e", "-i", "-s", "-L", "-Y", "-D", "-K", "-k", "-Q",
    "-r", "-A", "-B", "-M", "-G", "-T",
];
/// `ssh-keygen` options that take a value.
const SSH_KEYGEN_VALUED: &[&str] = &["-t", "-b", "-C", "-N", "-f", "-a", "-m", "-O", "-Z", "-w"];

/// `openssl` subcommands that make new key material, and the options of them that read a
/// file (a key to sign with, a request, a configuration).
const OPENSSL_MAKERS: &[&str] = &["req", "genrsa", "genpkey", "ecparam", "dhparam", "rand"];
const OPENSSL_INPUTS: &[&str] = &[
    "-key",
    "-in",
    "-CA",
    "-CAkey",
    "-signkey",
    "-config",
    "-paramfile",
];

impl Judge<'_> {
    /// See the module comment: `true` when `name arguments` was judged here.
    pub(super) fn key_generation(
        &self,
        name: &str,
        arguments: &[Word],
        dir: Option<&str>,
        facts: &mut SegmentFacts,
    ) -> bool {
        if arguments.iter().any(|word| word.dynamic) {
            return false;
        }
        let outputs = match name {
            "ssh-keygen" => ssh_keygen_outputs(arguments),
            "openssl" => openssl_outputs(arguments),
            _ => None,
        };
        let Some(outputs) = outputs else {
            return false;
        };
        facts.classes = remove(facts.classes, Class::Unknown);
        facts.classes.insert(Class::Build);
        for output in outputs {
            facts.files.push(self.file(&output, dir, Role::Change));
        }
        true
    }
}

/// The files `ssh-keygen` generating a key pair writes (`-f FILE`: FILE and FILE.pub);
/// `None` for any other use, or with no `-f` (it would prompt, then write `~/.ssh/id_*`).
fn ssh_keygen_outputs(arguments: &[Word]) -> Option<Vec<Word>> {
    let mut file = None;
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if SSH_KEYGEN_MODES.contains(&text) {
            return None;
        }
        if SSH_KEYGEN_VALUED.contains(&text) {
            let value = words.next()?;
            if text == "-f" {
                file = Some(value);
            }
        } else if text == "-q" || text == "-v" {
        } else {
            // A cluster (`-lf`), an attached value or an operand: not read here.
            return None;
        }
    }
    let file = file?;
    Some(vec![
        file.clone(),
        Word::literal(&format!("{}.pub", file.text)),
    ])
}

/// The files an `openssl` subcommand that makes key material writes (`-out`, `-keyout`);
/// `None` when it reads a file of its own (`-key`, `-in`, …) or prints the new key instead.
fn openssl_outputs(arguments: &[Word]) -> Option<Vec<Word>> {
    let (subcommand, rest) = arguments.split_first()?;
    if !OPENSSL_MAKERS.contains(&subcommand.text.as_str()) {
        return None;
    }
    let mut outputs = Vec::new();
    let mut at = 0;
    while let Some(word) = rest.get(at) {
        let text = word.text.as_str();
        if OPENSSL_INPUTS.contains(&text) {
            return None;
        }
        if matches!(text, "-out" | "-keyout") {
            outputs.push(rest.get(at + 1)?.clone());
            at += 2;
            continue;
        }
        at += 1;
    }
    // `openssl rand -hex 32` prints random bytes; a key made with no `-out` is printed.
    match subcommand.text.as_str() {
        "rand" => Some(outputs),
        _ if outputs.is_empty() => None,
        _ => Some(outputs),
    }
}
