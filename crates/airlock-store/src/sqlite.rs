//! The embedded SQLite backend: one database file, WAL, `synchronous=FULL` (G7).
//!
//! Every write runs on a single writer connection behind an async mutex, so writes are
//! serialised inside the process and SQLite never answers BUSY between our own writers;
//! writes that arrive together share one `BEGIN IMMEDIATE` transaction and one fsync,
//! each in its own savepoint (group commit, `writer`); a small pool of `query_only` connections serves
//! the plain reads, which WAL lets run beside the writer. Reads that a write depends on
//! (the approval a decision checks, the chain head an audit append extends) are made
//! inside the write transaction, on the writer.
//!
//! The operations themselves are written once for both databases, in `src/sql/`
//! (`store.rs` maps the [`crate::Store`] trait onto them), and compiled here with this backend's
//! `dialect`: its sqlx types and the few things SQLite does its own way. Only what is
//! SQLite's alone lives in this folder:
//!
//! - `dialect`: the types, the chain head (the newest audit record), the aggregated audit
//!   page.
//! - `writer`: the writer connection and its group commit.
//! - `hot_reads`: reader connections lent without the pool, for the reads every allowed
//!   call makes.
//! - `chain`: the audit chain (segments, rows) read on blocking connections of their own, for
//!   verifying a whole chain on every core.

mod chain;
mod dialect;
mod hot_reads;
mod writer;

use crate::codec::database;
use crate::{Change, StoreError, StoreResult};
use sql::calls::Batched;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;
use std::path::Path;
use std::time::Duration;

/// The schema, embedded at build time and brought up to date by [`SqliteStore::open`].
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");

/// How long a connection waits for a lock held by another process (another airlock
/// opening the same file, a backup) before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Read connections. Reads are short; a few cover a 2-core machine.
const READERS: u32 = 4;

/// How much of the database file a reader maps while it reads the audit chain
/// (`dialect::map_file`): the most SQLite allows as built (`SQLITE_MAX_MMAP_SIZE`, just
/// under 2 GiB). Past it, pages are read.
const MAP_BYTES: u64 = 0x7fff_0000;

/// The WAL size, in pages, at which the writer checkpoints after a commit (SQLite's
/// default is 1,000). The batch behind a checkpoint waits while the WAL is copied into
/// the database file and the file is synced: small, frequent checkpoints keep that wait
/// short; the default's longer ones were the gate's slowest percent of answers
/// (BENCHMARKS.md, "The writer's checkpoint size"). Only the writer writes, so only its
/// connection checkpoints.
pub(crate) const CHECKPOINT_PAGES: u32 = 250;

/// The SQLite store. Cheap to share behind an `Arc`.
pub struct SqliteStore {
    /// INVARIANT: every write runs as an operation of this writer (`write_transaction!`).
    writer: writer::Writer,
    readers: SqlitePool,
    /// The hot path's reads (`hot_reads.rs`), on connections of their own.
    hot: hot_reads::HotReaders,
    /// The database file, for the connections `chain.rs` opens.
    path: std::path::PathBuf,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

/// Runs the pending migrations with foreign keys off, as SQLite's procedure for
/// rebuilding a table requires (a migration cannot turn them off itself: sqlx runs each in
/// a transaction, where the pragma is a no-op), then checks every foreign key and turns
/// them on again. A violation fails the open rather than serve a broken database.
async fn migrate(bootstrap: &sqlx::SqlitePool) -> StoreResult<()> {
    let failed = |error: String| StoreError::Database(format!("migrating the schema: {error}"));
    sqlx::query("PRAGMA foreign_keys = OFF")
        .execute(bootstrap)
        .await
        .map_err(database)?;
    MIGRATOR
        .run(bootstrap)
        .await
        .map_err(|error| failed(error.to_string()))?;
    let violations = sqlx::query("PRAGMA foreign_key_check")
        .fetch_all(bootstrap)
        .await
        .map_err(database)?;
    if !violations.is_empty() {
        return Err(failed(format!(
            "{} rows break a foreign key after the migrations",
            violations.len()
        )));
    }
    sqlx::query("PRAGMA foreign_keys = ON")
        .execute(bootstrap)
        .await
        .map_err(database)?;
    Ok(())
}

impl SqliteStore {
    /// Opens (creating the file and its folder if missing) and migrates the database at
    /// `path`. The database holds what is worth as much as the owner's token (the
    /// link-signing key, sessions' hashes, the whole audit), so it is the owner's alone:
    /// a folder made here is `0700`, the file `0600` (its `-wal` and `-shm` take the
    /// file's mode from SQLite), and an existing file that others may read is tightened to
    /// `0600`, with a warning.
    pub async fn open(path: &Path) -> StoreResult<SqliteStore> {
        let owned = path.to_owned();
        tokio::task::spawn_blocking(move || private_files(&owned))
            .await
            .map_err(|error| {
                StoreError::Database(format!("cannot prepare the database: {error}"))
            })??;
        let options = SqliteConnectOptions::new()
            .filename(path)
            .foreign_keys(true)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(BUSY_TIMEOUT);
        // The writer creates the file and switches it to WAL (a persistent setting) before
        // any reader connects. It is opened through a one-connection pool only because
        // migrating through `&Pool` keeps `open`'s future `Send` (through `&mut
        // SqliteConnection` it is not), then detached from it.
        let bootstrap = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(
                options
                    .clone()
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    // Each write runs in a savepoint (group commit); SQLite journals the
                    // pages a savepoint changes, in memory rather than in a temp file.
                    .pragma("temp_store", "MEMORY")
                    .pragma("wal_autocheckpoint", CHECKPOINT_PAGES.to_string()),
            )
            .await
            .map_err(database)?;
        migrate(&bootstrap).await?;
        let writer = bootstrap.acquire().await.map_err(database)?.detach();
        bootstrap.close().await;
        let read_only = options.pragma("query_only", "ON");
        let readers = SqlitePoolOptions::new()
            .max_connections(READERS)
            // A file on this machine does not drop a connection; the check sqlx makes by
            // default before lending one is a round trip to its thread for every read.
            .test_before_acquire(false)
            .connect_with(read_only.clone())
            .await
            .map_err(database)?;
        Ok(SqliteStore {
            writer: writer::Writer::new(writer),
            readers,
            hot: hot_reads::HotReaders::new(read_only),
            path: path.to_owned(),
        })
    }

    /// Closes every connection, waiting for the writer to finish its transaction.
    pub async fn close(self) -> StoreResult<()> {
        self.readers.close().await;
        self.hot.close().await;
        self.writer.close().await
    }
}

/// Makes the database's folder (`0700`) and an empty file (`0600`) when they are missing,
/// before SQLite creates anything; tightens an existing database file, and its `-wal`
/// and `-shm`, that group or others may read or write.
fn private_files(path: &Path) -> StoreResult<()> {
    let failed = |what: &Path, error: std::io::Error| {
        StoreError::Database(format!("cannot create {}: {error}", what.display()))
    };
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        let mut folder = std::fs::DirBuilder::new();
        folder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut folder, 0o700);
        folder
            .create(parent)
            .map_err(|error| failed(parent, error))?;
    }
    let mut file = std::fs::OpenOptions::new();
    file.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
    match file.open(path) {
        // An empty file is a new database to SQLite.
        Ok(_) => return Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(failed(path, error)),
    }
    #[cfg(unix)]
    for suffix in ["", "-wal", "-shm"] {
        use std::os::unix::fs::PermissionsExt;
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = Path::new(&name);
        let Ok(metadata) = std::fs::metadata(file) else {
            continue;
        };
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 == 0 {
            continue;
        }
        match std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode & 0o700)) {
            Ok(()) => tracing::warn!(
                file = %file.display(),
                was = %format!("{mode:o}"),
                "the database could be read by other users; it is now the owner's alone (0600)"
            ),
            Err(error) => tracing::warn!(
                file = %file.display(),
                %error,
                "the database can be read by other users, and its mode cannot be changed: \
                 it holds the link-signing key; make it the owner's alone (chmod 600)"
            ),
        }
    }
    Ok(())
}

/// Runs `$body` (an expression using `$conn: &mut SqliteConnection`, returning a
/// `Result`) as one write operation on the writer (`writer.rs`): it is committed, in a
/// group commit with whatever runs beside it, when it returns `Ok` — and the macro
/// returns only after that commit — and rolled back to nothing when it returns `Err`. If
/// the caller's future is dropped midway, its writes are rolled back before the next
/// operation runs.
macro_rules! write_transaction {
    ($store:expr, |$conn:ident| $body:expr) => {{
        let mut operation = $store.writer.begin().await?;
        let outcome = match operation.conn() {
            Ok($conn) => $body.await,
            Err(error) => Err(error.into()),
        };
        operation.finish(outcome).await
    }};
}

/// The store the shared operations (`sql/store.rs`, `sql/notify.rs`) are implemented on.
type Backend = SqliteStore;

impl SqliteStore {
    /// The connections plain reads run on.
    fn reads(&self) -> &SqlitePool {
        &self.readers
    }

    /// A reader connection for one of the hot path's reads (`hot_reads.rs`).
    async fn lend_reader(&self) -> StoreResult<hot_reads::Lent<'_>> {
        self.hot.lend().await
    }

    /// [`crate::Store::long_reads_at_once`]: one a core, at least two, and at most all
    /// the pool's readers but one, which stays free for everything else.
    fn long_reads(&self) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        cores.clamp(2, READERS as usize - 1)
    }

    /// [`crate::Store::chain_reader`]: a connection of its own (`chain.rs`).
    fn open_chain_reader(&self) -> StoreResult<Option<Box<dyn crate::ChainReader>>> {
        Ok(Some(Box::new(chain::Reader::open(&self.path)?)))
    }

    /// Write transactions committed since the store opened.
    fn committed(&self) -> u64 {
        self.writer.commits()
    }

    /// Records a call that needs no approval in the writer's next batch.
    async fn record_batched(&self, batched: Batched) -> StoreResult<()> {
        self.writer.record_call(batched).await
    }

    /// One process serves the file: there is no other node to hear from.
    async fn changes(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
        Ok(None)
    }
}

// The operations, written once for both backends; declared after `write_transaction!`,
// which they use.
#[path = "sql/mod.rs"]
mod sql;

#[cfg(test)]
mod tests;
