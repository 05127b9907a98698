//! Answers the index gave, remembered until the database changes (R-T1): a warm `entry` or
//! approval check is then answered on the caller's thread, with no blocking hop and no query.
//!
//! Validity: SQLite's `PRAGMA data_version` on the reader connection changes whenever another
//! connection commits — this process's writer or any other process's. An answer is remembered
//! with the version read *before* its query, under the same hold of the reader, so a commit that
//! lands between the two makes the next check miss; a commit after the query changes the version
//! too. The remembered answer was sealed and believed when it was read (R-H3), and the host key
//! does not change while the index is open. Only answers that found a believed row are
//! remembered: an absent row, a seal failure (counted and logged, R-H3) or an error is asked
//! again every time.
//!
//! Never waiting: the quick check takes the reader only if it is free and reads the version
//! with no busy timeout; anything else is "ask the index" (the caller's blocking path).

use std::collections::HashMap;
use std::sync::{Mutex, TryLockError};

use rusqlite::Connection;

use super::approvals::Approval;
use super::entries::StoredEntry;

/// Remembered answers of one kind at most; past it the memo starts again (a host with more
/// skills than this warm at once pays one query for some of them).
const MAX_ANSWERS: usize = 4096;

/// (origin label, canonical skill URI, principal).
type Key = (String, String, String);

/// What the memo holds for a version of the database.
#[derive(Debug, Default)]
struct Answers {
    version: Option<i64>,
    entries: HashMap<Key, StoredEntry>,
    approvals: HashMap<Key, Approval>,
}

/// The memo of one index.
#[derive(Debug, Default)]
pub(super) struct Memo {
    answers: Mutex<Answers>,
}

/// The reader's data version, read now. `None` when it cannot be read without waiting.
pub(super) fn version(conn: &Connection) -> Option<i64> {
    // Readers do not wait for writers under WAL, but a read may meet SQLITE_BUSY in rare
    // recovery cases: then it is "unknown", never a wait.
    conn.busy_timeout(std::time::Duration::ZERO).ok()?;
    let v = conn
        .prepare_cached("PRAGMA data_version")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .ok();
    conn.busy_timeout(super::open::BUSY_TIMEOUT).ok()?;
    v
}

/// The version now, if the reader is free; `None` if another read holds it.
pub(super) fn version_now(reader: &Mutex<Connection>) -> Option<i64> {
    let conn = match reader.try_lock() {
        Ok(c) => c,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return None,
    };
    version(&conn)
}

impl Memo {
    fn answers(&self) -> std::sync::MutexGuard<'_, Answers> {
        self.answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The remembered entry for `key`, if the database is still at `version`.
    pub(super) fn entry(&self, version: i64, key: &Key) -> Option<StoredEntry> {
        let answers = self.answers();
        (answers.version == Some(version))
            .then(|| answers.entries.get(key).cloned())
            .flatten()
    }

    /// The remembered approval for `key`, if the database is still at `version`.
    pub(super) fn approval(&self, version: i64, key: &Key) -> Option<Approval> {
        let answers = self.answers();
        (answers.version == Some(version))
            .then(|| answers.approvals.get(key).cloned())
            .flatten()
    }

    /// Remembers an entry read at `version`.
    pub(super) fn keep_entry(&self, version: i64, key: Key, entry: &StoredEntry) {
        let mut answers = self.answers();
        if !answers.at(version) {
            return;
        }
        if answers.entries.len() >= MAX_ANSWERS {
            answers.entries.clear();
        }
        answers.entries.insert(key, entry.clone());
    }

    /// Remembers an approval read at `version`.
    pub(super) fn keep_approval(&self, version: i64, key: Key, approval: &Approval) {
        let mut answers = self.answers();
        if !answers.at(version) {
            return;
        }
        if answers.approvals.len() >= MAX_ANSWERS {
            answers.approvals.clear();
        }
        answers.approvals.insert(key, approval.clone());
    }
}

impl Answers {
    /// Moves the memo to `version`, forgetting answers of any other. Versions only grow, so an
    /// answer read at an older one (another thread's, kept late) is not kept at all.
    fn at(&mut self, version: i64) -> bool {
        if self.version.is_some_and(|v| v > version) {
            return false;
        }
        if self.version != Some(version) {
            self.entries.clear();
            self.approvals.clear();
            self.version = Some(version);
        }
        true
    }
}

/// The key of one (origin, skill, principal).
pub(super) fn key(origin: &str, canonical: &str, principal: &str) -> Key {
    (origin.to_owned(), canonical.to_owned(), principal.to_owned())
}
