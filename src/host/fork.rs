//! What a binding whose host language forks calls around the fork (issue 39, B4): the index's
//! fork gate, so no thread is inside `SQLite` at the instant a child is made; and what it calls
//! before its process exits (every cache's write-behind, flushed).

use std::time::Duration;

use super::cache::SkillCache;

impl SkillCache {
    /// Prepares this process to fork: new index work of every cache in the process waits, this
    /// waits up to `within` for the work already under way to end, then closes every index
    /// connection of the process, so the child inherits none (`SQLite`: "do not carry an open
    /// connection across a fork"); each opens again on its next use, in the parent. Whether it
    /// all ended and every connection closed: `false` means a call was still inside `SQLite` (a
    /// long `purge` rewrite, or a call waiting on another process's lock), and a child forked
    /// now refuses to open the index files its parent was inside (`SQLite` cannot share them
    /// with it). Call
    /// [`after_fork`](Self::after_fork) on the same thread after the fork, in the parent and in
    /// the child, whatever this returned.
    ///
    /// This is for a binding whose host forks while other threads may be working (Python's
    /// `os.register_at_fork`); a Rust host that forks should exec at once, as `Command` does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use skillcache::SkillCache;
    /// assert!(SkillCache::before_fork(Duration::from_secs(5)));
    /// // ... fork here ...
    /// SkillCache::after_fork(false); // in the parent; `true` in the child
    /// ```
    #[must_use]
    pub fn before_fork(within: Duration) -> bool {
        let ended = crate::index::gate::close(within);
        // After the gate: no other thread is inside SQLite, so none is using a connection.
        let left_open = crate::index::conns::close_all();
        ended && left_open == 0
    }

    /// Lets index work run again after a fork that [`before_fork`](Self::before_fork) prepared:
    /// `in_child` in the forked child (the parent's other threads, and their work, do not exist
    /// there), not in the parent.
    pub fn after_fork(in_child: bool) {
        crate::index::conns::after_fork(in_child);
        crate::index::gate::open(in_child);
    }

    /// Waits up to `within`, in all, until every cache of this process has published what its
    /// loads handed over ([`flush`](Self::flush), for all of them at once, without a runtime);
    /// whether everything was. For a binding whose host may exit without dropping its caches
    /// (an interpreter's finalization, a process's `exit` event): dropping the last handle of a
    /// cache waits for its own by itself.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(skillcache::SkillCache::flush_all(Duration::from_secs(5)));
    /// ```
    #[must_use]
    pub fn flush_all(within: Duration) -> bool {
        super::behind::flush_all(within)
    }
}
