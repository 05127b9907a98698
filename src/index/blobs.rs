//! Blob records: the isolation evidence recorded at publish and access times for gc.

use rusqlite::{OptionalExtension, params};

use super::seal::BlobRow;
use super::{Index, db_err, find_origin_id, origin_id};
use crate::digest::Digest;
use super::error::IndexError;
use crate::origin::Origin;

/// What the index records about a published blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobRecord {
    /// Its size.
    pub size: u64,
    /// Inode at publish.
    pub ino: u64,
    /// Device at publish.
    pub dev: u64,
    /// ctime at publish, ns.
    pub ctime_ns: i64,
    /// Last verified access, ms since the epoch.
    pub last_access_ms: u64,
}

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
fn u(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A `blobs` row as read back: the record and what its seal covers.
struct Row {
    digest: Vec<u8>,
    size: i64,
    ino: i64,
    dev: i64,
    ctime_ns: i64,
    published_at_ms: i64,
    last_access_ms: i64,
    seal: Option<Vec<u8>>,
}

/// The columns [`Row::read`] expects, in order, of `blobs` aliased `b` (one SQL literal).
macro_rules! blob_columns {
    () => {
        "b.digest, b.size, b.ino, b.dev, b.ctime_ns, b.published_at_ms, b.last_access_ms, b.seal"
    };
}

impl Row {
    fn read(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Row> {
        Ok(Row {
            digest: r.get(at)?,
            size: r.get(at + 1)?,
            ino: r.get(at + 2)?,
            dev: r.get(at + 3)?,
            ctime_ns: r.get(at + 4)?,
            published_at_ms: r.get(at + 5)?,
            last_access_ms: r.get(at + 6)?,
            seal: r.get(at + 7)?,
        })
    }

    fn sealed_fields<'a>(&'a self, origin: &'a Origin) -> BlobRow<'a> {
        BlobRow {
            origin: origin.as_str(),
            digest: &self.digest,
            size: self.size,
            ino: self.ino,
            dev: self.dev,
            ctime_ns: self.ctime_ns,
            published_at_ms: self.published_at_ms,
        }
    }

    fn record(&self) -> BlobRecord {
        BlobRecord {
            size: u(self.size),
            ino: u(self.ino),
            dev: u(self.dev),
            ctime_ns: self.ctime_ns,
            last_access_ms: u(self.last_access_ms),
        }
    }
}

impl Index {
    /// Records a blob just published (after it is on disk: R-C3), sealed (R-H3):
    /// [`Index::put_blobs`] with one blob.
    ///
    /// # Errors
    /// As [`Index::put_blobs`].
    // The host path records whole batches; one blob at a time is the tests' view.
    #[cfg(any(test, feature = "internals"))]
    pub fn put_blob(
        &self,
        origin: &Origin,
        digest: &Digest,
        record: BlobRecord,
        now_ms: u64,
    ) -> Result<(), IndexError> {
        self.put_blobs(origin, &[(*digest, record)], now_ms)
    }

    /// Records blobs of `origin` just published (each after it is on disk: R-C3), each row
    /// sealed (R-H3), all in one transaction: a batch costs one commit, not one per file, and a
    /// crash leaves either every row of it or none.
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure; [`IndexError::ReadOnly`](IndexError::ReadOnly) on a read-only index.
    pub fn put_blobs(
        &self,
        origin: &Origin,
        blobs: &[(Digest, BlobRecord)],
        now_ms: u64,
    ) -> Result<(), IndexError> {
        if blobs.is_empty() {
            return Ok(());
        }
        let rows: Vec<(Row, Vec<u8>)> = blobs
            .iter()
            .map(|(digest, record)| {
                let row = Row {
                    digest: digest.as_bytes().to_vec(),
                    size: i(record.size),
                    ino: i(record.ino),
                    dev: i(record.dev),
                    ctime_ns: record.ctime_ns,
                    published_at_ms: i(now_ms),
                    last_access_ms: i(now_ms),
                    seal: None,
                };
                let seal = row.sealed_fields(origin).sealer(&self.key).seal();
                (row, seal)
            })
            .collect();
        self.write("record blob", |tx| {
            let oid = origin_id(tx, origin)?;
            let mut insert = tx
                .prepare_cached("INSERT OR REPLACE INTO blobs(origin_id, digest, size, ino, dev, ctime_ns, published_at_ms, last_access_ms, seal) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)")
                .map_err(db_err("record blob"))?;
            for (row, seal) in &rows {
                insert
                    .execute(params![oid, row.digest, row.size, row.ino, row.dev, row.ctime_ns, row.published_at_ms, seal])
                    .map_err(db_err("record blob"))?;
            }
            Ok(())
        })
    }

    /// The record of a blob, if any. A record whose seal fails is no evidence: `None` (R-H3).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn blob(&self, origin: &Origin, digest: &Digest) -> Result<Option<BlobRecord>, IndexError> {
        let row = {
            let conn = self.conn()?;
            let Some(oid) = find_origin_id(&conn, origin)? else {
                return Ok(None);
            };
            conn.prepare_cached(concat!(
                "SELECT ",
                blob_columns!(),
                " FROM blobs b WHERE b.origin_id = ?1 AND b.digest = ?2"
            ))
            .and_then(|mut s| {
                s.query_row(params![oid, digest.as_bytes().as_slice()], |r| {
                    Row::read(r, 0)
                })
                .optional()
            })
            .map_err(db_err("read blob"))?
        };
        let Some(row) = row else { return Ok(None) };
        if !row
            .sealed_fields(origin)
            .sealer(&self.key)
            .verify(row.seal.as_deref())
        {
            self.seal_failed("blobs", origin, &digest.to_string());
            return Ok(None);
        }
        Ok(Some(row.record()))
    }

    /// Notes a verified access (for least-recently-used gc), best effort: it never waits and
    /// never fails a hit (R-H5). A busy database (another writer), a full or read-only disk, or
    /// another thread of this process in the middle of a write skips the update (a debug event)
    /// and returns false.
    pub fn touch_blob(&self, origin: &Origin, digest: &Digest, now_ms: u64) -> bool {
        let skipped = |why: &dyn std::fmt::Display| {
            tracing::debug!(origin = origin.as_str(), %digest, reason = %why, "access time not recorded");
            false
        };
        let Some(writer) = &self.writer else {
            return skipped(&"the index is read-only");
        };
        let Some(conn) = writer.try_lock() else {
            return skipped(&"another write of this process is under way, or a fork closed the connection");
        };
        // No busy wait for this one statement; the writer's timeout is restored after it.
        if let Err(e) = conn.busy_timeout(std::time::Duration::ZERO) {
            return skipped(&e);
        }
        let result = find_origin_id(&conn, origin).and_then(|oid| {
            let Some(oid) = oid else { return Ok(0) };
            conn.prepare_cached("UPDATE blobs SET last_access_ms = MAX(last_access_ms, ?3) WHERE origin_id = ?1 AND digest = ?2")
                .and_then(|mut s| s.execute(params![oid, digest.as_bytes().as_slice(), i(now_ms)]))
                .map_err(db_err("touch blob"))
        });
        if let Err(e) = conn.busy_timeout(super::open::BUSY_TIMEOUT) {
            tracing::debug!(error = %e, "cannot restore the index busy timeout");
        }
        match result {
            Ok(n) => n > 0,
            Err(e) => skipped(&e),
        }
    }

    /// Drops a blob's record (before the blob itself goes: R-C3): [`Index::remove_blobs`] with
    /// one blob.
    ///
    /// # Errors
    /// As [`Index::remove_blobs`].
    pub fn remove_blob(&self, origin: &Origin, digest: &Digest) -> Result<(), IndexError> {
        self.remove_blobs(origin, std::slice::from_ref(digest), None)
    }

    /// Drops the records of blobs of `origin` (each before the blob itself goes: R-C3), in one
    /// transaction; with `recorded_before_ms`, only records published before then (a reader
    /// that found a copy missing keeps a row recorded since it looked). Records that are not
    /// there are no error.
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure; [`IndexError::ReadOnly`](IndexError::ReadOnly) on a read-only index.
    pub fn remove_blobs(
        &self,
        origin: &Origin,
        digests: &[Digest],
        recorded_before_ms: Option<u64>,
    ) -> Result<(), IndexError> {
        if digests.is_empty() {
            return Ok(());
        }
        let before = recorded_before_ms.map_or(i64::MAX, i);
        self.write("forget blob", |tx| {
            let Some(oid) = find_origin_id(tx, origin)? else {
                return Ok(());
            };
            let mut delete = tx
                .prepare_cached(
                    "DELETE FROM blobs WHERE origin_id = ?1 AND digest = ?2 AND published_at_ms < ?3",
                )
                .map_err(db_err("forget blob"))?;
            for digest in digests {
                delete
                    .execute(params![oid, digest.as_bytes().as_slice(), before])
                    .map_err(db_err("forget blob"))?;
            }
            Ok(())
        })
    }

    /// Every blob record whose seal verifies: (origin, digest, record), least recently used
    /// first. A record that fails its seal is left out and counted (R-H3).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn blobs(&self) -> Result<Vec<(Origin, Digest, BlobRecord)>, IndexError> {
        self.sealed_blobs(None)
    }

    /// [`Index::blobs`] of one origin: what its quota evicts from, least recently used first
    /// (R-Q4).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub(crate) fn blobs_of(&self, origin: &Origin) -> Result<Vec<(Digest, BlobRecord)>, IndexError> {
        Ok(self
            .sealed_blobs(Some(origin))?
            .into_iter()
            .map(|(_, d, r)| (d, r))
            .collect())
    }

    fn sealed_blobs(
        &self,
        only: Option<&Origin>,
    ) -> Result<Vec<(Origin, Digest, BlobRecord)>, IndexError> {
        let rows: Vec<(String, Row)> = {
            let conn = self.conn()?;
            let mut stmt = conn
                .prepare_cached(concat!(
                    "SELECT o.label, ",
                    blob_columns!(),
                    " FROM blobs b JOIN origins o ON o.id = b.origin_id WHERE ?1 IS NULL OR o.label = ?1 ORDER BY b.last_access_ms, o.label, b.digest"
                ))
                .map_err(db_err("list blobs"))?;
            stmt.query_map([only.map(Origin::as_str)], |r| Ok((r.get(0)?, Row::read(r, 1)?)))
                .and_then(Iterator::collect)
                .map_err(db_err("list blobs"))?
        };
        let mut out = Vec::with_capacity(rows.len());
        for (label, row) in rows {
            let Ok(origin) = Origin::new(label) else {
                continue;
            };
            let Ok(bytes) = <[u8; 32]>::try_from(row.digest.as_slice()) else {
                continue;
            };
            let digest = Digest::from_bytes(bytes);
            if !row
                .sealed_fields(&origin)
                .sealer(&self.key)
                .verify(row.seal.as_deref())
            {
                self.seal_failed("blobs", &origin, &digest.to_string());
                continue;
            }
            out.push((origin, digest, row.record()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::seal::SealKey;
    use super::{BlobRecord, Index};
    use crate::digest::Digest;
    use crate::origin::Origin;

    #[test]
    fn c3_a_reader_that_found_a_copy_missing_keeps_a_row_recorded_since_it_looked() {
        let dir = crate::scratch::scratch();
        let index = Index::open(&dir.path().join("index.sqlite3"), SealKey::from_bytes([7; 32]))
            .expect("open");
        let origin = Origin::new("docs").expect("label");
        let (old, fresh) = (Digest::of(b"old"), Digest::of(b"fresh"));
        let record = BlobRecord {
            size: 3,
            ino: 1,
            dev: 1,
            ctime_ns: 1,
            last_access_ms: 0,
        };
        index.put_blobs(&origin, &[(old, record)], 1_000).expect("put");
        // A publisher records `fresh` at 2000, after the reader looked (at 1500) and found
        // neither copy on disk: only the older row goes.
        index.put_blobs(&origin, &[(fresh, record)], 2_000).expect("put");
        index
            .remove_blobs(&origin, &[old, fresh], Some(1_500))
            .expect("forget");
        assert!(index.blob(&origin, &old).expect("read").is_none());
        assert!(index.blob(&origin, &fresh).expect("read").is_some());
        // Without a time, every listed row goes.
        index.remove_blobs(&origin, &[fresh], None).expect("forget");
        assert!(index.blob(&origin, &fresh).expect("read").is_none());
    }
}
