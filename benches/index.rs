//! Entry lookup (origin, skill URI, principal) as the index grows: 100, 10k, 100k entries.
//! Target: the lookup at 100k within 1.5× of the lookup at 100.

mod support;

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use skillcache::core::Cache;
use skillcache::entry::{CacheHints, Scope, Validation};
use skillcache::{Origin, SkillEntry, SkillUri};

fn entry(i: usize) -> SkillEntry {
    let name = format!("skill-{i}");
    let v = json!({
        "uri": format!("skill://bench/{name}/SKILL.md"),
        "frontmatter": {"name": name, "description": "An entry for the index benchmark."},
        "resources": [
            {"uri": format!("skill://bench/{name}/SKILL.md"), "digest": format!("sha256:{:064x}", i), "size": 1000},
            {"uri": format!("skill://bench/{name}/refs/a.md"), "digest": format!("sha256:{:064x}", i + 1), "size": 2000},
        ],
    });
    SkillEntry::from_json(&v, &Validation::default()).expect("valid")
}

fn index(c: &mut Criterion) {
    let dir = support::scratch();
    let mut group = c.benchmark_group("index");
    for n in [100usize, 10_000, 100_000] {
        let cache = Cache::builder()
            .root(dir.path().join(format!("n{n}")))
            .open()
            .expect("open");
        let origin = Origin::new("bench").expect("label");
        for i in 0..n {
            cache
                .put_entry(
                    &origin,
                    "",
                    &entry(i),
                    CacheHints::new(3_600_000, Scope::Public),
                )
                .expect("put");
        }
        let probe =
            SkillUri::parse(&format!("skill://bench/skill-{}/SKILL.md", n / 2)).expect("uri");
        group.bench_with_input(BenchmarkId::new("entry_lookup", n), &n, |b, _| {
            b.iter(|| {
                black_box(
                    cache
                        .entry(&origin, &probe, "")
                        .expect("lookup")
                        .expect("present")
                        .fresh,
                )
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = index
}
criterion_main!(benches);
