//! The bytes a watched `serve` keeps from its scan, so a `resources/read` answers them without
//! opening, reading and hashing the file again (issue 41, P3: rmcp's `SkillCatalog` answers
//! from the snapshot it holds, and each read from disk cost `serve` a tenth of a sweep).
//!
//! Invariant (R-E1): held bytes are the very bytes the scan hashed into the published digest —
//! they are kept from that read, never read again — so answering them answers only what was
//! published. They live in this process's memory, where no other process can write them. They
//! are bounded: a file is held only while the whole stays within the server's budget (and a
//! file only up to [`MAX_HELD_FILE`]); what is not held is read from the folder as before.
//!
//! A held file that changes on disk is answered as published until the watcher's next scan
//! publishes it anew and announces the change; which is why only a watched server holds bytes
//! (an unwatched one learns of an edit from the read that finds it), and why a dynamic skill's
//! files are always read from the folder (they are answered as they now are).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The default bound on held bytes, all files together: the corpus (6.5 MB) fits ten times.
pub(crate) const DEFAULT_HELD_BYTES: u64 = 64 * 1024 * 1024;

/// The largest file held: a larger one is read from the folder on each request, so one file
/// cannot take the budget.
pub(crate) const MAX_HELD_FILE: u64 = 1024 * 1024;

/// How many bytes a server may hold, and how many it holds. Shared by every clone of a server.
#[derive(Debug)]
pub(crate) struct Budget {
    max: AtomicU64,
    used: AtomicU64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max: AtomicU64::new(DEFAULT_HELD_BYTES),
            used: AtomicU64::new(0),
        }
    }
}

impl Budget {
    /// Sets the bound; what is held already stays until its snapshot goes.
    pub(crate) fn set_max(&self, max: u64) {
        self.max.store(max, Ordering::SeqCst);
    }

    /// How many bytes are held now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }

    /// Room for a file of `size` bytes, if the bound allows it. The claim is given back when
    /// it (or the bytes it became) is dropped.
    pub(crate) fn claim(self: &Arc<Budget>, size: u64) -> Option<Claim> {
        if size > MAX_HELD_FILE {
            return None;
        }
        let max = self.max.load(Ordering::SeqCst);
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(size).filter(|&total| total <= max)
            })
            .ok()?;
        Some(Claim {
            size,
            budget: self.clone(),
        })
    }
}

/// Room claimed in a [`Budget`] for one file.
#[derive(Debug)]
pub(crate) struct Claim {
    size: u64,
    budget: Arc<Budget>,
}

impl Claim {
    /// The file's bytes, held in the claimed room; `None` (and the room given back) when they
    /// are not the size claimed.
    pub(crate) fn hold(self, bytes: Vec<u8>) -> Option<Held> {
        (bytes.len() as u64 == self.size).then(|| Held {
            bytes: bytes.into_boxed_slice(),
            _claim: self,
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.size, Ordering::SeqCst);
    }
}

/// A file's published bytes, kept from the read that hashed them.
pub(crate) struct Held {
    bytes: Box<[u8]>,
    _claim: Claim,
}

impl Held {
    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Held({} bytes)", self.bytes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_holds_files_up_to_its_bound_and_gets_the_room_back_when_they_go() {
        let budget = Arc::new(Budget::default());
        budget.set_max(10);
        let a = budget.claim(6).and_then(|c| c.hold(vec![1; 6])).expect("fits");
        assert!(budget.claim(5).is_none(), "6 + 5 is over 10");
        let b = budget.claim(4).expect("6 + 4 fits");
        assert_eq!(budget.used(), 10);
        drop(a);
        assert_eq!(budget.used(), 4);
        assert!(b.hold(vec![0; 3]).is_none(), "not the size claimed");
        assert_eq!(budget.used(), 0, "a claim not filled gives its room back");
    }

    #[test]
    fn a_file_over_the_per_file_bound_is_never_held() {
        let budget = Arc::new(Budget::default());
        assert!(budget.claim(MAX_HELD_FILE + 1).is_none());
        assert!(budget.claim(MAX_HELD_FILE).is_some());
    }
}
