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
use std::sync::Mutex;

use super::conns::{Held, Slot};

/// Remembered answers of one kind at most; past it the memo starts again (a host with more
/// skills than this warm at once pays one query for some of them).
const MAX_ANSWERS: usize = 4096;

/// The reader's (opening, `data_version`): versions of one opening of the connection compare
/// ([`super::conns`]); an opening after a fork is newer than every version before it.
pub(super) type Version = (u64, i64);

/// (origin label, canonical skill URI, principal).
pub(super) type Key = (String, String, String);

/// What the memo holds for a version of the database.
#[derive(Debug)]
struct Answers<T> {
    version: Option<Version>,
    answers: HashMap<Key, T>,
}

/// Believed answers of one kind (entries, or approvals) of one index.
#[derive(Debug)]
pub(super) struct Memo<T> {
    answers: Mutex<Answers<T>>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo {
            answers: Mutex::new(Answers {
                version: None,
                answers: HashMap::new(),
            }),
        }
    }
}

/// The reader's data version, read now. `None` when it cannot be read without waiting.
pub(super) fn version(conn: &Held<'_>) -> Option<Version> {
    // Readers do not wait for writers under WAL, but a read may meet SQLITE_BUSY in rare
    // recovery cases: then it is "unknown", never a wait.
    conn.busy_timeout(std::time::Duration::ZERO).ok()?;
    let v = conn
        .prepare_cached("PRAGMA data_version")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .ok();
    conn.busy_timeout(super::open::BUSY_TIMEOUT).ok()?;
    Some((conn.generation(), v?))
}

/// The version now, if the reader is free; `None` if another read holds it.
pub(super) fn version_now(reader: &Slot) -> Option<Version> {
    let conn = reader.try_lock()?;
    version(&conn)
}

impl<T: Clone> Memo<T> {
    fn answers(&self) -> std::sync::MutexGuard<'_, Answers<T>> {
        self.answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The remembered answer for `key`, if the database is still at `version`.
    pub(super) fn get(&self, version: Version, key: &Key) -> Option<T> {
        let answers = self.answers();
        (answers.version == Some(version))
            .then(|| answers.answers.get(key).cloned())
            .flatten()
    }

    /// Remembers an answer read at `version`. Versions only grow, so an answer read at an older
    /// one (another thread's, kept late) is not kept at all; a newer one forgets the rest.
    pub(super) fn keep(&self, version: Version, key: Key, answer: &T) {
        let mut answers = self.answers();
        match answers.version {
            Some(v) if v > version => return,
            Some(v) if v == version => {}
            _ => {
                answers.answers.clear();
                answers.version = Some(version);
            }
        }
        if answers.answers.len() >= MAX_ANSWERS {
            answers.answers.clear();
        }
        answers.answers.insert(key, answer.clone());
    }
}

/// The key of one (origin, skill, principal).
pub(super) fn key(origin: &str, canonical: &str, principal: &str) -> Key {
    (origin.to_owned(), canonical.to_owned(), principal.to_owned())
}
