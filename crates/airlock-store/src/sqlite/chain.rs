//! The audit chain read on a blocking connection of its own
//! ([`crate::Store::chain_reader`]), for verifying a whole chain on every core: its sealed
//! segments, and the rows after them.
//!
//! Through sqlx a segment is copied three times before it is hashed: SQLite assembles
//! the value from its overflow pages, sqlx duplicates it, and the page copies it into its
//! columns; and every statement is a hand-off to sqlx's thread for the connection. Here
//! the segment's body is read with SQLite's incremental blob I/O straight into the
//! page's buffers (one copy, from the mapped file), on the thread that then hashes it.
//!
//! The connection maps the database file, like the pool's readers do while they read the
//! chain (`dialect::map_file`), and is opened afresh after every [`REMAP_BYTES`] it read,
//! so that the pages it touched leave the process's resident memory as it goes.

use super::{BUSY_TIMEOUT, MAP_BYTES};
use crate::audit_rows::{checked_segment, read_segment, stored_seq, SegmentBody};
use crate::{AuditRows, ChainReader, SegmentRef, StoreError, StoreResult};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

/// Bytes of records a connection reads before it is opened again (see the module
/// comment).
const REMAP_BYTES: usize = 64 * 1024 * 1024;

/// A reader of one store's audit chains.
pub(super) struct Reader {
    path: PathBuf,
    conn: Connection,
    /// Bytes read on `conn` since it was opened.
    read: usize,
    /// [`REMAP_BYTES`], but in tests.
    remap_after: usize,
}

fn failed(error: rusqlite::Error) -> StoreError {
    StoreError::Database(format!("reading the audit chain: {error}"))
}

/// A read-only connection to the file that maps it.
fn connect(path: &Path) -> StoreResult<Connection> {
    // No CREATE: the store opened (and migrated) the file before any reader.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(failed)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(failed)?;
    conn.execute_batch(&format!(
        "PRAGMA query_only = ON; PRAGMA mmap_size = {MAP_BYTES};"
    ))
    .map_err(failed)?;
    Ok(conn)
}

impl Reader {
    /// A new connection once this one has read its share (module comment).
    fn remap_if_due(&mut self) -> StoreResult<()> {
        if self.read >= self.remap_after {
            self.conn = connect(&self.path)?;
            self.read = 0;
        }
        Ok(())
    }

    pub(super) fn open(path: &Path) -> StoreResult<Reader> {
        Ok(Reader {
            path: path.to_owned(),
            conn: connect(path)?,
            read: 0,
            remap_after: REMAP_BYTES,
        })
    }
}

/// A segment's body, read where SQLite keeps it.
struct Blob<'c>(rusqlite::blob::Blob<'c>);

impl SegmentBody for Blob<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn read_at(&mut self, into: &mut [u8], offset: usize) -> Option<()> {
        self.0.read_at_exact(into, offset).ok()
    }
}

impl ChainReader for Reader {
    fn next_segments(
        &mut self,
        workspace: &str,
        after: u64,
        max: usize,
    ) -> StoreResult<Vec<SegmentRef>> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT rowid, first_seq, last_seq FROM audit_segments
                 WHERE workspace = ?1 AND last_seq > ?2 ORDER BY last_seq LIMIT ?3",
            )
            .map_err(failed)?;
        // No segment holds a seq past what SQLite's integers hold.
        let Ok(after_i64) = i64::try_from(after) else {
            return Ok(Vec::new());
        };
        let max_i64 = i64::try_from(max).unwrap_or(i64::MAX);
        let mut rows = statement
            .query(rusqlite::params![workspace, after_i64, max_i64])
            .map_err(failed)?;
        let mut segments = Vec::new();
        let mut expected = after.checked_add(1);
        while let Some(row) = rows.next().map_err(failed)? {
            let id: i64 = row.get(0).map_err(failed)?;
            let first: i64 = row.get(1).map_err(failed)?;
            let last: i64 = row.get(2).map_err(failed)?;
            let (Ok(first_seq), Ok(last_seq)) = (u64::try_from(first), u64::try_from(last)) else {
                break;
            };
            // Only segments that follow one another from `after` on: anything else (a gap,
            // rows between segments) is for `audit_rows_after` to read.
            if Some(first_seq) != expected || last_seq < first_seq {
                break;
            }
            expected = last_seq.checked_add(1);
            segments.push(SegmentRef {
                first_seq,
                last_seq,
                id,
            });
        }
        Ok(segments)
    }

    fn read_rows(&mut self, workspace: &str, after: u64, through: u64) -> StoreResult<AuditRows> {
        self.remap_if_due()?;
        let bound = |seq: u64| i64::try_from(seq).unwrap_or(i64::MAX);
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT seq, at, actor, kind, subject, data, prev_hash, hash FROM audit
                 WHERE workspace = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq",
            )
            .map_err(failed)?;
        let mut rows = statement
            .query(rusqlite::params![workspace, bound(after), bound(through)])
            .map_err(failed)?;
        let mut page = AuditRows::default();
        let not_text = |column: usize| StoreError::Corrupt {
            table: "audit",
            detail: format!("column {column} of a row is not text"),
        };
        while let Some(row) = rows.next().map_err(failed)? {
            let seq = stored_seq(row.get(0).map_err(failed)?)?;
            let mut columns = [""; 7];
            for (index, column) in columns.iter_mut().enumerate() {
                *column = row
                    .get_ref(index + 1)
                    .ok()
                    .and_then(|value| value.as_str().ok())
                    .ok_or_else(|| not_text(index + 1))?;
            }
            page.push(seq, columns);
            let bytes: usize = columns.iter().map(|column| column.len()).sum();
            self.read = self.read.saturating_add(bytes);
        }
        Ok(page)
    }

    fn read(&mut self, segment: SegmentRef) -> StoreResult<AuditRows> {
        self.remap_if_due()?;
        let blob = self
            .conn
            .blob_open(
                rusqlite::DatabaseName::Main,
                "audit_segments",
                "body",
                segment.id,
                true,
            )
            .map_err(failed)?;
        let mut body = Blob(blob);
        self.read = self.read.saturating_add(body.len());
        let rows = read_segment(&mut body);
        let bound = |seq: u64| i64::try_from(seq).unwrap_or(i64::MAX);
        checked_segment(rows, bound(segment.first_seq), bound(segment.last_seq))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::test_calls::{agent, at, workspace_with_agent};
    use crate::{AuditEntry, Effects, Store};
    use sqlx::Connection as _;

    /// A store whose workspace `ws_a` has 2,100 records, the first 2,000 sealed in two
    /// segments; its database file.
    async fn sealed(dir: &tempfile::TempDir) -> (super::super::SqliteStore, PathBuf) {
        let path = dir.path().join("airlock.db");
        let store = super::super::SqliteStore::open(&path).await.unwrap();
        workspace_with_agent(&store).await;
        let mut effects = Effects::none();
        for n in 0..2_100 {
            effects = effects.audit(AuditEntry {
                at: at(),
                actor: "system".into(),
                kind: "call.allowed".into(),
                subject: format!("call_{n}"),
                data: serde_json::json!({"n": n, "é": "✓"}).into(),
            });
        }
        store
            .update_agent("ws_a", &agent("agt_a", "scout"), &effects)
            .await
            .unwrap();
        assert_eq!(store.seal_audit("ws_a").await.unwrap(), 1_000);
        assert_eq!(store.seal_audit("ws_a").await.unwrap(), 1_000);
        (store, path)
    }

    fn pragma(reader: &Reader, name: &str) -> i64 {
        reader
            .conn
            .query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))
            .unwrap()
    }

    /// The reader's connection maps the file and cannot write; after the bytes it may
    /// read on one connection it reads on a new one, and goes on reading the same.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_maps_the_file_reads_only_and_opens_again_as_it_goes() {
        let dir = tempfile::tempdir().unwrap();
        let (store, path) = sealed(&dir).await;
        let mut reader = Reader::open(&path).unwrap();
        assert_eq!(
            pragma(&reader, "mmap_size"),
            i64::try_from(MAP_BYTES).unwrap()
        );
        assert_eq!(pragma(&reader, "query_only"), 1);
        assert!(reader
            .conn
            .execute("DELETE FROM audit_segments", [])
            .is_err());
        let segments = reader.next_segments("ws_a", 0, 10).unwrap();
        assert_eq!(segments.len(), 2);
        // A setting of this connection only, to tell a new one by.
        reader.conn.execute_batch("PRAGMA cache_size = 7").unwrap();
        reader.remap_after = 1;
        let first = reader.read(segments[0]).unwrap();
        assert_eq!(pragma(&reader, "cache_size"), 7);
        let second = reader.read(segments[1]).unwrap();
        assert_ne!(pragma(&reader, "cache_size"), 7, "not opened again");
        assert_eq!(
            pragma(&reader, "mmap_size"),
            i64::try_from(MAP_BYTES).unwrap()
        );
        let seqs: Vec<u64> = first
            .iter()
            .chain(second.iter())
            .map(|row| row.seq)
            .collect();
        assert_eq!(seqs, (1..=2_000).collect::<Vec<_>>());
        let pages = store.audit_rows_after("ws_a", 0, 1_000).await.unwrap();
        assert!(pages.iter().eq(first.iter()));
        store.close().await.unwrap();
    }

    /// A segment cut short, one holding other records than its row says, one gone since
    /// it was listed, or a row whose value is not text is an error, never records.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_damaged_or_missing_part_is_an_error_not_records() {
        let dir = tempfile::tempdir().unwrap();
        let (store, path) = sealed(&dir).await;
        let mut reader = Reader::open(&path).unwrap();
        let segments = reader.next_segments("ws_a", 0, 10).unwrap();
        let edit = |sql: &'static str| {
            let path = path.clone();
            async move {
                let mut conn =
                    sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
                        .await
                        .unwrap();
                sqlx::query(sql).execute(&mut conn).await.unwrap();
            }
        };
        let corrupt = |result: StoreResult<AuditRows>| {
            matches!(
                result,
                Err(StoreError::Corrupt {
                    table: "audit_segments",
                    ..
                })
            )
        };
        edit("UPDATE audit_segments SET body = substr(body, 1, 100) WHERE first_seq = 1").await;
        assert!(corrupt(reader.read(segments[0])));
        edit(
            "UPDATE audit_segments SET body = (SELECT body FROM audit_segments
             WHERE first_seq = 1001) WHERE first_seq = 1",
        )
        .await;
        assert!(corrupt(reader.read(segments[0])));
        edit("DELETE FROM audit_segments WHERE first_seq = 1001").await;
        assert!(matches!(
            reader.read(segments[1]),
            Err(StoreError::Database(_))
        ));
        // A row whose value is not text is not a record either.
        assert_eq!(reader.read_rows("ws_a", 2_000, 2_100).unwrap().len(), 100);
        edit("UPDATE audit SET data = X'7b7d' WHERE seq = 2050").await;
        assert!(matches!(
            reader.read_rows("ws_a", 2_000, 2_100),
            Err(StoreError::Corrupt { table: "audit", .. })
        ));
        store.close().await.unwrap();
    }
}
