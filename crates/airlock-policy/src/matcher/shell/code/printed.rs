//! Code that prints a value kept under a secret's name (`print(settings.DATABASES
//! ['default']['PASSWORD'])`, `console.log(cfg.get("api_key"))`): the secret lands in the
//! transcript, which is reading it.

/// Calls that show a value.
const OUTPUTS: &[&str] = &[
    "print(",
    "pprint(",
    "console.log(",
    "console.dir(",
    "console.error(",
    "puts ",
    "puts(",
    "pp ",
    "pp(",
    "p(",
    "println",
    "system.out.print",
    "fmt.print",
    "echo ",
    "var_dump(",
    "print_r(",
    "dump(",
    "dd(",
    "write-host",
    "write-output",
];

/// Openings of a key looked up by name: `['x']`, `.get("x"`, `getenv('x'`, `.fetch('x'`.
const LOOKUPS: &[&str] = &[
    "[",
    "get(",
    "getenv(",
    "fetch(",
    "getattr(settings, ",
    "config(",
];

/// Whether `code` (with `lower`, its lower-case text) shows a value it looks up under a
/// name that says it is a secret.
pub(super) fn prints_secret_key(code: &str, lower: &str) -> bool {
    // Code that parses what is piped to it (`curl …/login | python3 -c "…print(json.load(
    // sys.stdin)['token'])"`) shows what the line's own commands produced, judged there.
    let reads_input = ["stdin", "readfilesync(0", "/dev/stdin", "argf", "readline("]
        .iter()
        .any(|input| lower.contains(input));
    !reads_input && shows_secret_key(code, lower)
}

/// Whether `code` shows a value it looks up under a secret's name, whatever it reads
/// (what it parses from its input included).
pub(super) fn shows_secret_key(code: &str, lower: &str) -> bool {
    if !shows_anything(lower) {
        return false;
    }
    attributes(code).any(|(name, after)| {
        // Django's `DATABASES` shown whole holds every connection's password.
        let whole = name == "DATABASES" && !after.trim_start().starts_with('[');
        (secret_attribute(name) || whole) && shown(after)
    }) || shows_secret_getter(lower)
        || shows_secret_columns(code)
        || LOOKUPS.iter().any(|lookup| {
            code.match_indices(lookup).any(|(at, _)| {
                let rest = code[at + lookup.len()..].trim_start();
                let Some(quote) = rest.chars().next().filter(|c| matches!(c, '\'' | '"')) else {
                    return false;
                };
                let Some(key) = rest[1..].split(quote).next() else {
                    return false;
                };
                // What follows the lookup's closing quote and bracket.
                let after = rest[1 + key.len()..]
                    .strip_prefix(quote)
                    .map(|after| after.trim_start_matches([']', ')']));
                after.is_some_and(|after| {
                    if !(secret_key(key) || (*lookup == "config(" && secret_section(key))) {
                        return false;
                    }
                    let shown_here = shown(after) && !answered_about(&code[..at]);
                    // The whole value of an assignment (`pw = os.getenv('DB_PASSWORD')`)
                    // is shown where its variable is.
                    let whole = after
                        .trim_start_matches([' ', '\t'])
                        .starts_with(['\n', ';'])
                        || after.trim().is_empty();
                    match assigned_name(code, at) {
                        Some(name) if shown_here || whole => shown_later(code, at, name),
                        _ => shown_here,
                    }
                })
            })
        })
}

/// An ORM's projection naming a secret column, in code that shows values
/// (`puts User.pluck(:email, :encrypted_password)`, `print(list(User.objects.values_list(
/// 'email', 'password')))`): the column's values are printed.
fn shows_secret_columns(code: &str) -> bool {
    const PROJECTIONS: &[&str] = &["pluck(", "values_list(", "values(", "select(", "only("];
    PROJECTIONS.iter().any(|projection| {
        code.match_indices(projection).any(|(at, _)| {
            code[at + projection.len()..]
                .split(')')
                .next()
                .is_some_and(|arguments| {
                    arguments.split(',').any(|column| {
                        let column = column
                            .trim()
                            .trim_start_matches(':')
                            .trim_matches(['\'', '"']);
                        !column.is_empty()
                            && column
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '_')
                            && secret_key(column)
                    })
                })
        })
    }) && shows_anything(&code.to_ascii_lowercase())
}

/// A library's call that hands out a stored secret, shown as it comes back
/// (`print(get_token())` of `huggingface_hub`, `console.log(await getAccessToken())`).
fn shows_secret_getter(lower: &str) -> bool {
    const GETTERS: &[&str] = &[
        "get_token(",
        "gettoken(",
        "get_access_token(",
        "getaccesstoken(",
        "get_api_key(",
        "getapikey(",
        "get_secret(",
        "getsecret(",
        "get_password(",
        "getpassword(",
    ];
    GETTERS.iter().any(|getter| {
        lower.match_indices(getter).any(|(at, _)| {
            // Inside an output call of the same statement, and what follows the call's
            // arguments (none nested: `get_token()`, `get_secret('name')`) shows it.
            let statement = lower[..at].rfind([';', '\n']).map_or(0, |end| end + 1);
            let rest = &lower[at + getter.len()..];
            starts_a_name(lower, at)
                && shows_anything(&lower[statement..at])
                && rest
                    .split_once(')')
                    .is_some_and(|(arguments, after)| !arguments.contains('(') && shown(after))
        })
    })
}

/// Whether the code calls one of [`OUTPUTS`] by its own name: `p(` is Ruby's, `map(`,
/// `setup(` and `sleep(` only end like it.
fn shows_anything(lower: &str) -> bool {
    OUTPUTS.iter().any(|output| {
        lower
            .match_indices(output)
            .any(|(at, _)| starts_a_name(lower, at))
    })
}

/// Whether the name found at `at` is a whole name, not the end of a longer one.
fn starts_a_name(lower: &str, at: usize) -> bool {
    !lower[..at]
        .chars()
        .next_back()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether a value is shown as it is, by what follows it: the end of the call or of an
/// argument, a concatenation or a slice. A test of it (`… else 'missing'`,
/// `.startswith('sk-')`, `is None`, `== …`) shows only an answer about it.
fn shown(after: &str) -> bool {
    let after = after.trim_start();
    after.is_empty() || after.starts_with([')', ',', '+', '}', ';', '[', '\n', '"', '\''])
}

/// Whether the value looked up just after `before` is handed to a call that answers only
/// something about it (`bool(os.getenv('TOKEN'))`, `len(os.environ['API_KEY'])`,
/// `'*' * len(…)`, `!!process.env['SECRET']`): its length or presence, never the value.
fn answered_about(before: &str) -> bool {
    // The lookup's receiver (`os.`, `os.environ`, `config`) is passed over first.
    let before = before
        .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        .trim_end();
    [
        "bool(", "len(", "hash(", "Boolean(", "!!", "isset(", "empty(", "strlen(", "not ",
    ]
    .iter()
    .any(|call| before.ends_with(call))
}

/// The variable the statement around `at` assigns (`url = f"…{os.getenv('PW')}…"`, `const
/// key = process.env['KEY']`), if it is an assignment.
fn assigned_name(code: &str, at: usize) -> Option<&str> {
    let start = code[..at].rfind(['\n', ';']).map_or(0, |end| end + 1);
    let statement = code[start..at].trim_start();
    let statement = ["const ", "let ", "var ", "local ", "my "]
        .iter()
        .find_map(|keyword| statement.strip_prefix(keyword))
        .unwrap_or(statement);
    let end = statement
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(statement.len());
    let (name, rest) = statement.split_at(end);
    let rest = rest.trim_start();
    (name.len() >= 2 && rest.starts_with('=') && !rest.starts_with("==")).then_some(name)
}

/// Whether a line after the one at `at` shows, returns or logs the variable `name`;
/// handing it to a call (`engine = create_engine(url)`) is none of these. (Text built from
/// it and shown later is not followed.)
fn shown_later(code: &str, at: usize, name: &str) -> bool {
    let after = &code[at..];
    let after = after.find('\n').map_or("", |line_end| &after[line_end..]);
    after.lines().any(|line| {
        let lower = line.to_ascii_lowercase();
        names_word(line, name)
            && (shows_anything(&lower)
                || ["return", "log", "yield"]
                    .iter()
                    .any(|mark| lower.contains(mark)))
            && !uses_only(line, name)
    })
}

/// Whether `line` names `name` as a whole word.
fn names_word(line: &str, name: &str) -> bool {
    line.match_indices(name).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        let part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !part(before) && !part(after)
    })
}

/// `x = call(name)`: the line assigns what a call made of the value, passed as the call's
/// only argument and nothing else of the line names it or shows anything.
fn uses_only(line: &str, name: &str) -> bool {
    let trimmed = line.trim();
    let Some((target, value)) = trimmed.split_once('=') else {
        return false;
    };
    let value = value.trim();
    !value.starts_with('=')
        && target
            .trim()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !shows_anything(&value.to_ascii_lowercase())
        && value
            .strip_suffix(&format!("({name})"))
            .is_some_and(|call| {
                !call.is_empty()
                    && call
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            })
}

/// The names code reads as attributes (`settings.SECRET_KEY`, `cfg.auth.jwtSecret`), each
/// with the text after it.
fn attributes(code: &str) -> impl Iterator<Item = (&str, &str)> {
    code.match_indices('.').filter_map(|(at, _)| {
        let rest = &code[at + 1..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            .then_some((name, &rest[end..]))
    })
}

/// A Laravel configuration section that holds credentials whole: its connections'
/// passwords (`database`), its third-party services' keys (`services`, `services.stripe`),
/// its mailers' (`mail`).
fn secret_section(key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    matches!(
        parts.as_slice(),
        ["database" | "mail" | "services"]
            | ["services", _]
            | ["database", "connections"]
            | ["database", "connections", _]
            | ["mail", "mailers"]
            | ["mail", "mailers", _]
    )
}

/// An attribute named as a secret: a constant's name as a key's (`SECRET_KEY`,
/// `GITHUB_TOKEN`), or a field's ending in a secret's word (`stripe_secret_key`,
/// `jwtSecret`, `dbPassword`). A field ending in `token` is no secret here: models have
/// `pad_token` and `eos_token`.
fn secret_attribute(name: &str) -> bool {
    if name
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    {
        return secret_key(name);
    }
    // `jwtSecret` → `jwt_secret`: camel case cut into words.
    let mut snake = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    !snake.ends_with("token") && secret_key(&snake)
}

/// A key whose last word names a secret (`PASSWORD`, `SECRET_KEY`, `openai_api_key`,
/// `token`, `DATABASE_URL`), not one that only mentions one (`password_min_length`,
/// `max_tokens`, `keys`).
fn secret_key(key: &str) -> bool {
    // Words split at separators and at camel case (`primaryApiKey`: primary, api, key).
    // A camel-case name ending in `Token` (`nextPageToken`, `csrfToken`) is read as the
    // attributes' are: no secret by its name alone.
    let mut spaced = String::with_capacity(key.len() + 4);
    let mut previous = ' ';
    let mut camel = false;
    for c in key.chars() {
        if c.is_ascii_uppercase() && (previous.is_ascii_lowercase() || previous.is_ascii_digit()) {
            spaced.push(' ');
            camel = true;
        }
        spaced.push(c.to_ascii_lowercase());
        previous = c;
    }
    let words: Vec<&str> = spaced
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    let (last, before) = match words.as_slice() {
        [] => return false,
        [last] => (*last, ""),
        [.., before, last] => (*last, *before),
    };
    match last {
        "token" => !camel,
        "password" | "passwd" | "secret" | "apikey" | "credentials" | "dsn" => true,
        "key" => matches!(
            before,
            "api" | "secret" | "private" | "access" | "signing" | "master"
        ),
        "url" | "uri" => matches!(before, "database" | "db" | "redis" | "mongo" | "postgres"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prints(code: &str) -> bool {
        prints_secret_key(code, &code.to_ascii_lowercase())
    }

    #[test]
    fn a_secret_looked_up_by_name_and_shown_is_printed() {
        for code in [
            "from django.conf import settings; print(settings.DATABASES['default']['PASSWORD'])",
            "import os; print(os.environ['OPENAI_API_KEY'])",
            "import os; print(os.getenv(\"DATABASE_URL\"))",
            "console.log(require('./config.json')['stripe_secret'])",
            "puts ENV.fetch('GITHUB_TOKEN')",
            "import json; print(json.load(open('cfg.json')).get('api_key'))",
            "from django.conf import settings; print(settings.SECRET_KEY)",
            "from tally.config import settings; print(settings.stripe_secret_key)",
            "console.log(require('./config/default.json').auth.jwtSecret)",
            "echo config('services.stripe.secret');",
            "from django.conf import settings; import json; print(json.dumps(settings.DATABASES, default=str))",
            "dump(config('database.connections.mysql.password'))",
            "dump(config('services'))",
            // Kept in a variable that a later line shows, returns or builds text from.
            "import os\nurl = f\"postgresql://u:{os.getenv('POSTGRES_PASSWORD')}@db/app\"\nprint(url)",
            "import os\ntoken = os.environ['GITHUB_TOKEN']\nprint('token ' + token)",
            "const key = process.env['STRIPE_SECRET_KEY'];\nconsole.log(key);",
            "import os\nkey = os.getenv('OPENAI_API_KEY')\nlogger.info(key)\nprint('ok')",
            "import os\npw = os.getenv('DB_PASSWORD')\nprint(f'{pw}')",
            "import os\nprint(os.getenv('API_TOKEN')[:20] + '...')",
        ] {
            assert!(prints(code), "{code}");
        }
    }

    #[test]
    fn names_that_only_mention_a_secret_or_values_not_shown_are_not() {
        for code in [
            "import json; print(json.load(open('c.json'))['max_tokens'])",
            "print(cfg['password_min_length'])",
            "from django.conf import settings; print(settings.DATABASES['default']['NAME'])",
            "dump(config('app.name'))",
            "print(d['keys'])",
            "import os; key = os.environ['API_KEY']; client = make(key)",
            "print(row['token_count'])",
            "print(settings.DEBUG)",
            "import json; c = json.load(open('c.json')); setup(c['password'])",
            "import json, time; c = json.load(open('c.json')); time.sleep(c['token'])",
            "print(tokenizer.pad_token, tokenizer.eos_token)",
            "import os; print('set' if os.getenv('OPENAI_API_KEY') else 'missing')",
            "import os; print(os.environ['OPENAI_API_KEY'].startswith('sk-'))",
            "from django.conf import settings; print(settings.SECRET_KEY is None)",
            "print(model.config.max_position_embeddings)",
            "import sys,json; print(json.load(sys.stdin)['token'])",
            // Only its presence or length shown.
            "import os; print('Token set:', bool(os.getenv('HA_TOKEN')))",
            "import os; print(f'PASSWORD: {\"*\" * len(os.getenv(\"POSTGRES_PASSWORD\", \"\"))}')",
            // Kept in a variable that is only handed to a call.
            "import os\nurl = f\"postgresql://u:{os.getenv('POSTGRES_PASSWORD')}@db/app\"\nengine = create_engine(url)\nprint('connected')",
        ] {
            assert!(!prints(code), "{code}");
        }
    }
}
