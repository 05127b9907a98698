//! The `SQLite` index: what each origin published, how long it stays fresh, approvals, and blob
//! records for gc. The only module that touches SQL; knows nothing of file paths.
//!
//! - `schema`: tables and append-only migrations keyed on `PRAGMA user_version`.
//! - `entries`: entries and their files, by (origin, skill URI, scope, principal) (R-O1, R-C6).
//! - `approvals`: content-bound approvals and their revocation (R-A2…R-A5).
//! - `blobs`: blob records (inode/ctime evidence, access times) for isolation and gc.
//!
//! - `stored`: entries read back, validated again.
//! - `seal`: the HMAC seal every believed row carries under the host key (R-H3).
//! - `memo`: believed answers remembered until the database changes (R-T1).
//! - `open`: opening without writing, read-only fallbacks (R-H5); `heal`: damage moved aside (R-H6).
//!
//! Trust: the database lies under the root, which anyone may write under `Rehash`. A row is
//! believed only if its seal verifies under the host key (kept outside the root); a row that
//! fails is treated as absent, counted ([`Index::seal_failures`]) and logged.
//!
//! Locking: WAL mode lets many processes share one database. Reads go through their own
//! connection and never wait for a writer; every write is one `BEGIN IMMEDIATE` transaction on
//! the writer connection, so two writers queue (up to a long busy timeout) instead of
//! deadlocking (R-C8). Access-time updates never wait at all (R-H5).

mod approvals;
mod blobs;
pub(crate) mod conns;
pub(crate) mod error;
mod entries;
pub(crate) mod gate;
mod heal;
mod memo;
mod open;
mod schema;
mod seal;
mod stored;

pub use approvals::Approval;
pub use blobs::BlobRecord;
pub use entries::{EntrySummary, PutOutcome, StoredEntry};
pub(crate) use entries::RELIST_SLACK_MS;
pub use seal::{KEY_LEN, SealKey};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::error::IndexError;
use crate::origin::Origin;

/// The index of one cache root.
#[derive(Debug)]
pub struct Index {
    /// Reads: never blocked by a writer in this process or another (WAL).
    reader: Arc<conns::Slot>,
    /// Writes; `None` when the database could only be opened read-only.
    writer: Option<Arc<conns::Slot>>,
    path: PathBuf,
    key: SealKey,
    healed: Option<PathBuf>,
    seal_failures: AtomicU64,
    /// Entries read, until the database changes.
    entry_memo: memo::Memo<StoredEntry>,
    /// Approvals read, until the database changes.
    approval_memo: memo::Memo<Approval>,
}

pub(crate) fn db_err(what: &'static str) -> impl FnOnce(rusqlite::Error) -> IndexError {
    move |e| IndexError::Database {
        what,
        source: Box::new(e),
    }
}

impl Index {
    /// Opens (creating and migrating when behind) the index at `path`, sealing and checking rows
    /// under `key` (R-H3).
    ///
    /// Nothing is written when nothing needs writing (R-H5). A database that cannot be written
    /// (read-only mount, full disk) is opened read-only: reads work, writes fail with
    /// [`IndexError::ReadOnly`](IndexError::ReadOnly). A file that is not a database, or whose header or schema is
    /// corrupt, is moved aside and replaced by a fresh index ([`Index::healed`], R-H6).
    ///
    /// # Errors
    /// [`IndexError::TooNew`](IndexError::TooNew) for a schema from a newer skillcache (left untouched);
    /// [`IndexError::Database`](IndexError::Database) if the database cannot be opened or migrated; [`StoreError::Io`](crate::error::StoreError::Io) if a damaged
    /// database cannot be moved aside.
    pub fn open(path: &Path, key: SealKey) -> Result<Index, IndexError> {
        // Opening runs SQLite too (and may heal): inside the fork gate.
        let _pass = gate::enter();
        conns::refuse_inherited(path)?;
        let (conn, mode, healed) = heal::open_healing(path)?;
        let (reader, writer) = if mode == open::Mode::ReadWrite {
            let writer = conns::Slot::new(conn, path.to_owned(), mode);
            (open::reader(path)?, Some(writer))
        } else {
            tracing::warn!(index = %path.display(), "the index is read-only: cached entries are served, nothing new is recorded");
            (conn, None)
        };
        Ok(Index {
            reader: conns::Slot::new(reader, path.to_owned(), mode),
            writer,
            path: path.to_owned(),
            key,
            healed,
            seal_failures: AtomicU64::new(0),
            entry_memo: memo::Memo::default(),
            approval_memo: memo::Memo::default(),
        })
    }

    /// The reader connection (opened again if a fork closed it, [`conns`]).
    fn conn(&self) -> Result<conns::Held<'_>, IndexError> {
        self.reader.lock()
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction on the writer connection.
    fn write<T>(
        &self,
        what: &'static str,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        let Some(writer) = &self.writer else {
            return Err(IndexError::ReadOnly {
                path: self.path.clone(),
                what,
            });
        };
        let mut conn = writer.lock()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err(what))?;
        let out = f(&tx)?;
        tx.commit().map_err(db_err(what))?;
        Ok(out)
    }

    /// Whether the index could only be opened read-only (R-H5).
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.writer.is_none()
    }

    /// Where a damaged index was moved when this one was opened, if it was (R-H6).
    #[must_use]
    pub fn healed(&self) -> Option<&Path> {
        self.healed.as_deref()
    }

    /// How many rows failed their seal check since this index was opened (R-H3). Each was
    /// treated as absent and logged with its origin and URI.
    #[must_use]
    pub fn seal_failures(&self) -> u64 {
        self.seal_failures.load(Ordering::Relaxed)
    }

    /// A row of `table` for (`origin`, `what`) failed its seal: it is treated as absent.
    fn seal_failed(&self, table: &'static str, origin: &Origin, what: &str) {
        self.seal_failures.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            origin = origin.as_str(),
            uri = what,
            table,
            "an index row failed its seal check (edited, or written under another host key): treated as absent"
        );
    }

    /// The schema version (the number of migrations applied).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn schema_version(&self) -> Result<u32, IndexError> {
        self.conn()?
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(db_err("read version"))
    }

    /// Every origin the index holds anything of: an entry, a blob record or an approval. A row
    /// with nothing under it — made by a request's purge mark ([`Index::purges_for`]) whose
    /// answer was never kept, a server that failed — is not an origin the cache holds, and is
    /// not listed (round 24 of review); a purge of the origin still deletes it.
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn origins(&self) -> Result<Vec<Origin>, IndexError> {
        self.labels(
                "SELECT label FROM origins o
                 WHERE EXISTS (SELECT 1 FROM entries WHERE origin_id = o.id)
                    OR EXISTS (SELECT 1 FROM blobs WHERE origin_id = o.id)
                    OR EXISTS (SELECT 1 FROM approvals WHERE origin_id = o.id)
                 ORDER BY label",
        )
    }

    /// Whether the index holds an entry for `skill` of `origin`, of any scope or principal:
    /// whether a skill loaded before a purge may still keep what it fetches
    /// (`Cache::purge_mark_for`).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn holds_entry(&self, origin: &Origin, skill: &crate::uri::SkillUri) -> Result<bool, IndexError> {
        self.conn()?
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM entries e JOIN origins o ON o.id = e.origin_id
                 WHERE o.label = ?1 AND e.skill_uri = ?2)",
            )
            .and_then(|mut st| {
                st.query_row(rusqlite::params![origin.as_str(), skill.canonical()], |r| r.get(0))
            })
            .map_err(db_err("read entries"))
    }

    /// Every origin with a row, an empty one too: what a purge of every origin but some must
    /// delete, so that the count moves for a request in flight whose mark made the row
    /// ([`Index::purges_for`]; round 25 of review).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn origin_rows(&self) -> Result<Vec<Origin>, IndexError> {
        self.labels("SELECT label FROM origins ORDER BY label")
    }

    /// The origin labels `sql` selects, each a valid [`Origin`] (a row that is not is skipped).
    fn labels(&self, sql: &str) -> Result<Vec<Origin>, IndexError> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(sql).map_err(db_err("list origins"))?;
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
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn purge(&self, origin: &Origin) -> Result<(), IndexError> {
        self.write("purge", |tx| {
            // Child tables cascade from `origins`.
            tx.execute("DELETE FROM origins WHERE label = ?1", [origin.as_str()])
                .map_err(db_err("purge"))?;
            // In the same transaction: a publish that saw the old count is of bytes fetched
            // before this purge ([`Index::purges`]). Bumped even when the index holds no row of
            // the origin: a load of it may still hold its bytes, in this process or another,
            // before its first row. (The origin's row going bumps it too, by the trigger of
            // schema 4, for a process of an older version still running on this index.)
            tx.execute("UPDATE purges SET generation = generation + 1 WHERE id = 0", [])
                .map_err(db_err("purge"))?;
            Ok(())
        })
    }

    /// How many purges this index has seen, by any process. A load reads it before it fetches;
    /// its publish is kept only if the count is the same then, read under the store's shared
    /// lock (which a purge's exclusive lock excludes), so that bytes fetched before a purge
    /// never bring the purged origin back.
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn purges(&self) -> Result<u64, IndexError> {
        let n: i64 = self
            .conn()?
            .prepare_cached("SELECT generation FROM purges WHERE id = 0")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(db_err("read purges"))?;
        Ok(n.cast_unsigned())
    }

    /// [`Index::purges`] for a request about `origin`, after making sure the index holds a row
    /// for it (written only when it has none): a purge of the origin then always deletes a
    /// row, so that even a process of an older version, whose purge does not count but whose
    /// deleting a row does (schema 4's trigger), moves the count (round 23 of review).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure;
    /// [`IndexError::ReadOnly`](IndexError::ReadOnly) when the row is missing and the index
    /// cannot be written.
    pub fn purges_for(&self, origin: &Origin) -> Result<u64, IndexError> {
        if find_origin_id(&*self.conn()?, origin)?.is_none() {
            self.write("add origin", |tx| origin_id(tx, origin).map(drop))?;
        }
        self.purges()
    }

    /// Leaves nothing deleted readable in the index's files (K3), after a purge: `SQLite` keeps
    /// a deleted row's bytes in its page's free space and on the free list, and the write-ahead
    /// log keeps old page images until a checkpoint. `VACUUM` rebuilds every page from the live
    /// rows alone; a `TRUNCATE` checkpoint then copies them over the database file and empties
    /// the log. (`secure_delete` would zero only what is deleted while it is on: pages freed
    /// earlier, by a gc or by an older version, keep their bytes.) Damaged copies moved aside
    /// (R-H6) hold every origin's rows as they were and cannot be edited: they are removed.
    ///
    /// The cost is a rewrite of the whole database: see `docs/performance.md`.
    ///
    /// # Errors
    /// [`IndexError::ReadOnly`](IndexError::ReadOnly) on a read-only index;
    /// [`IndexError::Database`](IndexError::Database) if the rewrite fails (a full disk: it needs
    /// room for a copy) or another process keeps reading the log past the busy timeout;
    /// [`IndexError::Io`](IndexError::Io) if a damaged copy cannot be removed.
    pub fn erase_deleted(&self) -> Result<(), IndexError> {
        const WHAT: &str = "erase deleted rows";
        let Some(writer) = &self.writer else {
            return Err(IndexError::ReadOnly {
                path: self.path.clone(),
                what: WHAT,
            });
        };
        {
            let conn = writer.lock()?;
            conn.execute_batch("VACUUM").map_err(db_err(WHAT))?;
            // Waits (the busy timeout) for readers of older snapshots; `busy` set means one
            // still holds the log, whose old pages then stay.
            let busy: i64 = conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
                .map_err(db_err(WHAT))?;
            if busy != 0 {
                return Err(db_err(WHAT)(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                    Some("another process kept reading the write-ahead log".into()),
                )));
            }
        }
        heal::remove_damaged_copies(&self.path)
    }
}

fn origin_id(tx: &rusqlite::Transaction<'_>, origin: &Origin) -> Result<i64, IndexError> {
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

fn find_origin_id(conn: &Connection, origin: &Origin) -> Result<Option<i64>, IndexError> {
    conn.prepare_cached("SELECT id FROM origins WHERE label = ?1")
        .and_then(|mut s| s.query_row([origin.as_str()], |r| r.get(0)).optional())
        .map_err(db_err("find origin"))
}
