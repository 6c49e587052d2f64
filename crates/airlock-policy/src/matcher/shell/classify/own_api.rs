//! A token sent to its own service's API: `curl -H "Authorization: Bearer $GITHUB_TOKEN"
//! https://api.github.com/repos/o/r/pulls`, `curl -H "Authorization: Bearer $(gcloud auth
//! print-access-token)" https://run.googleapis.com/…`. A GET to the service that issued the
//! token, over HTTPS, that prints nothing of the request, reads what the token was made to
//! read: a fetch. The same token to any other host, with any other method, printed by `-v`,
//! or to an address that holds secrets (`…/secrets/…`, `…/variables`), is sent off this
//! machine (asked), as every other header and credential is.

use super::*;

/// The services whose tokens a variable of these names holds, by the hosts that serve
/// their APIs (a host matches itself and its subdomains).
const SERVICES: &[(&[&str], &[&str])] = &[
    (
        &[
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "GITHUB_PAT",
            "GH_PAT",
            "GITHUB_API_TOKEN",
            "GITHUB_ACCESS_TOKEN",
            "GH_ENTERPRISE_TOKEN",
        ],
        &["api.github.com", "raw.githubusercontent.com"],
    ),
    (
        &[
            "GITLAB_TOKEN",
            "GL_TOKEN",
            "GITLAB_PRIVATE_TOKEN",
            "GITLAB_API_TOKEN",
        ],
        &["gitlab.com"],
    ),
    (&["OPENAI_API_KEY", "OPENAI_KEY"], &["api.openai.com"]),
    (&["ANTHROPIC_API_KEY"], &["api.anthropic.com"]),
    (
        &[
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_GENERATIVE_AI_API_KEY",
        ],
        &["generativelanguage.googleapis.com"],
    ),
    (&["MISTRAL_API_KEY"], &["api.mistral.ai"]),
    (&["GROQ_API_KEY"], &["api.groq.com"]),
    (&["OPENROUTER_API_KEY"], &["openrouter.ai"]),
    (&["DEEPSEEK_API_KEY"], &["api.deepseek.com"]),
    (&["TOGETHER_API_KEY"], &["api.together.xyz"]),
    (&["XAI_API_KEY"], &["api.x.ai"]),
    (&["PERPLEXITY_API_KEY"], &["api.perplexity.ai"]),
    (
        &["COHERE_API_KEY", "CO_API_KEY"],
        &["api.cohere.com", "api.cohere.ai"],
    ),
    (&["REPLICATE_API_TOKEN"], &["api.replicate.com"]),
    (&["FIREWORKS_API_KEY"], &["api.fireworks.ai"]),
    (
        &[
            "HF_TOKEN",
            "HUGGINGFACE_TOKEN",
            "HUGGING_FACE_HUB_TOKEN",
            "HUGGINGFACEHUB_API_TOKEN",
        ],
        &["huggingface.co"],
    ),
    (&["LINEAR_API_KEY", "LINEAR_TOKEN"], &["api.linear.app"]),
    (&["NOTION_TOKEN", "NOTION_API_KEY"], &["api.notion.com"]),
    (
        &["SLACK_TOKEN", "SLACK_BOT_TOKEN", "SLACK_USER_TOKEN"],
        &["slack.com"],
    ),
    (
        &["STRIPE_SECRET_KEY", "STRIPE_API_KEY"],
        &["api.stripe.com"],
    ),
    (&["VERCEL_TOKEN"], &["api.vercel.com"]),
    (&["NETLIFY_AUTH_TOKEN"], &["api.netlify.com"]),
    (
        &["CLOUDFLARE_API_TOKEN", "CF_API_TOKEN"],
        &["api.cloudflare.com"],
    ),
    (
        &[
            "DIGITALOCEAN_TOKEN",
            "DIGITALOCEAN_ACCESS_TOKEN",
            "DO_TOKEN",
        ],
        &["api.digitalocean.com"],
    ),
    (&["HEROKU_API_KEY"], &["api.heroku.com"]),
    (&["FLY_API_TOKEN"], &["api.fly.io", "api.machines.dev"]),
    (&["SENTRY_AUTH_TOKEN"], &["sentry.io"]),
    (&["CIRCLECI_TOKEN", "CIRCLE_TOKEN"], &["circleci.com"]),
    (&["BUILDKITE_API_TOKEN"], &["api.buildkite.com"]),
    (
        &["PAGERDUTY_TOKEN", "PAGERDUTY_API_KEY"],
        &["api.pagerduty.com"],
    ),
    (&["FIGMA_TOKEN", "FIGMA_ACCESS_TOKEN"], &["api.figma.com"]),
    (
        &["AIRTABLE_API_KEY", "AIRTABLE_TOKEN"],
        &["api.airtable.com"],
    ),
    (&["SUPABASE_ACCESS_TOKEN"], &["api.supabase.com"]),
    (&["DISCORD_BOT_TOKEN", "DISCORD_TOKEN"], &["discord.com"]),
    (&["SENDGRID_API_KEY"], &["api.sendgrid.com"]),
    (
        &["READTHEDOCS_TOKEN", "RTD_TOKEN"],
        &["readthedocs.org", "readthedocs.com"],
    ),
    (
        &["POSTMARK_SERVER_TOKEN", "POSTMARK_API_TOKEN"],
        &["api.postmarkapp.com"],
    ),
    (
        &["MAILGUN_API_KEY"],
        &["api.mailgun.net", "api.eu.mailgun.net"],
    ),
    (
        &["DATADOG_API_KEY", "DD_API_KEY"],
        &["datadoghq.com", "datadoghq.eu"],
    ),
    (&["NPM_TOKEN"], &["registry.npmjs.org"]),
    (&["RENDER_API_KEY"], &["api.render.com"]),
    (&["NEON_API_KEY"], &["console.neon.tech"]),
    (&["TAILSCALE_API_KEY"], &["api.tailscale.com"]),
    (&["HCLOUD_TOKEN"], &["api.hetzner.cloud"]),
    (&["LINODE_TOKEN", "LINODE_CLI_TOKEN"], &["api.linode.com"]),
    (&["VULTR_API_KEY"], &["api.vultr.com"]),
    (&["ASANA_ACCESS_TOKEN", "ASANA_TOKEN"], &["app.asana.com"]),
    (&["TODOIST_API_TOKEN"], &["api.todoist.com"]),
    (
        &[
            "JIRA_API_TOKEN",
            "ATLASSIAN_API_TOKEN",
            "CONFLUENCE_API_TOKEN",
        ],
        &["atlassian.net"],
    ),
];

/// Headers that shape a request and carry nothing of the machine when written out.
const PLAIN_HEADERS: &[&str] = &[
    "accept",
    "accept-encoding",
    "accept-language",
    "accept-charset",
    "content-type",
    "user-agent",
    "cache-control",
    "pragma",
    "if-none-match",
    "if-modified-since",
    "range",
    "x-github-api-version",
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
    "notion-version",
    "x-requested-with",
    "connection",
];

/// Headers whose value is a credential.
const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "x-api-key",
    "api-key",
    "apikey",
    "x-auth-token",
    "private-token",
    "x-token",
    "token",
    "x-goog-api-key",
    "x-figma-token",
];

/// What a request header (`-H 'Name: value'`) carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Header {
    /// A plain header written out (`Accept: application/json`).
    Plain,
    /// A credential: the variable that holds it (`$GITHUB_TOKEN`), or `None` for what one
    /// command substitution prints (`$(gh auth token)`).
    Token(Option<String>),
    /// Anything else: it may carry anything off this machine.
    Other,
}

/// What a header's word carries.
pub(super) fn header(word: &Word) -> Header {
    let text = word.text.as_str();
    let (name, value) = match text.split_once(':') {
        Some((name, value)) => (name.trim(), value.trim()),
        // `-H 'X-Empty;'`: a header sent empty.
        None => match text.strip_suffix(';') {
            Some(name) => (name.trim(), ""),
            None => return Header::Other,
        },
    };
    let name = name.to_ascii_lowercase();
    if PLAIN_HEADERS.contains(&name.as_str()) && !word.dynamic {
        return Header::Plain;
    }
    if !CREDENTIAL_HEADERS.contains(&name.as_str()) || !word.dynamic {
        return Header::Other;
    }
    credential(value).map_or(Header::Other, Header::Token)
}

/// The credential a header's value (or `--oauth2-bearer`'s) names: one variable or one
/// command substitution, after an optional scheme (`Bearer`, `token`).
pub(super) fn credential(value: &str) -> Option<Option<String>> {
    let value = value.trim();
    let value = match value.split_once(' ') {
        Some((scheme, rest)) if scheme.chars().all(|c| c.is_ascii_alphabetic()) => rest.trim(),
        Some(_) => return None,
        None => value,
    };
    if value == "$(…)" {
        return Some(None);
    }
    let name = value.strip_prefix('$')?;
    let name = name
        .strip_prefix('{')
        .and_then(|name| name.strip_suffix('}'))
        .unwrap_or(name);
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| Some(name.to_string()))
}

/// The API hosts of the service whose token this variable holds.
pub(super) fn variable_hosts(name: &str) -> Option<&'static [&'static str]> {
    SERVICES
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, hosts)| *hosts)
}

/// The API hosts of the service whose token a segment prints: `gh auth token`, `gcloud
/// auth print-access-token` (also `application-default`, `print-identity-token`), `az
/// account get-access-token` printed bare (`--query accessToken -o tsv`).
pub(super) fn printed_token_hosts(segment: &Segment) -> Option<&'static [&'static str]> {
    if segment.redirected || segment.piped {
        return None;
    }
    let words: Vec<&str> = segment
        .words
        .iter()
        .map(|word| (!word.dynamic).then_some(word.text.as_str()))
        .collect::<Option<_>>()?;
    let (program, arguments) = words.split_first()?;
    let operands: Vec<&str> = arguments
        .iter()
        .copied()
        .filter(|word| !word.starts_with('-'))
        .collect();
    match (basename(program), operands.as_slice()) {
        ("gh", ["auth", "token"]) if arguments.len() == 2 => Some(&["api.github.com"]),
        ("gcloud", ["auth", print] | ["auth", "application-default", print])
            if matches!(*print, "print-access-token" | "print-identity-token") =>
        {
            Some(&["googleapis.com"])
        }
        ("az", ["account", "get-access-token", ..]) => {
            Some(&["management.azure.com", "graph.microsoft.com"])
        }
        _ => None,
    }
}

/// Whether a literal HTTPS URL reaches one of `hosts` at an address that does not hold
/// secrets.
pub(super) fn reaches_own_api(url: &str, hosts: &[&str]) -> bool {
    if !url
        .get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
    {
        return false;
    }
    let host = url_host(url);
    let own = hosts
        .iter()
        .any(|own| host == *own || host.strip_suffix(own).is_some_and(|sub| sub.ends_with('.')));
    own && !holds_secrets(url)
}

/// An address whose answer holds secrets' values: `…/secrets/…`, CI and hosting
/// variables (`/projects/1/variables`, `/config-vars`, `…/env?decrypt=true`), tokens and
/// credentials listed.
fn holds_secrets(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = rest
        .find('/')
        .map_or("", |at| &rest[at..])
        .to_ascii_lowercase();
    let (path, query) = path.split_once('?').unwrap_or((&path, ""));
    if query.contains("decrypt") {
        return true;
    }
    path.split(['/', ':']).any(|segment| {
        segment.contains("secret")
            || segment.contains("credential")
            || segment.contains("password")
            || matches!(
                segment,
                "variables"
                    | "env"
                    | "envs"
                    | "env-vars"
                    | "env_vars"
                    | "environment-variables"
                    | "environment_variables"
                    | "config-vars"
                    | "config_vars"
                    | "token"
                    | "tokens"
            )
            || segment.ends_with("-tokens")
            || segment.ends_with("_tokens")
            || segment.ends_with("-keys")
            || segment.ends_with("_keys")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str) -> Word {
        Word {
            text: text.to_string(),
            dynamic: text.contains('$'),
            ..Word::default()
        }
    }

    #[test]
    fn headers_are_plain_credentials_or_anything() {
        assert_eq!(header(&word("Accept: application/json")), Header::Plain);
        assert_eq!(header(&word("X-Empty;")), Header::Other);
        assert_eq!(
            header(&word("Authorization: Bearer $GITHUB_TOKEN")),
            Header::Token(Some("GITHUB_TOKEN".into()))
        );
        assert_eq!(
            header(&word("x-api-key: ${ANTHROPIC_API_KEY}")),
            Header::Token(Some("ANTHROPIC_API_KEY".into()))
        );
        assert_eq!(
            header(&word("Authorization: Bearer $(…)")),
            Header::Token(None)
        );
        // A plain header's value computed, a credential written out, or more than one
        // value: anything.
        assert_eq!(header(&word("Accept: $FORMAT")), Header::Other);
        assert_eq!(header(&word("Authorization: Bearer abc123")), Header::Other);
        assert_eq!(header(&word("Authorization: Bearer $A$B")), Header::Other);
        assert_eq!(header(&word("X-Debug: $(…)")), Header::Other);
    }

    #[test]
    fn a_token_reaches_only_its_own_services_hosts_over_https() {
        let github = variable_hosts("GITHUB_TOKEN").unwrap_or_default();
        assert!(reaches_own_api("https://api.github.com/repos/o/r", github));
        assert!(!reaches_own_api("http://api.github.com/repos/o/r", github));
        assert!(!reaches_own_api(
            "https://api.github.com.evil.example/x",
            github
        ));
        assert!(!reaches_own_api(
            "https://evilapi.github.com.example/x",
            github
        ));
        assert!(!reaches_own_api("https://github.com/o/r", github));
        let google = &["googleapis.com"];
        assert!(reaches_own_api("https://run.googleapis.com/v2/x", google));
        assert!(!reaches_own_api("https://notgoogleapis.com/x", google));
        assert_eq!(variable_hosts("ACME_TOKEN"), None);
    }

    #[test]
    fn addresses_that_hold_secrets_are_not_fetches() {
        let hosts = &["api.example.com"];
        for url in [
            "https://api.example.com/v1/projects/1/variables",
            "https://api.example.com/v1/secrets/db",
            "https://api.example.com/v9/projects/x/env?decrypt=true",
            "https://api.example.com/apps/x/config-vars",
            "https://api.example.com/user/personal-access-tokens",
            "https://api.example.com/v1/projects/p/secrets/db/versions/latest:access",
        ] {
            assert!(!reaches_own_api(url, hosts), "{url}");
        }
        assert!(reaches_own_api("https://api.example.com/v1/models", hosts));
    }
}
