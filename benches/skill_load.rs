//! A whole skill through the loading path: the cap (512 files × 32 KiB = 16 MiB) and a median
//! real skill from the corpus; cold (fetch from an in-process source, verify, publish) and warm
//! (every file a verified cache hit), warm both file by file and with `read_all` (parallel).
//!
//! Cold, two ways into a fresh root: `cold_per_file` reads the files one by one
//! (`LoadedSkill::read`: each fetched and published with its own syncs — round 1's path and the
//! baseline), `cold_load_all` loads the skill with every file (`SkillCache::load_all`: fetched a
//! few at a time, the `SKILL.md` included, published as one batch: syncs together, one per
//! folder).

mod support;

use std::hint::black_box;
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
    let dir = support::corpus_dir().join("iterate-pr");
    let local =
        skillcache::local::inspect_folder(&dir, "skill://iterate-pr", &Validation::default())
            .expect("corpus skill is valid");
    let files = local
        .files
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
        .validation(Validation::default().limits(Limits::new(1024, 1 << 30).expect("raised")))
        .open()
        .expect("open");
    let origin = Origin::new("bench").expect("label");
    cache.connect(
        origin.clone(),
        Arc::new(support::MemorySource::new(std::slice::from_ref(skill))),
    );
    (cache, origin)
}

/// A cache over a fresh root serving `skill`. Opening a root writes its marker, index and
/// reserve: they are flushed here, so the first sync of the timed load does not pay for the
/// setup's writes.
fn fresh(skill: &Skill) -> (support::Scratch, SkillCache, Origin) {
    let dir = support::scratch();
    let (cache, origin) = open(dir.path(), skill);
    rustix::fs::sync();
    (dir, cache, origin)
}

/// Loads `entry` and reads its files one by one (`LoadedSkill::read`), as a host would.
async fn read_each(cache: &SkillCache, origin: &Origin, entry: &SkillEntry) {
    let loaded = cache.load(origin, entry).await.expect("load");
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
        group.bench_function(format!("{label}/cold_per_file"), |b| {
            b.iter_batched(
                || fresh(&skill),
                |(dir, cache, origin)| {
                    rt.block_on(read_each(&cache, &origin, &skill.0));
                    drop(cache);
                    dir
                },
                BatchSize::PerIteration,
            );
        });
        group.bench_function(format!("{label}/cold_load_all"), |b| {
            b.iter_batched(
                || fresh(&skill),
                |(dir, cache, origin)| {
                    rt.block_on(async {
                        let (_, all) = cache.load_all(&origin, &skill.0).await.expect("load all");
                        black_box(all.len());
                    });
                    drop(cache);
                    dir
                },
                BatchSize::PerIteration,
            );
        });
        let dir = support::scratch();
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
                rt.block_on(read_each(&cache, &origin, &skill.0));
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
