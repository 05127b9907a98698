//! Issue 31: what each platform keeps, through the host API, the way a host on that platform meets
//! it. The same tests run on every platform and say what they expect there (the platform is read
//! at run time, so no test is compiled out): on Linux and macOS a cache root opens and a folder
//! is inspected; on Windows both are refused at open with an error that says why, and nothing is
//! made. `.ci/run` runs this file under Wine for `x86_64-pc-windows-gnu`.

use std::path::Path;

use skillcache::entry::Validation;
use skillcache::{Digest, McpConfig, SkillCache, SkillEntry};

/// Whether this platform keeps a cache root (docs/guarantees.md, "Platforms").
fn keeps_a_root() -> bool {
    std::env::consts::OS != "windows"
}

#[test]
fn x3_a_cache_root_opens_only_where_the_platform_keeps_its_guarantees() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = dir.path().join("root");
    let opened = SkillCache::builder()
        .root(&root)
        .key_file(dir.path().join("host.key"))
        .open();
    if keeps_a_root() {
        let cache = opened.expect("the cache opens");
        drop(cache);
        assert!(root.join("CACHEDIR.TAG").is_file(), "the root is marked");
        // The read-only shard folders need the store's own purge to go away; a fresh root has
        // none, so the temporary folder removes it.
    } else {
        let e = opened.expect_err("refused at open");
        let text = e.to_string();
        assert!(
            text.contains("not available on Windows") && text.contains("root"),
            "the refusal says why: {text}"
        );
        assert!(!root.exists(), "nothing was made before the refusal");
        assert!(
            !dir.path().join("host.key").exists(),
            "no key was made before the refusal"
        );
    }
}

#[test]
fn x3_a_folder_is_inspected_only_where_it_can_be_opened_without_following_links() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(
        dir.path().join("SKILL.md"),
        "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n",
    )
    .expect("write");
    let inspected = skillcache::local::inspect(dir.path(), "skill://notes", &Validation::default());
    if keeps_a_root() {
        let entry = inspected.expect("a valid skill folder");
        assert_eq!(entry.uri().as_str(), "skill://notes/SKILL.md");
    } else {
        let errors = inspected.expect_err("refused");
        let text = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        assert!(text.contains("not available on Windows"), "{text}");
    }
}

/// What needs no root works on every platform: entries from a server are validated, digests
/// computed, host configurations read.
#[test]
fn x3_what_needs_no_root_works_on_every_platform() {
    let md = b"---\nname: notes\ndescription: Take notes.\n---\n# Notes\n";
    let wire = serde_json::json!({
        "uri": "skill://notes/SKILL.md",
        "frontmatter": {"name": "notes", "description": "Take notes."},
        "resources": [{
            "uri": "skill://notes/SKILL.md",
            "digest": Digest::of(md).to_string(),
            "size": md.len(),
        }],
    });
    let entry = SkillEntry::from_json(&wire, &Validation::default()).expect("a valid entry");
    assert_eq!(entry.uri().as_str(), "skill://notes/SKILL.md");
    let bad = serde_json::json!({"uri": "skill://notes/SKILL.md", "frontmatter": {}});
    assert!(SkillEntry::from_json(&bad, &Validation::default()).is_err());

    let dir = tempfile::tempdir().expect("a temporary folder");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        r#"{"mcpServers": {"docs": {"command": "docs-server", "args": ["--stdio"]}}}"#,
    )
    .expect("write");
    let read = McpConfig::read(Path::new(&config)).expect("a host configuration");
    assert_eq!(read.servers().count(), 1);
}
