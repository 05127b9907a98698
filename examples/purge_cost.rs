//! What a purge costs now that it leaves nothing of the origin readable in the index (K3): the
//! index is rewritten (`VACUUM`, then a `TRUNCATE` checkpoint) after the rows and files go.
//!
//! ```text
//! purge_cost ENTRIES [ROOT]   # two origins of ENTRIES skills each, two files a skill, stored
//! ```
//! Each skill is one `entries` row, two `files` rows and two blobs with their `blobs` rows: five
//! rows, so ENTRIES = 1000 makes 10,000 rows over both origins. Prints one line per step:
//! `step=… ms=… index_bytes=…` — the parts of a purge of one origin (its rows, its files, then
//! the rewrite K3 added), a whole purge of it stored again, and a purge of an origin that holds
//! nothing (the rewrite alone).

use std::time::Instant;

use serde_json::json;
use skillcache::core::Cache;
use skillcache::entry::{CacheHints, Scope, Validation};
use skillcache::{Digest, Origin, SkillEntry};

/// Skill `i` of `origin`: a `SKILL.md` and one reference file, each of its own bytes.
fn skill(origin: &str, i: usize) -> (SkillEntry, Vec<Vec<u8>>) {
    let name = format!("skill-{i}");
    let md = format!(
        "---\nname: {name}\ndescription: Skill {i} of {origin}, for the purge measurement.\n---\n{}",
        "x".repeat(900)
    )
    .into_bytes();
    let reference = format!("{origin} reference {i} {}", "y".repeat(1900)).into_bytes();
    let files = vec![md, reference];
    let resources: Vec<_> = ["SKILL.md", "refs/a.md"]
        .iter()
        .zip(&files)
        .map(|(p, b)| {
            json!({"uri": format!("skill://{name}/{p}"), "digest": Digest::of(b).to_string(), "size": b.len()})
        })
        .collect();
    let v = json!({
        "uri": format!("skill://{name}/SKILL.md"),
        "frontmatter": {"name": name, "description": format!("Skill {i} of {origin}, for the purge measurement.")},
        "resources": resources,
    });
    (
        SkillEntry::from_json(&v, &Validation::default()).expect("valid"),
        files,
    )
}

fn populate(cache: &Cache, label: &str, entries: usize) {
    let origin = Origin::new(label).expect("label");
    let skills: Vec<_> = (0..entries).map(|i| skill(label, i)).collect();
    for (entry, _) in &skills {
        cache
            .put_entry(
                &origin,
                "",
                entry,
                CacheHints::new(3_600_000, Scope::Public),
            )
            .expect("put");
    }
    // Stored in batches of 100 files, as a cold load stores them.
    for chunk in skills.chunks(50) {
        let batch: Vec<_> = chunk
            .iter()
            .flat_map(|(e, files)| {
                e.manifest()
                    .expect("manifest")
                    .files()
                    .iter()
                    .zip(files)
                    .map(|(f, b)| (f, b.as_slice()))
            })
            .collect();
        cache.store_files(&origin, &batch).expect("store");
    }
}

fn index_bytes(root: &std::path::Path) -> u64 {
    ["index.sqlite3", "index.sqlite3-wal"]
        .iter()
        .map(|n| std::fs::metadata(root.join(n)).map_or(0, |m| m.len()))
        .sum()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let entries: usize = args.first().map_or(1000, |a| a.parse().expect("ENTRIES"));
    let scratch = tempfile::tempdir().expect("scratch");
    let root = args
        .get(1)
        .map_or_else(|| scratch.path().join("root"), std::path::PathBuf::from);
    let cache = Cache::builder()
        .root(&root)
        .key_file(root.with_extension("key"))
        .open()
        .expect("open");
    let start = Instant::now();
    populate(&cache, "team", entries);
    populate(&cache, "docs", entries);
    println!(
        "step=populate ms={:.1} rows={} index_bytes={}",
        start.elapsed().as_secs_f64() * 1e3,
        entries * 10,
        index_bytes(&root)
    );
    // The purge's parts, timed one by one as `Cache::purge` runs them (under no lock: nothing
    // else uses this root), then whole purges: of an origin that holds as much, and of one
    // that holds nothing (the rewrite alone).
    let team = Origin::new("team").expect("label");
    let timed = |step: &str, f: &dyn Fn()| {
        let start = Instant::now();
        f();
        println!(
            "step={step} ms={:.1} index_bytes={}",
            start.elapsed().as_secs_f64() * 1e3,
            index_bytes(&root)
        );
    };
    timed("rows", &|| cache.index().purge(&team).expect("rows"));
    timed("files", &|| {
        cache.store().remove_origin(&team).expect("files");
    });
    timed("rewrite", &|| {
        cache.index().erase_deleted().expect("rewrite");
    });
    populate(&cache, "team", entries);
    timed("purge", &|| cache.purge(&team).expect("purge"));
    timed("purge-nothing", &|| {
        cache
            .purge(&Origin::new("gone").expect("label"))
            .expect("purge");
    });
    // The scratch root's blobs are read-only folders: give write permission back to remove it.
    let _ = std::process::Command::new("chmod")
        .args(["-R", "u+w"])
        .arg(scratch.path())
        .status();
}
