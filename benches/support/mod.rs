//! Fixtures shared by the benches: skills built from bytes, and an in-process source.
#![allow(dead_code)]

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
