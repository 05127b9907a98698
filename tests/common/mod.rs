//! Shared fixture vocabulary for the integration tests.
#![allow(dead_code, missing_docs)]

use std::path::PathBuf;

/// The workplace's `shared/` folder: `$SKILLCACHE_SHARED`, or `../shared` beside the checkout.
/// Tests that need it fail loudly when it is missing; they never pass by skipping.
pub fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("SKILLCACHE_SHARED").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"),
        PathBuf::from,
    );
    assert!(
        dir.join("spec").is_dir(),
        "shared/ not found at {} (set SKILLCACHE_SHARED to the folder holding spec/ and corpus/)",
        dir.display()
    );
    dir
}

pub fn corpus_skills() -> PathBuf {
    shared_dir().join("corpus/skills")
}

/// A `SKILL.md` with the given frontmatter lines and a small body.
pub fn skill_md(frontmatter: &str) -> Vec<u8> {
    format!("---\n{frontmatter}\n---\n\n# Body\n").into_bytes()
}
