//! The Rust side of `python/bench/bench.py`'s warm-read comparison: a warm verified read of a
//! 4 KiB file through the public host API (`LoadedSkill::read`, memory tier on and off), timed
//! per call on a current-thread runtime, as the Python call is. Prints one JSON line.
//!
//! `cargo run --release -p skillcache-python --example warm_read -- SKILLS_DIR SCRATCH ITERATIONS`
//! where `SKILLS_DIR` holds the `bench-notes` skill the Python script wrote.

use std::sync::Arc;
use std::time::Instant;

use skillcache::local::SkillServer;
use skillcache::{ApprovalPolicy, Origin, SkillCache, SkillUri};

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
    for (label, tier) in [("memory_tier", 64u64 << 20), ("rehash_from_disk", 0)] {
        let scratch = std::path::Path::new(&scratch).join(label);
        let cache = SkillCache::builder()
            .root(scratch.join("root"))
            .key_file(scratch.join("host.key"))
            .approval(ApprovalPolicy::NotRequired)
            .memory_tier(tier)
            .open()?;
        let origin = Origin::new("bench")?;
        cache.connect(origin.clone(), Arc::new(SkillServer::new(&skills)));
        let per_call = runtime.block_on(async {
            let uri = SkillUri::parse("skill://bench-notes/SKILL.md")?;
            let entry = cache.entry(&origin, &uri).await?.entry;
            let skill = cache.load(&origin, &entry).await?;
            skill.read("data/4k.bin").await?; // fetched and stored: the rest are warm
            let start = Instant::now();
            for _ in 0..n {
                let f = skill.read("data/4k.bin").await?;
                std::hint::black_box(f.bytes());
            }
            Ok::<_, skillcache::Error>(start.elapsed().as_secs_f64() / f64::from(n))
        })?;
        out.push(format!("\"{label}\": {:.3}", per_call * 1e6));
    }
    println!("{{{}}}", out.join(", "));
    Ok(())
}
