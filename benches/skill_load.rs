//! A whole skill through the loading path: the cap (512 files × 32 KiB = 16 MiB) and a median
//! real skill from the corpus; cold (fetch from an in-process source, verify, publish) and warm
//! (every file a verified cache hit), warm both file by file and with `read_all` (parallel).
//!
//! `cold_store_per_file` / `cold_store_batched`: the publishing half of a cold load alone, on the
//! core, into a fresh root — every file with its own syncs (`Cache::store_file`, today's path and
//! the baseline) against one batch (`Cache::store_files`: syncs together, one per folder).

mod support;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use skillcache::entry::{Limits, Validation};
use skillcache::{ApprovalPolicy, Origin, SkillCache, SkillEntry};

type Skill = (SkillEntry, support::Files);

fn cap_skill() -> Skill {
    let files = (1..512)
        .map(|i| {
            (
                format!("f/{i:03}.bin"),
                support::bytes(32 * 1024, u8::try_from(i % 250).unwrap_or(0)),
            )
        })
        .collect();
    support::skill("cap", support::skill_md("cap", 32 * 1024), files)
}

/// `iterate-pr` from the corpus: 7 files, 47 KB — the median real skill.
fn median_skill() -> Skill {
    let dir = std::env::var_os("SKILLCACHE_SHARED")
        .map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"),
            PathBuf::from,
        )
        .join("corpus/skills/iterate-pr");
    let local = skillcache::local::inspect(&dir, "skill://iterate-pr", &Validation::default())
        .expect("corpus skill is valid");
    let files = local
        .files()
        .iter()
        .map(|f| {
            (
                f.uri.as_str().to_owned(),
                std::fs::read(&f.path).expect("read"),
            )
        })
        .collect();
    (local.entry, files)
}

fn open(dir: &std::path::Path, skill: &Skill) -> (SkillCache, Origin) {
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(dir)
        .limits(Limits::new(1024, 1 << 30).expect("raised"))
        .open()
        .expect("open");
    let origin = Origin::new("bench").expect("label");
    cache.connect(
        origin.clone(),
        Arc::new(support::MemorySource::new(std::slice::from_ref(skill))),
    );
    (cache, origin)
}

/// The publishing half of a cold load on the core: today's per-file path beside the batch.
fn cold_store(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    label: &str,
    skill: &Skill,
) {
    let listed: Vec<(skillcache::entry::ManifestFile, &[u8])> = skill
        .0
        .manifest()
        .expect("manifest")
        .files()
        .iter()
        .map(|f| {
            let bytes = skill
                .1
                .iter()
                .find(|(u, _)| u == f.uri().as_str())
                .expect("fixture file")
                .1
                .as_slice();
            (f.clone(), bytes)
        })
        .collect();
    let core = |dir: &std::path::Path| {
        skillcache::cache::Cache::builder()
            .root(dir.join("root"))
            .open()
            .expect("open")
    };
    let origin = Origin::new("bench").expect("label");
    group.bench_function(format!("{label}/cold_store_per_file"), |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("tempdir");
                let cache = core(dir.path());
                // Opening a root writes its marker, index and reserve: flush them now, so the
                // first sync of the timed publish does not pay for the setup's writes.
                rustix::fs::sync();
                (dir, cache)
            },
            |(dir, cache)| {
                for (f, bytes) in &listed {
                    cache.store_file(&origin, f, bytes).expect("store");
                }
                // Returned, so closing the index (a checkpoint) is not timed.
                (dir, cache)
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function(format!("{label}/cold_store_batched"), |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("tempdir");
                let cache = core(dir.path());
                // Opening a root writes its marker, index and reserve: flush them now, so the
                // first sync of the timed publish does not pay for the setup's writes.
                rustix::fs::sync();
                (dir, cache)
            },
            |(dir, cache)| {
                let batch: Vec<_> = listed.iter().map(|(f, b)| (f, *b)).collect();
                cache.store_files(&origin, &batch).expect("store");
                // Returned, so closing the index (a checkpoint) is not timed.
                (dir, cache)
            },
            BatchSize::PerIteration,
        );
    });
}

fn skill_load(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("skill_load");
    group.sample_size(10);
    for (label, skill) in [
        ("cap_512x32KiB", cap_skill()),
        ("median_iterate-pr", median_skill()),
    ] {
        let bytes = skill.0.manifest().expect("manifest").total_bytes();
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function(format!("{label}/cold"), |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let (cache, origin) = open(dir.path(), &skill);
                    (dir, cache, origin)
                },
                |(dir, cache, origin)| {
                    rt.block_on(async {
                        let loaded = cache.load(&origin, &skill.0).await.expect("load");
                        black_box(loaded.read_all().await.expect("read all").len());
                    });
                    drop(cache);
                    dir
                },
                BatchSize::PerIteration,
            );
        });
        cold_store(&mut group, label, &skill);
        let dir = tempfile::tempdir().expect("tempdir");
        let (cache, origin) = open(dir.path(), &skill);
        rt.block_on(async {
            cache
                .load(&origin, &skill.0)
                .await
                .expect("load")
                .read_all()
                .await
                .expect("warm up")
        });
        group.bench_function(format!("{label}/warm_file_by_file"), |b| {
            b.iter(|| {
                rt.block_on(async {
                    let loaded = cache.load(&origin, &skill.0).await.expect("load");
                    for f in loaded.files() {
                        black_box(
                            loaded
                                .read(f.uri().as_str())
                                .await
                                .expect("read")
                                .bytes()
                                .len(),
                        );
                    }
                });
            });
        });
        group.bench_function(format!("{label}/warm_read_all_parallel"), |b| {
            b.iter(|| {
                rt.block_on(async {
                    let loaded = cache.load(&origin, &skill.0).await.expect("load");
                    black_box(loaded.read_all().await.expect("read all").len());
                });
            });
        });
    }
    group.finish();
}

criterion_group!(benches, skill_load);
criterion_main!(benches);
