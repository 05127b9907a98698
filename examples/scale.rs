//! Cost curves for one host (issue 30, G1): a root filled through the public API with synthetic
//! skills, then what a host calls, measured at each size. Run by hand in release
//! (`scripts/scale.sh`), a small size in CI:
//!
//! ```text
//! scale [--files 1000,10000,100000] [--file-size 4096] [--dir FOLDER] [--csv FILE] [--keep]
//! ```
//!
//! Each size is a fresh root in FOLDER (default: a temporary folder), removed after its size
//! unless `--keep` leaves it there (`FOLDER/root-N`, key `FOLDER/root-N.key`) for a second look
//! with the command-line tool: `skillcache verify --root FOLDER/root-N`, under `perf`, with the
//! page cache dropped.
//! Skills have 100 files each (`SKILL.md` and 99 others, every file's bytes distinct); there are
//! `files / 100` of them across 10 to 1,000 origins (one origin per 10 skills), served by an
//! in-process source that makes each file's bytes when asked, so the server's side costs
//! nothing worth counting and holds no copy. `Rehash`, memory tier off.
//!
//! Measured at each size, one line of CSV per size (and a table on stdout):
//! `fill_us_per_file` (the cold load that filled the root), `open_ms` (the median of 9),
//! `catalog_ms` (every origin) and `catalog_source_ms` (the source's share: the same listings
//! asked of the source directly), `hit_us` (the median of 2,000 warm 4 KiB reads), `cold_load_us_per_file` (five more
//! skills loaded one at a time, their median: one load of 100 files is a few tens of
//! milliseconds, where one journal commit of the disk's makes a bend; `pending_mb` is what the system had still to write
//! to its disks before the first — Linux's `Dirty` + `Writeback`, which a batch's `syncfs`
//! writes too), `verify_us_per_file`, `gc_us_per_file`, `purge_ms` (one origin, and the index
//! rewrite that leaves nothing of it readable), and bytes on disk per file held: `blob_bytes`
//! (allocated), `folder_bytes` (the folders of the store) and `index_bytes` (`index.sqlite3`
//! with its log).

// A measuring script: its counts stay far below 2^52, and `measure` reads best as one sequence.
#![allow(clippy::cast_precision_loss, clippy::too_many_lines)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skillcache::entry::{Limits, Validation};
use skillcache::source::{SkillSource, SourceFuture};
use skillcache::store::Isolation;
use skillcache::{ApprovalPolicy, Digest, Origin, SkillCache, SkillEntry, SkillUri};

const FILES_PER_SKILL: usize = 100;
const SKILLS_PER_ORIGIN: usize = 10;
const HIT_READS: usize = 2000;
const OPENS: usize = 9;
/// Skills loaded cold after the fill, one at a time: the cold load is their median.
const COLD_LOADS: usize = 5;

/// The bytes of file `file` of skill `skill`: distinct for every (skill, file), `size` long (or
/// as long as their first line, if that is longer).
fn content(skill: usize, file: usize, size: usize) -> Vec<u8> {
    let mut b = if file == 0 {
        format!(
            "---\nname: s{skill}\ndescription: Synthetic skill {skill} for the scale run.\n---\n"
        )
        .into_bytes()
    } else {
        format!("skill {skill} file {file}\n").into_bytes()
    };
    let mut i = b.len();
    while b.len() < size {
        b.push(if i % 64 == 63 {
            b'\n'
        } else {
            b'a' + u8::try_from(i % 26).unwrap_or(0)
        });
        i += 1;
    }
    b
}

fn file_name(file: usize) -> String {
    if file == 0 {
        "SKILL.md".to_owned()
    } else {
        format!("f{file}.md")
    }
}

/// One origin's skills, made when asked: entries are computed once (their digests need the
/// bytes), files again on every read.
struct Synthetic {
    skills: Vec<usize>,
    size: usize,
    entries: HashMap<String, Value>,
}

impl Synthetic {
    fn new(skills: Vec<usize>, size: usize) -> Synthetic {
        let entries = skills
            .iter()
            .map(|&s| {
                let resources: Vec<Value> = (0..FILES_PER_SKILL)
                    .map(|f| {
                        let b = content(s, f, size);
                        json!({"uri": format!("skill://s{s}/{}", file_name(f)),
                               "digest": Digest::of(&b).to_string(), "size": b.len()})
                    })
                    .collect();
                let uri = format!("skill://s{s}/SKILL.md");
                let v = json!({
                    "uri": uri,
                    "frontmatter": {"name": format!("s{s}"),
                                    "description": format!("Synthetic skill {s} for the scale run.")},
                    "resources": resources,
                });
                (uri, v)
            })
            .collect();
        Synthetic {
            skills,
            size,
            entries,
        }
    }

    fn listing(&self) -> Value {
        let skills: Vec<Value> = self
            .skills
            .iter()
            .map(|s| self.entries[&format!("skill://s{s}/SKILL.md")].clone())
            .collect();
        json!({"skills": skills, "ttlMs": 3_600_000, "cacheScope": "public"})
    }
}

impl SkillSource for Synthetic {
    fn list_skills<'a>(&'a self, _cursor: Option<&'a str>) -> SourceFuture<'a> {
        Box::pin(async move { Ok(self.listing()) })
    }
    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(async move {
            Ok(json!({"skill": self.entries[uri], "ttlMs": 3_600_000, "cacheScope": "public"}))
        })
    }
    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(async move {
            // skill://s{S}/SKILL.md or skill://s{S}/f{F}.md
            let rest = uri.strip_prefix("skill://s").expect("a synthetic URI");
            let (s, name) = rest.split_once('/').expect("a file");
            let s: usize = s.parse().expect("skill number");
            let f: usize = if name == "SKILL.md" {
                0
            } else {
                name.trim_start_matches('f')
                    .trim_end_matches(".md")
                    .parse()
                    .expect("file number")
            };
            let b = content(s, f, self.size);
            Ok(json!({"contents": [{"uri": uri, "text": String::from_utf8(b).expect("text")}]}))
        })
    }
}

fn open(root: &Path) -> SkillCache {
    SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(root)
        .key_file(root.with_extension("key"))
        .isolation(Isolation::Rehash)
        .memory_tier(0)
        .validation(Validation::default().limits(Limits::new(1024, 1 << 30).expect("limits")))
        .open()
        .expect("open the cache root")
}

/// Allocated bytes under `dir` (as `du` counts them): (blobs, folders, index files).
fn on_disk(root: &Path) -> (u64, u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    fn walk(dir: &Path, blobs: &mut u64, folders: &mut u64, index: &mut u64, top: bool) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            let bytes = m.blocks() * 512;
            if m.is_dir() {
                *folders += bytes;
                walk(&e.path(), blobs, folders, index, false);
            } else if top && e.file_name().to_string_lossy().starts_with("index.sqlite3") {
                *index += bytes;
            } else {
                *blobs += bytes;
            }
        }
    }
    let (mut b, mut f, mut i) = (0, 0, 0);
    walk(root, &mut b, &mut f, &mut i, true);
    (b, f, i)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

struct Row {
    files: usize,
    origins: usize,
    fill_us_per_file: f64,
    open_ms: f64,
    catalog_ms: f64,
    catalog_source_ms: f64,
    hit_us: f64,
    cold_load_us_per_file: f64,
    pending_mb: f64,
    verify_us_per_file: f64,
    gc_us_per_file: f64,
    purge_ms: f64,
    blob_bytes: f64,
    folder_bytes: f64,
    index_bytes: f64,
}

/// What the system has still to write to its disks, in MB: `Dirty` + `Writeback` of
/// `/proc/meminfo` (0 where there is none).
fn pending_mb() -> f64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kb: u64 = info
        .lines()
        .filter(|l| l.starts_with("Dirty:") || l.starts_with("Writeback:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    kb as f64 / 1024.0
}

async fn measure(root: &Path, files: usize, size: usize) -> Row {
    let skills = files.div_ceil(FILES_PER_SKILL).max(1);
    let origins = skills.div_ceil(SKILLS_PER_ORIGIN).clamp(1, 1000);
    let per_origin = skills.div_ceil(origins);
    // A few skills more in origin 0, never loaded while filling: the cold loads measured later.
    let extra = skills..skills + COLD_LOADS;
    let sources: Vec<(Origin, Arc<Synthetic>)> = (0..origins)
        .map(|o| {
            let mut mine: Vec<usize> =
                (o * per_origin..((o + 1) * per_origin).min(skills)).collect();
            if o == 0 {
                mine.extend(extra.clone());
            }
            (
                Origin::new(format!("o{o}")).expect("origin"),
                Arc::new(Synthetic::new(mine, size)),
            )
        })
        .collect();
    let connect = |cache: &SkillCache| {
        for (o, s) in &sources {
            cache.connect(o.clone(), s.clone() as Arc<dyn SkillSource>);
        }
    };

    let is_extra = |entry: &SkillEntry| {
        extra
            .clone()
            .any(|e| entry.uri().as_str() == format!("skill://s{e}/SKILL.md"))
    };
    // Fill: every skill but the extra ones, loaded whole.
    let cache = open(root);
    connect(&cache);
    let started = Instant::now();
    let mut held = 0usize;
    let mut warm: Option<(Origin, SkillEntry)> = None;
    for (o, _) in &sources {
        for info in cache.list(o).await.expect("list") {
            let entry = info.expect("a valid entry").entry;
            if is_extra(&entry) {
                continue;
            }
            let (_, got) = cache.load_all(o, &entry).await.expect("load all");
            held += got.len();
            warm.get_or_insert((o.clone(), entry));
        }
    }
    let fill = started.elapsed();
    drop(cache);

    // `open` alone takes a millisecond or so: the median of a few, each alone on the root (as a
    // host's start is), so one slow moment of the disk does not make a bend.
    let mut opens: Vec<f64> = (0..OPENS)
        .map(|_| {
            let started = Instant::now();
            let cache = open(root);
            let ms = started.elapsed().as_secs_f64() * 1e3;
            drop(cache);
            ms
        })
        .collect();
    opens.sort_by(f64::total_cmp);
    let open_ms = opens[OPENS / 2];
    let cache = open(root);
    connect(&cache);

    let started = Instant::now();
    let catalog = cache.catalog(&[]).await.expect("catalog");
    let catalog_ms = started.elapsed().as_secs_f64() * 1e3;
    assert!(catalog.failures().is_empty(), "every origin listed");
    let started = Instant::now();
    for (_, s) in &sources {
        std::hint::black_box(s.list_skills(None).await.expect("listing"));
    }
    let catalog_source_ms = started.elapsed().as_secs_f64() * 1e3;

    let (wo, we) = warm.expect("a skill was loaded");
    let skill = cache.load(&wo, &we).await.expect("warm load");
    let mut times = Vec::with_capacity(HIT_READS);
    for _ in 0..HIT_READS {
        let t = Instant::now();
        let f = skill.read("f1.md").await.expect("hit");
        std::hint::black_box(f.bytes());
        times.push(t.elapsed());
    }
    times.sort();
    let hit_us = us(times[HIT_READS / 2]);

    let o0 = sources[0].0.clone();
    let pending_mb = pending_mb();
    let mut colds = Vec::with_capacity(COLD_LOADS);
    for e in extra {
        let uri = SkillUri::parse(&format!("skill://s{e}/SKILL.md")).expect("uri");
        let started = Instant::now();
        let entry = cache.entry(&o0, &uri).await.expect("entry").entry;
        let (_, got) = cache.load_all(&o0, &entry).await.expect("cold load");
        let cold = started.elapsed();
        held += got.len();
        colds.push(us(cold) / got.len() as f64);
    }
    colds.sort_by(f64::total_cmp);
    let cold_load_us_per_file = colds[COLD_LOADS / 2];

    let started = Instant::now();
    let report = cache.verify(None, |_, _| {}).await.expect("verify");
    let verify = started.elapsed();
    assert!(report.corrupt.is_empty(), "nothing corrupt");
    let started = Instant::now();
    cache.gc(None).await.expect("gc");
    let gc = started.elapsed();

    let (blobs, folders, index) = on_disk(root);
    let started = Instant::now();
    cache.purge(&sources[origins - 1].0).await.expect("purge");
    let purge_ms = started.elapsed().as_secs_f64() * 1e3;

    let per = |x: u64| x as f64 / held as f64;
    Row {
        files: held,
        origins,
        fill_us_per_file: us(fill) / held as f64,
        open_ms,
        catalog_ms,
        catalog_source_ms,
        hit_us,
        cold_load_us_per_file,
        pending_mb,
        verify_us_per_file: us(verify) / held as f64,
        gc_us_per_file: us(gc) / held as f64,
        purge_ms,
        blob_bytes: per(blobs),
        folder_bytes: per(folders),
        index_bytes: per(index),
    }
}

/// Empties a root: its folders are read-only on purpose (0555), so they are made writable first.
fn remove_root(root: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    fn writable(dir: &Path) {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    writable(&e.path());
                }
            }
        }
    }
    writable(root);
    let _ = std::fs::remove_dir_all(root);
    let _ = std::fs::remove_file(root.with_extension("key"));
}

const USAGE: &str =
    "scale [--files 1000,10000,100000] [--file-size 4096] [--dir FOLDER] [--csv FILE] [--keep]";

/// A wrong command line: what is wrong and the usage, then exit status 2.
fn usage(problem: &str) -> ! {
    eprintln!("scale: {problem}\nusage: {USAGE}");
    std::process::exit(2)
}

fn main() {
    let mut sizes = vec![1_000, 10_000, 100_000];
    let mut file_size = 4096;
    let mut dir: Option<PathBuf> = None;
    let mut csv: Option<PathBuf> = None;
    let mut keep = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        let number = |v: &str| {
            v.parse::<usize>()
                .unwrap_or_else(|_| usage(&format!("{a}: {v:?} is not a whole number")))
        };
        match a.as_str() {
            "--files" => sizes = value().split(',').map(number).collect(),
            "--file-size" => file_size = number(&value()),
            "--dir" => dir = Some(value().into()),
            "--csv" => csv = Some(value().into()),
            "--keep" => keep = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if keep && dir.is_none() {
        usage("--keep needs --dir: a temporary folder goes at the end");
    }
    let scratch = tempfile::tempdir().expect("temporary folder");
    let dir = dir.unwrap_or_else(|| scratch.path().to_owned());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let header = "files,origins,fill_us_per_file,open_ms,catalog_ms,catalog_source_ms,hit_us,cold_load_us_per_file,pending_mb,verify_us_per_file,gc_us_per_file,purge_ms,blob_bytes_per_file,folder_bytes_per_file,index_bytes_per_file";
    let mut out = format!("{header}\n");
    println!(
        "| files | origins | fill µs/file | open ms | catalog ms (source) | hit µs | cold load µs/file (pending MB) | verify µs/file | gc µs/file | purge ms | blob B/file | folder B/file | index B/file |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for files in sizes {
        let root = dir.join(format!("root-{files}"));
        remove_root(&root);
        let r = runtime.block_on(measure(&root, files, file_size));
        if !keep {
            remove_root(&root);
        }
        println!(
            "| {} | {} | {:.0} | {:.1} | {:.1} ({:.1}) | {:.2} | {:.0} ({:.0}) | {:.1} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} |",
            r.files,
            r.origins,
            r.fill_us_per_file,
            r.open_ms,
            r.catalog_ms,
            r.catalog_source_ms,
            r.hit_us,
            r.cold_load_us_per_file,
            r.pending_mb,
            r.verify_us_per_file,
            r.gc_us_per_file,
            r.purge_ms,
            r.blob_bytes,
            r.folder_bytes,
            r.index_bytes
        );
        let _ = writeln!(
            out,
            "{},{},{:.1},{:.2},{:.2},{:.2},{:.3},{:.1},{:.0},{:.2},{:.2},{:.1},{:.0},{:.0},{:.0}",
            r.files,
            r.origins,
            r.fill_us_per_file,
            r.open_ms,
            r.catalog_ms,
            r.catalog_source_ms,
            r.hit_us,
            r.cold_load_us_per_file,
            r.pending_mb,
            r.verify_us_per_file,
            r.gc_us_per_file,
            r.purge_ms,
            r.blob_bytes,
            r.folder_bytes,
            r.index_bytes
        );
    }
    if let Some(csv) = csv {
        std::fs::write(&csv, out).expect("write the CSV");
    }
}
