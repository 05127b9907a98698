//! Issue 31: what each platform keeps, through the host API, the way a host on that platform meets
//! it. The same tests run on every platform and say what they expect there (the platform is read
//! at run time, so no test is compiled out): a cache root opens with `Rehash` and a folder is
//! inspected everywhere; `Guaranteed` isolation opens on Linux and macOS and is refused at open
//! on Windows, where a root outside the user's profile is refused too, with an error that says
//! why and nothing made. `scripts/wine-check.sh` runs this file under Wine for
//! `x86_64-pc-windows-gnu`.

use std::path::Path;

use skillcache::entry::Validation;
use skillcache::{Digest, Isolation, McpConfig, SkillCache, SkillEntry};

/// Whether this platform reads the evidence `Guaranteed` trusts (docs/guarantees.md,
/// "Platforms").
fn keeps_guaranteed() -> bool {
    std::env::consts::OS != "windows"
}

#[test]
fn x3_a_cache_root_opens_with_rehash_on_every_platform() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = dir.path().join("root");
    let cache = SkillCache::builder()
        .root(&root)
        .key_file(dir.path().join("host.key"))
        .open()
        .expect("the cache opens");
    drop(cache);
    assert!(root.join("CACHEDIR.TAG").is_file(), "the root is marked");
    assert!(dir.path().join("host.key").is_file(), "the key is made");
}

#[test]
fn x3_guaranteed_isolation_opens_only_where_its_evidence_can_be_read() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = dir.path().join("root");
    let opened = SkillCache::builder()
        .root(&root)
        .key_file(dir.path().join("host.key"))
        .isolation(Isolation::Guaranteed)
        .open();
    if keeps_guaranteed() {
        drop(opened.expect("the cache opens"));
    } else {
        let text = opened.expect_err("refused at open").to_string();
        assert!(
            text.contains("Guaranteed isolation is not available on Windows")
                && text.contains("Rehash"),
            "the refusal says why and what to use: {text}"
        );
        assert!(!root.exists(), "nothing was made before the refusal");
        assert!(
            !dir.path().join("host.key").exists(),
            "no key was made before the refusal"
        );
    }
}

#[test]
fn x3_a_root_outside_the_user_profile_is_refused_on_windows_only() {
    if keeps_guaranteed() {
        // Linux and macOS check the opened root's owner and mode instead (tests/hostile_root.rs).
        let dir = tempfile::tempdir().expect("a temporary folder");
        let cache = SkillCache::builder()
            .root(dir.path().join("root"))
            .key_file(dir.path().join("host.key"))
            .open();
        drop(cache.expect("a root anywhere the user owns opens"));
        return;
    }
    let profile = std::env::var_os("USERPROFILE").expect("a Windows profile");
    let drive = Path::new(&profile)
        .ancestors()
        .last()
        .expect("a drive")
        .join(format!("skillcache-outside-{}", std::process::id()));
    let dir = tempfile::tempdir().expect("a temporary folder");
    let text = SkillCache::builder()
        .root(&drive)
        .key_file(dir.path().join("host.key"))
        .open()
        .expect_err("refused at open")
        .to_string();
    assert!(text.contains("inside your user profile"), "{text}");
    assert!(!drive.exists(), "nothing was made before the refusal");
}

#[test]
fn x3_a_folder_is_inspected_on_every_platform() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(
        dir.path().join("SKILL.md"),
        "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n",
    )
    .expect("write");
    let entry = skillcache::local::inspect(dir.path(), "skill://notes", &Validation::default())
        .expect("a valid skill folder");
    assert_eq!(entry.uri().as_str(), "skill://notes/SKILL.md");
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
