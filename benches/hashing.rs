//! The hashing hot path: our digest path beside raw `sha2` over the same in-memory buffers, so
//! the overhead reads as a ratio. Target: within 3% at every size.

mod support;

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sha2::{Digest as _, Sha256};
use skillcache::Digest;

fn hashing(c: &mut Criterion) {
    let mut group = c.benchmark_group("hashing");
    for (size, label) in support::SIZES {
        let data: Vec<u8> = (0..size)
            .map(|i| u8::try_from(i * 31 % 251).unwrap_or(0))
            .collect();
        group.throughput(Throughput::Bytes(size as u64));
        if size >= 1 << 20 {
            group.sample_size(20);
        }
        group.bench_with_input(BenchmarkId::new("raw_sha2", label), &data, |b, d| {
            b.iter(|| black_box(Sha256::digest(black_box(d))));
        });
        group.bench_with_input(
            BenchmarkId::new("skillcache_digest", label),
            &data,
            |b, d| {
                b.iter(|| black_box(Digest::of(black_box(d))));
            },
        );
    }
    group.finish();
}

criterion_group!(benches, hashing);
criterion_main!(benches);
