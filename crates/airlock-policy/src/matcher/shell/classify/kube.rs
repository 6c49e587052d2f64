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

/// Whether `kubectl` or `helm` is pointed at a cluster made on this machine for
/// development, by a context named as the tools that make them name theirs (`kind-…`,
/// `k3d-…`, `minikube`, Docker Desktop's, Rancher Desktop's, Colima's, OrbStack's): what
/// it changes there is the developer's own. Without a context named (the current one may
/// be anything), or with a server, user or kubeconfig given besides, it is not.
pub(super) fn local_cluster(arguments: &[Word]) -> bool {
    let mut context = None;
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        let (option, attached) = match text.split_once('=') {
            Some((option, value)) => (option, Some(value)),
            None => (text, None),
        };
        match option {
            "--context" | "--kube-context" => {
                let value = match attached {
                    Some(value) => Some(value.to_owned()),
                    None => words
                        .next()
                        .filter(|value| !value.dynamic)
                        .map(|value| value.text.clone()),
                };
                if word.dynamic || value.is_none() {
                    return false;
                }
                context = value;
            }
            "--server" | "-s" | "--kubeconfig" | "--cluster" | "--user" | "--token"
            | "--kube-apiserver" | "--kube-token" => return false,
            _ => {}
        }
    }
    context.is_some_and(|context| {
        ["kind-", "k3d-"]
            .iter()
            .any(|prefix| context.starts_with(prefix) && context.len() > prefix.len())
            || matches!(
                context.as_str(),
                "minikube"
                    | "docker-desktop"
                    | "docker-for-desktop"
                    | "rancher-desktop"
                    | "colima"
                    | "orbstack"
            )
    })
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
