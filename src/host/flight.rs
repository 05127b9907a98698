//! Single flight: one fetch per (origin, digest) at a time in this process. Concurrent readers of
//! a missing file wait for the first fetch and then hit the cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::marks::lock;
use crate::digest::Digest;
use crate::origin::Origin;

/// A per-file turn: held while one task fetches a file, so the others wait and then hit. A
/// fetch that timed out leaves its deadline here: the tasks waiting on the same turn get the
/// same timeout instead of each waiting out its own (R-B1); once they are gone the turn is
/// forgotten, and the next call tries again.
pub(super) type Gate = Arc<tokio::sync::Mutex<Option<(String, Duration)>>>;

/// The turns in use.
#[derive(Debug, Default)]
pub(super) struct Flights(Mutex<HashMap<(Origin, Digest), Gate>>);

impl Flights {
    /// The turn for (`origin`, `digest`), shared with every task asking for it now.
    pub(super) fn gate(&self, origin: &Origin, digest: Digest) -> Gate {
        Arc::clone(lock(&self.0).entry((origin.clone(), digest)).or_default())
    }

    /// Gives a turn back; the last one out forgets it.
    pub(super) fn release(&self, origin: &Origin, digest: Digest, gate: &Gate) {
        let mut map = lock(&self.0);
        // Only the map and this caller hold it: nobody is waiting, so forget it.
        if Arc::strong_count(gate) <= 2 {
            map.remove(&(origin.clone(), digest));
        }
    }
}
