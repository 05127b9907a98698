//! The blob store under the cache core: origins (R-O1, R-O2), the root (R-C1), modes (R-C2),
#![allow(clippy::many_single_char_names, clippy::result_large_err)] // short fixture names; test closures
//! tampering under both isolation policies (R-C2, R-V2, R-V8).

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use skillcache::core::{Cache, CachedRead};
use skillcache::entry::{CacheHints, Scope};
use skillcache::error::Mismatch;
use skillcache::store::Isolation;
use skillcache::{Error, Origin};

fn origin(s: &str) -> Origin {
    Origin::new(s).expect("valid label")
}

fn hit(c: &Cache, o: &Origin, e: &skillcache::SkillEntry, i: usize) -> Vec<u8> {
    match c
        .read_file(o, &e.manifest().expect("manifest").files()[i])
        .expect("read")
    {
        CachedRead::Hit(v) => v.into_vec(),
        other => panic!("expected a hit, got {other:?}"),
    }
}

#[test]
fn o1_o2_same_uri_from_two_origins_gives_two_entries_and_two_blob_trees() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let (a, b) = (origin("server-a"), origin("server-b"));
    let (ea, fa) = common::skill("refunds", &[("x.md", b"from a")]);
    let (eb, fb) = common::skill("refunds", &[("x.md", b"from b")]);
    let hints = CacheHints::new(60_000, Scope::Public);
    c.put_entry(&a, "", &ea, hints).expect("put a");
    c.put_entry(&b, "", &eb, hints).expect("put b");
    common::store_all(&c, &a, &ea, &fa);
    common::store_all(&c, &b, &eb, &fb);
    let ga = c
        .entry(&a, ea.uri(), "")
        .expect("read")
        .expect("present")
        .entry;
    let gb = c
        .entry(&b, eb.uri(), "")
        .expect("read")
        .expect("present")
        .entry;
    assert_ne!(ga.binding(), gb.binding());
    let layout = c.store().layout();
    for (o, e) in [(&a, &ea), (&b, &eb)] {
        for f in e.manifest().expect("manifest").files() {
            let path = layout.blob_path(o, &f.digest());
            assert!(path.is_file());
            // The origin is recoverable from the path alone.
            assert_eq!(layout.parse_blob_path(&path), Some((o.clone(), f.digest())));
        }
    }
    let (blobs_a, _) = c.store().blobs(Some(&a)).expect("walk");
    assert!(blobs_a.iter().all(|blob| blob.origin == a));
    assert_ne!(layout.origin_dir(&a), layout.origin_dir(&b));
}

#[test]
fn o2_hostile_origin_labels_never_escape_or_collide() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let labels = [
        "..",
        ".",
        "a/b",
        "a%2Fb",
        "a\\b",
        ".hidden",
        "%2E",
        "a b",
        "é",
        "x".repeat(80).as_str(),
        "CON",
        "-",
        "_",
    ]
    .map(str::to_owned);
    let mut seen = std::collections::HashSet::new();
    let origins_dir = c.store().layout().origins();
    for l in &labels {
        let o = origin(l);
        let comp = o.path_component().to_owned();
        assert!(
            comp.len() <= 255
                && !comp.is_empty()
                && comp != "."
                && comp != ".."
                && !comp.starts_with('.'),
            "{l:?} -> {comp}"
        );
        assert!(!comp.contains('/') && !comp.contains('\0'), "{l:?}");
        assert!(seen.insert(comp.clone()), "{l:?} collides");
        assert_eq!(
            Origin::from_path_component(&comp),
            Some(o.clone()),
            "{l:?} is recoverable"
        );
        assert_eq!(
            c.store().layout().origin_dir(&o).parent(),
            Some(origins_dir.as_path())
        );
        let (e, files) = common::skill("demo", &[]);
        common::store_all(&c, &o, &e, &files);
    }
    assert_eq!(
        fs::read_dir(&origins_dir).expect("list").count(),
        labels.len()
    );
    for bad in ["", "a\0b", "line\nbreak", &"x".repeat(300)] {
        assert!(Origin::new(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn c1_root_inside_or_around_a_discovery_path_is_refused_also_through_a_symlink() {
    let d = common::scratch();
    let skills = d.path().join("home/.claude/skills");
    fs::create_dir_all(&skills).expect("mkdir");
    let open = |root: &std::path::Path| Cache::builder().root(root).discovery_path(&skills).open();
    assert!(matches!(
        open(&skills.join("cache")),
        Err(Error::Store(
            skillcache::error::StoreError::RootRefused { .. }
        ))
    ));
    assert!(matches!(
        open(&d.path().join("home")),
        Err(Error::Store(
            skillcache::error::StoreError::RootRefused { .. }
        ))
    ));
    std::os::unix::fs::symlink(&skills, d.path().join("innocent")).expect("symlink");
    match open(&d.path().join("innocent/cache")) {
        Err(e @ Error::Store(skillcache::error::StoreError::RootRefused { .. })) => {
            assert!(e.to_string().contains(".claude/skills"), "{e}");
        }
        other => panic!("a root reached through a symlink must be refused: {other:?}"),
    }
    assert!(
        !skills.join("cache").exists(),
        "nothing is created for a refused root"
    );
    let ok = open(&d.path().join("elsewhere/cache")).expect("outside is fine");
    assert_eq!(fs::metadata(ok.root()).expect("stat").mode() & 0o777, 0o700);
}

/// C1 where names fold case (macOS, Windows, a casefolded mount): a root spelled in another
/// case than a discovery path that does not exist yet is inside it, or around it, all the same.
#[test]
fn c1_a_root_differing_from_a_discovery_path_only_in_case_is_refused() {
    let d = common::scratch();
    let skills = d.path().join("home/.claude/skills");
    for root in [
        d.path().join("home/.CLAUDE/skills/cache"),
        d.path().join("home/.Claude/Skills"),
        d.path().join("home/.CLAUDE"),
    ] {
        let refused = Cache::builder()
            .root(&root)
            .discovery_path(&skills)
            .open()
            .expect_err("a root that is a discovery path but for case");
        assert!(
            matches!(
                refused,
                Error::Store(skillcache::error::StoreError::RootRefused { .. })
            ),
            "{root:?}: {refused}"
        );
        assert!(!root.exists(), "nothing is created for a refused root");
    }
    Cache::builder()
        .root(d.path().join("home/.claude-cache"))
        .discovery_path(&skills)
        .open()
        .expect("a name that only starts like one is another folder");
}

/// N5: a newcomer who picks a folder around a discovery path that does not exist yet (a home
/// folder before any skill was installed) is told why, and that the path need not exist.
#[test]
fn n5_a_root_around_a_discovery_path_not_made_yet_says_it_would_contain_it() {
    let d = common::scratch();
    let home = d.path().join("home");
    let skills = home.join(".claude/skills");
    let refused = Cache::builder()
        .root(&home)
        .discovery_path(&skills)
        .open()
        .expect_err("a root around a discovery path is refused");
    let shown = refused.to_string();
    assert!(
        shown.contains(
            "would contain a skill discovery path (even if that path does not exist yet): "
        ) && shown.ends_with(".claude/skills"),
        "{shown}"
    );
    assert!(!skills.exists(), "nothing is created for a refused root");
}

#[test]
fn c2_blobs_are_0444_in_0555_directories_and_the_root_is_0700() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let o = origin("srv");
    let (e, files) = common::skill("demo", &[("a.md", b"alpha")]);
    common::store_all(&c, &o, &e, &files);
    assert_eq!(fs::metadata(c.root()).expect("stat").mode() & 0o777, 0o700);
    for f in e.manifest().expect("manifest").files() {
        let p = c.store().layout().blob_path(&o, &f.digest());
        assert_eq!(
            fs::symlink_metadata(&p).expect("stat").mode() & 0o777,
            0o444,
            "{}",
            p.display()
        );
        let mut dir = p.parent().expect("parent").to_owned();
        while dir != c.store().layout().origins() {
            assert_eq!(
                fs::metadata(&dir).expect("stat").mode() & 0o777,
                0o555,
                "{}",
                dir.display()
            );
            dir = dir.parent().expect("parent").to_owned();
        }
    }
}

/// Each tamper is applied to the cached `a.md` blob (as root, so read-only modes do not stop
/// it — which is exactly the attacker the evidence checks are for).
fn tamper(kind: &str, blob: &std::path::Path, other_blob: &std::path::Path) {
    let dir = blob.parent().expect("parent");
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).expect("chmod dir");
    let original = fs::read(blob).expect("read");
    let rewrite = |bytes: &[u8]| {
        fs::set_permissions(blob, fs::Permissions::from_mode(0o644)).expect("chmod");
        fs::write(blob, bytes).expect("write");
        fs::set_permissions(blob, fs::Permissions::from_mode(0o444)).expect("chmod back");
    };
    match kind {
        "flip" => {
            let mut b = original.clone();
            b[0] ^= 1;
            rewrite(&b);
        }
        "truncate" => rewrite(&original[..original.len() - 1]),
        "append" => rewrite(&[original.as_slice(), b"!"].concat()),
        "symlink" => {
            let target = dir.join("elsewhere");
            fs::write(&target, &original).expect("decoy with the right bytes");
            fs::remove_file(blob).expect("rm");
            std::os::unix::fs::symlink(&target, blob).expect("symlink");
        }
        "other-blob" => {
            fs::remove_file(blob).expect("rm");
            fs::copy(other_blob, blob).expect("copy a different valid blob");
            fs::set_permissions(blob, fs::Permissions::from_mode(0o444)).expect("chmod");
        }
        "chmod-rewrite" => {
            let mut b = original.clone();
            b[1] ^= 1;
            fs::set_permissions(blob, fs::Permissions::from_mode(0o644)).expect("chmod");
            fs::write(blob, &b).expect("write");
        }
        "hardlink-rewrite" => {
            let link = dir.join("hardlink");
            fs::hard_link(blob, &link).expect("link");
            let mut b = original.clone();
            b[2] ^= 1;
            fs::set_permissions(&link, fs::Permissions::from_mode(0o644)).expect("chmod");
            fs::write(&link, &b).expect("rewrite through the other name");
            fs::set_permissions(&link, fs::Permissions::from_mode(0o444)).expect("chmod");
        }
        "delete" => fs::remove_file(blob).expect("rm"),
        "directory" => {
            fs::remove_file(blob).expect("rm");
            fs::create_dir(blob).expect("mkdir");
        }
        other => panic!("unknown tamper {other}"),
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o555)).expect("chmod dir back");
}

const TAMPERS: [&str; 9] = [
    "flip",
    "truncate",
    "append",
    "symlink",
    "other-blob",
    "chmod-rewrite",
    "hardlink-rewrite",
    "delete",
    "directory",
];

fn tamper_is_caught(isolation: Isolation) {
    for kind in TAMPERS {
        let (_d, c) = cache_with_memory(isolation, 0);
        let o = origin("srv");
        let (e, files) = common::skill(
            "demo",
            &[
                ("a.md", b"the published bytes of a.md"),
                ("b.md", b"another file, validly cached"),
            ],
        );
        common::store_all(&c, &o, &e, &files);
        let m = e.manifest().expect("manifest");
        let ia = m
            .files()
            .iter()
            .position(|f| f.uri().as_str().ends_with("a.md"))
            .expect("a.md");
        let ib = m
            .files()
            .iter()
            .position(|f| f.uri().as_str().ends_with("b.md"))
            .expect("b.md");
        assert_eq!(hit(&c, &o, &e, ia), b"the published bytes of a.md");
        let layout = c.store().layout();
        tamper(
            kind,
            &layout.blob_path(&o, &m.files()[ia].digest()),
            &layout.blob_path(&o, &m.files()[ib].digest()),
        );
        match c.read_file(&o, &m.files()[ia]).expect("read") {
            CachedRead::Hit(v) => panic!(
                "{isolation:?}/{kind}: wrong bytes served: {:?}",
                String::from_utf8_lossy(v.as_slice())
            ),
            CachedRead::Miss => assert_eq!(kind, "delete", "{isolation:?}/{kind}"),
            CachedRead::Failed(m) => {
                assert_ne!(kind, "delete");
                if kind == "directory" || kind == "symlink" {
                    assert_eq!(m, Mismatch::NotARegularFile, "{isolation:?}/{kind}");
                }
                // Quarantined: the next read is a clean miss, and the bad copy is kept aside.
                assert!(matches!(
                    c.read_file(&o, &e.manifest().expect("manifest").files()[ia])
                        .expect("read"),
                    CachedRead::Miss
                ));
                assert_eq!(c.store().quarantined(), 1, "{isolation:?}/{kind}");
            }
        }
        // Healing: the right bytes can be stored again and are served.
        common::store_all(&c, &o, &e, &files);
        assert_eq!(
            hit(&c, &o, &e, ia),
            b"the published bytes of a.md",
            "{isolation:?}/{kind}"
        );
    }
}

#[test]
fn c2_rehash_catches_every_tamper() {
    tamper_is_caught(Isolation::Rehash);
}

#[test]
fn c2_guaranteed_catches_every_tamper_by_evidence_or_fallback_rehash() {
    tamper_is_caught(Isolation::Guaranteed);
}

#[test]
fn c2_guaranteed_skips_hashing_only_while_the_evidence_holds() {
    // The disk path alone: the memory tier would answer the repeated reads without evidence.
    let (_d, c) = cache_with_memory(Isolation::Guaranteed, 0);
    let o = origin("srv");
    let (e, files) = common::skill("demo", &[("a.md", b"alpha")]);
    common::store_all(&c, &o, &e, &files);
    let f = &e.manifest().expect("manifest").files()[0];
    // Evidence taken at publish is confirmed by one hashed read once the blob's change time has
    // settled (R-H4: a write in the same timestamp tick as the publish would not move it).
    match c.read_file(&o, f).expect("read") {
        CachedRead::Hit(v) => assert!(v.rehashed(), "fresh evidence: hashed"),
        other => panic!("{other:?}"),
    }
    std::thread::sleep(std::time::Duration::from_millis(150));
    for expect_hash in [true, false, false] {
        match c.read_file(&o, f).expect("read") {
            CachedRead::Hit(v) => assert_eq!(
                v.rehashed(),
                expect_hash,
                "settled: one confirming hash, then evidence alone"
            ),
            other => panic!("{other:?}"),
        }
    }
    let p = c.store().layout().blob_path(&o, &f.digest());
    // A chmod round trip leaves the bytes alone but changes ctime: evidence is off, re-hash.
    fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).expect("chmod");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o444)).expect("chmod");
    match c.read_file(&o, f).expect("read") {
        CachedRead::Hit(v) => assert!(v.rehashed(), "evidence off: re-hashed"),
        other => panic!("{other:?}"),
    }
    let (_d2, r) = common::cache(Isolation::Rehash);
    common::store_all(&r, &o, &e, &files);
    match r.read_file(&o, f).expect("read") {
        CachedRead::Hit(v) => assert!(v.rehashed()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn c3_publishing_wrong_bytes_is_refused_and_leaves_nothing() {
    let (_d, c) = common::cache(Isolation::Rehash);
    let o = origin("srv");
    let (e, _) = common::skill("demo", &[("a.md", b"alpha")]);
    let f = e
        .manifest()
        .expect("manifest")
        .files()
        .iter()
        .find(|f| f.uri().as_str().ends_with("a.md"))
        .expect("a.md")
        .clone();
    assert!(matches!(
        c.store_file(&o, &f, b"alphA"),
        Err(Error::Store(skillcache::error::StoreError::BlobMismatch {
            mismatch: Mismatch::Digest { .. },
            ..
        }))
    ));
    assert!(matches!(
        c.store_file(&o, &f, b"alpha!"),
        Err(Error::Store(skillcache::error::StoreError::BlobMismatch {
            mismatch: Mismatch::Size { .. },
            ..
        }))
    ));
    assert!(!c.store().layout().blob_path(&o, &f.digest()).exists());
    assert_eq!(
        fs::read_dir(c.store().layout().tmp(&o)).map_or(0, Iterator::count),
        0
    );
    assert!(matches!(
        c.read_file(&o, &f).expect("read"),
        CachedRead::Miss
    ));
}

#[test]
fn c3_publishing_the_same_blob_twice_keeps_the_first_and_succeeds() {
    let (_d, c) = common::cache(Isolation::Guaranteed);
    let o = origin("srv");
    let (e, files) = common::skill("demo", &[]);
    common::store_all(&c, &o, &e, &files);
    let f = &e.manifest().expect("manifest").files()[0];
    let p = c.store().layout().blob_path(&o, &f.digest());
    let ino = fs::metadata(&p).expect("stat").ino();
    common::store_all(&c, &o, &e, &files);
    assert_eq!(
        fs::metadata(&p).expect("stat").ino(),
        ino,
        "never clobbered"
    );
    assert!(matches!(
        c.read_file(&o, f).expect("read"),
        CachedRead::Hit(_)
    ));
}

#[test]
fn c2_large_blobs_are_read_and_hashed_at_once_and_tampering_is_still_caught() {
    // 2 MiB takes the pipelined path (reader thread + hasher).
    let big: Vec<u8> = (0..2 * 1024 * 1024)
        .map(|i: usize| u8::try_from(i % 251).unwrap_or(0))
        .collect();
    for kind in ["none", "flip", "truncate", "append"] {
        let (_d, c) = common::cache(Isolation::Rehash);
        let o = origin("srv");
        let (e, files) = common::skill("demo", &[("big.bin", &big)]);
        common::store_all(&c, &o, &e, &files);
        let i = e
            .manifest()
            .expect("manifest")
            .files()
            .iter()
            .position(|f| f.uri().as_str().ends_with("big.bin"))
            .expect("listed");
        let f = &e.manifest().expect("manifest").files()[i];
        if kind != "none" {
            let p = c.store().layout().blob_path(&o, &f.digest());
            tamper(kind, &p, &p);
        }
        match c.read_file(&o, f).expect("read") {
            CachedRead::Hit(v) => {
                assert_eq!(kind, "none", "{kind}: wrong bytes served");
                assert_eq!(v.as_slice(), big.as_slice());
            }
            CachedRead::Failed(m) => {
                assert_ne!(kind, "none");
                let expect_size = kind != "flip";
                assert_eq!(
                    matches!(m, Mismatch::Size { .. }),
                    expect_size,
                    "{kind}: {m}"
                );
            }
            CachedRead::Miss => panic!("{kind}: the blob is there"),
        }
    }
}

/// A cache with a memory tier of `bytes`; 0 makes every read verify the disk copy, which is
/// what the tamper tests examine (the tier would answer a repeated read from memory).
fn cache_with_memory(isolation: Isolation, bytes: u64) -> (common::Scratch, Cache) {
    let dir = common::scratch();
    let cache = Cache::builder()
        .root(dir.path().join("root"))
        .isolation(isolation)
        .memory_tier(bytes)
        .open()
        .expect("cache opens");
    (dir, cache)
}

#[test]
fn memory_tier_hit_touches_no_disk_and_purge_drops_it() {
    for isolation in [Isolation::Rehash, Isolation::Guaranteed] {
        let (_d, c) = cache_with_memory(isolation, 1 << 20);
        let o = origin("srv");
        let (e, files) = common::skill("demo", &[("a.md", b"bytes verified once")]);
        common::store_all(&c, &o, &e, &files);
        let m = e.manifest().expect("manifest");
        let i = m
            .files()
            .iter()
            .position(|f| f.uri().as_str().ends_with("a.md"))
            .expect("a.md");
        assert_eq!(hit(&c, &o, &e, i), b"bytes verified once");
        assert!(c.memory_resident() >= 19, "{isolation:?}");
        // The disk copy is gone: the hit comes from memory, the same bytes, no re-hash. (Its
        // folder is 0555: open it up first, as its owner can.)
        let blob = c.store().layout().blob_path(&o, &m.files()[i].digest());
        let folder = blob.parent().expect("folder");
        fs::set_permissions(folder, fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::remove_file(&blob).expect("rm");
        match c.read_file(&o, &m.files()[i]).expect("read") {
            CachedRead::Hit(v) => {
                assert_eq!(v.as_slice(), b"bytes verified once", "{isolation:?}");
                assert!(!v.rehashed(), "{isolation:?}");
            }
            other => panic!("{isolation:?}: expected a memory hit, got {other:?}"),
        }
        // R-C5: a purge drops the origin from memory too; the next read is a clean miss.
        c.purge(&o).expect("purge");
        assert_eq!(c.memory_resident(), 0, "{isolation:?}");
        assert!(
            matches!(
                c.read_file(&o, &m.files()[i]).expect("read"),
                CachedRead::Miss
            ),
            "{isolation:?}"
        );
    }
}

#[test]
fn memory_tier_is_dropped_by_gc_and_by_a_quarantine_of_the_same_digest() {
    let (_d, c) = cache_with_memory(Isolation::Rehash, 1 << 20);
    let o = origin("srv");
    let (e, files) = common::skill("demo", &[("a.md", b"kept in memory")]);
    c.put_entry(&o, "", &e, CacheHints::default())
        .expect("entry");
    common::store_all(&c, &o, &e, &files);
    let m = e.manifest().expect("manifest");
    for i in 0..m.files().len() {
        hit(&c, &o, &e, i);
    }
    assert!(c.memory_resident() > 0);
    c.gc(None).expect("gc");
    assert_eq!(c.memory_resident(), 0, "gc drops the tier");

    // Back in memory; then the disk copy is tampered with and the tier is the only thing that
    // could mask it: a verify finds the damage and quarantines it, and memory is dropped too.
    for i in 0..m.files().len() {
        hit(&c, &o, &e, i);
    }
    let i = m
        .files()
        .iter()
        .position(|f| f.uri().as_str().ends_with("a.md"))
        .expect("a.md");
    let blob = c.store().layout().blob_path(&o, &m.files()[i].digest());
    fs::set_permissions(&blob, fs::Permissions::from_mode(0o644)).expect("chmod");
    fs::write(&blob, b"kept in memorY").expect("tamper");
    let report = c.verify(None, |_, _| {}).expect("verify");
    assert_eq!(c.store().quarantined(), 1, "{report:?}");
    assert_eq!(c.memory_resident(), 0, "a quarantine drops the tier");
    assert!(matches!(
        c.read_file(&o, &m.files()[i]).expect("read"),
        CachedRead::Miss
    ));
}

#[test]
fn memory_tier_resident_bytes_stay_within_the_bound_for_a_working_set_four_times_larger() {
    let (_d, c) = cache_with_memory(Isolation::Rehash, 16 * 1024);
    let o = origin("srv");
    let blobs: Vec<(String, Vec<u8>)> = (0..16u8)
        .map(|s| (format!("f{s}.bin"), vec![s; 4096]))
        .collect();
    let named: Vec<(&str, &[u8])> = blobs
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let (e, files) = common::skill("demo", &named);
    common::store_all(&c, &o, &e, &files);
    let m = e.manifest().expect("manifest");
    for _ in 0..3 {
        for (i, f) in m.files().iter().enumerate() {
            let want = &files
                .iter()
                .find(|(u, _)| u == f.uri().as_str())
                .expect("fixture")
                .1;
            assert_eq!(&hit(&c, &o, &e, i), want);
            assert!(c.memory_resident() <= 16 * 1024, "{}", c.memory_resident());
        }
    }
    assert!(c.memory_resident() > 0);
}

#[test]
fn c3_batched_publish_records_every_file_and_each_reads_back_verified() {
    let (_d, c) = cache_with_memory(Isolation::Rehash, 0);
    let o = origin("srv");
    let (e, files) = common::skill(
        "demo",
        &[
            ("a.md", b"alpha"),
            ("t/b.md", b"beta"),
            ("t/same.md", b"alpha"), // the same digest listed twice: published once
        ],
    );
    let m = e.manifest().expect("manifest");
    let batch: Vec<_> = m
        .files()
        .iter()
        .map(|f| {
            let b = &files
                .iter()
                .find(|(u, _)| u == f.uri().as_str())
                .expect("fixture")
                .1;
            (f, b.as_slice())
        })
        .collect();
    c.store_files(&o, &batch).expect("batch stored");
    for (f, want) in &batch {
        assert!(
            c.index().blob(&o, &f.digest()).expect("index").is_some(),
            "{} is recorded",
            f.uri()
        );
        match c.read_file(&o, f).expect("read") {
            CachedRead::Hit(v) => assert_eq!(v.as_slice(), *want),
            other => panic!("{}: {other:?}", f.uri()),
        }
    }
    assert_eq!(
        fs::read_dir(c.store().layout().tmp(&o)).map_or(0, Iterator::count),
        0,
        "no temporary is left"
    );
}

#[test]
fn c3_a_batch_with_wrong_bytes_is_refused_and_publishes_nothing() {
    let (_d, c) = cache_with_memory(Isolation::Rehash, 0);
    let o = origin("srv");
    let (e, files) = common::skill("demo", &[("a.md", b"alpha"), ("b.md", b"beta")]);
    let m = e.manifest().expect("manifest");
    let batch: Vec<_> = m
        .files()
        .iter()
        .map(|f| {
            let b: &[u8] = if f.uri().as_str().ends_with("b.md") {
                b"betA"
            } else {
                &files
                    .iter()
                    .find(|(u, _)| u == f.uri().as_str())
                    .expect("fixture")
                    .1
            };
            (f, b)
        })
        .collect();
    assert!(matches!(
        c.store_files(&o, &batch),
        Err(Error::Store(skillcache::error::StoreError::BlobMismatch {
            mismatch: Mismatch::Digest { .. },
            ..
        }))
    ));
    for (f, _) in &batch {
        assert!(
            !c.store().layout().blob_path(&o, &f.digest()).exists(),
            "{} was not published",
            f.uri()
        );
        assert!(matches!(
            c.read_file(&o, f).expect("read"),
            CachedRead::Miss
        ));
    }
    assert_eq!(
        fs::read_dir(c.store().layout().tmp(&o)).map_or(0, Iterator::count),
        0
    );
}

/// R-T1: a small stored hit may be served on the caller's thread, but only when nothing needs
/// the index: a tampered or missing copy, a file over the bound, or `Guaranteed` evidence only
/// the index holds gives way to the full read (which quarantines and counts as before), and a
/// quick hit is verified the same way.
#[test]
fn t1_a_quick_hit_is_verified_and_gives_way_on_anything_that_needs_the_index() {
    for isolation in [Isolation::Rehash, Isolation::Guaranteed] {
        let (_d, c) = cache_with_memory(isolation, 0);
        let o = origin("srv");
        let big =
            vec![7u8; usize::try_from(skillcache::core::QUICK_HIT_MAX_BYTES).expect("usize") + 1];
        let (e, files) = common::skill("demo", &[("a.md", b"small"), ("big.bin", &big)]);
        c.put_entry(&o, "", &e, CacheHints::new(60_000, Scope::Public))
            .expect("put");
        common::store_all(&c, &o, &e, &files);
        let listed = e.manifest().expect("manifest").files();
        let small = listed
            .iter()
            .find(|f| f.uri().as_str().ends_with("a.md"))
            .expect("a.md");
        let large = listed
            .iter()
            .find(|f| f.uri().as_str().ends_with("big.bin"))
            .expect("big.bin");
        if isolation == Isolation::Guaranteed {
            // A fresh process knows no evidence: only the index has it, so the full read goes first.
            let fresh = Cache::builder()
                .root(c.store().layout().root().to_owned())
                .isolation(isolation)
                .memory_tier(0)
                .open()
                .expect("a second opener");
            assert!(
                fresh.quick_hit(&o, small).is_none(),
                "{isolation:?}: evidence is in the index only"
            );
        }
        match c.read_file(&o, small).expect("read") {
            CachedRead::Hit(v) => assert_eq!(v.as_slice(), b"small"),
            other => panic!("{isolation:?}: expected a hit, got {other:?}"),
        }
        let (bytes, _) = c.quick_hit(&o, small).expect("a small verified hit");
        assert_eq!(bytes.as_slice(), b"small");
        assert!(
            c.quick_hit(&o, large).is_none(),
            "{isolation:?}: over the bound"
        );
        // Tampered in place (same length, other bytes): never a quick hit, and the full read
        // then finds and quarantines it.
        let path = c.store().layout().blob_path(&o, &small.digest());
        let dir = path.parent().expect("parent").to_owned();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod dir");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        fs::remove_file(&path).expect("unlink");
        fs::write(&path, b"SMALL").expect("tamper");
        assert!(
            c.quick_hit(&o, small).is_none(),
            "{isolation:?}: a tampered copy is never a quick hit"
        );
        match c.read_file(&o, small).expect("read") {
            CachedRead::Failed(_) => {}
            other => panic!("{isolation:?}: the full read quarantines it, got {other:?}"),
        }
        assert!(
            c.quick_hit(&o, small).is_none(),
            "{isolation:?}: missing now"
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).expect("chmod dir back");
    }
}

/// Makes `dir` writable for `op` (the store keeps its folders 0555), then read-only again.
fn in_writable(dir: &std::path::Path, op: impl FnOnce()) {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).expect("chmod");
    op();
    fs::set_permissions(dir, fs::Permissions::from_mode(0o555)).expect("chmod back");
}

fn held_folder_never_answers_for_the_root(isolation: Isolation) {
    let (_d, c) = cache_with_memory(isolation, 0);
    let o = origin("srv");
    let (e, files) = common::skill("demo", &[("a.md", b"the published bytes of a.md")]);
    common::store_all(&c, &o, &e, &files);
    let ia = e
        .manifest()
        .expect("manifest")
        .files()
        .iter()
        .position(|f| f.uri().as_str().ends_with("a.md"))
        .expect("a.md");
    let file = e.manifest().expect("manifest").files()[ia].clone();
    // The first hit holds the origin's blob folder open for the next reads.
    assert_eq!(hit(&c, &o, &e, ia), b"the published bytes of a.md");
    let blob = c.store().layout().blob_path(&o, &file.digest());
    let sha256 = blob
        .parent()
        .and_then(std::path::Path::parent)
        .expect("sha256 folder");
    let origin_dir = sha256.parent().expect("origin folder");
    // A root writer moves the held folder aside and damages the copy in it; the store publishes
    // the blob again under the root. The read must be the root's: the good copy, and nothing
    // under the root quarantined for the moved folder's damage.
    in_writable(origin_dir, || {
        fs::rename(sha256, origin_dir.join("moved")).expect("move");
    });
    let moved = origin_dir
        .join("moved")
        .join(blob.strip_prefix(sha256).expect("below"));
    let fan_out = moved.parent().expect("fan-out folder").to_owned();
    in_writable(&fan_out, || {
        fs::set_permissions(&moved, fs::Permissions::from_mode(0o644)).expect("chmod");
        fs::write(&moved, b"THE published bytes of a.md").expect("damage the moved copy");
        fs::set_permissions(&moved, fs::Permissions::from_mode(0o444)).expect("chmod back");
    });
    assert!(
        matches!(c.read_file(&o, &file).expect("read"), CachedRead::Miss),
        "{isolation:?}: nothing under the root yet"
    );
    common::store_all(&c, &o, &e, &files);
    assert_eq!(
        hit(&c, &o, &e, ia),
        b"the published bytes of a.md",
        "{isolation:?}"
    );
    assert_eq!(c.store().quarantined(), 0, "{isolation:?}");
    // The whole blob tree removed (as purge does) while held: a clean miss, then a hit again.
    // Every fan-out folder is 0555 (SKILL.md's too, not only a.md's): a normal user, unlike
    // root, needs each one writable to empty it.
    in_writable(origin_dir, || {
        fs::set_permissions(sha256, fs::Permissions::from_mode(0o755)).expect("chmod");
        for fan in fs::read_dir(sha256).expect("list the blob folder") {
            let fan = fan.expect("fan-out entry").path();
            fs::set_permissions(&fan, fs::Permissions::from_mode(0o755)).expect("chmod fan-out");
        }
        fs::remove_dir_all(sha256).expect("remove");
    });
    assert!(
        matches!(c.read_file(&o, &file).expect("read"), CachedRead::Miss),
        "{isolation:?}"
    );
    common::store_all(&c, &o, &e, &files);
    assert_eq!(
        hit(&c, &o, &e, ia),
        b"the published bytes of a.md",
        "{isolation:?}"
    );
}

#[test]
fn h1_a_held_blob_folder_moved_damaged_or_removed_never_answers_for_the_root() {
    held_folder_never_answers_for_the_root(Isolation::Rehash);
    held_folder_never_answers_for_the_root(Isolation::Guaranteed);
}
