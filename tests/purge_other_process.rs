//! What a purge reaches in another process that shares the root (issue 39's review note "a
//! purge does not reach another process's memory tier"; the answer is in docs/reliability.md).
//! Two `SkillCache`s opened on one root are two processes' views: each has its own index
//! connection, memory tier and held entries. A purge by one leaves the other unable to admit a
//! new load of the purged origin (its approvals are gone), while a skill the other already
//! loaded keeps reading the bytes its held entry lists — from its memory tier or from the
//! server again, verified either way, the same with or without the tier.

mod common;

use std::sync::Arc;

use skillcache::error::Declined;
use skillcache::local::SkillServer;
use skillcache::{Error, Origin, Provenance, SkillCache, SkillUri, Verification};

fn open(dir: &std::path::Path, memory_tier: u64) -> SkillCache {
    SkillCache::builder()
        .root(dir.join("cache"))
        .key_file(dir.join("host.key"))
        .memory_tier(memory_tier)
        .open()
        .expect("open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c5_a_purge_by_one_process_stops_new_loads_in_another_and_its_loaded_skill_reads_only_published_bytes()
 {
    for memory_tier in [64 << 20, 0] {
        let dir = common::scratch();
        let folder = dir.path().join("skills/notes");
        std::fs::create_dir_all(folder.join("templates")).expect("mkdir");
        std::fs::write(
            folder.join("SKILL.md"),
            "---\nname: notes\ndescription: Takes notes.\n---\nUse templates/a.md.\n",
        )
        .expect("write");
        std::fs::write(folder.join("templates/a.md"), "the template").expect("write");
        let origin = Origin::new("docs").expect("label");
        let (purger, other) = (open(dir.path(), memory_tier), open(dir.path(), memory_tier));
        for cache in [&purger, &other] {
            cache.connect(
                origin.clone(),
                Arc::new(SkillServer::new(dir.path().join("skills"))),
            );
        }
        let uri = SkillUri::parse("skill://notes/SKILL.md").expect("uri");
        let entry = other.entry(&origin, &uri).await.expect("entry").entry;
        other.approve(&origin, &entry, None).await.expect("approve");
        let skill = other.load(&origin, &entry).await.expect("load");
        let before = skill.read("templates/a.md").await.expect("read");
        assert_eq!(before.bytes(), b"the template");
        // A process that loads stores its files behind the loads; a purge from another process
        // comes after what it has stored (a purge does not reach into another process's queue:
        // docs/reliability.md, the twenty-first round).
        other.flush().await;

        purger.purge(&origin).await.expect("purge");

        // The other process's loaded skill reads through its held entry: the published bytes,
        // verified, from its memory tier or (its disk copy gone) from the server once more.
        let after = skill
            .read("templates/a.md")
            .await
            .expect("read after the purge");
        assert_eq!(after.bytes(), b"the template", "tier {memory_tier}");
        assert!(matches!(after.verification(), Verification::Verified(_)));
        if memory_tier == 0 {
            assert_eq!(after.provenance(), Provenance::Server);
        }
        // No new load is admitted: the approval went with the purge.
        let refused = other.load(&origin, &entry).await.expect_err("declined");
        assert!(
            matches!(
                refused,
                Error::Declined {
                    reason: Declined::NotApproved,
                    ..
                }
            ),
            "tier {memory_tier}: {refused}"
        );
        purger.purge(&origin).await.expect("purge again");
    }
}
