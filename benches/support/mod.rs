//! Fixtures shared by the benches: skills built from bytes, and an in-process source.
#![allow(dead_code)]

#[path = "../../tests/common/scratch.rs"]
mod scratch;

#[allow(unused_imports)] // not every bench keeps a folder
pub use scratch::{Scratch, scratch};

use std::collections::HashMap;

use serde_json::{Value, json};
use skillcache::entry::{Limits, Validation};
use skillcache::source::{SkillSource, SourceFuture};
use skillcache::{Digest, SkillEntry};

/// The sizes the hashing and cache-hit groups measure.
pub const SIZES: [(usize, &str); 5] = [
    (1 << 10, "1KiB"),
    (4 << 10, "4KiB"),
    (64 << 10, "64KiB"),
    (1 << 20, "1MiB"),
    (16 << 20, "16MiB"),
];

/// A `SKILL.md` for `name`, padded with body text to exactly `len` bytes (at least the header).
pub fn skill_md(name: &str, len: usize) -> Vec<u8> {
    let mut md =
        format!("---\nname: {name}\ndescription: Benchmark skill {name}.\n---\n").into_bytes();
    while md.len() < len {
        md.push(if md.len() % 64 == 63 { b'\n' } else { b'x' });
    }
    md
}

/// Deterministic file contents.
pub fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from((i * 31 + usize::from(seed)) % 251).unwrap_or(0))
        .collect()
}

/// A skill's files: (URI, bytes).
pub type Files = Vec<(String, Vec<u8>)>;

/// A skill `name` whose files are (relative path, bytes); `SKILL.md` first.
pub fn skill(name: &str, md: Vec<u8>, files: Files) -> (SkillEntry, Files) {
    let mut all = vec![(format!("skill://{name}/SKILL.md"), md)];
    all.extend(
        files
            .into_iter()
            .map(|(p, b)| (format!("skill://{name}/{p}"), b)),
    );
    let resources: Vec<Value> = all
        .iter()
        .map(|(u, b)| json!({"uri": u, "digest": Digest::of(b).to_string(), "size": b.len()}))
        .collect();
    let v = json!({
        "uri": format!("skill://{name}/SKILL.md"),
        "frontmatter": {"name": name, "description": format!("Benchmark skill {name}.")},
        "resources": resources,
    });
    let unlimited = Validation::default().limits(Limits::new(1 << 20, 1 << 40).expect("raised"));
    (
        SkillEntry::from_json(&v, &unlimited).expect("valid bench entry"),
        all,
    )
}

/// An honest in-process server for the benches (no transport cost beyond a JSON value).
pub struct MemorySource {
    pub entries: HashMap<String, Value>,
    pub files: HashMap<String, Vec<u8>>,
}

impl MemorySource {
    pub fn new(skills: &[(SkillEntry, Files)]) -> MemorySource {
        let mut entries = HashMap::new();
        let mut files = HashMap::new();
        for (e, fs) in skills {
            entries.insert(e.uri().as_str().to_owned(), e.to_json());
            for (u, b) in fs {
                files.insert(u.clone(), b.clone());
            }
        }
        MemorySource { entries, files }
    }
}

impl SkillSource for MemorySource {
    fn list_skills<'a>(&'a self, _cursor: Option<&'a str>) -> SourceFuture<'a> {
        Box::pin(async move {
            Ok(
                json!({"skills": self.entries.values().cloned().collect::<Vec<_>>(), "ttlMs": 3_600_000, "cacheScope": "public"}),
            )
        })
    }
    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(async move {
            Ok(json!({"skill": self.entries[uri], "ttlMs": 3_600_000, "cacheScope": "public"}))
        })
    }
    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(async move {
            let b = &self.files[uri];
            let item = if let Ok(t) = std::str::from_utf8(b) {
                json!({"uri": uri, "text": t})
            } else {
                use base64::Engine as _;
                json!({"uri": uri, "blob": base64::engine::general_purpose::STANDARD.encode(b)})
            };
            Ok(json!({"contents": [item]}))
        })
    }
}

/// The corpus of real skills the benches load: `tests/data/corpus/skills` (kept in the
/// repository), or the folder `$SKILLCACHE_CORPUS` names.
pub fn corpus_dir() -> std::path::PathBuf {
    std::env::var_os("SKILLCACHE_CORPUS").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus/skills"),
        std::path::PathBuf::from,
    )
}

/// Every valid skill of the corpus (`corpus/skills/*`), as an entry and its files; the invalid
/// ones (the corpus keeps a few on purpose) are left out.
pub fn corpus_skills() -> Vec<(SkillEntry, Files)> {
    let dir = corpus_dir();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("corpus")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("SKILL.md").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .iter()
        .filter_map(|n| {
            let local = skillcache::local::inspect_folder(
                &dir.join(n),
                &format!("skill://{n}"),
                &Validation::default(),
            )
            .ok()?;
            let files = local
                .files
                .iter()
                .map(|f| {
                    (
                        f.uri.as_str().to_owned(),
                        std::fs::read(&f.path).expect("read"),
                    )
                })
                .collect();
            Some((local.entry, files))
        })
        .collect()
}

/// A server that must not be asked: every request fails, and is counted.
#[derive(Default)]
pub struct NoServer {
    pub asked: std::sync::atomic::AtomicUsize,
}

impl NoServer {
    fn refuse(&self, method: &str) -> SourceFuture<'_> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let method = method.to_owned();
        Box::pin(async move {
            Err(skillcache::Error::Source(
                skillcache::error::SourceError::Transport {
                    origin: None,
                    method,
                    source: "the warm start must not contact the server".into(),
                },
            ))
        })
    }
}

impl SkillSource for NoServer {
    fn list_skills<'a>(&'a self, _cursor: Option<&'a str>) -> SourceFuture<'a> {
        self.refuse("skills/list")
    }
    fn get_skill<'a>(&'a self, _uri: &'a str) -> SourceFuture<'a> {
        self.refuse("skills/get")
    }
    fn read_resource<'a>(&'a self, _uri: &'a str) -> SourceFuture<'a> {
        self.refuse("resources/read")
    }
}

/// Peak resident set of this process so far, in KiB (`VmHWM` of `/proc/self/status`).
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
