//! Blob records: the isolation evidence recorded at publish and access times for gc.

use rusqlite::{OptionalExtension, params};

use super::{Index, db_err, find_origin_id, origin_id};
use crate::digest::Digest;
use crate::error::Error;
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

impl Index {
    /// Records a blob just published (after it is on disk: R-C3).
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn put_blob(
        &self,
        origin: &Origin,
        digest: &Digest,
        record: BlobRecord,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.write("record blob", |tx| {
            let oid = origin_id(tx, origin)?;
            tx.execute(
                "INSERT OR REPLACE INTO blobs(origin_id, digest, size, ino, dev, ctime_ns, published_at_ms, last_access_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
                params![oid, digest.as_bytes().as_slice(), i(record.size), i(record.ino), i(record.dev), record.ctime_ns, i(now_ms)],
            )
            .map_err(db_err("record blob"))?;
            Ok(())
        })
    }

    /// The record of a blob, if any.
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn blob(&self, origin: &Origin, digest: &Digest) -> Result<Option<BlobRecord>, Error> {
        let conn = self.conn();
        let Some(oid) = find_origin_id(&conn, origin)? else {
            return Ok(None);
        };
        conn.prepare_cached("SELECT size, ino, dev, ctime_ns, last_access_ms FROM blobs WHERE origin_id = ?1 AND digest = ?2")
            .and_then(|mut s| {
                s.query_row(params![oid, digest.as_bytes().as_slice()], |r| {
                    Ok(BlobRecord { size: u(r.get(0)?), ino: u(r.get(1)?), dev: u(r.get(2)?), ctime_ns: r.get(3)?, last_access_ms: u(r.get(4)?) })
                })
                .optional()
            })
            .map_err(db_err("read blob"))
    }

    /// Notes a verified access (for least-recently-used gc).
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn touch_blob(&self, origin: &Origin, digest: &Digest, now_ms: u64) -> Result<(), Error> {
        let conn = self.conn();
        let Some(oid) = find_origin_id(&conn, origin)? else {
            return Ok(());
        };
        conn.prepare_cached("UPDATE blobs SET last_access_ms = MAX(last_access_ms, ?3) WHERE origin_id = ?1 AND digest = ?2")
            .and_then(|mut s| s.execute(params![oid, digest.as_bytes().as_slice(), i(now_ms)]))
            .map_err(db_err("touch blob"))?;
        Ok(())
    }

    /// Forgets a blob (before its file is deleted: a row never points at a missing blob).
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn remove_blob(&self, origin: &Origin, digest: &Digest) -> Result<(), Error> {
        self.write("forget blob", |tx| {
            let Some(oid) = find_origin_id(tx, origin)? else {
                return Ok(());
            };
            tx.execute(
                "DELETE FROM blobs WHERE origin_id = ?1 AND digest = ?2",
                params![oid, digest.as_bytes().as_slice()],
            )
            .map_err(db_err("forget blob"))?;
            Ok(())
        })
    }

    /// Every blob record: (origin, digest, record), least recently used first.
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn blobs(&self) -> Result<Vec<(Origin, Digest, BlobRecord)>, Error> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached("SELECT o.label, b.digest, b.size, b.ino, b.dev, b.ctime_ns, b.last_access_ms FROM blobs b JOIN origins o ON o.id = b.origin_id ORDER BY b.last_access_ms, o.label, b.digest")
            .map_err(db_err("list blobs"))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Vec<u8>>(1)?,
                    BlobRecord {
                        size: u(r.get(2)?),
                        ino: u(r.get(3)?),
                        dev: u(r.get(4)?),
                        ctime_ns: r.get(5)?,
                        last_access_ms: u(r.get(6)?),
                    },
                ))
            })
            .map_err(db_err("list blobs"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err("list blobs"))?;
        Ok(rows
            .into_iter()
            .filter_map(|(label, digest, rec)| {
                Some((
                    Origin::new(label).ok()?,
                    Digest::from_bytes(digest.try_into().ok()?),
                    rec,
                ))
            })
            .collect())
    }
}
