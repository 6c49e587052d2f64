//! `kubectl` and Kubernetes Secrets: a Secret's name, type and size are cluster state
//! anyone working on the cluster lists (`kubectl get secrets`, `kubectl describe secret
//! x`), its data is credential material. The data is printed by an output format that
//! shows objects whole or by a template (`-o yaml`, `-o jsonpath=…`, `--template …`), or
//! by a raw request for the Secret's URL, whatever way the Secret is named: `secret x`,
//! `secret/x`, `secrets,configmaps`, `Secret`, `secrets.v1`.

use super::*;

/// What `kubectl ARGUMENTS` adds to its class: `CredentialAccess` when it prints a
/// Secret's data, `Unknown` when it prints the data of a kind of object the shell computes
/// at run time (it may be Secrets), nothing otherwise.
pub(super) fn secret_data(arguments: &[Word]) -> Option<Class> {
    let mut positionals: Vec<&Word> = Vec::new();
    let mut shows_data = false;
    let mut raw: Option<&Word> = None;
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if text == "--" {
            positionals.extend(words.by_ref());
            break;
        }
        if !text.starts_with('-') || text == "-" {
            positionals.push(word);
            continue;
        }
        let (option, attached) = match text.split_once('=') {
            Some((option, value)) if option.starts_with("--") => (option, Some(value)),
            // `-oyaml`, `-o=yaml`, `-nprod`.
            _ if !text.starts_with("--") && text.len() > 2 => {
                (&text[..2], Some(text[2..].trim_start_matches('=')))
            }
            _ => (text, None),
        };
        let value_word = match attached {
            Some(_) => None,
            None if takes_value(option) => words.next(),
            None => None,
        };
        let value = attached.or(value_word.map(|word| word.text.as_str()));
        match option {
            "-o" | "--output" => {
                // Dynamic: it may be any format.
                let dynamic = value_word.is_some_and(|word| word.dynamic) || word.dynamic;
                shows_data |= dynamic || !matches!(value, Some("wide" | "name"));
            }
            "--template" => shows_data = true,
            "--raw" => raw = value_word.or(Some(word)),
            _ => {}
        }
    }
    if let Some(raw) = raw {
        let lower = raw.text.to_ascii_lowercase();
        return if lower.contains("/secrets") {
            Some(Class::CredentialAccess)
        } else if raw.dynamic {
            Some(Class::Unknown)
        } else {
            None
        };
    }
    let (subcommand, objects) = positionals.split_first()?;
    if subcommand.text != "get" || !shows_data {
        return None;
    }
    let mut dynamic = false;
    for object in objects {
        if object.dynamic {
            dynamic = true;
            continue;
        }
        let names_secrets = object.text.split(',').any(|named| {
            let kind = named.split('/').next().unwrap_or(named);
            let kind = kind.split('.').next().unwrap_or(kind);
            kind.eq_ignore_ascii_case("secret") || kind.eq_ignore_ascii_case("secrets")
        });
        if names_secrets {
            return Some(Class::CredentialAccess);
        }
    }
    dynamic.then_some(Class::Unknown)
}

/// kubectl's options that take the next word as their value.
fn takes_value(option: &str) -> bool {
    matches!(
        option,
        "-n" | "--namespace"
            | "--context"
            | "--cluster"
            | "--user"
            | "--kubeconfig"
            | "-s"
            | "--server"
            | "--token"
            | "--as"
            | "--as-group"
            | "--as-uid"
            | "-l"
            | "--selector"
            | "--field-selector"
            | "-o"
            | "--output"
            | "--template"
            | "-f"
            | "--filename"
            | "-k"
            | "--kustomize"
            | "-c"
            | "--container"
            | "-L"
            | "--label-columns"
            | "--sort-by"
            | "--chunk-size"
            | "--request-timeout"
            | "--cache-dir"
            | "--certificate-authority"
            | "--client-certificate"
            | "--client-key"
            | "--tls-server-name"
            | "--subresource"
            | "--raw"
    )
}
