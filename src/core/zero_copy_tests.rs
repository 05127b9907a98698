//! Zero-copy large hits (issue 12): a `Guaranteed` hit whose confirmed evidence holds is a
//! read-only map above `MAP_ABOVE`, a copy below it, never a map under `Rehash`, never a map of
//! a file that changed, and never kept by the memory tier.

use super::{Cache, CachedRead};
use crate::digest::Digest;
use crate::entry::{ManifestFile, SkillEntry, Validation};
use crate::origin::Origin;
use crate::store::{Isolation, MAP_ABOVE};

struct Fixture {
    _dir: crate::scratch::Scratch,
    cache: Cache,
    origin: Origin,
    file: ManifestFile,
    bytes: Vec<u8>,
}

fn fixture(isolation: Isolation, len: u64) -> Fixture {
    let dir = crate::scratch::scratch();
    let cache = Cache::builder()
        .root(dir.path().join("root"))
        .isolation(isolation)
        .open()
        .expect("open");
    let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let md = b"---\nname: big\ndescription: The big skill.\n---\n".to_vec();
    let wire = serde_json::json!({
        "uri": "skill://big/SKILL.md",
        "frontmatter": {"name": "big", "description": "The big skill."},
        "resources": [
            {"uri": "skill://big/SKILL.md", "digest": Digest::of(&md).to_string(), "size": md.len()},
            {"uri": "skill://big/data.bin", "digest": Digest::of(&bytes).to_string(), "size": bytes.len()},
        ],
    });
    let entry = SkillEntry::from_json(&wire, &Validation::default()).expect("valid fixture");
    let file = entry.manifest().expect("manifest").files()[1].clone();
    let origin = Origin::new("docs").expect("label");
    cache.store_file(&origin, &file, &bytes).expect("store");
    // What a hashed read made once the change time settled would record (R-H4): confirmed.
    let mut known = cache
        .known(&origin, &file.digest())
        .expect("remembered at publish");
    if let Some(ev) = known.evidence.as_mut() {
        ev.confirmed = true;
    }
    cache.remember(&origin, file.digest(), known);
    Fixture {
        _dir: dir,
        cache,
        origin,
        file,
        bytes,
    }
}

fn hit(f: &Fixture) -> crate::verify::VerifiedBytes {
    match f.cache.read_file(&f.origin, &f.file).expect("read") {
        CachedRead::Hit(v) => v,
        other => panic!("expected a hit, got {other:?}"),
    }
}

#[test]
fn c2_a_guaranteed_hit_above_the_crossover_is_a_map_of_the_right_bytes_kept_out_of_memory() {
    let f = fixture(Isolation::Guaranteed, MAP_ABOVE + 4096);
    let v = hit(&f);
    assert!(v.is_mapped(), "zero-copy above the crossover");
    assert!(!v.rehashed(), "taken on confirmed evidence");
    assert_eq!(v.as_slice(), f.bytes.as_slice());
    assert_eq!(
        f.cache.memory.resident(),
        0,
        "a map is only as isolated as its file: the tier keeps copies only"
    );
    assert!(hit(&f).is_mapped(), "and again on the next hit");
}

#[test]
fn c2_rehash_never_maps_a_large_blob() {
    let f = fixture(Isolation::Rehash, MAP_ABOVE + 4096);
    f.cache.memory.clear();
    let v = hit(&f);
    assert!(!v.is_mapped());
    assert!(v.rehashed(), "Rehash hashes every disk hit");
    assert_eq!(v.as_slice(), f.bytes.as_slice());
}

#[test]
fn c2_below_the_crossover_a_guaranteed_hit_is_a_private_copy() {
    let f = fixture(Isolation::Guaranteed, MAP_ABOVE - 1);
    let v = hit(&f);
    assert!(!v.is_mapped());
    assert!(!v.rehashed());
    assert_eq!(v.as_slice(), f.bytes.as_slice());
}

#[test]
fn h4_a_large_blob_changed_after_publish_is_hashed_and_fails_never_mapped() {
    let f = fixture(Isolation::Guaranteed, MAP_ABOVE + 4096);
    let path = f
        .cache
        .store()
        .layout()
        .blob_path(&f.origin, &f.file.digest());
    crate::platform::set_mode(&path, 0o644).expect("chmod");
    let mut b = std::fs::read(&path).expect("read");
    let at = usize::try_from(MAP_ABOVE).expect("fits");
    b[at] ^= 1;
    std::fs::write(&path, b).expect("tamper");
    crate::platform::set_mode(&path, 0o444).expect("chmod");
    match f.cache.read_file(&f.origin, &f.file).expect("read") {
        CachedRead::Failed(crate::error::Mismatch::Digest { .. }) => {}
        other => panic!("a changed blob must be hashed and fail, got {other:?}"),
    }
}

#[test]
fn a_mapped_hit_keeps_its_bytes_after_the_blob_is_purged() {
    let f = fixture(Isolation::Guaranteed, MAP_ABOVE + 4096);
    let v = hit(&f);
    assert!(v.is_mapped());
    // Purge unlinks the blob; the inode (and the map) lives until the last handle goes.
    f.cache.purge(&f.origin).expect("purge");
    assert!(matches!(
        f.cache.read_file(&f.origin, &f.file).expect("read"),
        CachedRead::Miss
    ));
    assert_eq!(Digest::of(v.as_slice()), f.file.digest());
}
