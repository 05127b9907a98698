//! Commands over many servers (`list --all`, `lock --all`, `approve --from-lock`): at most
//! `--jobs` servers run at once, each bound to its origin just before its work and unbound right
//! after it (K4).
//!
//! Why both: a stdio server holds three descriptors of ours (its stdin, its stdout, the child's
//! own handle) for as long as it is bound, so 500 configured servers started together — or
//! merely kept running one after another — exhaust a `ulimit -n` of 1024 and a third of them
//! fail with "too many open files", each of which works alone. With the bound, a command over
//! any number of servers holds at most `--jobs` of them, and every server is listed or its own
//! failure named.

use std::future::Future;
use std::sync::Arc;

use skillcache::source::{McpSource, SkillSource};
use skillcache::{Origin, SkillCache};

/// How many servers a command over many runs at once when `--jobs` is not given.
pub(crate) const DEFAULT_JOBS: u16 = 16;

/// One origin and the source to bind it to while its work runs (`None`: nothing to bind —
/// offline, or already bound by the caller).
pub(crate) type Server = (Origin, Option<Arc<McpSource>>);

/// Runs `work` for every server, at most `jobs` at once: each is bound just before its work
/// starts and unbound as soon as it ends, so its process and pipes are released (the cache's
/// binding was the last reference to the source; dropping it ends the child). Returns each
/// origin with what its work returned, in the order `servers` were given.
pub(crate) async fn each<T, F, Fut>(
    cache: &SkillCache,
    servers: Vec<Server>,
    jobs: usize,
    work: F,
) -> Vec<(Origin, T)>
where
    T: Send + 'static,
    F: Fn(SkillCache, Origin) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
{
    let turns = Arc::new(tokio::sync::Semaphore::new(jobs.max(1)));
    let mut running = tokio::task::JoinSet::new();
    for (i, (origin, source)) in servers.into_iter().enumerate() {
        let (cache, turns) = (cache.clone(), Arc::clone(&turns));
        let job = work(cache.clone(), origin.clone());
        running.spawn(async move {
            // The semaphore is never closed: a turn always comes.
            let _turn = turns.acquire_owned().await.ok();
            if let Some(source) = source {
                cache.connect(origin.clone(), source as Arc<dyn SkillSource>);
            }
            let out = job.await;
            cache.disconnect(&origin);
            (i, origin, out)
        });
    }
    let mut done = Vec::with_capacity(running.len());
    while let Some(finished) = running.join_next().await {
        // A task ends only by finishing or panicking (none is aborted): a panic is passed on,
        // never turned into a missing server.
        done.push(finished.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())));
    }
    done.sort_by_key(|(i, _, _)| *i);
    done.into_iter().map(|(_, o, out)| (o, out)).collect()
}
