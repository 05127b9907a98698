//! The Rust side of `python/bench/bench.py`'s warm rows: the calls the Python rows make, through
//! the public host API on a current-thread runtime, timed per call as the Python calls are — a
//! warm verified read of a 4 KiB file (`LoadedSkill::read`: from the memory tier, re-hashed from
//! disk under `Rehash`, checked against its evidence under `Guaranteed`) and a warm `load` of an
//! approved skill (`SkillCache::load`). Prints one JSON line, µs per call by row.
//!
//! `cargo run --release -p skillcache-python --example warm_read -- SKILLS_DIR SCRATCH ITERATIONS`
//! where `SKILLS_DIR` holds the `bench-notes` skill the Python script wrote.

use std::sync::Arc;
use std::time::Instant;

use skillcache::local::SkillServer;
use skillcache::{Isolation, Origin, SkillCache, SkillEntry, SkillUri};

/// One row's cache: its memory tier and isolation, the skill approved and warm.
async fn warm(
    scratch: &std::path::Path,
    skills: &str,
    tier: u64,
    isolation: Isolation,
) -> Result<(SkillCache, Origin, SkillEntry), Box<dyn std::error::Error>> {
    let cache = SkillCache::builder()
        .root(scratch.join("root"))
        .key_file(scratch.join("host.key"))
        .memory_tier(tier)
        .isolation(isolation)
        .open()?;
    let origin = Origin::new("bench")?;
    cache.connect(origin.clone(), Arc::new(SkillServer::new(skills)));
    let uri = SkillUri::parse("skill://bench-notes/SKILL.md")?;
    let entry = cache.entry(&origin, &uri).await?.entry;
    cache.approve(&origin, &entry, None).await?;
    let skill = cache.load(&origin, &entry).await?;
    // Fetched and stored, then read once more from the store: the rest are warm.
    skill.read("data/4k.bin").await?;
    skill.read("data/4k.bin").await?;
    Ok((cache, origin, entry))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(skills), Some(scratch), Some(n)) = (args.next(), args.next(), args.next()) else {
        return Err("usage: warm_read SKILLS_DIR SCRATCH ITERATIONS".into());
    };
    let n: u32 = n.parse()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut out = Vec::new();
    let rows = [
        ("memory", 64u64 << 20, Isolation::Rehash),
        ("rehash", 0, Isolation::Rehash),
        ("guaranteed", 0, Isolation::Guaranteed),
    ];
    for (label, tier, isolation) in rows {
        let scratch = std::path::Path::new(&scratch).join(label);
        let per_call = runtime.block_on(async {
            let (cache, origin, entry) = warm(&scratch, &skills, tier, isolation).await?;
            let skill = cache.load(&origin, &entry).await?;
            let start = Instant::now();
            for _ in 0..n {
                let f = skill.read("data/4k.bin").await?;
                std::hint::black_box(f.bytes());
            }
            let read = start.elapsed().as_secs_f64() / f64::from(n);
            if label != "memory" {
                return Ok::<_, Box<dyn std::error::Error>>((read, None));
            }
            let start = Instant::now();
            for _ in 0..n {
                std::hint::black_box(cache.load(&origin, &entry).await?);
            }
            Ok((read, Some(start.elapsed().as_secs_f64() / f64::from(n))))
        })?;
        out.push(format!("\"{label}\": {:.3}", per_call.0 * 1e6));
        if let Some(load) = per_call.1 {
            out.push(format!("\"load\": {:.3}", load * 1e6));
        }
    }
    println!("{{{}}}", out.join(", "));
    Ok(())
}
