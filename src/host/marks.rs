//! What this process remembers between calls, bounded whatever servers do: which entries their
//! servers announced as changed (R-B5), and which approvals a refresh revoked (R-A2), so a later
//! `load` can say *revoked* and what changed instead of *never approved*.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::entry::{Binding, EntryDiff, SkillEntry};
use crate::index::PutOutcome;
use crate::origin::Origin;
use crate::source::Change;

/// The most revocations remembered (R-P1); past it the oldest knowledge is dropped and a
/// revoked skill is then reported as not approved, which declines it all the same.
const MAX_REVOCATIONS: usize = 4096;
/// The most `resources/updated` marks kept per origin (R-B5: bounded memory whatever the server).
const MAX_MARKS: usize = 1024;
/// The longest URI a `resources/updated` mark keeps.
const MAX_MARKED_URI: usize = 4096;

/// Locks one of the maps, taking over a poisoned one: each is changed by single inserts and
/// removals, so a panic elsewhere never leaves one half-updated, and a load must not fail over it.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// (origin, canonical skill URI, principal).
type RevocationKey = (Origin, String, String);

/// Change notifications of one origin, as times (ms since the epoch) they arrived. An entry
/// fetched before a mark that concerns it is stale, however fresh its row says it is.
#[derive(Debug, Default)]
struct StaleMarks {
    /// The last `list_changed`: every entry of the origin.
    everything: Option<u64>,
    /// The last `resources/updated` of each URI: the entry whose skill holds it.
    files: HashMap<String, u64>,
}

impl StaleMarks {
    fn concerns(&self, entry: &SkillEntry, fetched_at_ms: u64) -> bool {
        if self.everything.is_some_and(|t| t >= fetched_at_ms) {
            return true;
        }
        let root = format!("{}/", entry.uri().root());
        self.files
            .iter()
            .any(|(uri, &t)| t >= fetched_at_ms && uri.starts_with(&root))
    }
}

/// The marks and revocations of one cache (shared by every handle).
#[derive(Debug, Default)]
pub(super) struct Marks {
    stale: Mutex<HashMap<Origin, StaleMarks>>,
    revocations: Mutex<HashMap<RevocationKey, (Binding, EntryDiff)>>,
}

fn revocation_key(origin: &Origin, entry: &SkillEntry, principal: &str) -> RevocationKey {
    (
        origin.clone(),
        entry.uri().canonical().to_owned(),
        principal.to_owned(),
    )
}

impl Marks {
    /// A server announced a change (R-B5).
    pub(super) fn mark_stale(&self, origin: &Origin, change: Change) {
        // Logged as text a person reads (N4): the URI display-safe, never the enum's `Debug`.
        match &change {
            Change::Updated { uri } => tracing::debug!(
                origin = origin.as_str(),
                uri = %crate::display::display_safe(uri),
                "the server announced a changed resource"
            ),
            Change::ListChanged => tracing::debug!(
                origin = origin.as_str(),
                "the server announced a changed skill list"
            ),
        }
        let now = crate::core::now_ms();
        let mut stale = lock(&self.stale);
        let marks = stale.entry(origin.clone()).or_default();
        match change {
            Change::ListChanged => {
                marks.everything = Some(now);
                marks.files.clear();
            }
            // A server may announce anything, as often as it likes: the marks stay bounded. A
            // URI no file URI can be, or one mark too many, becomes "everything changed", which
            // costs at most one `skills/get` per held skill and no memory.
            Change::Updated { uri }
                if uri.len() > MAX_MARKED_URI || marks.files.len() >= MAX_MARKS =>
            {
                marks.everything = Some(now);
                marks.files.clear();
            }
            Change::Updated { uri } => {
                marks.files.insert(uri, now);
            }
        }
    }

    /// Whether the server of `origin` announced any change at or after `since_ms`.
    pub(super) fn announced_since(&self, origin: &Origin, since_ms: u64) -> bool {
        lock(&self.stale).get(origin).is_some_and(|m| {
            m.everything.is_some_and(|t| t >= since_ms) || m.files.values().any(|&t| t >= since_ms)
        })
    }

    /// Whether an announcement since `fetched_at_ms` concerns `entry`.
    pub(super) fn is_stale(&self, origin: &Origin, entry: &SkillEntry, fetched_at_ms: u64) -> bool {
        lock(&self.stale)
            .get(origin)
            .is_some_and(|m| m.concerns(entry, fetched_at_ms))
    }

    /// Remembers that storing `entry` revoked `principal`'s approval (R-A2), for the gate.
    pub(super) fn note_revocation(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        principal: &str,
        out: &PutOutcome,
    ) {
        let (true, Some(binding), Some(diff)) = (out.revoked, entry.binding(), out.diff.clone())
        else {
            return;
        };
        let mut map = lock(&self.revocations);
        if map.len() >= MAX_REVOCATIONS {
            map.clear();
        }
        map.insert(revocation_key(origin, entry, principal), (binding, diff));
    }

    /// A new approval: the old revocation is history.
    pub(super) fn forget_revocation(&self, origin: &Origin, entry: &SkillEntry, principal: &str) {
        lock(&self.revocations).remove(&revocation_key(origin, entry, principal));
    }

    /// What changed, if `principal`'s approval of this skill was revoked by the very file set
    /// `entry` has (an entry that changed again since is simply not approved).
    pub(super) fn revocation(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        principal: &str,
        binding: Binding,
    ) -> Option<EntryDiff> {
        lock(&self.revocations)
            .get(&revocation_key(origin, entry, principal))
            .filter(|(b, _)| *b == binding)
            .map(|(_, diff)| diff.clone())
    }
}
