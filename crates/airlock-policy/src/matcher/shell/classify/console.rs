//! Frameworks' consoles given code on the line, which runs inside the application with its
//! settings and its database: `rails runner '…'`, `python manage.py shell -c '…'`, `php
//! artisan tinker --execute='…'`. The code is judged as inline code is (the files it
//! touches, what it sends, the secrets it prints), and for what it does to the
//! application's data: a whole table emptied (`Booking.delete_all`,
//! `Contact.objects.all().delete()`, `Order::truncate()`) is work thrown away; mail sent
//! leaves the machine; and any change made with the production settings
//! (`RAILS_ENV=production`, `--env=production`, a `…production` settings module) changes
//! a database elsewhere. Reading, counting and single rows changed in development pass.
//!
//! Migrations and seeds (`rails db:migrate`, `alembic upgrade head`, `npx knex
//! migrate:latest`, `sqlx migrate run`) are the project's work on its development database;
//! run with the production settings, or pointed at a database on another machine by a URL
//! (`--database-url postgres://…prod…`, `-x db_url=…`, `DATABASE_URL=…`), they change a
//! database elsewhere.

use super::*;

/// A console's command: its name, its words, and its segment (for the environment the
/// line gives it).
pub(super) type Console<'w> = (&'w str, &'w [Word], &'w Segment);

/// Code that empties a table or drops it (unless the statement picks rows first).
const EMPTIES: &[&str] = &[
    ".delete_all",
    ".destroy_all",
    ".all().delete()",
    "truncate(",
    "truncate!",
    "->truncate",
    "::truncate",
    "drop_table",
    "drop table",
    "truncate table",
    "delete from",
];

/// Code that sends mail.
const SENDS: &[&str] = &[
    "deliver_now",
    "deliver_later",
    "send_mail(",
    "send_mass_mail(",
    "mail::to(",
    "mail::send(",
    "notification::send(",
    ".send_messages(",
];

/// Code that changes rows.
const CHANGES: &[&str] = &[
    ".clear",
    "create_superuser",
    "create_user",
    "set_password",
    "(&:clear)",
    "(&:destroy)",
    "(&:delete)",
    "perform_later",
    "perform_now",
    "perform_async",
    ".enqueue",
    "reindex",
    ".purge",
    "flushall",
    "flushdb",
    ".update(",
    ".update!",
    ".update_all",
    ".update_column",
    ".save",
    ".create(",
    ".create!",
    ".delete(",
    ".destroy",
    "->update(",
    "->delete(",
    "->save(",
    "->forcedelete(",
    "::create(",
    ".insert(",
    "insert into",
    "update ",
    "bulk_create(",
    "bulk_update(",
];

impl Judge<'_> {
    /// Code a framework runs inside the application (`rails runner 'puts ENV.to_h'`,
    /// `python manage.py shell -c '…'`, `php artisan tinker --execute='…'`), judged as
    /// inline code and for what it does to the application's data; a script file given
    /// instead (`rails runner script/x.rb`) is the project's own. Whether it was.
    pub(super) fn framework_code(
        &mut self,
        (name, arguments, segment): Console<'_>,
        dir: Option<&str>,
        nesting: usize,
        facts: &mut SegmentFacts,
    ) -> bool {
        // `rails console <<'RUBY' … RUBY`, `manage.py shell <<EOF`: the console reads its
        // code from the here-document.
        let here_code = || {
            let text = segment.here_text.clone().flatten()?;
            opens_console(name, arguments).then(|| Word::literal(&text))
        };
        let Some(code) = console_code(name, arguments).or_else(here_code) else {
            return false;
        };
        if code.dynamic {
            facts.classes.insert(self.hidden_code());
        } else if name == "rails"
            && code.text.ends_with(".rb")
            && !code.text.contains([' ', ';', '('])
        {
            facts.classes.insert(Class::Build);
            facts.files.push(self.file(&code, dir, Role::Read));
        } else {
            self.code(&code.text, name, dir, nesting, facts);
            facts
                .classes
                .extend(data_effects(&code.text, production(arguments, segment)));
        }
        true
    }
}

/// A framework's interactive console: `rails console|c`, `manage.py shell`, `php artisan
/// tinker`.
fn opens_console(name: &str, arguments: &[Word]) -> bool {
    let operands: Vec<&str> = arguments
        .iter()
        .filter(|word| !word.text.starts_with('-'))
        .map(|word| word.text.as_str())
        .collect();
    match (name, operands.as_slice()) {
        ("rails", ["console" | "c", ..]) => true,
        ("python" | "python3", [script, "shell", ..]) => script.ends_with("manage.py"),
        ("manage.py" | "django-admin", ["shell", ..]) => true,
        ("php", [artisan, "tinker", ..]) => artisan.ends_with("artisan"),
        _ => false,
    }
}

/// The code a console is given on the line: `rails runner|r CODE`, `python manage.py
/// shell -c|--command CODE` (and `django-admin shell -c`), `php artisan tinker
/// --execute[=]CODE`.
fn console_code(name: &str, arguments: &[Word]) -> Option<Word> {
    let mut operands = arguments.iter().filter(|word| !word.text.starts_with('-'));
    // `-c CODE`, `--execute CODE`, or `--execute=CODE` in one word.
    let option = |names: &[&str]| {
        arguments.iter().enumerate().find_map(|(at, word)| {
            names.iter().find_map(|option| {
                if word.text == *option {
                    return arguments.get(at + 1).cloned();
                }
                let code = word.text.strip_prefix(option)?.strip_prefix('=')?;
                Some(Word {
                    text: code.to_owned(),
                    ..word.clone()
                })
            })
        })
    };
    match name {
        "rails" => {
            // `rails runner -e production CODE`: the environment's name is no code.
            let mut words = arguments.iter();
            let mut operands = Vec::new();
            while let Some(word) = words.next() {
                if matches!(word.text.as_str(), "-e" | "--environment") {
                    words.next();
                } else if !word.text.starts_with('-') {
                    operands.push(word);
                }
            }
            let runner = operands
                .first()
                .is_some_and(|word| matches!(word.text.as_str(), "runner" | "r"));
            operands
                .get(1)
                .filter(|_| runner)
                .map(|word| (*word).clone())
        }
        "python" | "python3" | "django-admin" | "manage.py" => {
            if matches!(name, "python" | "python3")
                && !operands
                    .next()
                    .is_some_and(|word| word.text.ends_with("manage.py"))
            {
                return None;
            }
            operands.next().filter(|word| word.text == "shell")?;
            option(&["-c", "--command"])
        }
        "php" => {
            operands
                .next()
                .filter(|word| word.text.ends_with("artisan"))?;
            operands.next().filter(|word| word.text == "tinker")?;
            option(&["--execute"])
        }
        _ => None,
    }
}

/// Words that name a migration or a seed, as the migration tools spell their commands.
const MIGRATIONS: &[&str] = &[
    "migrate",
    "db:migrate",
    "db:seed",
    "db:setup",
    "db:prepare",
    "migrate:latest",
    "migrate:up",
    "seed:run",
    "db:seed:all",
    "ecto.migrate",
    "upgrade",
    "up",
    "up-by-one",
    "push",
];

/// What a migration or seed does (`alembic upgrade head`, `bin/rails db:migrate`): with the
/// production settings, or with a database URL whose host is another machine, it changes
/// a database elsewhere (`deploy`). Only migration tools' words count: `NODE_ENV=production
/// npm run build` builds.
pub(super) fn migration_effects(name: &str, arguments: &[Word], segment: &Segment) -> ClassSet {
    let mut effects = ClassSet::EMPTY;
    let tool = matches!(
        name,
        "rails"
            | "rake"
            | "manage.py"
            | "alembic"
            | "flask"
            | "knex"
            | "sequelize"
            | "sequelize-cli"
            | "prisma"
            | "drizzle-kit"
            | "diesel"
            | "sqlx"
            | "goose"
            | "migrate"
            | "dbmate"
            | "mix"
            | "dotnet"
            | "php"
            | "python"
            | "python3"
            | "django-admin"
            | "typeorm"
            | "mikro-orm"
            | "flyway"
            | "liquibase"
            | "atlas"
    ) || arguments.iter().any(|word| {
        matches!(
            word.text.as_str(),
            "knex"
                | "sequelize"
                | "sequelize-cli"
                | "prisma"
                | "drizzle-kit"
                | "alembic"
                | "typeorm"
        )
    });
    // `dotnet ef database update`, `diesel migration run`, `sqlx migrate run`.
    let texts: Vec<&str> = arguments.iter().map(|word| word.text.as_str()).collect();
    let migrates = texts
        .iter()
        .any(|text| MIGRATIONS.contains(text) || text.starts_with("migrat"))
        || texts.windows(2).any(|pair| pair == ["database", "update"]);
    if tool && migrates && (production(arguments, segment) || remote_database(arguments, segment)) {
        effects.insert(Class::Deploy);
    }
    if production(arguments, segment) && production_task(name, arguments) {
        effects.insert(Class::Deploy);
    }
    // A Rails application template is Ruby code run against the project: one given by its
    // address (`bin/rails app:template LOCATION=https://…`, `rails new app -m https://…`)
    // is code fetched and run.
    if matches!(name, "rails" | "rake") && remote_template(arguments) {
        effects.insert(Class::RemoteCode);
    }
    effects
}

/// Whether a Rails command applies a template named by a URL (`LOCATION=http…` of
/// `app:template`/`rails:template`, or `-m`/`--template` of `rails new`).
fn remote_template(arguments: &[Word]) -> bool {
    arguments.iter().enumerate().any(|(at, word)| {
        let text = word.text.as_str();
        text.strip_prefix("LOCATION=").is_some_and(is_url)
            || text.strip_prefix("--template=").is_some_and(is_url)
            || (matches!(text, "-m" | "--template")
                && arguments.get(at + 1).is_some_and(|next| is_url(&next.text)))
    })
}

/// A framework's task run with the production settings acts on production's data and
/// services (`RAILS_ENV=production bin/rails searchkick:reindex`, `… manage.py
/// createsuperuser`), unless it only builds or looks (`assets:precompile`, `routes`,
/// `collectstatic`, `check`). Consoles given code are judged by their code
/// (`Judge::framework_code`); a server or a test run stays on this machine.
fn production_task(name: &str, arguments: &[Word]) -> bool {
    let mut operands = arguments
        .iter()
        .filter(|word| !word.text.starts_with('-') && !is_assignment(&word.text));
    match name {
        "rails" | "rake" => operands.next().is_some_and(|task| {
            let task = task.text.as_str();
            !task.starts_with("assets:")
                && !task.starts_with("tmp:")
                && !task.starts_with("log:")
                && !task.starts_with("test")
                && !matches!(
                    task,
                    "runner"
                        | "r"
                        | "console"
                        | "c"
                        | "server"
                        | "s"
                        | "generate"
                        | "g"
                        | "destroy"
                        | "d"
                        | "new"
                        | "routes"
                        | "about"
                        | "stats"
                        | "notes"
                        | "middleware"
                        | "secret"
                        | "version"
                        | "time:zones"
                        | "db:version"
                        | "db:migrate:status"
                        | "zeitwerk:check"
                        | "dbconsole"
                        | "db"
                )
        }),
        "python" | "python3" | "django-admin" | "manage.py" => {
            if matches!(name, "python" | "python3")
                && !operands
                    .next()
                    .is_some_and(|script| script.text.ends_with("manage.py"))
            {
                return false;
            }
            operands.next().is_some_and(|command| {
                !matches!(
                    command.text.as_str(),
                    "check"
                        | "showmigrations"
                        | "compilemessages"
                        | "makemessages"
                        | "diffsettings"
                        | "help"
                        | "version"
                        | "sqlmigrate"
                        | "shell"
                        | "dbshell"
                        | "runserver"
                        | "test"
                )
            })
        }
        // `MIX_ENV=prod mix run priv/repo/seeds.exs`: builds and releases stay here.
        "mix" => operands.next().is_some_and(|task| {
            !matches!(
                task.text.as_str(),
                "compile"
                    | "release"
                    | "phx.digest"
                    | "assets.deploy"
                    | "assets.build"
                    | "deps.get"
                    | "deps.compile"
                    | "format"
                    | "test"
                    | "docs"
                    | "help"
                    | "phx.routes"
                    | "ecto.migrations"
            )
        }),
        _ => false,
    }
}

/// Whether a database URL on the line (an argument, an option's value, a variable the line
/// sets) names a host other than this machine.
pub(super) fn remote_database(arguments: &[Word], segment: &Segment) -> bool {
    assignments_and(arguments, segment).any(|word| {
        let text = word.text.as_str();
        let Some(at) = text.find("://") else {
            return false;
        };
        let start = text[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '+'))
            .map_or(0, |index| index + 1);
        let scheme = text[start..at].to_ascii_lowercase();
        let database = [
            "postgres",
            "postgresql",
            "mysql",
            "mariadb",
            "mongodb",
            "mongodb+srv",
            "sqlserver",
            "mssql",
            "redis",
            "rediss",
            "clickhouse",
            "cockroachdb",
        ]
        .contains(&scheme.as_str());
        database
            && sql::connection_host(&text[start..])
                .is_some_and(|host| !sql::local_host(host.as_deref()))
    }) || assignments_and(arguments, segment)
        .any(|word| keyed_host(&word.text).is_some_and(|host| !sql::local_host(Some(&host))))
}

/// The host an ADO.NET-style connection string names (`Host=db.example.net;Port=5432;…`,
/// `Server=tcp:x.database.windows.net,1433;…`, `Data Source=…`), also given to an option
/// (`--connection=Host=…;…`); SQL Server's own names for this machine (`.`, `(local)`,
/// `(localdb)`, with or without an instance after a backslash: `.\SQLEXPRESS`) are
/// `localhost`.
fn keyed_host(text: &str) -> Option<String> {
    if !text.contains(';') {
        return None;
    }
    text.split(';').find_map(|pair| {
        let (key, value) = pair.rsplit_once('=')?;
        let key = key
            .rsplit('=')
            .next()
            .unwrap_or(key)
            .trim()
            .to_ascii_lowercase();
        if !matches!(
            key.as_str(),
            "host" | "server" | "data source" | "address" | "addr" | "network address"
        ) {
            return None;
        }
        let value = value.trim().trim_start_matches("tcp:");
        // `localhost,1433`: a port after the comma; `.\SQLEXPRESS`: a named instance
        // after the backslash, on the machine before it.
        let host = value
            .split(',')
            .next()
            .unwrap_or(value)
            .to_ascii_lowercase();
        let machine = host.split('\\').next().unwrap_or(&host);
        Some(match machine {
            "." | "(local)" | "(localdb)" => "localhost".to_owned(),
            machine => machine.to_owned(),
        })
    })
}

/// The words that set the line's environment, then the command's arguments.
fn assignments_and<'w>(
    arguments: &'w [Word],
    segment: &'w Segment,
) -> impl Iterator<Item = &'w Word> {
    segment
        .words
        .iter()
        .take_while(|word| is_assignment(&word.text))
        .chain(arguments)
}

/// Whether the console runs with the production settings: an environment variable the
/// line sets (`RAILS_ENV=production`, `DJANGO_SETTINGS_MODULE=app.settings.production`) or
/// an option (`--env=production`, `-e production`, `--settings=…prod…`, pytest-django's
/// `--ds=…production`).
pub(super) fn production(arguments: &[Word], segment: &Segment) -> bool {
    let assignments = segment
        .words
        .iter()
        .take_while(|word| is_assignment(&word.text))
        .filter_map(|word| word.text.split_once('='))
        .any(|(name, value)| {
            matches!(
                name,
                "RAILS_ENV"
                    | "RACK_ENV"
                    | "APP_ENV"
                    | "DJANGO_SETTINGS_MODULE"
                    | "DJANGO_ENV"
                    | "NODE_ENV"
                    | "MIX_ENV"
                    | "FLASK_ENV"
                    | "ASPNETCORE_ENVIRONMENT"
                    | "DOTNET_ENVIRONMENT"
                    | "ENVIRONMENT"
                    | "ENV"
            ) && value.to_ascii_lowercase().contains("prod")
        });
    // (`--database=production`: Django's name for a database of its settings.)
    let options = arguments.windows(2).any(|pair| {
        matches!(
            pair[0].text.as_str(),
            "-e" | "--env" | "--environment" | "--settings" | "--database" | "--ds"
        ) && pair[1].text.to_ascii_lowercase().contains("prod")
    }) || arguments.iter().any(|word| {
        [
            "--env=",
            "--environment=",
            "--settings=",
            "--database=",
            "--ds=",
        ]
        .iter()
        .any(|option| {
            word.text
                .strip_prefix(option)
                .is_some_and(|value| value.to_ascii_lowercase().contains("prod"))
        })
    });
    assignments || options
}

/// Ruby's convention: a method whose name ends in `!` changes its receiver or raises
/// (`u.update!(…)`, `find_each(&:retry_payment!)`); `!=` and a `!` inside a word's string
/// are not one.
fn calls_bang_method(code: &str) -> bool {
    code.match_indices('!').any(|(at, _)| {
        let named = code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let after = code[at + 1..].chars().next();
        named
            && !matches!(after, Some('=' | '\'' | '"'))
            && !after.is_some_and(char::is_alphanumeric)
    })
}

/// What console code does to the application's data.
fn data_effects(code: &str, production: bool) -> ClassSet {
    let lower = code.to_ascii_lowercase();
    let has = |list: &[&str]| list.iter().any(|text| lower.contains(text));
    let mut classes = ClassSet::default();
    let empties = EMPTIES.iter().any(|text| {
        lower.match_indices(text).any(|(at, _)| {
            // `Donation.where(id: [17, 19]).destroy_all`: the rows picked, not the table.
            let statement = lower[..at].rsplit([';', '\n']).next().unwrap_or_default();
            !["where(", "where ", "find", "filter(", "limit(", "exclude("]
                .iter()
                .any(|scope| statement.contains(scope))
        })
    });
    if empties {
        classes.insert(Class::Discard);
    }
    // With production's settings any row written or deleted is production's, the rows
    // picked by a scope too (`Harvest.where(orchard_id: 12).delete_all`).
    let writes_rows = has(EMPTIES)
        || has(&[
            ".update_all",
            ".update_column",
            ".insert_all",
            ".upsert_all",
            ".update(",
            ".create(",
            ".save",
            ".destroy",
            ".delete",
        ]);
    if has(SENDS)
        || (production && (has(CHANGES) || empties || writes_rows || calls_bang_method(code)))
    {
        classes.insert(Class::Network);
    }
    classes
}

/// Whether a word of the segment (an assignment's value or an argument) expands a variable
/// named for production's (or staging's) database or secrets (`DATABASE_URL="$PROD_DATABASE_URL" pytest`,
/// `go test … -dsn "${PRODUCTION_DSN}"`, `$LIVE_API_KEY`): the project's own work pointed
/// at production. A name only containing the letters (`$PRODUCT_ID`) is not one, nor
/// production's site address (`$PRODUCTION_URL`).
pub(super) fn expands_production_variable(segment: &Segment) -> bool {
    segment
        .words
        .iter()
        .filter(|word| word.dynamic)
        .any(|word| {
            word.text.match_indices('$').any(|(at, _)| {
                let rest = word.text[at + 1..].trim_start_matches('{');
                let rest = rest.strip_prefix("env:").unwrap_or(rest);
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let parts: Vec<String> = name.split('_').map(str::to_ascii_lowercase).collect();
                // Staging's database is shared too (`$STAGING_DATABASE_URL`).
                let production = parts.iter().any(|part| {
                    names_production(part) || matches!(part.as_str(), "staging" | "stg")
                });
                // A database's address or a secret of production's, not its site's address.
                let access = parts.iter().any(|part| {
                    matches!(
                        part.as_str(),
                        "dsn"
                            | "database"
                            | "db"
                            | "conn"
                            | "connection"
                            | "pg"
                            | "sql"
                            | "postgres"
                            | "mysql"
                            | "mongo"
                            | "redis"
                            | "key"
                            | "token"
                            | "secret"
                            | "password"
                            | "credentials"
                    )
                });
                production && access
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_emptied_mail_sent_and_production_changed_are_effects() {
        for (code, production, expected) in [
            (
                "Booking.delete_all; Venue.delete_all",
                false,
                vec![Class::Discard],
            ),
            (
                "from contacts.models import Contact; Contact.objects.all().delete()",
                false,
                vec![Class::Discard],
            ),
            (
                "App\\Models\\Order::truncate();",
                false,
                vec![Class::Discard],
            ),
            (
                "UserMailer.weekly_digest(User.first).deliver_now",
                false,
                vec![Class::Network],
            ),
            (
                "Contact.objects.filter(pk=4821).update(do_not_email=True)",
                true,
                vec![Class::Network],
            ),
            (
                "Contact.objects.filter(pk=4821).update(do_not_email=True)",
                false,
                vec![],
            ),
            ("print(Order.objects.count())", true, vec![]),
        ] {
            let classes = data_effects(code, production);
            assert_eq!(classes, ClassSet::of(&expected), "{code}");
        }
    }
}
