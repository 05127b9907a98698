//! A whole-host warm start (issue 12): a new `SkillCache` over a root that already holds the
//! corpus loads the `SKILL.md` of every valid corpus skill, with fresh entries — no server
//! contact at all (the source refuses and counts every request). Memory tier on (default) and
//! off. Per-skill time is the total divided by the number of skills (printed once).
//! Peak memory of the same run: `scripts/perf-rss.sh` (`examples/perf_probe.rs`).

mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use criterion::{Criterion, criterion_group, criterion_main};
use skillcache::{ApprovalPolicy, Origin, SkillCache};

fn warm_start(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let skills = support::corpus_skills();
    let dir = support::scratch();
    let root = dir.path().join("root");
    let origin = Origin::new("corpus").expect("label");
    let open = |tier: u64| {
        SkillCache::builder()
            .approval(ApprovalPolicy::NotRequired)
            .root(&root)
            .memory_tier(tier)
            .open()
            .expect("open")
    };
    // Populate: every entry listed (fresh for an hour), every SKILL.md loaded once.
    let cache = open(0);
    cache.connect(
        origin.clone(),
        Arc::new(support::MemorySource::new(&skills)),
    );
    rt.block_on(async {
        for listed in cache.list(&origin).await.expect("list") {
            let info = listed.expect("valid entry");
            cache.load(&origin, &info.entry).await.expect("load");
        }
    });
    drop(cache);
    let uris: Vec<_> = skills.iter().map(|(e, _)| e.uri().clone()).collect();
    println!("warm_start: {} corpus skills", uris.len());

    let mut group = c.benchmark_group("warm_start");
    group.sample_size(10);
    for (label, tier) in [
        ("tier_on", skillcache::core::DEFAULT_MEMORY_TIER_BYTES),
        ("tier_off", 0),
    ] {
        group.bench_function(format!("corpus_skill_md/{label}"), |b| {
            b.iter(|| {
                let cache = open(tier);
                let server = Arc::new(support::NoServer::default());
                cache.connect(origin.clone(), server.clone());
                rt.block_on(async {
                    for uri in &uris {
                        let info = cache.entry(&origin, uri).await.expect("fresh entry");
                        let skill = cache.load(&origin, &info.entry).await.expect("load");
                        black_box(skill.skill_md().bytes().len());
                    }
                });
                assert_eq!(server.asked.load(Ordering::SeqCst), 0, "no server contact");
            });
        });
    }
    group.finish();
}

criterion_group!(benches, warm_start);
criterion_main!(benches);
