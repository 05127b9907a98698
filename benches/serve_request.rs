//! What one request to `serve` costs, in a small folder and in one of 100,000 files (R-E3): the
//! catalog is a snapshot with indexes, so a request must cost the same in both. Both folders
//! hold skills of the same shape (50 files each): 2 of them (100 files), or 2,000 (100,000).
//! The listing is measured on its last page, one entry in both (a cursor after the second to
//! last skill), so only the folder's size differs.
//!
//! `SkillServer::call` is what the rmcp handler runs for each request (no transport). The
//! server's watch interval is an hour, so no request rescans: this is the `serve` loop, where
//! the watcher rescans on its timer and requests never do. Beside each folder:
//!
//! - `floor_read`: the raw floor of `resources/read` — open, read and SHA-256 of the same file;
//! - `full_rescan`: one metadata scan of the whole folder, what every request paid before
//!   (issue 18: about 0.35 s at 100k files, under one mutex). Labelled: an internal layer.

mod support;

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use sha2::{Digest as _, Sha256};
use skillcache::local::SkillServer;

/// `skills` skill folders of `files` files each (a `SKILL.md` and small text files).
fn folder(root: &Path, skills: usize, files: usize) {
    for s in 0..skills {
        let name = format!("skill-{s:05}");
        let dir = root.join(&name);
        std::fs::create_dir_all(dir.join("refs")).expect("mkdir");
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: Skill number {s}.\n---\n# {name}\n"),
        )
        .expect("write");
        for f in 1..files {
            std::fs::write(
                dir.join(format!("refs/{f:03}.md")),
                format!("file {f} of skill {s}\n").repeat(20),
            )
            .expect("write");
        }
    }
}

fn serve_request(c: &mut Criterion) {
    let tmp = support::scratch();
    let mut group = c.benchmark_group("serve_request");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));
    for (label, skills, files) in [("100_files", 2, 50), ("100k_files", 2_000, 50)] {
        let root = tmp.path().join(label);
        folder(&root, skills, files);
        let server = SkillServer::new(&root).watch_interval(Duration::from_secs(3600));
        // The first request builds the catalog (every file hashed once).
        let first = server.call("skills/list", &json!({})).expect("list");
        assert!(first["skills"].as_array().is_some_and(|s| !s.is_empty()));
        let last = format!("skill-{:05}", skills - 1);
        let skill = json!({"uri": format!("skill://{last}/SKILL.md")});
        let file = json!({"uri": format!("skill://{last}/refs/001.md")});
        let path = root.join(&last).join("refs/001.md");
        // The page after the second to last skill: the last one alone. The cursor is the one
        // this server gives out (`server/wire.rs`), made here so both folders page alike.
        let before_last = format!("skill-{:05}", skills - 2);
        let cursor = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!("skillcache-serve/1:{before_last}"));
        let last_page = json!({"cursor": cursor});
        let page = server
            .call("skills/list", &last_page)
            .expect("the last page");
        assert_eq!(page["skills"].as_array().map(Vec::len), Some(1));
        group.bench_function(BenchmarkId::new("skills_get", label), |b| {
            b.iter(|| black_box(server.call("skills/get", &skill).expect("get")));
        });
        group.bench_function(BenchmarkId::new("resources_read", label), |b| {
            b.iter(|| black_box(server.call("resources/read", &file).expect("read")));
        });
        group.bench_function(BenchmarkId::new("skills_list_last_page", label), |b| {
            b.iter(|| black_box(server.call("skills/list", &last_page).expect("list")));
        });
        group.bench_function(BenchmarkId::new("floor_read", label), |b| {
            b.iter(|| {
                let bytes = std::fs::read(&path).expect("read");
                black_box(Sha256::digest(&bytes))
            });
        });
        group.sample_size(10);
        group.bench_function(BenchmarkId::new("full_rescan_internal", label), |b| {
            b.iter(|| black_box(server.changes().expect("scan")));
        });
        group.sample_size(30);
    }
    group.finish();
}

criterion_group!(benches, serve_request);
criterion_main!(benches);
