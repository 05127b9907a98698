//! `LoadedSkill::read_all` on a cold cache: the misses fetched a few at a time, verified, and
//! published as one batch (issue 12) — with the guarantees of the per-file path (R-C3, R-V2,
//! R-V9) and the in-flight gate (one fetch per file however many windows ask).
#![allow(clippy::result_large_err)]

mod common;

use std::sync::Arc;

use common::double::Double;
use skillcache::{ApprovalPolicy, Error, Origin, SkillCache, SkillEntry, SkillFile};

fn open(root: &std::path::Path, source: Arc<Double>) -> (SkillCache, Origin) {
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(root)
        .open()
        .expect("open");
    let origin = Origin::new("docs-server").expect("label");
    cache.connect(origin.clone(), source);
    (cache, origin)
}

/// A double that serves `entry` with `files`, counting every read.
fn serving(entry: &SkillEntry, files: &common::Files) -> Arc<Double> {
    let double = Arc::new(Double::new());
    double.publish(entry, files);
    double
}

/// Loads `entry` (its `SKILL.md`) and reads every file of it in one batch.
async fn read_all(
    cache: &SkillCache,
    origin: &Origin,
    entry: &SkillEntry,
) -> Result<Vec<SkillFile>, Error> {
    cache
        .load(origin, entry)
        .await
        .expect("load")
        .read_all()
        .await
}

/// A skill of `n` distinct files besides its `SKILL.md`.
fn many(n: usize) -> (SkillEntry, common::Files) {
    common::many("many", n)
}

#[tokio::test(flavor = "multi_thread")]
async fn c3_read_all_stores_a_cold_skill_and_a_new_cache_serves_it_without_the_server() {
    let dir = common::scratch();
    let root = dir.path().join("root");
    let (entry, files) = many(20);
    let honest = serving(&entry, &files);
    let (cache, origin) = open(&root, honest.clone());
    let cold = read_all(&cache, &origin, &entry).await.expect("read all");
    assert_eq!(cold.len(), 21);
    for (f, (uri, bytes)) in cold.iter().zip(&files) {
        assert_eq!(f.uri().as_str(), uri, "manifest order");
        assert_eq!(f.bytes(), bytes.as_slice());
        assert!(
            f.verification() != skillcache::Verification::Unverified && f.stored(),
            "{uri} verified and kept"
        );
    }
    assert_eq!(
        cold.iter()
            .filter(|f| f.provenance().as_str() == "server")
            .count(),
        20,
        "every file but the SKILL.md `load` read came from the server in the batch"
    );
    assert_eq!(honest.reads(), 21, "one fetch per file");
    drop(cache);

    // A new cache over the same root, and a server that knows nothing: every byte is on disk.
    let empty = Arc::new(Double::new());
    let (again, origin) = open(&root, empty.clone());
    let warm = read_all(&again, &origin, &entry)
        .await
        .expect("read all from the cache");
    assert!(warm.iter().all(|f| f.provenance().as_str() == "cache"));
    assert_eq!(empty.reads(), 0, "no request for a stored skill");
}

/// Loads `entry` from a server that serves `files[k]` with one bit flipped and every other file
/// as listed: the batch read fails on that file.
async fn fails_on_a_lie(
    root: &std::path::Path,
    entry: &SkillEntry,
    files: &common::Files,
    k: usize,
) {
    let liar = serving(entry, files);
    let (lied_uri, honest_bytes) = &files[k];
    let mut wrong = honest_bytes.clone();
    wrong[0] ^= 0x20;
    liar.serve_bytes(lied_uri, &wrong);
    let (cache, origin) = open(root, liar);
    let skill = cache.load(&origin, entry).await.expect("load");
    match skill.read_all().await {
        Err(Error::Verify(skillcache::error::VerifyError { uri, .. })) => {
            assert_eq!(uri.as_str(), lied_uri.as_str());
        }
        other => panic!("expected a verification failure for {lied_uri}, got {other:?}"),
    }
    // What this host kept is in the store before the next one looks (its files reach the
    // store behind its loads, and tasks the failure dropped may keep its cache alive a while).
    cache.flush().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn v2_a_lying_file_fails_the_batch_and_none_of_it_is_stored() {
    let dir = common::scratch();
    let root = dir.path().join("root");
    let (entry, files) = many(6);
    fails_on_a_lie(&root, &entry, &files, 4).await;

    // Nothing of the failed batch (under the early-publish size) was kept: an honest server is
    // asked for every file again.
    let honest = serving(&entry, &files);
    let (again, origin) = open(&root, honest.clone());
    let all = read_all(&again, &origin, &entry).await.expect("read all");
    assert_eq!(all.len(), 7);
    assert_eq!(
        honest.reads(),
        6,
        "the six supporting files are fetched again; SKILL.md was stored by the first load"
    );
}

/// A big batch is stored while it is still being fetched (R-T3): a lie late in it fails the
/// call, files verified before it may already be kept — each a verified copy of a listed file —
/// and the lying bytes never are; the next load fetches only what was not kept.
#[tokio::test(flavor = "multi_thread")]
async fn t3_a_late_lie_in_a_big_batch_fails_it_and_only_verified_copies_were_kept() {
    let dir = common::scratch();
    let root = dir.path().join("root");
    let (entry, files) = many(40);
    let lied_uri = &files[36].0;
    fails_on_a_lie(&root, &entry, &files, 36).await;

    let honest = serving(&entry, &files);
    let (again, origin) = open(&root, honest.clone());
    let all = read_all(&again, &origin, &entry).await.expect("read all");
    assert_eq!(all.len(), 41);
    for (f, (uri, bytes)) in all.iter().zip(&files) {
        assert_eq!(f.bytes(), bytes.as_slice(), "{uri}");
    }
    let lied = all
        .iter()
        .find(|f| f.uri().as_str() == lied_uri)
        .expect("listed");
    assert_eq!(
        lied.provenance().as_str(),
        "server",
        "the lie was never kept"
    );
    let fetched = all
        .iter()
        .filter(|f| f.provenance().as_str() == "server")
        .count();
    assert_eq!(
        honest.reads(),
        fetched,
        "only what was not kept is asked for"
    );
    assert!((1..=40).contains(&fetched), "{fetched}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_windows_reading_all_at_once_fetch_each_file_once() {
    let dir = common::scratch();
    let (entry, files) = many(12);
    let double = serving(&entry, &files);
    let (cache, origin) = open(&dir.path().join("root"), double.clone());
    let a = cache.load(&origin, &entry).await.expect("load a");
    let b = cache.load(&origin, &entry).await.expect("load b");
    let (ra, rb) = tokio::join!(a.read_all(), b.read_all());
    let (ra, rb) = (ra.expect("a"), rb.expect("b"));
    for (x, y) in ra.iter().zip(&rb) {
        assert_eq!(x.bytes(), y.bytes());
    }
    assert_eq!(
        double.reads(),
        13,
        "the in-flight gates let one window fetch and the other read what it stored"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn files_with_the_same_bytes_are_fetched_by_uri_and_stored_once() {
    let dir = common::scratch();
    let same = b"the same bytes under two names\n";
    let (entry, files) = common::skill("twins", &[("a.md", same), ("b/a.md", same)]);
    let double = serving(&entry, &files);
    let root = dir.path().join("root");
    let (cache, origin) = open(&root, double.clone());
    let all = read_all(&cache, &origin, &entry)
        .await
        .expect("one gate per digest: no wait on itself");
    assert_eq!(all.len(), 3);
    assert!(all.iter().all(skillcache::SkillFile::stored));
    assert_eq!(all[1].bytes(), same);
    assert_eq!(all[2].bytes(), same);
    assert_eq!(all[1].verification(), all[2].verification());
}

#[tokio::test(flavor = "multi_thread")]
async fn c3_load_all_fetches_and_keeps_a_cold_skill_with_its_skill_md_in_one_step() {
    let dir = common::scratch();
    let (entry, files) = many(5);
    let double = serving(&entry, &files);
    let (cache, origin) = open(&dir.path().join("root"), double.clone());
    let (skill, all) = cache.load_all(&origin, &entry).await.expect("load all");
    assert_eq!(all.len(), 6);
    assert!(all.iter().all(|f| f.provenance().as_str() == "server"
        && f.stored()
        && f.verification() != skillcache::Verification::Unverified));
    assert_eq!(skill.skill_md().bytes(), files[0].1.as_slice());
    assert_eq!(double.reads(), 6, "the SKILL.md and five files, each once");
    let (_, again) = cache.load_all(&origin, &entry).await.expect("warm");
    assert!(again.iter().all(|f| f.provenance().as_str() == "cache"));
    assert_eq!(double.reads(), 6, "a warm load_all sends nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn h10_load_all_with_a_skill_md_whose_frontmatter_differs_keeps_nothing() {
    let dir = common::scratch();
    let root = dir.path().join("root");
    let (honest, files) = many(3);
    // The server's entry lists the exact bytes it serves, but declares another description
    // than the SKILL.md carries: size and digest pass, the frontmatter does not (R-V6).
    let mut wire = honest.to_json();
    wire["frontmatter"]["description"] = serde_json::json!("Something else entirely.");
    let entry = SkillEntry::from_json(&wire, &skillcache::entry::Validation::default())
        .expect("a well-formed entry");
    let double = serving(&entry, &files);
    let (cache, origin) = open(&root, double.clone());
    match cache.load_all(&origin, &entry).await {
        Err(Error::Verify(skillcache::error::VerifyError { mismatch, .. })) => assert!(
            matches!(mismatch, skillcache::error::Mismatch::Frontmatter { .. }),
            "{mismatch:?}"
        ),
        other => panic!("expected a frontmatter mismatch, got {other:?}"),
    }
    drop(cache);
    // Nothing of that batch was kept (R-H10): the honest skill is fetched whole again.
    let fixed = serving(&honest, &files);
    let (again, origin) = open(&root, fixed.clone());
    again.load_all(&origin, &honest).await.expect("honest load");
    assert_eq!(
        fixed.reads(),
        4,
        "SKILL.md and three files, none of them kept before"
    );
}
