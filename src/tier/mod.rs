//! The shared tier ("L2"): verified public blobs shared by a fleet of hosts through an
//! object store (S3 and S3-compatible stores, or any `object_store` a host builds).
//!
//! Lookup order for a listed file: memory tier → local store → **L2** → server. The tier is as
//! untrusted as the server:
//!
//! - **Only public entries touch it.** The only way to reach a tier is a [`TierHandle`], and
//!   the only constructor of one is [`TierHandle::for_entry`]: the held entry must be the very
//!   entry (same binding) this host stored as `cacheScope: public` for the handle's principal.
//!   Anything else — a private entry, an entry the index does not hold, one it cannot read — gets
//!   no handle, so not one get or put is sent for it.
//! - **Its bytes are checked like a server's** before they are used or published locally: the
//!   object's listed size first (nothing is read when it differs), then a bounded read that never
//!   buffers more than the entry's size, then the digest, then for the skill's own `SKILL.md` the
//!   frontmatter (R-V3, R-V2, R-V6). A bad or missing object is not an error: it is counted and
//!   logged, and the file is asked of the server — one server read, as without the tier, so the
//!   single-refetch budget of R-V9 is unchanged.
//! - **It is written only with verified bytes**, after the server's bytes passed every check,
//!   with a conditional create (`PutMode::Create`): an existing object is never replaced, and
//!   losing that race to another host is not an error.
//! - **It never blocks a load.** Every operation has a deadline (default 2 s), and a file
//!   whose operation misses it or fails comes from the server. A tier that fails, answers
//!   nothing within a deadline, or misses three in a row is skipped, with one warning, for
//!   30 s; one late answer while the tier answers this host's other requests (a crowded store
//!   in a fleet's cold start) costs only its own file.
//!
//! Keys mirror the local store: `<prefix>/origins/<encoded origin>/sha256/<2 hex>/<62 hex>`, so
//! hosts that share one MCP configuration (the same origin labels) share blobs, and nothing
//! crosses origins (R-O2).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::entry::{ManifestFile, Scope, SkillEntry};
use crate::index::StoredEntry;
use crate::mismatch::Mismatch;
use crate::origin::Origin;
use crate::stats::Counters;
use crate::verify::VerifiedBytes;

// The one place the feature is chosen: without it there is no implementation, and a cache
// without a tier simply holds none (`Option::None` is the null tier; no body has a `cfg`).
#[cfg(feature = "l2")]
mod s3;
#[cfg(feature = "l2")]
pub use s3::L2;
#[cfg(feature = "l2")]
pub(crate) use s3::open;

/// What a tier's calls return.
pub(crate) type TierFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A shared tier of blobs. As untrusted as a server: what it returns is checked by the loading
/// path like a server's bytes; it is only ever given bytes that were verified. Nothing it does
/// fails a load — a tier that is down, slow or wrong is a reason to ask the server.
pub(crate) trait BlobTier: Send + Sync + std::fmt::Debug {
    /// At most `file.size()` bytes said to be `file`, not yet checked; `None`: ask the server.
    /// Misses and outages are counted in `counters`.
    fn get<'a>(
        &'a self,
        origin: &'a Origin,
        file: &'a ManifestFile,
        counters: &'a Counters,
    ) -> TierFuture<'a, Option<Vec<u8>>>;

    /// What [`BlobTier::get`] returned failed verification (reported, counted; the object is
    /// left in place: a wrong object under a content address can only cost a reader one get).
    fn rejected(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        mismatch: &Mismatch,
        counters: &Counters,
    );

    /// Publishes bytes this host verified from the server (a conditional create: an existing
    /// object is never replaced; losing that race is not an error).
    fn put<'a>(
        &'a self,
        origin: &'a Origin,
        file: &'a ManifestFile,
        bytes: &'a VerifiedBytes,
        counters: &'a Counters,
    ) -> TierFuture<'a, ()>;
}

/// The tier for one public entry: the only way the loading path reaches a tier (F1).
#[derive(Debug, Clone)]
pub(crate) struct TierHandle(Arc<dyn BlobTier>);

impl TierHandle {
    /// A handle for `held` only if it is the entry `stored` — what the index holds for this
    /// principal, sealed — and that entry is public with the same binding. The one enforcement
    /// point of "private content never touches the shared tier".
    pub(crate) fn for_entry(
        tier: &Arc<dyn BlobTier>,
        stored: Option<&StoredEntry>,
        held: &SkillEntry,
    ) -> Option<TierHandle> {
        let stored = stored?;
        let binding = held.binding()?;
        (stored.hints.scope() == Scope::Public
            && stored.entry.uri() == held.uri()
            && stored.entry.binding() == Some(binding))
        .then(|| TierHandle(Arc::clone(tier)))
    }

    pub(crate) fn tier(&self) -> &dyn BlobTier {
        self.0.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::digest::Digest;
    use crate::entry::{CacheHints, Validation};

    /// A tier that must never be reached: these tests only ask whether a handle is given.
    #[derive(Debug)]
    struct Unreachable;

    impl BlobTier for Unreachable {
        fn get<'a>(
            &'a self,
            _: &'a Origin,
            _: &'a ManifestFile,
            _: &'a Counters,
        ) -> TierFuture<'a, Option<Vec<u8>>> {
            Box::pin(std::future::ready(None))
        }
        fn rejected(&self, _: &Origin, _: &ManifestFile, _: &Mismatch, _: &Counters) {}
        fn put<'a>(
            &'a self,
            _: &'a Origin,
            _: &'a ManifestFile,
            _: &'a VerifiedBytes,
            _: &'a Counters,
        ) -> TierFuture<'a, ()> {
            Box::pin(std::future::ready(()))
        }
    }

    fn entry(body: &[u8]) -> SkillEntry {
        let md = [
            b"---\nname: notes\ndescription: Notes.\n---\n".as_slice(),
            body,
        ]
        .concat();
        SkillEntry::from_json(
            &json!({
                "uri": "skill://notes/SKILL.md",
                "frontmatter": {"name": "notes", "description": "Notes."},
                "resources": [{"uri": "skill://notes/SKILL.md", "digest": Digest::of(&md).to_string(), "size": md.len()}],
            }),
            &Validation::default(),
        )
        .expect("valid")
    }

    fn stored(entry: &SkillEntry, scope: Scope) -> StoredEntry {
        StoredEntry {
            entry: entry.clone(),
            hints: CacheHints::new(0, scope),
            fetched_at_ms: 0,
            fresh: true,
        }
    }

    #[test]
    fn f1_only_the_stored_public_entry_itself_gets_the_shared_tier() {
        let tier: Arc<dyn BlobTier> = Arc::new(Unreachable);
        let held = entry(b"one");
        assert!(TierHandle::for_entry(&tier, Some(&stored(&held, Scope::Public)), &held).is_some());
        // Private, unknown to the index, or another version of the entry: no handle at all.
        assert!(
            TierHandle::for_entry(&tier, Some(&stored(&held, Scope::Private)), &held).is_none()
        );
        assert!(TierHandle::for_entry(&tier, None, &held).is_none());
        let other = entry(b"two");
        assert!(
            TierHandle::for_entry(&tier, Some(&stored(&other, Scope::Public)), &held).is_none()
        );
    }
}
