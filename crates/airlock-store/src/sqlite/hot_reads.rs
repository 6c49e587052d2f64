//! Reader connections for the reads on the gate's hot path, lent without sqlx's pool.
//!
//! sqlx's pool tests every connection it gets back (`ping`) in a task it spawns for the
//! purpose, and on SQLite a ping is a round trip to the connection's thread: a read
//! through the pool costs two hand-offs to another thread and a task, where the read
//! itself is one. The reads every allowed call makes (a hook call's lookup, a call's
//! ambiguous twin) are lent a connection from here instead: the same file, opened with
//! the same settings as the pool's readers (`query_only`), at most [`READERS`] at once.
//!
//! A connection whose read failed, or whose read was dropped midway, is closed rather
//! than lent again, so a connection is only ever reused in the state a finished read
//! leaves it in.

use crate::codec::database;
use crate::{StoreError, StoreResult};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, SqliteConnection};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Connections lent at once; each is a thread of its own.
const READERS: usize = 2;

/// The idle connections, and the permits that bound how many are lent.
pub(super) struct HotReaders {
    options: SqliteConnectOptions,
    idle: std::sync::Mutex<Vec<SqliteConnection>>,
    permits: Semaphore,
}

/// A connection lent for one read; give it back with [`Lent::give_back`] after a read
/// that succeeded, or drop it to close it.
pub(super) struct Lent<'h> {
    conn: SqliteConnection,
    home: &'h HotReaders,
    _permit: SemaphorePermit<'h>,
}

impl HotReaders {
    /// Readers of the database `options` opens (already read-only).
    pub(super) fn new(options: SqliteConnectOptions) -> HotReaders {
        HotReaders {
            options,
            idle: std::sync::Mutex::new(Vec::new()),
            permits: Semaphore::new(READERS),
        }
    }

    /// An idle connection, or a new one when none is idle; waits while [`READERS`] are
    /// lent.
    pub(super) async fn lend(&self) -> StoreResult<Lent<'_>> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| StoreError::Database("the store is closed".into()))?;
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let conn = match idle {
            Some(conn) => conn,
            None => self.options.connect().await.map_err(database)?,
        };
        Ok(Lent {
            conn,
            home: self,
            _permit: permit,
        })
    }

    /// Connections waiting to be lent again.
    #[cfg(test)]
    pub(super) fn idle(&self) -> usize {
        self.idle.lock().map_or(0, |idle| idle.len())
    }

    /// Lends nothing more and closes the idle connections.
    pub(super) async fn close(&self) {
        self.permits.close();
        let idle = match self.idle.lock() {
            Ok(mut idle) => std::mem::take(&mut *idle),
            Err(_) => Vec::new(),
        };
        for conn in idle {
            if let Err(error) = sqlx::Connection::close(conn).await {
                tracing::debug!(%error, "closing a reader connection");
            }
        }
    }
}

impl Lent<'_> {
    pub(super) fn conn(&mut self) -> &mut SqliteConnection {
        &mut self.conn
    }

    /// Returns the connection for the next read when `reusable` (its read succeeded);
    /// closes it otherwise.
    pub(super) fn give_back(self, reusable: bool) {
        if reusable && !self.home.permits.is_closed() {
            if let Ok(mut idle) = self.home.idle.lock() {
                idle.push(self.conn);
            }
        }
    }
}
