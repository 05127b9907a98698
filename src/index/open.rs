//! Opening the database so that reads never need a write (R-H5) and damage is told apart from a
//! database we merely cannot write (R-H6).
//!
//! Order: open read-write; read `user_version` with a plain read; refuse a newer schema; take a
//! write lock only when the schema is behind; switch to WAL only when it is not WAL already. If
//! the file cannot be written (a read-only mount, no room for the `-shm`), open it read-only,
//! and as a last resort `immutable=1`, which needs no `-shm` at all: a pre-populated cache on a
//! read-only mount then serves warm hits, and writes fail with [`IndexError::ReadOnly`](IndexError::ReadOnly).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::{db_err, schema};
use super::error::IndexError;

/// How long a writer waits for a busy database before it is an error.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// Why an open did not give a usable connection.
pub(super) enum Failure {
    /// The file is not a database, or its header or schema is corrupt: heal it (R-H6).
    Damaged(rusqlite::Error),
    /// Anything else, including a newer schema (which is never damage).
    Fatal(Box<IndexError>),
}

/// How a connection was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Read-write: the normal case.
    ReadWrite,
    /// Read-only: writes fail with [`IndexError::ReadOnly`](IndexError::ReadOnly).
    ReadOnly,
    /// Read-only without shared memory: the WAL is ignored (`immutable=1`).
    Immutable,
}

/// What an `SQLite` error means for opening.
enum Class {
    Damaged,
    /// Cannot write here (read-only file or mount, disk full, no `-shm`): try read-only.
    CannotWrite,
    Other,
}

fn class(e: &rusqlite::Error) -> Class {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => Class::Damaged,
        Some(
            ErrorCode::CannotOpen
            | ErrorCode::ReadOnly
            | ErrorCode::DiskFull
            | ErrorCode::SystemIoFailure
            | ErrorCode::PermissionDenied,
        ) => Class::CannotWrite,
        _ => Class::Other,
    }
}

/// One attempt's outcome.
enum Attempt {
    Failed(Failure),
    CannotWrite(rusqlite::Error),
}

fn sql(what: &'static str) -> impl Fn(rusqlite::Error) -> Attempt {
    move |e| match class(&e) {
        Class::Damaged => Attempt::Failed(Failure::Damaged(e)),
        Class::CannotWrite => Attempt::CannotWrite(e),
        Class::Other => Attempt::Failed(Failure::Fatal(Box::new(db_err(what)(e)))),
    }
}

/// Every open refuses a path through a link (R-H1): the scrub looked at the index's names when
/// the cache opened, but a link renamed over one since would be followed, and a database made
/// outside the root (round 31 of review). The root's own path is resolved when it is opened, so
/// the index's path holds no link of its own.
const NOFOLLOW: OpenFlags = OpenFlags::SQLITE_OPEN_NOFOLLOW;

/// Opens the database at `path`: read-write if it can, else read-only, else immutable.
pub(super) fn open(path: &Path) -> Result<(Connection, Mode), Failure> {
    let started = std::time::Instant::now();
    let cannot_write = loop {
        match read_write(path) {
            Ok(conn) => return Ok((conn, Mode::ReadWrite)),
            // Several processes opening a new index at once: switching it to WAL takes a lock
            // SQLite does not wait for. Try again, within the busy timeout.
            Err(Attempt::Failed(Failure::Fatal(e)))
                if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(Attempt::Failed(f)) => return Err(f),
            // Another process moved a damaged index and its log aside while this one opened
            // the log (round 30 of review, E): nothing to do with writing. Look again.
            Err(Attempt::CannotWrite(e)) if is_vanished(&e) && started.elapsed() < BUSY_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(Attempt::CannotWrite(e)) => break e,
        }
    };
    tracing::debug!(path = %path.display(), error = %cannot_write, "index not writable; opening it read-only");
    let cannot_share = match read_only(path, Mode::ReadOnly) {
        Ok(conn) => return Ok((conn, Mode::ReadOnly)),
        Err(Attempt::Failed(f)) => return Err(f),
        Err(Attempt::CannotWrite(e)) => e,
    };
    tracing::debug!(path = %path.display(), error = %cannot_share, "index shared memory unavailable; opening it immutable");
    match read_only(path, Mode::Immutable) {
        Ok(conn) => Ok((conn, Mode::Immutable)),
        Err(Attempt::Failed(f)) => Err(f),
        // Report the first cause: it says why the database could not be written.
        Err(Attempt::CannotWrite(_)) => Err(Failure::Fatal(Box::new(db_err("open")(cannot_write)))),
    }
}

/// A second read-write connection to an index already opened (and migrated) read-write.
pub(super) fn reader(path: &Path) -> Result<Connection, IndexError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | NOFOLLOW,
    )
    .map_err(db_err("open"))?;
    configure(&conn).map_err(db_err("configure"))?;
    Ok(conn)
}

/// A read-only index's connection, opened again after a fork closed it (`conns`), as it was
/// opened first (`mode`: read-only or immutable; nothing can be healed there).
pub(super) fn reopen_read_only(path: &Path, mode: Mode) -> Result<Connection, IndexError> {
    read_only(path, mode).map_err(|failed| match failed {
        Attempt::Failed(Failure::Fatal(e)) => *e,
        Attempt::Failed(Failure::Damaged(e)) | Attempt::CannotWrite(e) => db_err("open again")(e),
    })
}

/// A read-write index's connection for a quick path, opened again after a fork (`conns`)
/// without waiting for any lock: the file's header and schema read with no busy timeout, so
/// a file locked by another process, or damaged, is an error at once (the slow path then
/// waits, or heals).
pub(super) fn reopen_quick(path: &Path) -> Result<Connection, IndexError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | NOFOLLOW,
    )
    .map_err(db_err("open"))?;
    configure_waiting(&conn, Duration::ZERO).map_err(db_err("configure"))?;
    probe(&conn).map_err(|failed| match failed {
        Attempt::Failed(Failure::Fatal(e)) => *e,
        Attempt::Failed(Failure::Damaged(e)) | Attempt::CannotWrite(e) => db_err("open again")(e),
    })?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err("configure"))?;
    Ok(conn)
}

/// Per-connection settings: none of them writes to the database.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    configure_waiting(conn, BUSY_TIMEOUT)
}

/// [`configure`], waiting up to `busy` for a lock meanwhile (a statement may read the schema).
fn configure_waiting(conn: &Connection, busy: Duration) -> rusqlite::Result<()> {
    conn.busy_timeout(busy)?;
    harden(conn)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// Nothing stored in the database may run code of its own beyond what our statements ask for: no
/// functions with side effects from views or triggers (`trusted_schema=OFF`), and the defensive
/// mode that forbids writing the schema table directly (R-H6).
fn harden(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "trusted_schema", "OFF")?;
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    Ok(())
}

/// A schema that is not the one our migrations make is damage, healed like garbage (R-H6).
fn check_ours(conn: &Connection) -> Result<(), Attempt> {
    if schema::is_ours(conn).map_err(sql("read schema"))? {
        return Ok(());
    }
    Err(Attempt::Failed(Failure::Damaged(
        rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            Some("its schema is not the one skillcache makes".into()),
        ),
    )))
}

/// Reads the version and forces the schema to be parsed, so that a damaged header or schema is
/// found now, at open, where it can be healed.
fn probe(conn: &Connection) -> Result<u32, Attempt> {
    let version = schema::version(conn).map_err(sql("read version"))?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(sql("read schema"))?;
    schema::check_not_newer(version).map_err(|e| Attempt::Failed(Failure::Fatal(Box::new(e))))?;
    Ok(version)
}

fn read_write(path: &Path) -> Result<Connection, Attempt> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | NOFOLLOW,
    )
    .map_err(sql("open"))?;
    configure(&conn).map_err(sql("configure"))?;
    // SQLite quietly opens a write-protected file read-only; treat that as read-only.
    if conn
        .is_readonly(rusqlite::MAIN_DB)
        .map_err(sql("configure"))?
    {
        return Err(Attempt::CannotWrite(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
            Some("the database file is write-protected".into()),
        )));
    }
    let version = probe(&conn)?;
    let journal: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .map_err(sql("configure"))?;
    if !journal.eq_ignore_ascii_case("wal") {
        // Only a database not yet in WAL mode is switched: an open never writes otherwise.
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))
            .map_err(sql("configure"))?;
    }
    if version < schema::LATEST {
        schema::migrate(&mut conn).map_err(|e| {
            // A schema behind on a disk we cannot write cannot be served either.
            Attempt::Failed(Failure::Fatal(Box::new(e)))
        })?;
    }
    check_ours(&conn)?;
    Ok(conn)
}

fn read_only(path: &Path, mode: Mode) -> Result<Connection, Attempt> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | NOFOLLOW;
    let conn = if mode == Mode::Immutable {
        Connection::open_with_flags(
            format!("file:{}?immutable=1", uri_path(path)),
            flags | OpenFlags::SQLITE_OPEN_URI,
        )
    } else {
        Connection::open_with_flags(path, flags)
    }
    .map_err(sql("open"))?;
    harden(&conn).map_err(sql("configure"))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql("configure"))?;
    conn.set_prepared_statement_cache_capacity(64);
    let version = probe(&conn)?;
    if version < schema::LATEST {
        return Err(Attempt::Failed(Failure::Fatal(Box::new(
            IndexError::ReadOnly {
                path: path.to_owned(),
                what: "upgrade its schema",
            },
        ))));
    }
    check_ours(&conn)?;
    Ok(conn)
}

/// `path` as the path part of a `file:` URI: every byte outside the unreserved set and `/` is
/// percent-encoded, so `?`, `#` and `%` in a folder name cannot change the URI's meaning.
fn uri_path(path: &Path) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Whether an index error is `SQLITE_BUSY` (another connection holds a lock we need).
fn is_busy(e: &IndexError) -> bool {
    let IndexError::Database { source, .. } = e else {
        return false;
    };
    source
        .downcast_ref::<rusqlite::Error>()
        .and_then(rusqlite::Error::sqlite_error_code)
        .is_some_and(|c| c == ErrorCode::DatabaseBusy)
}

/// `SQLite` found a file of the index gone that it had just seen (`SQLITE_IOERR_DELETE_NOENT`).
fn is_vanished(e: &rusqlite::Error) -> bool {
    e.sqlite_error()
        .is_some_and(|f| f.extended_code == rusqlite::ffi::SQLITE_IOERR_DELETE_NOENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h5_uri_paths_cannot_smuggle_parameters() {
        assert_eq!(
            uri_path(Path::new("/a b/c?mode=rwc#x%")),
            "/a%20b/c%3Fmode%3Drwc%23x%25"
        );
    }
}
