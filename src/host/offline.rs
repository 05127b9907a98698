//! Offline mode: no server is contacted; entries and bytes come only from the cache.
//!
//! Entries are the index's sealed rows (R-H3: a row that fails its seal is absent), bytes are
//! the store's verified reads (R-C2). A stale entry is used only when the host allows it, and
//! is then reported as stale. Everything else that would need the server is an
//! [`Error::Offline`] naming the origin, the URI and what is missing. Nothing here writes, so it
//! works on a read-only, pre-populated root (a container image, R-H5).

use super::state::State;
use crate::entry::info::EntryInfo;
use crate::error::{Error, OfflineMiss};
use crate::origin::Origin;
use crate::source::{SkillSource, SourceFuture};
use crate::uri::{FileUri, SkillUri};

fn miss(origin: &Origin, uri: Option<&FileUri>, missing: OfflineMiss) -> Error {
    Error::Offline {
        origin: origin.clone(),
        uri: uri.cloned(),
        missing,
    }
}

/// A URI a request named, typed for the error. The cache asks only for URIs it parsed, so a
/// URI that does not parse is reported as the invalid URI it is, not as something missing.
fn asked(uri: &str) -> Result<FileUri, Error> {
    Ok(FileUri::parse(uri)?)
}

/// The source every origin is read through in offline mode: it answers every request with the
/// error saying what the cache lacked, and contacts nothing. Because a [`LoadedSkill`] reads
/// through the source it was loaded with, its cache misses end here too.
///
/// [`LoadedSkill`]: super::LoadedSkill
pub(super) struct OfflineSource {
    pub(super) origin: Origin,
}

impl SkillSource for OfflineSource {
    fn list_skills<'a>(&'a self, _cursor: Option<&'a str>) -> SourceFuture<'a> {
        let e = miss(
            &self.origin,
            None,
            OfflineMiss::Server {
                method: "skills/list",
            },
        );
        Box::pin(std::future::ready(Err(e)))
    }

    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        let e = asked(uri).map_or_else(
            |bad| bad,
            |uri| {
                miss(
                    &self.origin,
                    Some(&uri),
                    OfflineMiss::Server {
                        method: "skills/get",
                    },
                )
            },
        );
        Box::pin(std::future::ready(Err(e)))
    }

    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        let e = asked(uri).map_or_else(
            |bad| bad,
            |uri| miss(&self.origin, Some(&uri), OfflineMiss::File),
        );
        Box::pin(std::future::ready(Err(e)))
    }
}

/// The cached entry of (`origin`, `uri`) for `principal`: fresh, or stale when allowed (and then
/// marked stale); otherwise [`Error::Offline`].
pub(super) async fn entry(
    state: &State,
    origin: &Origin,
    uri: &SkillUri,
    principal: &str,
) -> Result<EntryInfo, Error> {
    // The purge count, noted on the entry before the row is read, as online (round 28 of
    // review: an entry read offline, loaded after a purge by a cache opened since, kept what it
    // fetched).
    let seen = state.core().purges_seen(origin);
    let (o, u, p) = (origin.clone(), uri.clone(), principal.to_owned());
    let Some(stored) = state.blocking(move |c| c.entry(&o, &u, &p)).await? else {
        return Err(miss(origin, Some(uri.file()), OfflineMiss::Entry));
    };
    if !stored.fresh && !state.settings().offline.allow_stale {
        let age_ms = crate::core::now_ms().saturating_sub(stored.fetched_at_ms);
        return Err(miss(
            origin,
            Some(uri.file()),
            OfflineMiss::Stale { age_ms },
        ));
    }
    let entry = state.core().noted(stored.entry, seen);
    Ok(EntryInfo::cached(entry, !stored.fresh))
}

/// Every cached entry of `origin` that `principal` sees, as [`entry`] resolves each: a stale one
/// not allowed is an error in its slot, as a bad entry is in a server's listing.
pub(super) async fn list(
    state: &State,
    origin: &Origin,
    principal: &str,
) -> Result<Vec<Result<EntryInfo, Error>>, Error> {
    let o = origin.clone();
    let rows = state.blocking(move |c| c.entries(Some(&o))).await?;
    let mut uris: Vec<String> = rows.into_iter().map(|r| r.skill_uri).collect();
    uris.sort();
    uris.dedup();
    let mut out = Vec::with_capacity(uris.len());
    for text in uris {
        // Rows hold URIs that were valid when stored; one that no longer parses is not served.
        let Ok(uri) = SkillUri::parse(&text) else {
            continue;
        };
        match entry(state, origin, &uri, principal).await {
            // Another principal's private entry: not this principal's to see (R-C6).
            Err(Error::Offline {
                missing: OfflineMiss::Entry,
                ..
            }) => {}
            other => out.push(other),
        }
    }
    Ok(out)
}
