//! The `SQLite` index: what each origin published, how long it stays fresh, approvals, and blob
//! records for gc. The only module that touches SQL; knows nothing of file paths.
//!
//! - `schema`: tables and append-only migrations keyed on `PRAGMA user_version`.
//! - `entries`: entries and their files, by (origin, skill URI, scope, principal) (R-O1, R-C6).
//! - `approvals`: content-bound approvals and their revocation (R-A2…R-A5).
//! - `blobs`: blob records (inode/ctime evidence, access times) for isolation and gc.
//!
//! Locking: WAL mode and a long busy timeout let many processes share one database; every write
//! is one `BEGIN IMMEDIATE` transaction, so two writers queue instead of deadlocking, and a busy
//! database is waited out rather than surfaced (R-C8).

mod approvals;
mod blobs;
mod entries;
mod schema;

pub use approvals::Approval;
pub use blobs::BlobRecord;
pub use entries::{EntrySummary, PutOutcome, StoredEntry};

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::error::Error;
use crate::origin::Origin;

/// How long a caller waits for a busy database before it is an error.
const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// The index of one cache root.
#[derive(Debug)]
pub struct Index {
    conn: Mutex<Connection>,
}

pub(crate) fn db_err(what: &'static str) -> impl FnOnce(rusqlite::Error) -> Error {
    move |e| Error::Index {
        what,
        source: Box::new(e),
    }
}

impl Index {
    /// Opens (creating and migrating) the index at `path`.
    ///
    /// # Errors
    /// [`Error::Index`] if the database cannot be opened or migrated.
    pub fn open(path: &Path) -> Result<Index, Error> {
        let mut conn = Connection::open(path).map_err(db_err("open"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(db_err("configure"))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err("configure"))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db_err("configure"))?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(db_err("configure"))?;
        conn.set_prepared_statement_cache_capacity(64);
        schema::migrate(&mut conn)?;
        Ok(Index {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written (transactions roll
        // back on drop), so a poisoned lock is safe to reuse.
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction.
    fn write<T>(
        &self,
        what: &'static str,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err(what))?;
        let out = f(&tx)?;
        tx.commit().map_err(db_err(what))?;
        Ok(out)
    }

    /// The schema version (the number of migrations applied).
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn schema_version(&self) -> Result<u32, Error> {
        self.conn()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(db_err("read version"))
    }

    /// Every origin the index knows.
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn origins(&self) -> Result<Vec<Origin>, Error> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached("SELECT label FROM origins ORDER BY label")
            .map_err(db_err("list origins"))?;
        let labels = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(db_err("list origins"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err("list origins"))?;
        Ok(labels
            .into_iter()
            .filter_map(|l| Origin::new(l).ok())
            .collect())
    }

    /// Removes everything of `origin`: entries, files, approvals, blob records (R-C5).
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn purge(&self, origin: &Origin) -> Result<(), Error> {
        self.write("purge", |tx| {
            // Child tables cascade from `origins`.
            tx.execute("DELETE FROM origins WHERE label = ?1", [origin.as_str()])
                .map_err(db_err("purge"))?;
            Ok(())
        })
    }
}

fn origin_id(tx: &rusqlite::Transaction<'_>, origin: &Origin) -> Result<i64, Error> {
    tx.execute(
        "INSERT OR IGNORE INTO origins(label) VALUES (?1)",
        [origin.as_str()],
    )
    .map_err(db_err("add origin"))?;
    tx.query_row(
        "SELECT id FROM origins WHERE label = ?1",
        [origin.as_str()],
        |r| r.get(0),
    )
    .map_err(db_err("add origin"))
}

fn find_origin_id(conn: &Connection, origin: &Origin) -> Result<Option<i64>, Error> {
    conn.prepare_cached("SELECT id FROM origins WHERE label = ?1")
        .and_then(|mut s| s.query_row([origin.as_str()], |r| r.get(0)).optional())
        .map_err(db_err("find origin"))
}
