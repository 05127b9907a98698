//! Peak memory (and time) of the whole-host warm start and of 16 MiB hits, each in a process of
//! its own so the peak is that case's alone (issue 12). `scripts/perf-rss.sh` runs it.
//!
//! ```text
//! perf_probe populate-corpus ROOT       # every valid corpus skill listed and loaded once
//! perf_probe warm-start ROOT TIER_BYTES  # new cache, SKILL.md of every skill, no server contact
//! perf_probe populate-16 ROOT            # one skill with a 16 MiB file, stored
//! perf_probe hit-16 ROOT rehash|guaranteed TIER_BYTES   # 20 hits of the 16 MiB file, each read
//! ```
//! Prints one line: `case=… ms=… per=…µs peak_kib=…` (`VmHWM`, the whole process's peak).

#[path = "../benches/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use skillcache::entry::{Limits, Validation};
use skillcache::store::Isolation;
use skillcache::{ApprovalPolicy, Origin, SkillCache, SkillUri};

fn open(root: &str, isolation: Isolation, tier: u64) -> SkillCache {
    SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(root)
        // Beside the root (the key is kept outside it), in the folder the caller cleans up.
        .key_file(format!("{root}.key"))
        .isolation(isolation)
        .memory_tier(tier)
        .validation(Validation::default().limits(Limits::new(1024, 1 << 30).expect("raised")))
        .open()
        .expect("open")
}

fn big_skill() -> (skillcache::SkillEntry, support::Files) {
    support::skill(
        "big",
        support::skill_md("big", 200),
        vec![("data.bin".into(), support::bytes(16 << 20, 5))],
    )
}

async fn populate(root: &str, skills: &[(skillcache::SkillEntry, support::Files)], all: bool) {
    let cache = open(root, Isolation::Rehash, 0);
    let origin = Origin::new("corpus").expect("label");
    cache.connect(origin.clone(), Arc::new(support::MemorySource::new(skills)));
    for listed in cache.list(&origin).await.expect("list") {
        let skill = cache
            .load(&origin, &listed.expect("valid").entry)
            .await
            .expect("load");
        if all {
            skill.read_all().await.expect("read all");
        }
    }
}

fn report(case: &str, total: std::time::Duration, n: usize) {
    let per = total.as_secs_f64() * 1e6 / f64::from(u32::try_from(n.max(1)).unwrap_or(u32::MAX));
    println!(
        "case={case} ms={:.2} per={per:.1}us n={n} peak_kib={}",
        total.as_secs_f64() * 1e3,
        support::peak_rss_kib()
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map_or("", String::as_str);
    let root = arg(1);
    let origin = Origin::new("corpus").expect("label");
    match arg(0) {
        "populate-corpus" => {
            let skills = support::corpus_skills();
            populate(root, &skills, false).await;
            // The URIs a host would remember, so the warm start does not read the corpus.
            let uris: Vec<&str> = skills.iter().map(|(e, _)| e.uri().as_str()).collect();
            std::fs::write(format!("{root}.uris"), uris.join("\n")).expect("write the URI list");
        }
        "populate-16" => populate(root, &[big_skill()], true).await,
        "warm-start" => {
            let tier: u64 = arg(2).parse().expect("tier bytes");
            let uris: Vec<SkillUri> = std::fs::read_to_string(format!("{root}.uris"))
                .expect("populate-corpus wrote the URI list")
                .lines()
                .map(|l| SkillUri::parse(l).expect("a skill URI"))
                .collect();
            let start = Instant::now();
            let cache = open(root, Isolation::Rehash, tier);
            let server = Arc::new(support::NoServer::default());
            cache.connect(origin.clone(), server.clone());
            for uri in &uris {
                let info = cache.entry(&origin, uri).await.expect("fresh entry");
                let skill = cache.load(&origin, &info.entry).await.expect("load");
                std::hint::black_box(skill.skill_md().bytes().len());
            }
            let total = start.elapsed();
            assert_eq!(server.asked.load(Ordering::SeqCst), 0, "no server contact");
            report(&format!("warm-start tier={tier}"), total, uris.len());
        }
        "hit-16" => {
            let isolation = match arg(2) {
                "guaranteed" => Isolation::Guaranteed,
                _ => Isolation::Rehash,
            };
            let tier: u64 = arg(3).parse().expect("tier bytes");
            let (entry, _) = big_skill();
            let cache = open(root, isolation, tier);
            cache.connect(origin.clone(), Arc::new(support::NoServer::default()));
            let skill = cache.load(&origin, &entry).await.expect("load");
            let start = Instant::now();
            for _ in 0..20 {
                let f = skill.read("data.bin").await.expect("hit");
                // The host reads every byte once (e.g. to pass it on).
                std::hint::black_box(f.bytes().iter().fold(0u8, |a, &x| a ^ x));
            }
            report(
                &format!("hit-16 {} tier={tier}", arg(2)),
                start.elapsed(),
                20,
            );
        }
        other => {
            eprintln!("perf_probe: unknown case {other:?} (see the file's header)");
            std::process::exit(2);
        }
    }
}
