//! The cloud CLIs (`aws`, `gcloud`, `az`) are `deploy` by default: most of what they do
//! changes hosted services. Their reads are named by a verb of the operation (`aws logs
//! describe-log-streams`, `aws s3 ls`, `gcloud run services list`, `az vm show`) and only
//! look at the account's state: they are `read_only`, as `kubectl get` is.
//!
//! Not every read only looks. Reads that print credentials or the configured environment
//! of running code (where secrets are commonly kept) stay as they are, asked or denied:
//! an operation or a resource whose name speaks of secrets, keys, tokens, passwords,
//! credentials, settings or connection strings, and the services whose reads print
//! environments or hand out credentials (AWS Lambda, ECS, Elastic Beanstalk, CodeBuild,
//! Amplify, Glue, App Runner, Batch, SSM, Secrets Manager, STS, SSO, Cognito identity,
//! ECR; Cloud Functions, Cloud Run, App Engine, GKE, Composer, Secret Manager, KMS and
//! `gcloud auth`). Anything else the reader does not follow (a word computed at run time)
//! leaves the command as it was.

use super::*;

/// Whether `name arguments` (a cloud CLI) only reads the account's state.
pub(super) fn reads_only(name: &str, arguments: &[Word]) -> bool {
    if arguments
        .iter()
        .any(|word| word.dynamic || word.glob.is_some())
    {
        return false;
    }
    let Some(positionals) = positionals(name, arguments) else {
        return false;
    };
    if describes_secrets_only(name, &positionals) {
        return true;
    }
    if positionals
        .iter()
        .any(|word| speaks_of_secrets(&word.to_ascii_lowercase()))
    {
        return false;
    }
    match name {
        "aws" => aws_reads(&positionals),
        "gcloud" => gcloud_reads(&positionals),
        "az" => az_reads(&positionals),
        _ => false,
    }
}

/// The words that are not options or their values. Before the operation, an option the
/// reader does not know may take the next word, which may be the operation: it cannot
/// tell, and answers `None`. After it, any option takes the next word that is not one.
fn positionals<'a>(name: &str, arguments: &'a [Word]) -> Option<Vec<&'a str>> {
    let mut positionals: Vec<&str> = Vec::new();
    let mut words = arguments.iter().peekable();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if text == "--" {
            return None;
        }
        if !text.starts_with('-') {
            positionals.push(text);
            continue;
        }
        if text.contains('=') {
            continue;
        }
        let value_follows = if takes_value(name, text) {
            true
        } else if is_flag(name, text) {
            false
        } else if operation_named(name, &positionals) {
            words.peek().is_some_and(|next| !next.text.starts_with('-'))
        } else {
            return None;
        };
        if value_follows {
            words.next();
        }
    }
    Some(positionals)
}

/// Whether the words so far name the operation (`aws SERVICE OPERATION`, the verb of
/// `gcloud` and `az`).
fn operation_named(name: &str, positionals: &[&str]) -> bool {
    match name {
        "aws" => positionals.len() >= 2,
        _ => positionals.iter().skip(1).any(|word| {
            matches!(
                *word,
                "list"
                    | "show"
                    | "describe"
                    | "get-iam-policy"
                    | "read"
                    | "get-value"
                    | "ls"
                    | "cat"
            )
        }),
    }
}

/// Options that take the next word as their value.
fn takes_value(name: &str, option: &str) -> bool {
    let option = option.split('=').next().unwrap_or(option);
    match name {
        "aws" => matches!(
            option,
            "--profile"
                | "--region"
                | "--output"
                | "--query"
                | "--endpoint-url"
                | "--color"
                | "--ca-bundle"
                | "--cli-read-timeout"
                | "--cli-connect-timeout"
                | "--cli-binary-format"
        ),
        "gcloud" => matches!(
            option,
            "--project"
                | "--account"
                | "--configuration"
                | "--format"
                | "--filter"
                | "--limit"
                | "--page-size"
                | "--sort-by"
                | "--region"
                | "--zone"
                | "--location"
                | "--verbosity"
                | "--impersonate-service-account"
                | "--billing-project"
                | "--flags-file"
                | "--trace-token"
        ),
        "az" => matches!(
            option,
            "--subscription"
                | "-g"
                | "--resource-group"
                | "-n"
                | "--name"
                | "-o"
                | "--output"
                | "--query"
                | "--ids"
        ),
        _ => false,
    }
}

/// Options that take no value.
fn is_flag(name: &str, option: &str) -> bool {
    match name {
        "aws" => matches!(
            option,
            "--debug"
                | "--no-paginate"
                | "--no-verify-ssl"
                | "--no-sign-request"
                | "--no-cli-pager"
                | "--no-cli-auto-prompt"
                | "--recursive"
                | "--human-readable"
                | "--summarize"
        ),
        "gcloud" => matches!(option, "--quiet" | "-q" | "--verbose" | "--log-http"),
        "az" => matches!(
            option,
            "--only-show-errors" | "--verbose" | "--debug" | "--all"
        ),
        _ => false,
    }
}

/// Reads of services that keep secrets or environments which only describe: a secret's
/// or parameter's metadata and names (never a value), an ECS service's or cluster's state
/// (never a task definition's environment), the accounts `gcloud` has signed in. Nothing
/// after the operation (a word there would be a file written).
fn describes_secrets_only(name: &str, positionals: &[&str]) -> bool {
    match (name, positionals) {
        ("aws", [service, operation]) => matches!(
            (*service, *operation),
            (
                "secretsmanager",
                "describe-secret" | "list-secrets" | "list-secret-version-ids"
            ) | ("ssm", "describe-parameters")
                | (
                    "ecs",
                    "describe-services"
                        | "describe-clusters"
                        | "list-services"
                        | "list-clusters"
                        | "list-tasks"
                        | "list-task-definitions"
                )
        ),
        ("gcloud", positionals) => matches!(positionals, ["auth", "list"] | ["secrets", "list"]),
        _ => false,
    }
}

/// A word that names credential material or where it is kept.
fn speaks_of_secrets(word: &str) -> bool {
    [
        "secret",
        "password",
        "passwd",
        "token",
        "credential",
        "key",
        "login",
        "auth",
        "decrypt",
        "setting",
        "connection",
        "environment",
        "access-details",
        "publish",
        "sas",
    ]
    .iter()
    .any(|fragment| word.contains(fragment))
}

/// `aws SERVICE OPERATION`: `describe-*`, `list-*`, `get-*`, `batch-get-*`, `head-*`,
/// waiters, the logs' filters and tails, `s3 ls`, and `configure list(-profiles)`.
fn aws_reads(positionals: &[&str]) -> bool {
    const PRINTS_ENVIRONMENTS: &[&str] = &[
        "lambda",
        "ecs",
        "elasticbeanstalk",
        "codebuild",
        "amplify",
        "glue",
        "apprunner",
        "batch",
        "ssm",
        "secretsmanager",
        "sts",
        "sso",
        "sso-oidc",
        "cognito-identity",
        "ecr",
        "ecr-public",
        "codeartifact",
        "lightsail",
        "redshift",
        "iam",
    ];
    let [service, operation, rest @ ..] = positionals else {
        return false;
    };
    if PRINTS_ENVIRONMENTS.contains(service) {
        return false;
    }
    match (*service, *operation) {
        // These take the listed path, the log group, the waited-for state as words.
        ("s3", "ls") | ("logs", "tail") | (_, "wait") => true,
        ("configure", "list" | "list-profiles") => rest.is_empty(),
        ("s3" | "configure", _) => false,
        // A word after an operation is the file its output is written to (`s3api
        // get-object … out.bin`): a write, judged as the command's default.
        _ if !rest.is_empty() => false,
        (_, "filter-log-events" | "lookup-events") => true,
        (_, operation) => ["describe-", "list-", "get-", "batch-get-", "head-"]
            .iter()
            .any(|verb| operation.starts_with(verb)),
    }
}

/// `gcloud GROUP… list|describe …`, `gcloud logging read`, `gcloud config list|get-value`.
fn gcloud_reads(positionals: &[&str]) -> bool {
    const PRINTS_ENVIRONMENTS: &[&str] = &[
        "functions",
        "run",
        "app",
        "container",
        "composer",
        "secrets",
        "kms",
        "auth",
        "iam",
    ];
    let Some(group) = positionals.first() else {
        return false;
    };
    // Listing a group's resources prints no environment (`gcloud run services list`);
    // describing one does (`gcloud run services describe api` shows its variables).
    if PRINTS_ENVIRONMENTS.contains(group) {
        return !matches!(*group, "secrets" | "kms" | "auth" | "iam")
            && positionals.len() >= 3
            && positionals[2] == "list";
    }
    // `gcloud storage ls -l gs://…`, `gcloud storage cat gs://…/x.json`: objects listed or
    // printed, as `aws s3 ls` and `aws s3 cp … -` are.
    if let ["storage", "ls" | "cat", ..] = positionals {
        return true;
    }
    let verb_at = positionals
        .iter()
        .position(|word| matches!(*word, "list" | "describe" | "get-iam-policy"));
    match verb_at {
        // The verb ends the command's groups: `gcloud compute instances list`; words after
        // it name the resource.
        Some(at) => at >= 1,
        None => matches!(
            positionals,
            ["logging", "read", ..] | ["config", "get-value", ..]
        ),
    }
}

/// `az GROUP… list|show …`.
fn az_reads(positionals: &[&str]) -> bool {
    let Some(group) = positionals.first() else {
        return false;
    };
    // The apps themselves listed or shown carry no settings (`az webapp list`); their
    // settings, connection strings and publishing profiles do.
    if matches!(*group, "functionapp" | "webapp") {
        return matches!(positionals, [_, "list" | "show"]);
    }
    if matches!(*group, "keyvault" | "ad" | "login" | "rest") {
        return false;
    }
    positionals
        .iter()
        .skip(1)
        .any(|word| matches!(*word, "list" | "show"))
}

/// `aws s3 cp|sync s3://… DEST`: a download; the local destination it writes (`-` is the
/// standard output). `None` for anything else (an upload, a copy between buckets, words
/// the reader cannot place).
pub(super) fn s3_download(arguments: &[Word]) -> Option<&Word> {
    const FLAGS: &[&str] = &[
        "--recursive",
        "--delete",
        "--dryrun",
        "--quiet",
        "--only-show-errors",
        "--no-progress",
        "--exact-timestamps",
        "--size-only",
        "--follow-symlinks",
        "--no-follow-symlinks",
        "--no-paginate",
        "--no-verify-ssl",
        "--no-sign-request",
        "--no-cli-pager",
        "--debug",
    ];
    let mut positionals: Vec<&Word> = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        if word.dynamic || word.glob.is_some() || word.text == "--" {
            return None;
        }
        if !word.text.starts_with('-') || word.text == "-" {
            positionals.push(word);
        } else if !word.text.contains('=') && !FLAGS.contains(&word.text.as_str()) {
            // Every other option of `aws` and of `s3 cp`/`sync` takes a value.
            words.next();
        }
    }
    match positionals.as_slice() {
        [s3, verb, source, destination]
            if s3.text == "s3"
                && matches!(verb.text.as_str(), "cp" | "sync")
                && source.text.starts_with("s3://")
                && !destination.text.starts_with("s3://") =>
        {
            Some(destination)
        }
        _ => None,
    }
}

/// `gcloud storage cp|rsync gs://… DEST`, `gsutil [-m] cp|rsync [-r] gs://… DEST`: a
/// download, as [`s3_download`] reads `aws s3`'s; the local destination. Options are read
/// as flags (`-r`, `--no-clobber`; `--x=y` holds its value): one that takes a value apart
/// leaves an extra word, and then the line is not read as a download.
pub(super) fn gs_download<'w>(name: &str, arguments: &'w [Word]) -> Option<&'w Word> {
    if arguments
        .iter()
        .any(|word| word.dynamic || word.glob.is_some())
    {
        return None;
    }
    let positionals: Vec<&Word> = arguments
        .iter()
        .filter(|word| !word.text.starts_with('-') || word.text == "-")
        .collect();
    let rest = match (name, positionals.as_slice()) {
        ("gcloud", [storage, verb, rest @ ..])
            if storage.text == "storage" && matches!(verb.text.as_str(), "cp" | "rsync") =>
        {
            rest
        }
        ("gsutil", [verb, rest @ ..]) if matches!(verb.text.as_str(), "cp" | "rsync") => rest,
        _ => return None,
    };
    match rest {
        [source, destination]
            if source.text.starts_with("gs://") && !destination.text.starts_with("gs://") =>
        {
            Some(destination)
        }
        _ => None,
    }
}

/// `terraform output NAME` (and OpenTofu's, Terragrunt's): an output asked for by name is
/// printed whole, a sensitive one too; one named for a secret (`rds_master_password`,
/// `api_token`) is credential material.
pub(super) fn prints_secret_output(name: &str, texts: &[&str]) -> bool {
    if !matches!(name, "terraform" | "tofu" | "terragrunt") {
        return false;
    }
    let Some(at) = texts.iter().position(|text| *text == "output") else {
        return false;
    };
    texts[..at].iter().all(|text| text.starts_with('-'))
        && texts[at + 1..]
            .iter()
            .filter(|text| !text.starts_with('-'))
            .any(|output| {
                let lower = output.to_ascii_lowercase();
                speaks_of_secrets(&lower) || lower.contains("dsn") || lower.contains("private")
            })
}
