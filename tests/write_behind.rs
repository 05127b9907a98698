//! Write-behind (issue 41, P1): a load returns its verified files before the store has made them
//! durable, and the cache's keeper publishes them behind it. What a host may count on: a second
//! load meanwhile asks the server nothing, `flush` and the last handle's drop leave every file in
//! the store, and maintenance never works on a store that misses what loads returned — a purge
//! above all is never undone by a publish queued before it.
#![allow(clippy::result_large_err)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::double::Double;
use skillcache::{ApprovalPolicy, Origin, Provenance, SkillCache, SkillEntry};

/// Every test here waits on the keeper (a flush, the last handle's drop): one that hangs fails
/// after this bound instead of hanging the suite. A guard, not a speed target: each test takes
/// well under a second.
const HANG: Duration = Duration::from_secs(120);

/// Runs `test` on a runtime of its own, on a thread of its own, within [`HANG`]; its panic is
/// the test's.
fn bounded<F: Future<Output = ()> + Send + 'static>(test: impl FnOnce() -> F + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(test());
        }));
        let _ = tx.send(run);
    });
    let run = rx
        .recv_timeout(HANG)
        .unwrap_or_else(|e| panic!("{e} after {HANG:?}: the keeper (a flush, a drop) hangs"));
    if let Err(panic) = run {
        std::panic::resume_unwind(panic);
    }
}

fn open(dir: &std::path::Path, source: &Arc<Double>) -> (SkillCache, Origin) {
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(dir.join("root"))
        .key_file(dir.join("host.key"))
        .memory_tier(0)
        .open()
        .expect("open");
    let origin = Origin::new("docs-server").expect("label");
    cache.connect(
        origin.clone(),
        Arc::clone(source) as Arc<dyn skillcache::source::SkillSource>,
    );
    (cache, origin)
}

/// A skill of twelve files besides its `SKILL.md` (more than one publish batch), served by a
/// double that counts every read.
fn served() -> (SkillEntry, Arc<Double>) {
    let (entry, files) = common::many("behind", 12);
    let double = Arc::new(Double::new());
    double.publish(&entry, &files);
    (entry, double)
}

#[test]
fn a_second_load_right_after_the_first_asks_the_server_nothing() {
    bounded(|| async move {
        let dir = common::scratch();
        let (entry, double) = served();
        let (cache, origin) = open(dir.path(), &double);
        let (_, first) = cache.load_all(&origin, &entry).await.expect("cold");
        let reads = double.reads();
        assert_eq!(reads, first.len(), "every file fetched once");
        // Whether the keeper has published them yet or not, they are the cache's.
        let (_, again) = cache.load_all(&origin, &entry).await.expect("warm");
        assert_eq!(
            double.reads(),
            reads,
            "no request for a file on its way to the store"
        );
        assert!(again.iter().all(|f| f.provenance() == Provenance::Cache));
        assert_eq!(
            again.iter().map(|f| f.bytes().to_vec()).collect::<Vec<_>>(),
            first.iter().map(|f| f.bytes().to_vec()).collect::<Vec<_>>()
        );
    });
}

#[test]
fn dropping_the_cache_leaves_every_loaded_file_in_the_store() {
    bounded(|| async move {
        let dir = common::scratch();
        let (entry, double) = served();
        {
            let (cache, origin) = open(dir.path(), &double);
            let (_, files) = cache.load_all(&origin, &entry).await.expect("cold");
            assert!(
                files.iter().all(skillcache::SkillFile::stored),
                "kept or on its way"
            );
        }
        let reads = double.reads();
        // A new cache on the same root: nothing in memory, everything from the disk.
        let (cache, origin) = open(dir.path(), &double);
        let (_, files) = cache
            .load_all(&origin, &entry)
            .await
            .expect("from the store");
        assert_eq!(double.reads(), reads, "every file was on disk");
        assert!(files.iter().all(|f| f.provenance() == Provenance::Cache));
        assert_eq!(
            cache.inventory().await.expect("inventory").blobs,
            files.len()
        );
        assert!(
            dir.path().join("root/origins/docs-server").is_dir(),
            "the origin's folder"
        );
    });
}

#[test]
fn a_purge_right_after_loads_is_never_undone_by_the_keeper() {
    bounded(|| async move {
        let dir = common::scratch();
        let (entry, double) = served();
        {
            let (cache, origin) = open(dir.path(), &double);
            cache.load_all(&origin, &entry).await.expect("cold");
            cache.purge(&origin).await.expect("purge");
            assert!(cache.origins().await.expect("origins").is_empty());
        }
        // After the keeper's thread has ended (the drop waits for it), still nothing of the origin.
        let (cache, _) = open(dir.path(), &double);
        assert!(cache.origins().await.expect("origins").is_empty());
        assert_eq!(cache.inventory().await.expect("inventory").blobs, 0);
        assert!(
            !dir.path().join("root/origins/docs-server").exists(),
            "no folder of the origin under the root"
        );
    });
}

#[test]
fn flush_and_every_maintenance_call_see_what_loads_returned() {
    bounded(|| async move {
        let dir = common::scratch();
        let (entry, double) = served();
        let (cache, origin) = open(dir.path(), &double);
        let (_, files) = cache.load_all(&origin, &entry).await.expect("cold");
        // No flush first: inventory, verify and gc flush by themselves.
        assert_eq!(
            cache.inventory().await.expect("inventory").blobs,
            files.len()
        );
        let verified = cache.verify(None, |_, _| {}).await.expect("verify");
        assert_eq!(verified.checked, files.len());
        assert!(verified.is_clean());
        let (_, more) = cache.load_all(&origin, &entry).await.expect("warm");
        cache.flush().await;
        assert_eq!(
            cache.inventory().await.expect("inventory").blobs,
            more.len()
        );
        assert!(skillcache::SkillCache::flush_all(
            std::time::Duration::from_secs(5)
        ));
    });
}

/// Another cache on the root (another process, as far as the store can tell) purges while this
/// one's keeper still holds the loaded files: the keeper's publish keeps nothing, because the
/// load noted the index's purge mark before it fetched (round 21 of review). Whichever comes
/// first, the purge or the keeper's publish, nothing of the origin is left.
#[test]
fn a_purge_by_another_cache_is_never_undone_by_this_caches_keeper() {
    bounded(|| async move {
        let dir = common::scratch();
        let (entry, double) = served();
        let (ours, origin) = open(dir.path(), &double);
        let (theirs, _) = open(dir.path(), &double);
        ours.load_all(&origin, &entry).await.expect("cold");
        theirs.purge(&origin).await.expect("purge");
        ours.flush().await;
        for cache in [&ours, &theirs] {
            assert!(cache.origins().await.expect("origins").is_empty());
            assert_eq!(cache.inventory().await.expect("inventory").blobs, 0);
        }
        assert!(
            !dir.path().join("root/origins/docs-server").exists(),
            "no folder of the origin under the root"
        );
        // The entry held from before the purge still loads, from the server, but what it
        // fetches is not kept: the index holds no entry of the origin any more (round 25).
        let reads = double.reads();
        ours.load_all(&origin, &entry)
            .await
            .expect("after the purge");
        ours.flush().await;
        assert!(double.reads() > reads, "fetched again");
        assert!(
            ours.origins().await.expect("origins").is_empty(),
            "still purged"
        );
        // Listed again, the origin is the host's once more: a load keeps what it fetches.
        let listed = ours
            .entry(&origin, entry.uri())
            .await
            .expect("listed again");
        let (_, files) = ours
            .load_all(&origin, &listed.entry)
            .await
            .expect("after listing again");
        ours.flush().await;
        assert_eq!(
            ours.inventory().await.expect("inventory").blobs,
            files.len()
        );
    });
}

/// Round 26 of review: an entry obtained before another cache's purge, loaded after this cache
/// asked another server something (which read the new purge count): what the load fetches is
/// served, not kept.
#[test]
fn an_entry_from_before_a_purge_loaded_after_a_request_elsewhere_keeps_nothing() {
    bounded(|| async move {
        let dir = common::scratch();
        let (entry, double) = served();
        let (ours, origin) = open(dir.path(), &double);
        let (theirs, _) = open(dir.path(), &double);
        let other = Origin::new("other-server").expect("label");
        ours.connect(
            other.clone(),
            Arc::clone(&double) as Arc<dyn skillcache::source::SkillSource>,
        );
        let listed = ours.entry(&origin, entry.uri()).await.expect("listed");
        theirs.purge(&origin).await.expect("purge");
        ours.entry(&other, entry.uri())
            .await
            .expect("a request elsewhere");
        ours.load_all(&origin, &listed.entry).await.expect("served");
        ours.flush().await;
        assert!(
            !ours.origins().await.expect("origins").contains(&origin),
            "the purged origin stays gone"
        );
    });
}

/// Round 27 of review: after a purge, the cache asks the same origin about another skill
/// (which reads the new purge count for that origin); an entry handed out before the purge,
/// loaded then — by this handle or by one opened after the purge — keeps nothing it fetches:
/// the count travels with the entry.
#[test]
fn an_entry_from_before_a_purge_keeps_nothing_after_a_request_about_another_skill() {
    bounded(|| async move {
        for late in [false, true] {
            let dir = common::scratch();
            let (entry, double) = served();
            let (ours, origin) = open(dir.path(), &double);
            let (theirs, _) = open(dir.path(), &double);
            let listed = ours.entry(&origin, entry.uri()).await.expect("listed");
            theirs.purge(&origin).await.expect("purge");
            let another = skillcache::SkillUri::parse("skill://another/SKILL.md").expect("uri");
            ours.refresh(&origin, &another)
                .await
                .expect_err("the double serves no such skill, but the request was asked");
            let loader = if late {
                open(dir.path(), &double).0
            } else {
                ours.clone()
            };
            let (_, files) = loader
                .load_all(&origin, &listed.entry)
                .await
                .expect("served");
            assert!(files.iter().all(|f| f.provenance() == Provenance::Server));
            loader.flush().await;
            for cache in [&ours, &theirs, &loader] {
                assert!(
                    cache.origins().await.expect("origins").is_empty(),
                    "the purged origin stays gone (late: {late})"
                );
                assert_eq!(
                    cache.inventory().await.expect("inventory").blobs,
                    0,
                    "late: {late}"
                );
            }
        }
    });
}

/// Round 28 of review: the same with an entry an *offline* handle read from the index before the
/// purge, loaded after it by a cache opened since: the offline entry carries its mark too.
#[test]
fn an_entry_read_offline_before_a_purge_keeps_nothing_when_loaded_after_it() {
    bounded(|| async move {
        let dir = common::scratch();
        let (entry, double) = served();
        let (ours, origin) = open(dir.path(), &double);
        ours.entry(&origin, entry.uri())
            .await
            .expect("listed online");
        ours.flush().await;
        let offline = SkillCache::builder()
            .root(dir.path().join("root"))
            .key_file(dir.path().join("host.key"))
            .offline(true)
            .allow_stale(true)
            .open()
            .expect("offline");
        let held = offline
            .entry(&origin, entry.uri())
            .await
            .expect("read offline");
        ours.purge(&origin).await.expect("purge");
        let (late, _) = open(dir.path(), &double);
        let (_, files) = late.load_all(&origin, &held.entry).await.expect("served");
        assert!(files.iter().all(|f| f.provenance() == Provenance::Server));
        late.flush().await;
        assert!(late.origins().await.expect("origins").is_empty());
        assert_eq!(late.inventory().await.expect("inventory").blobs, 0);
    });
}

/// Round 25 of review: a skill loaded before a purge reads a file it had not read yet. The
/// file is served through the skill's held entry (verified, from the server), but not kept:
/// keeping it would bring the purged origin back, in this cache or another on the root.
#[test]
fn a_skill_loaded_before_a_purge_keeps_nothing_it_reads_after_it() {
    bounded(|| async move {
        for other in [false, true] {
            let dir = common::scratch();
            let (entry, double) = served();
            let (ours, origin) = open(dir.path(), &double);
            let (theirs, _) = open(dir.path(), &double);
            // Listed, so the index holds the entry; SKILL.md alone is read at load.
            let listed = ours.entry(&origin, entry.uri()).await.expect("listed");
            let skill = ours.load(&origin, &listed.entry).await.expect("load");
            ours.flush().await;
            if other {
                theirs.purge(&origin).await
            } else {
                ours.purge(&origin).await
            }
            .expect("purge");
            let unread = entry.manifest().expect("static").files()[1].uri().clone();
            let file = skill
                .read(unread.as_str())
                .await
                .expect("served after the purge");
            assert_eq!(file.provenance(), Provenance::Server);
            ours.flush().await;
            for cache in [&ours, &theirs] {
                assert!(
                    cache.origins().await.expect("origins").is_empty(),
                    "other: {other}"
                );
                assert_eq!(
                    cache.inventory().await.expect("inventory").blobs,
                    0,
                    "other: {other}"
                );
            }
        }
    });
}
