//! A purge is never undone by bytes fetched before it (round 21 of review): a load notes the
//! index's purge mark before it fetches, and its publish — by the load, or behind it by the
//! keeper, in this process or another — keeps nothing once the index has seen a purge since.

use super::{Cache, Kept};
use crate::digest::Digest;
use crate::entry::{ManifestFile, SkillEntry, Validation};
use crate::origin::Origin;
use crate::verify::VerifiedBytes;

/// A skill of two files and their bytes.
fn skill() -> (Vec<ManifestFile>, Vec<Vec<u8>>) {
    let md = b"---\nname: kept\ndescription: Kept or not.\n---\n".to_vec();
    let notes = b"notes fetched before the purge".to_vec();
    let wire = serde_json::json!({
        "uri": "skill://kept/SKILL.md",
        "frontmatter": {"name": "kept", "description": "Kept or not."},
        "resources": [
            {"uri": "skill://kept/SKILL.md", "digest": Digest::of(&md).to_string(), "size": md.len()},
            {"uri": "skill://kept/notes.md", "digest": Digest::of(&notes).to_string(), "size": notes.len()},
        ],
    });
    let entry = SkillEntry::from_json(&wire, &Validation::default()).expect("valid fixture");
    let files = entry.manifest().expect("manifest").files().to_vec();
    (files, vec![md, notes])
}

fn open(dir: &std::path::Path) -> Cache {
    Cache::builder()
        .root(dir.join("root"))
        .key_file(dir.join("host.key"))
        .open()
        .expect("open")
}

#[test]
fn a_publish_of_bytes_fetched_before_another_caches_purge_keeps_nothing() {
    let dir = crate::scratch::scratch();
    // Two caches on one root: two processes, as far as the index and the store can tell.
    let (ours, theirs) = (open(dir.path()), open(dir.path()));
    let origin = Origin::new("docs").expect("label");
    let (files, bytes) = skill();
    ours.store_file(&origin, &files[0], &bytes[0]).expect("an earlier load's file");

    // A load notes the mark, then fetches; meanwhile the other cache purges the origin.
    let mark = ours.purge_mark(&origin);
    let fetched = VerifiedBytes::check(bytes[1].clone(), files[1].size(), files[1].digest())
        .expect("verified");
    theirs.purge(&origin).expect("purge");

    assert_eq!(ours.store_verified(&origin, &[(&files[1], &fetched)], mark), Kept::Purged);
    assert!(ours.index().origins().expect("origins").is_empty(), "no row came back");
    assert!(
        !dir.path().join("root/origins/docs").exists(),
        "no folder of the origin came back"
    );

    // A load that begins after the purge keeps what it fetches.
    let after = ours.purge_mark(&origin);
    assert_ne!(after, mark);
    assert_eq!(ours.store_verified(&origin, &[(&files[1], &fetched)], after), Kept::Stored);
    assert_eq!(ours.index().origins().expect("origins"), vec![origin]);
}

/// The same for entries (round 22 of review): a listing or `skills/get` asked before another
/// cache's purge and answered after it is served, not kept, so the purged label stays gone.
#[test]
fn entries_asked_for_before_another_caches_purge_are_not_kept() {
    let dir = crate::scratch::scratch();
    let (ours, theirs) = (open(dir.path()), open(dir.path()));
    let origin = Origin::new("docs").expect("label");
    let (files, _) = skill();
    let wire = serde_json::json!({
        "uri": "skill://kept/SKILL.md",
        "frontmatter": {"name": "kept", "description": "Kept or not."},
        "resources": files.iter().map(|f| serde_json::json!({
            "uri": f.uri().as_str(), "digest": f.digest().to_string(), "size": f.size()})).collect::<Vec<_>>(),
    });
    let entry = SkillEntry::from_json(&wire, &Validation::default()).expect("valid");
    let hints = crate::entry::CacheHints::new(60_000, crate::entry::Scope::Public);
    let answered = |c: &Cache, asked| {
        c.put_answered(&origin, "", std::slice::from_ref(&entry), hints, true, asked)
            .expect("no error")
    };
    let asked = ours.asked(&origin);
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert!(answered(&ours, asked).is_some(), "kept with no purge between");
    let stored = ours
        .entry(&origin, entry.uri(), "")
        .expect("read")
        .expect("kept");
    assert_eq!(
        stored.fetched_at_ms, asked.at_ms,
        "fetched when asked, not when kept: a change announced meanwhile still marks it stale"
    );

    let asked = ours.asked(&origin);
    theirs.purge(&origin).expect("purge");
    assert!(answered(&ours, asked).is_none(), "not kept: a purge came between");
    assert!(ours.index().origins().expect("origins").is_empty(), "the label stays gone");
    assert!(answered(&ours, ours.asked(&origin)).is_some(), "a request after the purge keeps");
}

/// Round 25 of review: the origin's first listing is in flight (its row, made by the mark,
/// holds nothing yet) when the host drops the server and purges every origin it no longer
/// names. The origin is not reported (the cache held nothing of it), but its row is purged, so
/// the answer is not kept.
#[test]
fn a_first_listing_in_flight_across_purge_absent_is_not_kept() {
    let dir = crate::scratch::scratch();
    let cache = open(dir.path());
    let origin = Origin::new("docs").expect("label");
    let (files, _) = skill();
    let wire = serde_json::json!({
        "uri": "skill://kept/SKILL.md",
        "frontmatter": {"name": "kept", "description": "Kept or not."},
        "resources": files.iter().map(|f| serde_json::json!({
            "uri": f.uri().as_str(), "digest": f.digest().to_string(), "size": f.size()})).collect::<Vec<_>>(),
    });
    let entry = SkillEntry::from_json(&wire, &Validation::default()).expect("valid");
    let hints = crate::entry::CacheHints::new(60_000, crate::entry::Scope::Public);
    let asked = cache.asked(&origin);
    assert!(cache.origins().expect("origins").is_empty(), "nothing held yet");
    assert_eq!(cache.purge_absent(&[]).expect("purge"), Vec::<Origin>::new(), "nothing to report");
    let kept = cache
        .put_answered(&origin, "", std::slice::from_ref(&entry), hints, true, asked)
        .expect("no error");
    assert!(kept.is_none(), "the answer asked before the purge is served, not kept");
    assert!(cache.origins().expect("origins").is_empty(), "the dropped server stays gone");
}

/// Round 23 of review: a process of the previous version purges with a bare delete (no count of
/// its own) an origin this cache is loading for the first time. The mark made the index hold a
/// row for the origin, so the delete moves the count (schema 4's trigger) and the load's publish
/// keeps nothing.
#[test]
fn an_older_processes_purge_of_an_origin_with_no_row_yet_is_not_undone() {
    let dir = crate::scratch::scratch();
    let ours = open(dir.path());
    let origin = Origin::new("docs").expect("label");
    let (files, bytes) = skill();
    assert!(ours.index().origins().expect("origins").is_empty(), "nothing of it yet");
    let mark = ours.purge_mark(&origin);
    assert!(
        ours.index().origins().expect("origins").is_empty(),
        "the row a mark makes holds nothing: not an origin the cache holds (round 24)"
    );
    let fetched = VerifiedBytes::check(bytes[1].clone(), files[1].size(), files[1].digest())
        .expect("verified");
    // The older process: its purge is a bare delete of the origin's row.
    let old = rusqlite::Connection::open(dir.path().join("root/index.sqlite3")).expect("open");
    let deleted = old
        .execute("DELETE FROM origins WHERE label = 'docs'", [])
        .expect("an old purge");
    assert_eq!(deleted, 1, "the mark made the index hold a row for the origin");
    assert_eq!(ours.store_verified(&origin, &[(&files[1], &fetched)], mark), Kept::Purged);
    assert!(ours.index().origins().expect("origins").is_empty());
}
