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

    /// The turns of one batch of `digests` (each once), given back when the value is dropped.
    pub(super) fn gates<'a>(&'a self, origin: &'a Origin, digests: &[Digest]) -> Gates<'a> {
        Gates {
            flights: self,
            origin,
            held: digests.iter().map(|&d| (d, self.gate(origin, d))).collect(),
        }
    }

    /// Gives a turn back; the last one out forgets it.
    fn release(&self, origin: &Origin, digest: Digest, gate: &Gate) {
        let mut map = lock(&self.0);
        // Only the map and this caller hold it: nobody is waiting, so forget it.
        if Arc::strong_count(gate) <= 2 {
            map.remove(&(origin.clone(), digest));
        }
    }

    /// How many turns are remembered (the tests check that none outlives its holders).
    #[cfg(test)]
    fn remembered(&self) -> usize {
        lock(&self.0).len()
    }
}

/// The gates of one batch, released when dropped — by a fetch that finished, failed, or whose
/// future was dropped because the host cancelled its call. Without the drop, a cancelled
/// waiter's share of a gate was never given back: the gate outlived every holder with another
/// task's timeout in it, and each later read of that file got that timeout at once, sending no
/// request, until the process ended. Drop the turns taken under these gates first (declare them
/// after): a held turn counts as a holder.
pub(super) struct Gates<'a> {
    flights: &'a Flights,
    origin: &'a Origin,
    held: Vec<(Digest, Gate)>,
}

impl Gates<'_> {
    /// Each gate, in the order of the digests given.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Gate> {
        self.held.iter().map(|(_, g)| g)
    }
}

impl Drop for Gates<'_> {
    fn drop(&mut self) {
        for (d, gate) in &self.held {
            self.flights.release(self.origin, *d, gate);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> Digest {
        Digest::of(&[n])
    }

    #[test]
    fn a_batch_dropped_while_waiting_gives_its_gates_back_and_leaves_no_timeout_behind() {
        let flights = Flights::default();
        let origin = Origin::new("docs").expect("origin");
        let (low, high) = (digest(1), digest(2));
        // A waiter's batch holds both gates while it waits for the first one's turn...
        let waiter = flights.gates(&origin, &[low, high]);
        // ...when another task's fetch of the second file times out, marks its turn and gives
        // it back: the waiter still holds a share, so the gate stays.
        {
            let other = flights.gates(&origin, &[high]);
            let gate = other.iter().next().expect("one gate");
            *gate.try_lock().expect("free") =
                Some(("resources/read".into(), Duration::from_secs(1)));
        }
        assert_eq!(flights.remembered(), 2);
        // The waiter's call is cancelled: its future, and so its gates, are dropped.
        drop(waiter);
        assert_eq!(flights.remembered(), 0, "no gate outlives its holders");
        // The next reader of the second file starts afresh: no timeout is waiting for it.
        let next = flights.gates(&origin, &[high]);
        let gate = next.iter().next().expect("one gate");
        assert!(gate.try_lock().expect("free").is_none());
    }
}
