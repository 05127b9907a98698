//! A verified cache hit, beside the raw floor (open + read + sha2 of the same file), beside
//! hashing the same bytes from memory (hash only), and beside cacache reading the same bytes by
//! digest and by key.
//!
//! - `public_*`: what a host calls — `LoadedSkill::read` of a listed file on a multi-threaded
//!   tokio runtime (as a host runs one), and `SkillCache::entry` + `load` of a fresh entry
//!   (`public_load_fresh`). `async_call` is the bare cost of that async call: `block_on` of a
//!   future that does nothing.
//! - `core_*`: the internal sync layer (`core::Cache::read_file`), labelled as such.
//!
//! The disk rows run with the memory tier off (`memory_tier(0)`), so they measure the verified
//! disk read; the `*_memory` rows are the same calls answered by the memory tier.

mod support;

use std::hint::black_box;
use std::io::Read;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sha2::{Digest as _, Sha256};
use std::sync::Arc;

use skillcache::core::{Cache, CachedRead};
use skillcache::store::Isolation;
use skillcache::{ApprovalPolicy, LoadedSkill, Origin, SkillCache};

fn hit(c: &Cache, o: &Origin, f: &skillcache::entry::ManifestFile) -> usize {
    match c.read_file(o, f) {
        Ok(CachedRead::Hit(v)) => v.as_slice().len(),
        other => panic!("expected a hit: {other:?}"),
    }
}

/// The three core caches the rows compare: `Rehash` and `Guaranteed` from disk (memory tier
/// off), and the default tier (64 MiB) and isolation: the hit a host gets after the first read.
fn core_caches(dir: &std::path::Path) -> [Cache; 3] {
    let disk = |name: &str, isolation| {
        Cache::builder()
            .root(dir.join(name))
            .isolation(isolation)
            .memory_tier(0)
            .open()
            .expect("open")
    };
    [
        disk("rehash", Isolation::Rehash),
        disk("guaranteed", Isolation::Guaranteed),
        Cache::builder()
            .root(dir.join("memory"))
            .open()
            .expect("open"),
    ]
}

fn cache_hit(c: &mut Criterion) {
    let dir = support::scratch();
    let [rehash, guaranteed, memory] = core_caches(dir.path());
    let cacache_dir = dir.path().join("cacache");
    let origin = Origin::new("bench").expect("label");
    let mut group = c.benchmark_group("cache_hit");
    for (size, label) in support::SIZES {
        let data = support::bytes(size, 7);
        let (entry, files) = support::skill(
            "bench",
            support::skill_md("bench", 200),
            vec![("data.bin".into(), data.clone())],
        );
        let file = entry
            .manifest()
            .expect("manifest")
            .files()
            .iter()
            .find(|f| f.uri().as_str().ends_with("data.bin"))
            .expect("listed")
            .clone();
        for cache in [&rehash, &guaranteed, &memory] {
            cache
                .store_file(&origin, &file, &files[1].1)
                .expect("store");
        }
        let blob = rehash.store().layout().blob_path(&origin, &file.digest());
        let key = format!("bench/{label}");
        let integrity = cacache::write_sync(&cacache_dir, &key, &data).expect("cacache write");

        group.throughput(Throughput::Bytes(size as u64));
        if size >= 1 << 20 {
            group.sample_size(20);
        }
        group.bench_function(BenchmarkId::new("floor_open_read_sha2", label), |b| {
            b.iter(|| {
                let mut f = std::fs::File::open(&blob).expect("open");
                let mut buf = Vec::with_capacity(size + 1);
                f.read_to_end(&mut buf).expect("read");
                black_box(Sha256::digest(&buf))
            });
        });
        group.bench_function(BenchmarkId::new("hash_only_sha2", label), |b| {
            b.iter(|| black_box(Sha256::digest(black_box(&data))));
        });
        group.bench_function(BenchmarkId::new("core_rehash", label), |b| {
            b.iter(|| black_box(hit(&rehash, &origin, &file)));
        });
        group.bench_function(BenchmarkId::new("core_guaranteed", label), |b| {
            b.iter(|| black_box(hit(&guaranteed, &origin, &file)));
        });
        // The first read verifies the disk copy and keeps it in memory; every later one is a
        // memory hit (16 MiB fits the default 64 MiB bound too).
        hit(&memory, &origin, &file);
        group.bench_function(BenchmarkId::new("core_memory", label), |b| {
            b.iter(|| black_box(hit(&memory, &origin, &file)));
        });
        public_rows(&mut group, label, &dir, &entry, &files);
        group.bench_function(BenchmarkId::new("cacache_by_digest", label), |b| {
            b.iter(|| {
                black_box(
                    cacache::read_hash_sync(&cacache_dir, &integrity)
                        .expect("read")
                        .len(),
                )
            });
        });
        group.bench_function(BenchmarkId::new("cacache_by_key", label), |b| {
            b.iter(|| black_box(cacache::read_sync(&cacache_dir, &key).expect("read").len()));
        });
    }
    group.finish();
}

/// The public rows for one size: a host's `LoadedSkill::read` under each verification mode, the
/// bare async call beside them, and a warm `entry` + `load` of a fresh entry.
fn public_rows(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    label: &str,
    dir: &support::Scratch,
    entry: &skillcache::SkillEntry,
    files: &support::Files,
) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let origin = Origin::new("bench").expect("label");
    let source = Arc::new(support::MemorySource::new(&[(
        entry.clone(),
        files.clone(),
    )]));
    let open = |name: &str, isolation: Isolation, tier: u64| {
        // The 16 MiB file and its SKILL.md are over the default 16 MiB a skill (R-W7).
        let limits = skillcache::entry::Limits::new(512, 64 << 20).expect("raised limits");
        let cache = SkillCache::builder()
            .root(dir.path().join(format!("public-{name}-{label}")))
            .validation(skillcache::entry::Validation::default().limits(limits))
            .isolation(isolation)
            .memory_tier(tier)
            .approval(ApprovalPolicy::Required)
            .open()
            .expect("open");
        cache.connect(origin.clone(), source.clone());
        let skill: LoadedSkill = rt.block_on(async {
            let info = cache.entry(&origin, entry.uri()).await.expect("entry");
            cache
                .approve(&origin, &info.entry, None)
                .await
                .expect("approve");
            let skill = cache.load(&origin, &info.entry).await.expect("load");
            // Stored (and, with the tier on, held in memory) before the clock starts.
            skill.read("data.bin").await.expect("read");
            skill
        });
        (cache, skill)
    };
    group.bench_function(BenchmarkId::new("async_call", label), |b| {
        b.iter(|| rt.block_on(async { black_box(0) }));
    });
    for (name, isolation, tier) in [
        ("public_read_rehash", Isolation::Rehash, 0),
        ("public_read_guaranteed", Isolation::Guaranteed, 0),
        ("public_read_memory", Isolation::Rehash, 64 << 20),
    ] {
        let (_cache, skill) = open(name, isolation, tier);
        group.bench_function(BenchmarkId::new(name, label), |b| {
            b.iter(|| {
                rt.block_on(async {
                    black_box(skill.read("data.bin").await.expect("hit").bytes().len())
                })
            });
        });
    }
    // A host's warm load of a fresh entry: the index answers `entry`, the approval gate admits,
    // the SKILL.md is a verified hit (tier off: re-hashed from disk).
    let (cache, _) = open("public_load_fresh", Isolation::Rehash, 0);
    group.bench_function(BenchmarkId::new("public_load_fresh", label), |b| {
        b.iter(|| {
            rt.block_on(async {
                let info = cache.entry(&origin, entry.uri()).await.expect("fresh");
                black_box(
                    cache
                        .load(&origin, &info.entry)
                        .await
                        .expect("load")
                        .skill_md()
                        .bytes()
                        .len(),
                )
            })
        });
    });
}

/// Where a read-only map starts to beat a private copy (`store::MAP_ABOVE`): the raw floor of
/// each (open + fstat + read into a buffer, against open + fstat + map + fstat), alone (`*_hit`)
/// and with a consumer that reads every byte once (`*_consume`, which pays the map's page
/// faults) — at sizes around the crossover.
#[allow(unsafe_code)]
fn map_crossover(c: &mut Criterion) {
    let dir = support::scratch();
    let mut group = c.benchmark_group("map_crossover");
    group.sample_size(20);
    // Reads every byte once (a host passing a file on), as cheaply as the compiler can.
    let consume = |b: &[u8]| b.iter().fold(0u8, |a, &x| a ^ x);
    for (size, label) in [
        (256 << 10, "256KiB"),
        (1 << 20, "1MiB"),
        (2 << 20, "2MiB"),
        (4 << 20, "4MiB"),
        (16 << 20, "16MiB"),
    ] {
        let path = dir.path().join(label);
        std::fs::write(&path, support::bytes(size, 3)).expect("write");
        let copy = || {
            let mut f = std::fs::File::open(&path).expect("open");
            let len = f.metadata().expect("fstat").len();
            let mut buf = Vec::with_capacity(usize::try_from(len).expect("len") + 1);
            f.read_to_end(&mut buf).expect("read");
            buf
        };
        let map = || {
            let f = std::fs::File::open(&path).expect("open");
            let len = f.metadata().expect("fstat").len();
            // SAFETY: a file this bench wrote and never changes while the map lives.
            let m = unsafe {
                memmap2::MmapOptions::new()
                    .len(usize::try_from(len).expect("len"))
                    .map(&f)
            }
            .expect("map");
            black_box(f.metadata().expect("fstat").len());
            m
        };
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::new("copy_hit", label), |b| {
            b.iter(|| black_box(copy().len()));
        });
        group.bench_function(BenchmarkId::new("map_hit", label), |b| {
            b.iter(|| black_box(map().len()));
        });
        group.bench_function(BenchmarkId::new("copy_consume", label), |b| {
            b.iter(|| black_box(consume(&copy())));
        });
        group.bench_function(BenchmarkId::new("map_consume", label), |b| {
            b.iter(|| black_box(consume(&map())));
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = cache_hit, map_crossover
}
criterion_main!(benches);
