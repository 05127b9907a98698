//! R-C8: two processes × several threads publishing, reading, approving and collecting garbage
#![allow(clippy::many_single_char_names, clippy::result_large_err)] // short fixture names; test closures
//! on one root: zero errors, zero corrupt reads.

mod common;

use std::process::Command;
use std::sync::Arc;

use skillcache::core::{Cache, CachedRead};
use skillcache::entry::{CacheHints, Scope};
use skillcache::{Origin, SkillEntry};

const CHILD_ENV: &str = "SKILLCACHE_CONCURRENCY_CHILD_ROOT";
const THREADS: usize = 4;
const OPS: usize = 60;

fn fixtures() -> Vec<(SkillEntry, common::Files)> {
    (0..5)
        .map(|i| {
            let body = format!("shared body {i} ").repeat(200 * (i + 1));
            common::skill(
                &format!("s{i}"),
                &[
                    ("a.md", body.as_bytes()),
                    ("same.md", b"identical in every skill"),
                ],
            )
        })
        .collect()
}

fn worker(cache: &Cache, thread: usize) {
    let o = Origin::new(format!("srv{}", thread % 2)).expect("label");
    let skills = fixtures();
    for op in 0..OPS {
        let (e, files) = &skills[(op + thread) % skills.len()];
        match op % 6 {
            0 | 1 => {
                cache
                    .put_entry(&o, "", e, CacheHints::new(60_000, Scope::Public))
                    .expect("put entry");
                common::store_all(cache, &o, e, files);
            }
            2 | 3 => {
                for f in e.manifest().expect("m").files() {
                    match cache.read_file(&o, f).expect("read file") {
                        CachedRead::Hit(v) => {
                            let want = &files
                                .iter()
                                .find(|(u, _)| u == f.uri().as_str())
                                .expect("fixture")
                                .1;
                            assert_eq!(v.as_slice(), want.as_slice(), "corrupt read");
                        }
                        CachedRead::Miss => {}
                        CachedRead::Failed(m) => {
                            panic!("a concurrent operation corrupted {}: {m}", f.uri())
                        }
                    }
                }
            }
            4 => {
                cache
                    .put_entry(&o, "", e, CacheHints::new(60_000, Scope::Public))
                    .expect("put entry");
                cache.approve(&o, "", e, None).expect("approve");
                let _ = cache.is_approved(&o, "", e).expect("check approval");
            }
            _ => {
                cache.gc(None).expect("gc");
            }
        }
    }
}

#[test]
fn concurrency_child_process() {
    let Some(root) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let cache = Arc::new(Cache::builder().root(root).open().expect("open"));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let c = Arc::clone(&cache);
            std::thread::spawn(move || worker(&c, t))
        })
        .collect();
    for h in handles {
        h.join().expect("a worker thread failed");
    }
}

#[test]
fn c8_two_processes_times_threads_share_one_root_without_errors() {
    let dir = common::scratch();
    let root = dir.path().join("root");
    Cache::builder().root(&root).open().expect("create");
    let exe = std::env::current_exe().expect("test binary");
    // Both start before either is waited for, so they truly overlap.
    let spawned: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "concurrency_child_process",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, &root)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in spawned {
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "a process failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let cache = Cache::builder().root(&root).open().expect("reopen");
    let report = cache.verify(None, |_, _| {}).expect("verify");
    assert!(
        report.corrupt.is_empty() && report.missing.is_empty(),
        "{report:?}"
    );
}
