//! Each origin's blob folder (`origins/<origin>/sha256`), held open after a hit read through it,
//! so a later read opens `<2 hex>/<62 hex>` from that descriptor instead of walking the whole
//! path from the root again (issue 41, P4: where `openat2` is refused, every component of the
//! path is an `openat` and a `close` of its own, and a 4 KiB hit paid four of each).
//!
//! Why a held folder keeps the store's rules (R-H1): it was reached from the root's descriptor
//! without following a link, and every read through it is opened the same way below it (no link,
//! no `..`, no FIFO). A folder moved or replaced since can redirect nothing through a link; what
//! a read finds through it passes the same checks as any read (hashed under `Rehash`; under
//! `Guaranteed` the confirmed evidence of the very inode, before and after the read). And it is
//! only ever a shortcut to a hit: any other outcome through it (missing, failed, an error) drops
//! it and the read is made again from the root, so a folder that gc, purge or another process
//! removed or replaced never turns into a false miss, a quarantine of the wrong file or an error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::origin::Origin;
use crate::platform::OwnedFd;

/// At most this many origins' folders are held (a descriptor each); past it, the oldest-held
/// half is let go. A host has a few servers; the bound is for one with very many.
const MAX_HELD: usize = 64;

/// The held blob folders of one store.
#[derive(Debug, Default)]
pub(super) struct HeldFolders {
    held: Mutex<HashMap<Origin, (Arc<OwnedFd>, u64)>>,
    next: std::sync::atomic::AtomicU64,
}

impl HeldFolders {
    /// `origin`'s held folder, if one is held.
    pub(super) fn get(&self, origin: &Origin) -> Option<Arc<OwnedFd>> {
        self.lock().get(origin).map(|(fd, _)| Arc::clone(fd))
    }

    /// Holds `fd` as `origin`'s blob folder.
    pub(super) fn hold(&self, origin: &Origin, fd: OwnedFd) {
        let at = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut held = self.lock();
        if held.len() >= MAX_HELD && !held.contains_key(origin) {
            let mut ages: Vec<u64> = held.values().map(|(_, at)| *at).collect();
            ages.sort_unstable();
            let cut = ages[ages.len() / 2];
            held.retain(|_, (_, at)| *at > cut);
        }
        held.insert(origin.clone(), (Arc::new(fd), at));
    }

    /// Lets go of `origin`'s folder (a read through it was not a hit).
    pub(super) fn drop_origin(&self, origin: &Origin) {
        self.lock().remove(origin);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Origin, (Arc<OwnedFd>, u64)>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
