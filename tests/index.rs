//! The index through the cache core: freshness and scope (R-C6), approvals (R-A2…R-A5),
#![allow(clippy::many_single_char_names, clippy::result_large_err)] // short fixture names; test closures
//! purge (R-C5) and gc.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use skillcache::core::{Cache, CachedRead};
use skillcache::entry::{CacheHints, Scope, Validation};
use skillcache::store::Isolation;
use skillcache::{Digest, Origin, SkillEntry};

fn origin(s: &str) -> Origin {
    Origin::new(s).expect("valid label")
}

#[test]
fn c6_fresh_entry_is_fresh_and_a_zero_ttl_one_is_stale() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let o = origin("srv");
    let (e, _) = common::skill("demo", &[]);
    c.put_entry(&o, "", &e, CacheHints::new(3_600_000, Scope::Public))
        .expect("put");
    let got = c.entry(&o, e.uri(), "").expect("read").expect("present");
    assert!(got.fresh);
    assert_eq!(got.entry, e);
    c.put_entry(&o, "", &e, CacheHints::default()).expect("put");
    let got = c.entry(&o, e.uri(), "").expect("read").expect("present");
    assert!(
        !got.fresh,
        "missing ttlMs is 0: stale at once, refreshed before the next load"
    );
    assert_eq!(
        got.hints.scope(),
        Scope::Private,
        "missing cacheScope is private"
    );
}

#[test]
fn c6_private_entries_are_per_principal_and_public_ones_are_shared() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let o = origin("srv");
    let (e, _) = common::skill("demo", &[]);
    c.put_entry(&o, "alice", &e, CacheHints::new(60_000, Scope::Private))
        .expect("put");
    assert!(c.entry(&o, e.uri(), "alice").expect("read").is_some());
    assert!(
        c.entry(&o, e.uri(), "bob").expect("read").is_none(),
        "alice's private entry is invisible to bob"
    );
    c.put_entry(&o, "bob", &e, CacheHints::new(60_000, Scope::Public))
        .expect("put");
    let seen_by_carol = c
        .entry(&o, e.uri(), "carol")
        .expect("read")
        .expect("public is shared");
    assert_eq!(seen_by_carol.hints.scope(), Scope::Public);
    // The public copy replaced the private one (a scope flip): alice sees the public copy.
    assert_eq!(
        c.entry(&o, e.uri(), "alice")
            .expect("read")
            .expect("present")
            .hints
            .scope(),
        Scope::Public
    );
    assert_eq!(c.entries(Some(&o)).expect("list").len(), 1);
    // And back: a private copy replaces the public one.
    c.put_entry(&o, "alice", &e, CacheHints::new(60_000, Scope::Private))
        .expect("put");
    assert!(c.entry(&o, e.uri(), "carol").expect("read").is_none());
    assert_eq!(c.entries(Some(&o)).expect("list").len(), 1);
}

#[test]
fn o1_entries_are_never_found_by_uri_alone() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let (e, _) = common::skill("demo", &[]);
    c.put_entry(&origin("a"), "", &e, CacheHints::new(60_000, Scope::Public))
        .expect("put");
    assert!(c.entry(&origin("b"), e.uri(), "").expect("read").is_none());
    c.approve(&origin("a"), "", &e, None).expect("approve");
    assert!(
        c.approval(&origin("b"), e.uri(), "")
            .expect("read")
            .is_none(),
        "A4: approvals are per origin"
    );
}

fn with_files(name: &str, files: &[(&str, &[u8])], reverse: bool) -> SkillEntry {
    let (e, _) = common::skill(name, files);
    let mut v = e.to_json();
    if reverse {
        v["resources"].as_array_mut().expect("array").reverse();
    }
    SkillEntry::from_json(&v, &Validation::default()).expect("valid")
}

#[test]
fn a2_reordering_keeps_the_approval_and_any_file_change_revokes_it_naming_the_file() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let o = origin("srv");
    let hints = CacheHints::new(60_000, Scope::Public);
    let e = with_files("demo", &[("a.md", b"a"), ("b.md", b"b")], false);
    c.put_entry(&o, "", &e, hints).expect("put");
    c.approve(&o, "", &e, None).expect("approve");
    let reordered = with_files("demo", &[("a.md", b"a"), ("b.md", b"b")], true);
    assert!(!c.put_entry(&o, "", &reordered, hints).expect("put").revoked);
    assert!(c.is_approved(&o, "", &reordered).expect("check"));

    for (what, changed, needle) in [
        (
            "added",
            with_files(
                "demo",
                &[("a.md", b"a"), ("b.md", b"b"), ("c.md", b"c")],
                false,
            ),
            "added skill://demo/c.md",
        ),
        (
            "removed",
            with_files("demo", &[("a.md", b"a")], false),
            "removed skill://demo/b.md",
        ),
        (
            "changed",
            with_files("demo", &[("a.md", b"a2"), ("b.md", b"b")], false),
            "changed skill://demo/a.md",
        ),
    ] {
        c.put_entry(&o, "", &e, hints).expect("restore");
        c.approve(&o, "", &e, None).expect("approve");
        let out = c.put_entry(&o, "", &changed, hints).expect("put");
        assert!(out.revoked, "{what}");
        let diff = out.diff.expect("diff");
        assert!(diff.to_string().contains(needle), "{what}: {diff}");
        assert!(!c.is_approved(&o, "", &changed).expect("check"), "{what}");
        assert!(
            c.approval(&o, e.uri(), "").expect("read").is_none(),
            "{what}: revoked, not just stale"
        );
    }
}

#[test]
fn a3_a_dynamic_entry_cannot_be_approved() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let o = origin("srv");
    let dynamic = SkillEntry::from_json(
        &json!({"uri": "skill://live/SKILL.md", "frontmatter": {"name": "live", "description": "d"}, "resources": "dynamic"}),
        &Validation::default(),
    )
    .expect("valid");
    assert!(c.approve(&o, "", &dynamic, None).is_err());
    assert!(!c.is_approved(&o, "", &dynamic).expect("check"));
    // A manifest that turns dynamic revokes the approval it had.
    let (e, _) = common::skill("live", &[]);
    c.put_entry(&o, "", &e, CacheHints::new(1, Scope::Public))
        .expect("put");
    c.approve(&o, "", &e, None).expect("approve");
    assert!(
        c.put_entry(&o, "", &dynamic, CacheHints::new(1, Scope::Public))
            .expect("put")
            .revoked
    );
}

#[test]
fn a5_a_tool_grant_is_bound_to_the_binding_and_revoked_with_it() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let o = origin("srv");
    let hints = CacheHints::new(60_000, Scope::Public);
    let e = with_files("demo", &[("a.md", b"a")], false);
    c.put_entry(&o, "", &e, hints).expect("put");
    c.approve(&o, "", &e, Some(&json!("Bash(git:*) Read")))
        .expect("approve with grant");
    assert_eq!(
        c.approval(&o, e.uri(), "")
            .expect("read")
            .expect("approved")
            .granted_tools,
        Some(json!("Bash(git:*) Read"))
    );
    c.put_entry(
        &o,
        "",
        &with_files("demo", &[("a.md", b"changed")], false),
        hints,
    )
    .expect("put");
    assert!(
        c.approval(&o, e.uri(), "").expect("read").is_none(),
        "the grant went with the approval"
    );
}

#[test]
fn c5_purge_leaves_nothing_of_the_origin() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let (gone, kept) = (origin("gone"), origin("kept"));
    let (e, files) = common::skill("demo", &[("a.md", b"a")]);
    for o in [&gone, &kept] {
        c.put_entry(o, "", &e, CacheHints::new(60_000, Scope::Public))
            .expect("put");
        c.approve(o, "", &e, None).expect("approve");
        common::store_all(&c, o, &e, &files);
    }
    c.purge(&gone).expect("purge");
    assert!(!c.store().layout().origin_dir(&gone).exists());
    assert!(c.entry(&gone, e.uri(), "").expect("read").is_none());
    assert!(c.approval(&gone, e.uri(), "").expect("read").is_none());
    assert!(
        c.index()
            .blobs()
            .expect("list")
            .iter()
            .all(|(o, _, _)| o != &gone)
    );
    assert!(!c.index().origins().expect("list").contains(&gone));
    assert!(c.entry(&kept, e.uri(), "").expect("read").is_some());
    assert!(matches!(
        c.read_file(&kept, &e.manifest().expect("m").files()[0])
            .expect("read"),
        CachedRead::Hit(_)
    ));
}

#[test]
fn gc_removes_unreferenced_blobs_and_never_those_of_a_fresh_entry() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let o = origin("srv");
    let fresh = CacheHints::new(3_600_000, Scope::Public);
    let (old, old_files) = common::skill("demo", &[("a.md", &[b'o'; 4000])]);
    c.put_entry(&o, "", &old, fresh).expect("put");
    common::store_all(&c, &o, &old, &old_files);
    // The server changed a.md: the old blob is no longer referenced by any entry.
    let (new, new_files) = common::skill("demo", &[("a.md", &[b'n'; 4000])]);
    c.put_entry(&o, "", &new, fresh).expect("put");
    common::store_all(&c, &o, &new, &new_files);
    let report = c.gc(None).expect("gc");
    assert_eq!(report.unreferenced, 1);
    for f in new.manifest().expect("m").files() {
        assert!(matches!(
            c.read_file(&o, f).expect("read"),
            CachedRead::Hit(_)
        ));
    }
    // A budget of zero cannot evict a fresh entry's blobs.
    let report = c.gc(Some(0)).expect("gc");
    assert_eq!(report.evicted, 0);
    assert!(report.over_budget);
    // Once the entry is stale, least-recently-used blobs go until the budget holds.
    let (other, other_files) = common::skill("other", &[("big.md", &[b'b'; 10_000])]);
    c.put_entry(&o, "", &other, CacheHints::new(0, Scope::Public))
        .expect("put stale");
    common::store_all(&c, &o, &other, &other_files);
    let before = c.gc(None).expect("gc").bytes_after;
    let report = c.gc(Some(before - 5_000)).expect("gc");
    assert!(
        report.evicted >= 1 && !report.over_budget && report.bytes_after <= before - 5_000,
        "{report:?}"
    );
    assert!(
        c.entry(&o, other.uri(), "").expect("read").is_none(),
        "the stale entry went with its blob"
    );
    for f in new.manifest().expect("m").files() {
        assert!(
            matches!(c.read_file(&o, f).expect("read"), CachedRead::Hit(_)),
            "fresh entry untouched"
        );
    }
}

#[test]
fn verify_reports_corrupt_missing_and_orphaned_and_quarantines_the_corrupt() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let o = origin("srv");
    let (e, files) = common::skill("demo", &[("a.md", b"alpha"), ("b.md", b"beta")]);
    c.put_entry(&o, "", &e, CacheHints::new(60_000, Scope::Public))
        .expect("put");
    common::store_all(&c, &o, &e, &files);
    let clean = c.verify(None, |_, _| {}).expect("verify");
    assert!(clean.is_clean() && clean.missing.is_empty() && clean.orphaned.is_empty());
    assert_eq!(clean.checked, 3);
    let m = e.manifest().expect("m");
    let layout = c.store().layout();
    let a_blob = layout.blob_path(&o, &m.files()[1].digest());
    let dir = a_blob.parent().expect("parent").to_owned();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
    fs::set_permissions(&a_blob, fs::Permissions::from_mode(0o644)).expect("chmod");
    fs::write(&a_blob, b"alphx").expect("corrupt");
    let b_blob = layout.blob_path(&o, &m.files()[2].digest());
    fs::set_permissions(
        b_blob.parent().expect("p"),
        fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    fs::remove_file(&b_blob).expect("delete");
    let orphan = Digest::of(b"no record");
    c.store()
        .publish(&o, &[(orphan, 9, b"no record".as_slice())])
        .expect("publish without a record");
    let mut calls = 0;
    let r = c
        .verify(None, |done, total| {
            calls += 1;
            assert!(done <= total);
        })
        .expect("verify");
    assert_eq!(r.corrupt, vec![(o.clone(), m.files()[1].digest())]);
    assert_eq!(r.missing, vec![(o.clone(), m.files()[2].digest())]);
    assert_eq!(r.orphaned, vec![(o.clone(), orphan)]);
    assert_eq!(calls, r.checked);
    assert_eq!(c.store().quarantined(), 1);
    assert!(c.verify(None, |_, _| {}).expect("again").is_clean());
}

#[test]
fn o3_a_name_finds_every_match_in_its_origin_and_none_elsewhere() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let (a, b) = (origin("a"), origin("b"));
    let hints = CacheHints::new(60_000, Scope::Public);
    let make = |uri: &str| {
        SkillEntry::from_json(
            &json!({"uri": uri, "frontmatter": {"name": "refunds", "description": "d"},
                    "resources": [{"uri": uri, "digest": Digest::of(b"").to_string(), "size": 0}]}),
            &Validation::default(),
        )
        .expect("valid")
    };
    for uri in [
        "skill://acme/billing/refunds/SKILL.md",
        "skill://acme/support/refunds/SKILL.md",
        "skill://refunds/SKILL.md",
    ] {
        c.put_entry(&a, "", &make(uri), hints).expect("put");
    }
    c.put_entry(&b, "", &make("skill://other/refunds/SKILL.md"), hints)
        .expect("put");
    let (other, _) = common::skill("refunds-v2", &[]);
    c.put_entry(&a, "", &other, hints).expect("put");
    let found: Vec<String> = c
        .entries_named(&a, "refunds", "")
        .expect("find")
        .into_iter()
        .map(|e| e.entry.uri().as_str().to_owned())
        .collect();
    assert_eq!(
        found,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://acme/support/refunds/SKILL.md",
            "skill://refunds/SKILL.md"
        ]
    );
    assert_eq!(
        c.entries_named(&b, "refunds", "").expect("find").len(),
        1,
        "never across origins"
    );
    assert!(c.entries_named(&a, "nobody", "").expect("find").is_empty());
    assert!(
        c.entries_named(&a, "%", "").expect("find").is_empty(),
        "not a pattern"
    );
}

/// R-T1: the index's memo answers a warm entry or approval with no query only while nothing
/// was committed since — by this process or by another one on the same root.
#[test]
fn t1_the_memo_answers_only_while_the_database_is_unchanged() {
    let (d, c) = common::cache(Isolation::Rehash);
    let o = origin("srv");
    let hints = CacheHints::new(60_000, Scope::Public);
    let e = with_files("demo", &[("a.md", b"a")], false);
    assert!(c.entry_quick(&o, e.uri(), "").is_none(), "nothing read yet");
    c.put_entry(&o, "", &e, hints).expect("put");
    c.approve(&o, "", &e, None).expect("approve");
    assert!(c.entry(&o, e.uri(), "").expect("read").is_some());
    assert!(c.approval(&o, e.uri(), "").expect("read").is_some());
    let quick = c.entry_quick(&o, e.uri(), "").expect("remembered");
    assert!(quick.entry == e && quick.fresh);
    assert!(c.approval_quick(&o, e.uri(), "").is_some());
    assert!(
        c.entry_quick(&o, e.uri(), "bob").is_none(),
        "remembered per principal"
    );
    // Another opener (another process, as far as SQLite knows) commits a changed entry, which
    // revokes the approval: neither remembered answer is given again.
    let other = Cache::builder()
        .root(d.path().join("root"))
        .open()
        .expect("a second opener");
    other
        .put_entry(
            &o,
            "",
            &with_files("demo", &[("a.md", b"changed")], false),
            hints,
        )
        .expect("put");
    assert!(
        c.approval_quick(&o, e.uri(), "").is_none(),
        "another connection committed"
    );
    assert!(c.entry_quick(&o, e.uri(), "").is_none());
    assert!(
        c.approval(&o, e.uri(), "").expect("read").is_none(),
        "revoked, as the index says"
    );
    // This process's own writes count the same.
    assert!(c.entry(&o, e.uri(), "").expect("read").is_some());
    assert!(c.entry_quick(&o, e.uri(), "").is_some());
    c.purge(&o).expect("purge");
    assert!(
        c.entry_quick(&o, e.uri(), "").is_none(),
        "purged by this process"
    );
    assert!(c.entry(&o, e.uri(), "").expect("read").is_none());
}
