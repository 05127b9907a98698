//! `check_lock`: asks every origin a lock pins for its listing and compares (the pure part is
//! `LockCheck::from_listings`). No file is fetched.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::cache::SkillCache;
use crate::catalog::CATALOG_LISTINGS_AT_ONCE;
use crate::lock_check::LockCheck;
use crate::lockfile::LockFile;
use crate::origin::Origin;

impl SkillCache {
    /// Whether every origin `lock` pins still publishes exactly what it pins: one `skills/list`
    /// per origin (at most [`CATALOG_LISTINGS_AT_ONCE`] at a time), compared with every pinned
    /// skill's files (URI, digest, size) and binding, and every skill added or removed. No file
    /// is fetched. A pinned origin that is not connected, or that cannot be listed, is drift
    /// ([`LockDrift::Unlisted`](crate::LockDrift::Unlisted)), never an error: a gate answers for
    /// every origin. Listing stores the entries as [`list`](Self::list) does, so a changed skill's
    /// approval is revoked here as it would be at its next load.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use skillcache::{LockFile, Origin, SkillCache};
    /// # use skillcache::local::SkillServer;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), skillcache::Error> {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// # let skill = tmp.path().join("skills/notes");
    /// # std::fs::create_dir_all(&skill).unwrap();
    /// # std::fs::write(skill.join("SKILL.md"), "---\nname: notes\ndescription: Notes.\n---\n").unwrap();
    /// let cache = SkillCache::builder()
    ///     .root(tmp.path().join("cache"))
    ///     .key_file(tmp.path().join("host.key"))
    ///     .open()?;
    /// let origin = Origin::new("docs")?;
    /// cache.connect(origin.clone(), Arc::new(SkillServer::new(tmp.path().join("skills"))));
    /// let mut lock = LockFile::new();
    /// for listed in cache.list(&origin).await? {
    ///     lock.insert(&origin, &listed?.entry)?;
    /// }
    /// assert!(cache.check_lock(&lock).await.is_clean());
    ///
    /// // The server's file changes (a server over the folder as it is now): the check names it,
    /// // old digest and size -> new.
    /// std::fs::write(skill.join("SKILL.md"), "---\nname: notes\ndescription: Changed.\n---\n").unwrap();
    /// cache.connect(origin.clone(), Arc::new(SkillServer::new(tmp.path().join("skills"))));
    /// let check = cache.check_lock(&lock).await;
    /// assert_eq!(check.drift.len(), 1);
    /// assert!(check.drift[0].to_string().contains("skill://notes/SKILL.md changed"));
    /// # Ok(()) }
    /// ```
    pub async fn check_lock(&self, lock: &LockFile) -> LockCheck {
        let origins: BTreeSet<Origin> = lock.skills().map(|s| s.origin().clone()).collect();
        let at_once = Arc::new(tokio::sync::Semaphore::new(CATALOG_LISTINGS_AT_ONCE));
        let mut listings = tokio::task::JoinSet::new();
        for (slot, origin) in origins.into_iter().enumerate() {
            let (cache, at_once) = (self.clone(), Arc::clone(&at_once));
            listings.spawn(async move {
                // The semaphore is never closed.
                let _turn = at_once.acquire_owned().await.ok();
                let listed = cache.list(&origin).await;
                (slot, origin, listed)
            });
        }
        let mut gathered = Vec::new();
        while let Some(done) = listings.join_next().await {
            // A listing task only ends by finishing or panicking (none is aborted): a panic is
            // passed on, never turned into a missing origin.
            gathered.push(done.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())));
        }
        // In the lock's order, whatever order the listings finished in.
        gathered.sort_by_key(|(slot, _, _)| *slot);
        LockCheck::from_listings(lock, gathered.into_iter().map(|(_, o, l)| (o, l)).collect())
    }
}
