//! Test support: a fresh, empty PostgreSQL database per test.
//!
//! [`fresh_database`] creates a database with a random name and returns its URL. The
//! databases live on one cluster per test process:
//!
//! - when `AIRLOCK_TEST_PG_URL` is set (`scripts/test.sh`, CI), that server: a URL to an
//!   admin database of a role that may `CREATE DATABASE`;
//! - otherwise a throwaway cluster this crate starts the first time it is asked (`initdb`
//!   and `pg_ctl start` in a temporary folder, trust authentication, a free TCP port on
//!   127.0.0.1, `fsync=on` as in production). A watchdog shell stops it and deletes the
//!   folder once the test process is gone, however it ended (exit, panic, `kill -9`).
//!
//! Nothing is ever skipped: when PostgreSQL cannot be started, this panics with the reason
//! (the store's tests must run on PostgreSQL, not pass without it).

// A test helper's way to report that the service under test is missing is to fail the
// test, loudly and with the reason.
#![allow(clippy::panic)]

use sqlx::{Connection, Executor, PgConnection};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The environment variable naming an existing server to create the databases on.
pub const SERVER_URL_VAR: &str = "AIRLOCK_TEST_PG_URL";

/// Creates a new, empty database and returns its URL.
pub async fn fresh_database() -> String {
    let admin_url = tokio::task::spawn_blocking(admin_url)
        .await
        .unwrap_or_else(|error| panic!("starting PostgreSQL: {error}"));
    create_database(&admin_url).await
}

async fn create_database(admin_url: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let name = format!(
        "airlock_test_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = PgConnection::connect(admin_url)
        .await
        .unwrap_or_else(|error| panic!("connecting to the test server {admin_url}: {error}"));
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let mut sweep = false;
    SWEPT.call_once(|| sweep = true);
    if sweep && on_this_machine(admin_url) {
        drop_left_behind(&mut admin).await;
    }
    admin
        .execute(format!("CREATE DATABASE \"{name}\"").as_str())
        .await
        .unwrap_or_else(|error| panic!("creating database {name}: {error}"));
    // Closing is a courtesy; the database is made either way.
    let _ = admin.close().await;
    with_database(admin_url, &name)
}

/// Drops the databases earlier test processes left on a long-lived server (a developer's
/// `AIRLOCK_TEST_PG_URL`): those named for a process that no longer runs. CI's cluster is
/// thrown away whole; a developer's kept a thousand of them. Failures are ignored: the
/// sweep is a courtesy, and a database another process still uses is never named by a
/// dead process id.
async fn drop_left_behind(admin: &mut PgConnection) {
    let names: Vec<(String,)> = match sqlx::query_as(
        "SELECT datname FROM pg_database WHERE datname LIKE 'airlock\\_test\\_%'",
    )
    .fetch_all(&mut *admin)
    .await
    {
        Ok(names) => names,
        Err(_) => return,
    };
    for (name,) in names {
        let pid = name
            .strip_prefix("airlock_test_")
            .and_then(|rest| rest.split('_').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        let alive = pid.is_none_or(|pid| {
            pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
        });
        if !alive {
            let _ = admin
                .execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
                .await;
        }
    }
}

/// Whether the server is on this machine (a loopback host or a socket), where a process id
/// in a database's name can be checked; `/proc` must exist too (Linux).
fn on_this_machine(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = after_scheme.split(['/', '?']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(host, _)| host);
    matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "") && Path::new("/proc/self").exists()
}

/// The URL of the admin database of this process's cluster, starting it on first use.
fn admin_url() -> String {
    static CLUSTER: OnceLock<Result<String, String>> = OnceLock::new();
    let url = CLUSTER.get_or_init(|| match std::env::var(SERVER_URL_VAR) {
        Ok(url) if !url.is_empty() => Ok(url),
        _ => start_cluster(),
    });
    match url {
        Ok(url) => url.clone(),
        Err(reason) => panic!("cannot start a PostgreSQL cluster for the tests: {reason}"),
    }
}

/// `url` with its database (path) replaced by `database`, query string kept.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |index| index + 3);
    let server = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    }
}

/// The folder holding `initdb`, `pg_ctl` and `postgres`: `$AIRLOCK_PG_BIN`, else the
/// newest `/usr/lib/postgresql/<version>/bin`, else whatever `PATH` finds (empty path).
pub fn cluster_bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AIRLOCK_PG_BIN") {
        return PathBuf::from(dir);
    }
    let newest = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version);
    newest.map(|(_, bin)| bin).unwrap_or_default()
}

/// Starts a cluster in a temporary folder, with its watchdog; returns its admin URL.
fn start_cluster() -> Result<String, String> {
    let cluster = PrivateCluster::create()?;
    cluster.start()?;
    Ok(cluster.url)
}

/// A cluster of one test's own, which the test may stop and start again (to see what
/// airlock does while its database is away). Deleted by its watchdog when the test
/// process is gone.
#[derive(Debug)]
pub struct PrivateCluster {
    /// The admin database's URL.
    pub url: String,
    root: PathBuf,
    data: PathBuf,
    port: u16,
    as_root: bool,
}

impl PrivateCluster {
    /// Runs `initdb` in a temporary folder and arms the watchdog; the server is not
    /// running yet.
    pub fn create() -> Result<PrivateCluster, String> {
        let root = tempfile::Builder::new()
            .prefix("airlock-pg-")
            .tempdir()
            .map_err(|error| format!("creating a temporary folder: {error}"))?
            // The watchdog deletes it, after the cluster is stopped.
            .keep();
        // initdb refuses to run as root: the cluster then belongs to `postgres`.
        let as_root = run(Command::new("id").arg("-u"))?.trim() == "0";
        if as_root {
            run(Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&root))?;
        }
        let port = free_port()?;
        let cluster = PrivateCluster {
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            data: root.join("data"),
            root,
            port,
            as_root,
        };
        run(cluster.pg("initdb").arg("-D").arg(&cluster.data).args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ]))?;
        spawn_watchdog(&cluster.root, &cluster.data, &cluster.pg("pg_ctl"))?;
        Ok(cluster)
    }

    fn pg(&self, program: &str) -> Command {
        let program = cluster_bin_dir().join(program);
        if self.as_root {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }

    /// Starts the server (again) on the same port and data.
    pub fn start(&self) -> Result<(), String> {
        let settings = format!(
            "-c listen_addresses=127.0.0.1 -c port={} -c unix_socket_directories={} \
             -c fsync=on -c max_connections=300",
            self.port,
            self.root.display()
        );
        run(self
            .pg("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.root.join("postgres.log"))
            .args(["-w", "-t", "60", "-o", &settings, "start"]))
        .map(drop)
        .map_err(|error| {
            let log = std::fs::read_to_string(self.root.join("postgres.log")).unwrap_or_default();
            format!("{error}\n{log}")
        })
    }

    /// Stops the server at once, as a crash or a network cut would look to its clients.
    pub fn stop(&self) -> Result<(), String> {
        run(self
            .pg("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"]))
        .map(drop)
    }

    /// A new, empty database on this cluster.
    pub async fn fresh_database(&self) -> String {
        create_database(&self.url).await
    }
}

/// Waits (in a shell of its own, immune to the terminal's signals) for this process to
/// vanish, then stops the cluster at once and deletes `root`.
fn spawn_watchdog(root: &Path, data: &Path, pg_ctl: &Command) -> Result<(), String> {
    let quote =
        |text: &std::ffi::OsStr| format!("'{}'", text.to_string_lossy().replace('\'', r"'\''"));
    let stop = std::iter::once(pg_ctl.get_program())
        .chain(pg_ctl.get_args())
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ");
    let script = format!(
        "trap '' INT HUP TERM; while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
         {stop} -D {data} -m immediate stop >/dev/null 2>&1; rm -rf {root}",
        pid = std::process::id(),
        data = quote(data.as_os_str()),
        root = quote(root.as_os_str()),
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(drop)
        .map_err(|error| format!("starting the watchdog: {error}"))
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|error| format!("finding a free port: {error}"))
}

/// Runs `command` to completion; its stdout, or why it failed.
fn run(command: &mut Command) -> Result<String, String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("running {command:?}: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "{command:?} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database named for a process that cannot exist (above Linux's largest pid) is
    /// dropped by the next test process's first database; one of this process stays.
    #[tokio::test]
    async fn databases_of_dead_processes_are_dropped() {
        let url = admin_url();
        if !on_this_machine(&url) {
            panic!("the test server {url} is not on this machine: the sweep cannot be tested");
        }
        let mut admin = PgConnection::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let dead = "airlock_test_4294967295_0_1";
        let _ = admin
            .execute(format!("DROP DATABASE IF EXISTS \"{dead}\"").as_str())
            .await;
        admin
            .execute(format!("CREATE DATABASE \"{dead}\"").as_str())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let own = create_database(&url).await;
        drop_left_behind(&mut admin).await;
        let names: Vec<(String,)> = sqlx::query_as("SELECT datname FROM pg_database")
            .fetch_all(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = names.iter().map(|(name,)| name.as_str()).collect();
        assert!(!names.contains(&dead), "{names:?}");
        let own_name = own.rsplit('/').next().unwrap_or("");
        assert!(names.contains(&own_name), "{own_name} in {names:?}");
    }

    #[test]
    fn only_a_server_on_this_machine_is_swept() {
        assert!(on_this_machine(
            "postgres://airlock@127.0.0.1:54329/postgres"
        ));
        assert!(on_this_machine(
            "postgres://u:p@localhost/postgres?sslmode=disable"
        ));
        assert!(!on_this_machine("postgres://u@db.internal:5432/postgres"));
    }

    #[test]
    fn urls_get_the_new_database() {
        let cases = [
            ("postgres://u@h:5/postgres", "postgres://u@h:5/x"),
            ("postgres://u@h:5", "postgres://u@h:5/x"),
            (
                "postgresql://u:p@h/admin?sslmode=disable",
                "postgresql://u:p@h/x?sslmode=disable",
            ),
        ];
        for (admin, expected) in cases {
            assert_eq!(with_database(admin, "x"), expected);
        }
    }
}
