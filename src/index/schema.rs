//! The schema, as an append-only list of migrations keyed on `PRAGMA user_version`.
//!
//! Never edit a migration that has shipped: add a new one. `user_version` is the number applied.

use rusqlite::Connection;

use super::db_err;
use super::error::IndexError;

const MIGRATIONS: &[&str] = &[
    // 1: origins, entries, files, approvals, blobs.
    "
    CREATE TABLE origins (
        id    INTEGER PRIMARY KEY,
        label TEXT NOT NULL UNIQUE
    );
    CREATE TABLE entries (
        origin_id     INTEGER NOT NULL REFERENCES origins(id) ON DELETE CASCADE,
        skill_uri     TEXT NOT NULL,     -- canonical
        scope         TEXT NOT NULL CHECK (scope IN ('public', 'private')),
        principal     TEXT NOT NULL,     -- '' for public entries
        entry_json    TEXT NOT NULL,     -- the validated entry, wire form
        binding       BLOB,              -- NULL for dynamic skills
        ttl_ms        INTEGER NOT NULL,
        fetched_at_ms INTEGER NOT NULL,
        PRIMARY KEY (origin_id, skill_uri, scope, principal)
    ) WITHOUT ROWID;
    CREATE TABLE files (
        origin_id INTEGER NOT NULL,
        skill_uri TEXT NOT NULL,
        scope     TEXT NOT NULL,
        principal TEXT NOT NULL,
        file_uri  TEXT NOT NULL,         -- canonical
        digest    BLOB NOT NULL,         -- 32 bytes
        size      INTEGER NOT NULL,
        PRIMARY KEY (origin_id, skill_uri, scope, principal, file_uri),
        FOREIGN KEY (origin_id, skill_uri, scope, principal)
            REFERENCES entries(origin_id, skill_uri, scope, principal) ON DELETE CASCADE
    ) WITHOUT ROWID;
    CREATE INDEX files_by_digest ON files(origin_id, digest);
    CREATE TABLE approvals (
        origin_id     INTEGER NOT NULL REFERENCES origins(id) ON DELETE CASCADE,
        skill_uri     TEXT NOT NULL,
        binding       BLOB NOT NULL,
        entry_json    TEXT NOT NULL,     -- the entry approved, to tell the user what changed
        granted_tools TEXT,              -- JSON of an explicit permission grant (R-A5), or NULL
        granted_at_ms INTEGER NOT NULL,
        PRIMARY KEY (origin_id, skill_uri)
    ) WITHOUT ROWID;
    CREATE TABLE blobs (
        origin_id       INTEGER NOT NULL REFERENCES origins(id) ON DELETE CASCADE,
        digest          BLOB NOT NULL,
        size            INTEGER NOT NULL,
        ino             INTEGER NOT NULL,
        dev             INTEGER NOT NULL,
        ctime_ns        INTEGER NOT NULL,
        published_at_ms INTEGER NOT NULL,
        last_access_ms  INTEGER NOT NULL,
        PRIMARY KEY (origin_id, digest)
    ) WITHOUT ROWID;
    ",
    // 2: seals under the host key on every row that is believed (R-H3), and approvals per
    // principal (R-H11). Rows from version 1 keep a NULL seal: they are treated as absent
    // (entries fetched again, approvals void, blob records no evidence), which fails closed.
    "
    ALTER TABLE entries ADD COLUMN seal BLOB;
    ALTER TABLE files ADD COLUMN seal BLOB;
    ALTER TABLE blobs ADD COLUMN seal BLOB;
    CREATE TABLE approvals_v2 (
        origin_id     INTEGER NOT NULL REFERENCES origins(id) ON DELETE CASCADE,
        skill_uri     TEXT NOT NULL,
        principal     TEXT NOT NULL,     -- who approved; '' for the default principal
        binding       BLOB NOT NULL,
        entry_json    TEXT NOT NULL,
        granted_tools TEXT,
        granted_at_ms INTEGER NOT NULL,
        seal          BLOB,
        PRIMARY KEY (origin_id, skill_uri, principal)
    ) WITHOUT ROWID;
    INSERT INTO approvals_v2(origin_id, skill_uri, principal, binding, entry_json, granted_tools, granted_at_ms, seal)
        SELECT origin_id, skill_uri, '', binding, entry_json, granted_tools, granted_at_ms, NULL FROM approvals;
    DROP TABLE approvals;
    ALTER TABLE approvals_v2 RENAME TO approvals;
    ",
    // 3: how many purges the index has seen, in one row. A load notes it before it fetches;
    // a publish of what it fetched is kept only while the count is unchanged, so that a purge
    // by another cache or process is not undone by bytes fetched before it (round 21 of
    // review). One count for every origin: a count per origin would keep the label of a purged
    // origin readable (K3).
    "
    CREATE TABLE purges (
        id         INTEGER PRIMARY KEY CHECK (id = 0),
        generation INTEGER NOT NULL
    );
    INSERT INTO purges(id, generation) VALUES (0, 0);
    ",
    // 4: the count is bumped by the database itself whenever an origin's row goes, so that a
    // process of an older version still running on this index (it migrated under it) counts
    // its purges too (round 22 of review). This version bumps it in every purge as well.
    "
    CREATE TRIGGER purges_count AFTER DELETE ON origins
    BEGIN
        UPDATE purges SET generation = generation + 1 WHERE id = 0;
    END;
    ",
];

/// The number of migrations this build knows: the newest schema version.
#[allow(clippy::cast_possible_truncation)] // a handful of migrations
pub(super) const LATEST: u32 = MIGRATIONS.len() as u32;

/// The schema version, with a plain read (no lock, no write: R-H5).
pub(super) fn version(conn: &Connection) -> rusqlite::Result<u32> {
    let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    Ok(u32::try_from(v).unwrap_or(u32::MAX))
}

/// A newer schema is refused, untouched: it is not damage (R-H6).
pub(super) fn check_not_newer(found: u32) -> Result<(), IndexError> {
    if found > LATEST {
        return Err(IndexError::TooNew {
            found,
            supported: LATEST,
        });
    }
    Ok(())
}

/// Applies every migration not yet applied, in one `BEGIN IMMEDIATE` transaction. Callers take
/// this path only when a plain read found the schema behind (R-H5); the version is read again
/// under the lock, so two processes that both saw it behind migrate once.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), IndexError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(db_err("migrate"))?;
    let applied = version(&tx).map_err(db_err("migrate"))?;
    check_not_newer(applied)?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(applied as usize) {
        tx.execute_batch(sql).map_err(db_err("migrate"))?;
        tx.pragma_update(
            None,
            "user_version",
            i64::try_from(i + 1).unwrap_or(i64::MAX),
        )
        .map_err(db_err("migrate"))?;
    }
    tx.commit().map_err(db_err("migrate"))
}

/// One row of `sqlite_master`: type, name, table, and the statement that made it.
type SchemaRow = (String, String, String, Option<String>);

fn schema_of(conn: &Connection) -> rusqlite::Result<Vec<SchemaRow>> {
    conn.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect()
}

/// Whether the database's schema is exactly the one these migrations make (R-H6). Someone who
/// can write the root can also replace a table with a view — one that never ends, say — or drop
/// a column; such a file is a valid database but not our index, and is healed like garbage.
/// Only `sqlite_master` is read, so nothing planted in it runs.
pub(super) fn is_ours(conn: &Connection) -> rusqlite::Result<bool> {
    static EXPECTED: std::sync::OnceLock<Vec<SchemaRow>> = std::sync::OnceLock::new();
    let expected = if let Some(e) = EXPECTED.get() {
        e
    } else {
        let mut fresh = Connection::open_in_memory()?;
        migrate(&mut fresh).map_err(|_| rusqlite::Error::InvalidQuery)?;
        let rows = schema_of(&fresh)?;
        EXPECTED.get_or_init(|| rows)
    };
    Ok(schema_of(conn)? == *expected)
}

/// The number of migrations this build knows.
#[cfg(test)]
pub(super) fn latest() -> usize {
    MIGRATIONS.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrate_twice_is_a_no_op() {
        let mut conn = Connection::open_in_memory().expect("in-memory db");
        migrate(&mut conn).expect("first");
        migrate(&mut conn).expect("second");
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version");
        assert_eq!(usize::try_from(v).ok(), Some(latest()));
    }

    #[test]
    fn h3_h11_version_1_rows_migrate_unsealed_and_approvals_gain_a_principal() {
        let mut conn = Connection::open_in_memory().expect("in-memory db");
        conn.execute_batch(MIGRATIONS[0]).expect("version 1");
        conn.pragma_update(None, "user_version", 1).expect("set");
        conn.execute_batch(
            "INSERT INTO origins(id, label) VALUES (1, 'srv');
             INSERT INTO entries VALUES (1, 'skill://a/SKILL.md', 'public', '', '{}', NULL, 1, 2);
             INSERT INTO approvals VALUES (1, 'skill://a/SKILL.md', x'00', '{}', NULL, 3);",
        )
        .expect("version 1 rows");
        migrate(&mut conn).expect("to the latest");
        let entry_seal: Option<Vec<u8>> = conn
            .query_row("SELECT seal FROM entries", [], |r| r.get(0))
            .expect("entry kept");
        let approval: (String, Option<Vec<u8>>) = conn
            .query_row("SELECT principal, seal FROM approvals", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("approval kept");
        assert_eq!(entry_seal, None, "unsealed: read back as absent");
        assert_eq!(approval, (String::new(), None), "unsealed: void");
        // Approvals are now keyed by principal: a second principal's row fits beside it.
        conn.execute(
            "INSERT INTO approvals(origin_id, skill_uri, principal, binding, entry_json, granted_at_ms) VALUES (1, 'skill://a/SKILL.md', 'bob', x'00', '{}', 4)",
            [],
        )
        .expect("per principal");
    }

    /// Round 22 of review: a process of the previous version, still running on an index this
    /// one migrated, purges with a bare delete; the count moves all the same.
    #[test]
    fn an_origin_deleted_by_any_version_bumps_the_purge_count() {
        let mut conn = Connection::open_in_memory().expect("in-memory db");
        migrate(&mut conn).expect("latest");
        conn.execute_batch("INSERT INTO origins(id, label) VALUES (1, 'docs'), (2, 'team');")
            .expect("origins");
        conn.execute("DELETE FROM origins WHERE label = 'docs'", []).expect("an old purge");
        let n: i64 = conn
            .query_row("SELECT generation FROM purges", [], |r| r.get(0))
            .expect("count");
        assert_eq!(n, 1);
    }

    #[test]
    fn a_newer_index_is_refused_not_damaged() {
        let mut conn = Connection::open_in_memory().expect("in-memory db");
        conn.pragma_update(None, "user_version", 99).expect("set");
        assert!(matches!(
            migrate(&mut conn),
            Err(IndexError::TooNew { found: 99, .. })
        ));
    }
}
