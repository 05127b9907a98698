//! The cost of one 4 KiB cache hit through the public API, in a form an instruction counter can
//! take (issue 41, P4): wall-clock benches on a shared machine are noisy, instruction counts are
//! not. Each case runs its setup, then `N` hits between two calls of `probe_start`/`probe_end`,
//! which `callgrind --toggle-collect=*probe_window*` counts alone.
//!
//! ```text
//! hit_probe floor|rehash|guaranteed [N] [SIZE]
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*probe_window*' \
//!     target/release/examples/hit_probe guaranteed 1000
//! ```
//! `floor` is open + read + SHA-256 of the same stored blob (`benches/cache_hit.rs`'s floor);
//! `rehash` and `guaranteed` are `LoadedSkill::read` of the file with the memory tier off, on a
//! multi-threaded runtime, as `public_read_*` in that bench. Prints the wall time a hit (machine
//! loaded or not: say which when quoting it).

#[path = "../benches/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::io::Read as _;
use std::sync::Arc;
use std::time::Instant;

use sha2::{Digest as _, Sha256};
use skillcache::store::Isolation;
use skillcache::{ApprovalPolicy, LoadedSkill, Origin, SkillCache};

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| usage());
    let n: u32 = args
        .next()
        .map_or(1000, |a| a.parse().unwrap_or_else(|_| usage()));
    let size: usize = args
        .next()
        .map_or(4096, |a| a.parse().unwrap_or_else(|_| usage()));
    let isolation = match case.as_str() {
        "floor" | "rehash" => Isolation::Rehash,
        "guaranteed" => Isolation::Guaranteed,
        _ => usage(),
    };
    let dir = tempfile::tempdir().expect("scratch");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (cache, skill) = rt.block_on(open(dir.path(), isolation, size));
    let elapsed = if case == "floor" {
        let blob = find_blob(&dir.path().join("cache"), size);
        probe_window(n, || {
            let mut f = std::fs::File::open(&blob).expect("open");
            let mut buf = Vec::with_capacity(size + 1);
            f.read_to_end(&mut buf).expect("read");
            black_box(Sha256::digest(&buf));
        })
    } else {
        probe_window(n, || {
            rt.block_on(async {
                black_box(skill.read("data.bin").await.expect("hit").bytes().len());
            });
        })
    };
    drop(cache);
    let per = elapsed.as_secs_f64() * 1e9 / f64::from(n.max(1));
    println!("case={case} n={n} size={size} ns_per_hit={per:.0}");
}

fn usage() -> ! {
    eprintln!("usage: hit_probe floor|rehash|guaranteed [N] [SIZE]");
    std::process::exit(2)
}

/// The measured window: `n` calls of `hit`, and nothing else (callgrind's toggle names it).
#[inline(never)]
fn probe_window(n: u32, mut hit: impl FnMut()) -> std::time::Duration {
    let start = Instant::now();
    for _ in 0..n {
        hit();
    }
    start.elapsed()
}

/// A cache with the memory tier off holding one skill with `data.bin` of `size` bytes, read
/// once (stored, and under `Guaranteed` its evidence confirmed: the settle time waited out).
async fn open(
    root: &std::path::Path,
    isolation: Isolation,
    size: usize,
) -> (SkillCache, LoadedSkill) {
    let (entry, files) = support::skill(
        "probe",
        support::skill_md("probe", 200),
        vec![("data.bin".into(), support::bytes(size, 7))],
    );
    let origin = Origin::new("probe").expect("label");
    let cache = SkillCache::builder()
        .root(root.join("cache"))
        .key_file(root.join("host.key"))
        .isolation(isolation)
        .memory_tier(0)
        .approval(ApprovalPolicy::NotRequired)
        .open()
        .expect("open");
    cache.connect(
        origin.clone(),
        Arc::new(support::MemorySource::new(&[(entry.clone(), files)])),
    );
    let skill = cache.load(&origin, &entry).await.expect("load");
    skill.read("data.bin").await.expect("read");
    // Past the settle time, so the next hashed read confirms the evidence (R-H4) and the
    // window's hits take the evidence path.
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    skill.read("data.bin").await.expect("read");
    skill.read("data.bin").await.expect("read");
    (cache, skill)
}

/// The stored blob of `size` bytes under `root` (the floor reads the same file).
fn find_blob(root: &std::path::Path, size: usize) -> std::path::PathBuf {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("list").flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).expect("stat");
            if meta.is_dir() {
                stack.push(p);
            } else if meta.len() == size as u64 && p.extension().is_none() {
                return p;
            }
        }
    }
    panic!("no blob of {size} bytes under {}", root.display())
}
