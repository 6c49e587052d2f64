//! What a command's words say it does beyond the table's classes: tasks and scripts named
//! for deploying, installing or wiping (`names.rs`), GraphQL queries, migrations with the
//! production settings (`console.rs`), Windows' persistence, process environments listed,
//! make variables that run, Kubernetes Secrets printed; database clients' queries
//! (`sql.rs`); `npm init`; what a command does with secrets a loader put in its
//! environment.

use super::*;

impl Judge<'_> {
    /// The classes a command's own words add, whatever its operands.
    pub(super) fn words_effects(
        &mut self,
        program: &str,
        name: &str,
        arguments: &[Word],
        segment: &Segment,
        dry: bool,
        facts: &mut SegmentFacts,
    ) {
        // What earlier segments exported counts as this command's own prefix
        // (`export DATABASE_URL="$PROD_DATABASE_URL"; npx jest`).
        let widened;
        let segment = if self.exported.is_empty() {
            segment
        } else {
            widened = Segment::of(
                self.exported
                    .iter()
                    .chain(&segment.words)
                    .cloned()
                    .collect(),
            );
            &widened
        };
        // The project's task or script named for deploying (`npm run deploy`, `./deploy.sh`)
        // or wiping a database (`npm run db:reset`), a module fetched and run.
        let named = named_effects(program, name, arguments, facts.classes, dry);
        facts.classes.extend(named);
        // GitLab's API hands out CI/CD variables with their values; a package manager's
        // configuration read for a registry token prints it.
        // `--print-secrets`, `--reveal-secrets`, `--include-env`: an option naming secrets shown.
        if names::prints_stored_secret(name, arguments)
            || names::reveals_secrets_by_option(arguments)
        {
            facts.classes.insert(Class::CredentialAccess);
        }
        if names::graphql_reads(name, arguments) {
            facts.classes = remove(facts.classes, Class::VcsRemote);
            facts.classes.insert(Class::ReadOnly);
        }
        if facts.classes.contains(Class::Build) && !dry {
            facts
                .classes
                .extend(console::migration_effects(name, arguments, segment));
        }
        // `DATABASE_URL="$PROD_DATABASE_URL" pytest`: the project's work given production's
        // settings by a variable named for them works on production.
        if facts.classes.contains(Class::Build)
            && !dry
            && console::expands_production_variable(segment)
        {
            facts.classes.insert(Class::Deploy);
        }
        // `nix develop github:o/r`: code from elsewhere fetched and run, as `npx github:o/r`.
        if services::listens_on_every_interface(name, arguments) {
            facts.classes.insert(Class::Network);
        }
        // `BASE_URL=https://staging.example.com npx playwright test`: the tests exercise a
        // deployed site. `ffmpeg -f x11grab …`: the screen recorded; `-i rtsp://…`: a
        // camera's stream on the network.
        if !dry && reach::tests_remote_site(name, arguments, segment) {
            facts.classes.insert(Class::Network);
        }
        // `pytest --ds=app.settings.production`, `RAILS_ENV=production rspec`: the tests run
        // against production's databases and services.
        // A database of another host given to the tests (`DATABASE_URL=postgres://…@db.…`,
        // .NET's `ConnectionStrings__Default='Server=tcp:x.database.windows.net;…'`) is
        // worked on too.
        if !dry
            && reach::runs_tests(name, arguments)
            && (console::production(arguments, segment)
                || console::remote_database(arguments, segment))
        {
            facts.classes.insert(Class::Deploy);
        }
        match reach::ffmpeg_records(name, arguments) {
            Some(true) => facts.classes.insert(Class::CredentialSearch),
            Some(false) => facts.classes.insert(Class::Network),
            None => {}
        }
        if nix_fetches_expression(name, arguments) {
            facts.classes = remove(facts.classes, Class::Build);
            facts.classes.insert(Class::Install);
        }
        // macOS's unified log searched for secrets' names (`log show --predicate
        // 'eventMessage CONTAINS "password"'`) hunts for them in every process's messages.
        if name == "log"
            && arguments
                .first()
                .is_some_and(|word| matches!(word.text.as_str(), "show" | "stream"))
            && arguments.windows(2).any(|pair| {
                pair[0].text == "--predicate"
                    && self
                        .table
                        .credential_words
                        .iter()
                        .any(|word| pair[1].text.to_ascii_lowercase().contains(word.as_str()))
            })
        {
            facts.classes.insert(Class::CredentialSearch);
        }
        // `reg add …\CurrentVersion\Run` persists; `wmic process call create` runs.
        if let Some(class) = windows::classes(name, arguments) {
            facts.classes.insert(class);
        }
        // `ps e`, `ps eww`: the environment of every process, secrets included.
        if environment::lists_process_environments(name, arguments) {
            facts.classes.insert(Class::CredentialSearch);
        }
        // `make CC='sh -c "…"'`: a variable given a shell line runs it in the recipes.
        if make_variable_runs(name, arguments) || self.make_variable_places(name, arguments) {
            facts.classes.insert(Class::Unknown);
        }
        // `ifconfig eth0 down`, `ifconfig eth0 10.0.0.2`: an interface given settings.
        if name == "ifconfig" && operands(arguments).len() > 1 {
            facts.classes = remove(facts.classes, Class::ReadOnly);
            facts.classes.insert(Class::Privilege);
        }
        // `curl --resolve pypi.org:443:203.0.113.77 …`: a well-known name sent to an address
        // of the line's choosing (a loopback one tests the developer's own server).
        if name == "curl" && redirects_names(arguments) {
            facts.classes.insert(Class::Network);
        }
        // `gitleaks detect --redact`: the secrets it finds are masked in what it prints.
        if name == "gitleaks"
            && arguments
                .iter()
                .any(|word| word.text.starts_with("--redact"))
        {
            facts.classes = remove(facts.classes, Class::CredentialSearch);
            facts.classes.insert(Class::ReadOnly);
        }
        if name == "kubectl" {
            if let Some(class) = kube::secret_data(arguments) {
                facts.classes.insert(class);
            }
        }
    }

    /// `make clean CLEAN_DIRS='~/.config ~/.local/share'`: a make variable that names the
    /// user's own files outside the work area hands them to recipes nobody has read here.
    fn make_variable_places(&self, name: &str, arguments: &[Word]) -> bool {
        matches!(name, "make" | "gmake")
            && arguments.iter().any(|word| {
                word.text.split_once('=').is_some_and(|(variable, value)| {
                    !variable.starts_with('-')
                        && value.split_whitespace().any(|part| {
                            self.context.resolve(part).is_some_and(|path| {
                                !self.inside_work_area(&path)
                                    && self
                                        .context
                                        .home()
                                        .is_some_and(|home| below(&path, home).is_some())
                            })
                        })
                })
            })
    }

    /// A database client given its query on the line: a read, or what the table says.
    pub(super) fn database_query(
        &mut self,
        name: &str,
        arguments: &[Word],
        segment: &Segment,
        fed: bool,
        cwd: Option<&str>,
        facts: &mut SegmentFacts,
    ) {
        // A database asked one query that only reads and names no secret material (no
        // password, hash or token column): on this machine; on another, also with no
        // secret written on the line (`PGPASSWORD=…`, a password in the URL).
        // `nc localhost 6379`, `redis-cli GET k`: a service of this machine's own, asked
        // something as `curl localhost` asks it.
        if !fed
            && (services::local_redis_read(name, arguments)
                || services::local_mongo_read(name, arguments))
        {
            facts.classes = remove(facts.classes, Class::Network);
            facts.classes.insert(Class::ReadOnly);
        }
        if services::port_scan(name, arguments) {
            facts.classes = remove(facts.classes, Class::ReadOnly);
            facts.classes.insert(Class::Network);
        }
        if services::local_socket(name, arguments) {
            facts.classes = remove(facts.classes, Class::Network);
            facts.classes.insert(Class::Fetch);
        }
        // `pg_dump -h localhost app_dev -f /tmp/app.sql`: this machine's database read into a
        // file, judged where the file lies.
        if !fed {
            if let Some(outputs) = sql::local_dump(name, arguments) {
                facts.classes = remove(remove(facts.classes, Class::Unknown), Class::Network);
                facts.classes.insert(Class::ReadOnly);
                for output in &outputs {
                    facts.files.push(self.file(output, cwd, Role::Change));
                }
            }
        }
        if let Some(client) = sql::client_queries(name, arguments) {
            let reads = client
                .queries
                .iter()
                .all(|query| sql::reads_harmlessly(query))
                && (client.local || !sql::secret_on_line(name, &segment.words));
            if reads && !fed {
                facts.classes = remove(facts.classes, Class::Network);
                // `sqlite3` and `duckdb` are not in the table: unknown only for being
                // unlisted.
                if matches!(name, "sqlite3" | "duckdb") {
                    facts.classes = remove(facts.classes, Class::Unknown);
                }
                facts.classes.insert(Class::ReadOnly);
            }
            // `sqlite3 FILE "DELETE …"`: rows changed in that file and nothing else, an
            // edit of the file, judged by where it is (inside the project, an edit there).
            let edits_file = !reads
                && !fed
                && name == "sqlite3"
                && client.file.is_some()
                && client
                    .queries
                    .iter()
                    .all(|query| sql::changes_own_file_only(query));
            if edits_file {
                facts.classes = remove(facts.classes, Class::Unknown);
                facts.classes.insert(Class::Write);
            }
            if let Some(file) = client.file {
                let role = if edits_file { Role::Change } else { Role::Read };
                facts.files.push(self.file(file, cwd, role));
            }
        }
    }
}

impl Judge<'_> {
    /// `npm init -y` writes a package.json where it runs; `npm init vite` fetches and runs
    /// the package `create-vite`, which the table's `install` stands for (false: judged
    /// as the table says).
    #[cold]
    pub(super) fn package_init(
        &self,
        name: &str,
        texts: &[&str],
        cwd: &Cwd,
        facts: &mut SegmentFacts,
    ) -> bool {
        let plain = matches!(name, "npm" | "pnpm" | "yarn" | "bun")
            && texts[1..].iter().all(|text| text.starts_with('-'))
            && !texts
                .iter()
                .any(|text| text.starts_with("-w") || text.starts_with("--workspace"));
        if plain {
            facts.classes.insert(Class::Write);
            let manifest = self.path("package.json", false, cwd.as_deref(), Role::Change);
            facts.files.push(manifest);
        }
        plain
    }
}

/// A command run with secrets loaded into its environment: printing the environment or
/// sending anything off the machine hands them out (`dotenv -e .env -- printenv`,
/// `op run -- curl "…?k=$API_KEY"`), and with production's the project's own work acts on
/// production (`doppler run --config prd -- npm run db:migrate`).
pub(super) fn loaded_secrets_effects(classes: &mut ClassSet, production: bool) {
    if classes.contains(Class::CredentialSearch) || classes.contains(Class::Network) {
        classes.insert(Class::CredentialAccess);
    }
    if production && classes.contains(Class::Build) {
        classes.insert(Class::Deploy);
    }
}

/// `curl --resolve HOST:PORT:ADDRESS` or `--connect-to HOST:PORT:HOST2:PORT2` to an address
/// that is not this machine's.
fn redirects_names(arguments: &[Word]) -> bool {
    let mut words = arguments.iter();
    let mut values = Vec::new();
    while let Some(word) = words.next() {
        match word.text.split_once('=') {
            Some(("--resolve" | "--connect-to", value)) => {
                values.push((value.to_owned(), word.dynamic))
            }
            _ if matches!(word.text.as_str(), "--resolve" | "--connect-to") => {
                if let Some(value) = words.next() {
                    values.push((value.text.clone(), value.dynamic));
                }
            }
            _ => {}
        }
    }
    values.iter().any(|(value, dynamic)| {
        *dynamic
            || value.splitn(3, ':').nth(2).is_none_or(|target| {
                // An IPv6 address is written in brackets (`[::1]`), a list with commas.
                let target = target.trim_start_matches('+');
                let address = match target.strip_prefix('[') {
                    Some(inside) => inside.split(']').next().unwrap_or(""),
                    None => target.split([',', ':']).next().unwrap_or(""),
                };
                let local =
                    address == "localhost" || address.starts_with("127.") || address == "::1";
                let rest_local = target.split(',').skip(1).all(|other| {
                    let other = other.trim_start_matches('[').trim_end_matches(']');
                    other == "::1" || other.starts_with("127.") || other == "localhost"
                });
                // (An empty second host of `--connect-to` keeps the name's own.)
                !((address.is_empty() && !target.starts_with('[')) || (local && rest_local))
            })
    })
}
