//! The loading path against a hostile double that counts requests: R-V1…R-V9, R-O1, R-O4, R-O6,
//! R-W7, R-W9, R-C6, R-C7, R-A2, R-A3, R-A5, R-H11 (principals).
#![allow(clippy::result_large_err)]

mod common;

use std::sync::Arc;

use common::double::{Double, ReadLie};
use serde_json::json;
use skillcache::entry::Limits;
use skillcache::error::{Declined, Mismatch};
use skillcache::store::Isolation;
use skillcache::{ApprovalPolicy, DynamicPolicy, Provenance, SkillCache};
use skillcache::{Digest, Error, Origin, SkillEntry, SkillUri};

struct Fixture {
    _dir: common::Scratch,
    cache: SkillCache,
    double: Arc<Double>,
    origin: Origin,
    entry: SkillEntry,
    files: common::Files,
}

fn fixture_with(isolation: Isolation, dynamic: DynamicPolicy) -> Fixture {
    fixture_memory(
        isolation,
        dynamic,
        skillcache::core::DEFAULT_MEMORY_TIER_BYTES,
    )
}

/// `memory`: the memory tier's bound; 0 makes every hit read (and verify) the disk copy.
fn fixture_memory(isolation: Isolation, dynamic: DynamicPolicy, memory: u64) -> Fixture {
    let dir = common::scratch();
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(dir.path().join("root"))
        .isolation(isolation)
        .dynamic(dynamic)
        .memory_tier(memory)
        .open()
        .expect("open");
    let double = Arc::new(Double::new());
    let (entry, files) = common::skill(
        "pdf",
        &[
            ("references/FORMS.md", b"the forms reference"),
            ("scripts/x.py", b"print('x')"),
        ],
    );
    double.publish(&entry, &files);
    let origin = Origin::new("docs-server").expect("label");
    cache.connect(origin.clone(), double.clone());
    Fixture {
        _dir: dir,
        cache,
        double,
        origin,
        entry,
        files,
    }
}

fn fixture() -> Fixture {
    fixture_with(Isolation::Rehash, DynamicPolicy::Decline)
}

fn uri(f: &Fixture) -> SkillUri {
    f.entry.uri().clone()
}

fn blob_path(f: &Fixture) -> std::path::PathBuf {
    let md = f.entry.file(f.entry.uri().file()).expect("listed");
    f.cache
        .core()
        .store()
        .layout()
        .blob_path(&f.origin, &md.digest())
}

fn tamper_blob(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().expect("parent");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let mut b = std::fs::read(path).expect("read");
    let i = b.len() - 2;
    b[i] ^= 0x20;
    std::fs::write(path, b).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
}

fn same_length_lie(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let i = b.len() - 2;
    b[i] ^= 0x20;
    b
}

#[tokio::test]
async fn v1_list_and_approve_fetch_nothing_and_load_fetches_only_skill_md() {
    let f = fixture();
    let listed = f.cache.list(&f.origin).await.expect("list");
    assert_eq!(listed.len(), 1);
    f.cache
        .approve(&f.origin, &f.entry, None)
        .await
        .expect("approve");
    assert_eq!(
        f.double.reads(),
        0,
        "no resources/read after list and approve"
    );
    let skill = f.cache.load(&f.origin, &f.entry).await.expect("load");
    assert_eq!(f.double.reads(), 1, "load reads exactly the SKILL.md");
    assert_eq!(
        f.double.read_log.lock().expect("lock")[0],
        f.entry.uri().as_str()
    );
    let r = skill.read("references/FORMS.md").await.expect("read");
    assert_eq!(
        (r.bytes(), f.double.reads()),
        (&b"the forms reference"[..], 2),
        "a supporting file is fetched when read"
    );
}

#[tokio::test]
async fn v2_o4_every_file_says_its_origin_digest_and_provenance() {
    let f = fixture();
    let skill = f.cache.load(&f.origin, &f.entry).await.expect("load");
    let md = skill.skill_md();
    assert_eq!(
        (
            md.origin(),
            matches!(md.verification(), skillcache::Verification::Verified(_)),
            md.provenance()
        ),
        (&f.origin, true, Provenance::Server)
    );
    assert_eq!(
        md.verification(),
        skillcache::Verification::Verified(Digest::of(md.bytes()))
    );
    let again = f.cache.load(&f.origin, &f.entry).await.expect("load");
    assert_eq!(again.skill_md().provenance(), Provenance::Cache);
    assert_eq!(f.double.reads(), 1, "the second load is a cache hit");
}

#[tokio::test]
async fn v9_tampered_cached_skill_md_is_healed_with_exactly_one_extra_read() {
    let f = fixture();
    f.cache.load(&f.origin, &f.entry).await.expect("load");
    // The load's files reach the disk behind it: wait for them before tampering with one.
    f.cache.flush().await;
    tamper_blob(&blob_path(&f));
    let skill = f
        .cache
        .load(&f.origin, &f.entry)
        .await
        .expect("healed load");
    assert!(skill.skill_md().retried());
    assert_eq!(skill.skill_md().provenance(), Provenance::Server);
    assert_eq!(f.double.reads(), 2, "exactly one extra resources/read");
    let again = f.cache.load(&f.origin, &f.entry).await.expect("load");
    assert_eq!(
        (again.skill_md().provenance(), f.double.reads()),
        (Provenance::Cache, 2),
        "the cached copy was replaced"
    );
    assert_eq!(f.cache.core().store().quarantined(), 1);
}

#[tokio::test]
async fn v9_server_serving_tampered_bytes_fails_after_exactly_one_read() {
    let f = fixture();
    let (uri_md, md) = &f.files[0];
    f.double.serve_bytes(uri_md, &same_length_lie(md));
    match f.cache.load(&f.origin, &f.entry).await {
        Err(Error::Verify(skillcache::error::VerifyError {
            mismatch: Mismatch::Digest { .. },
            origin,
            ..
        })) => assert_eq!(origin.as_str(), "docs-server"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.double.reads(),
        1,
        "bytes from the server that fail are not retried"
    );
    assert!(
        !blob_path(&f).exists(),
        "failed content is never cached (R-V8)"
    );
}

#[tokio::test]
async fn v9_tampered_cache_and_tampered_server_fail_after_exactly_two_reads() {
    let f = fixture();
    f.cache.load(&f.origin, &f.entry).await.expect("load");
    f.cache.flush().await;
    tamper_blob(&blob_path(&f));
    let (uri_md, md) = &f.files[0];
    f.double.serve_bytes(uri_md, &same_length_lie(md));
    assert!(matches!(
        f.cache.load(&f.origin, &f.entry).await,
        Err(Error::Verify(skillcache::error::VerifyError { .. }))
    ));
    assert_eq!(
        f.double.reads(),
        2,
        "one original fetch plus exactly one retry"
    );
}

#[tokio::test]
async fn v3_wrong_size_is_a_size_failure() {
    let f = fixture();
    let (uri_md, md) = &f.files[0];
    f.double
        .serve_bytes(uri_md, &[md.as_slice(), b"extra"].concat());
    assert!(matches!(
        f.cache.load(&f.origin, &f.entry).await,
        Err(Error::Verify(skillcache::error::VerifyError {
            mismatch: Mismatch::Size { .. },
            ..
        }))
    ));
}

#[tokio::test]
async fn v4_unlisted_file_is_refused_without_a_request_and_a_refresh_reaches_it() {
    let f = fixture();
    f.cache
        .approve(&f.origin, &f.entry, None)
        .await
        .expect("approve");
    let skill = f.cache.load(&f.origin, &f.entry).await.expect("load");
    // The server adds a file; a directory read would show it, the held entry does not.
    let (newer, newer_files) = common::skill(
        "pdf",
        &[
            ("references/FORMS.md", b"the forms reference"),
            ("scripts/x.py", b"print('x')"),
            ("templates/credit-note.md", b"new"),
        ],
    );
    f.double.publish(&newer, &newer_files);
    let before = f.double.requests();
    match skill.read("templates/credit-note.md").await {
        Err(Error::Verify(skillcache::error::VerifyError {
            mismatch: Mismatch::Unlisted,
            ..
        })) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.double.requests(),
        before,
        "no request is sent for an unlisted file"
    );
    let refreshed = f.cache.refresh(&f.origin, &uri(&f)).await.expect("refresh");
    assert!(refreshed.revoked);
    assert!(
        refreshed
            .diff
            .expect("diff")
            .to_string()
            .contains("added skill://pdf/templates/credit-note.md")
    );
    let skill = f
        .cache
        .load(&f.origin, &refreshed.entry)
        .await
        .expect("load");
    assert_eq!(
        skill
            .read("templates/credit-note.md")
            .await
            .expect("now listed")
            .bytes(),
        b"new"
    );
}

#[tokio::test]
async fn w9_bad_contents_are_failures_never_empty_files() {
    for lie in [
        ReadLie::WrongUri,
        ReadLie::TwoContents,
        ReadLie::NoContents,
        ReadLie::BadBase64,
        ReadLie::Neither,
    ] {
        let f = fixture();
        f.double.set_read_lie(lie);
        match f.cache.load(&f.origin, &f.entry).await {
            Err(Error::Entry(skillcache::error::EntryError::Response {
                method: "resources/read",
                ..
            })) => {}
            other => panic!("{lie:?}: {other:?}"),
        }
        assert_eq!(f.double.reads(), 1, "{lie:?}: not retried");
    }
}

#[tokio::test]
async fn w9_a_blob_is_hashed_as_its_decoded_bytes() {
    let f = fixture();
    f.double.set_read_lie(ReadLie::AsBlob);
    let skill = f
        .cache
        .load(&f.origin, &f.entry)
        .await
        .expect("blob contents verify");
    assert_eq!(skill.skill_md().bytes(), f.files[0].1.as_slice());
}

#[tokio::test]
async fn w9_get_answered_for_another_skill_is_an_error() {
    let f = fixture();
    let (other, _) = common::skill("other", &[]);
    f.double.answer_get_with(other.to_json());
    assert!(matches!(
        f.cache.entry(&f.origin, &uri(&f)).await,
        Err(Error::Entry(skillcache::error::EntryError::Response {
            method: "skills/get",
            ..
        }))
    ));
}

#[tokio::test]
async fn v6_frontmatter_drift_with_honest_digest_and_size_is_refused() {
    let f = fixture();
    let mut lying = f.entry.to_json();
    lying["frontmatter"]["description"] = json!("A harmless skill.");
    f.double.publish_json(f.entry.uri().as_str(), lying);
    let info = f
        .cache
        .entry(&f.origin, &uri(&f))
        .await
        .expect("entry itself is valid");
    match f.cache.load(&f.origin, &info.entry).await {
        Err(Error::Verify(skillcache::error::VerifyError {
            mismatch: Mismatch::Frontmatter { diffs },
            ..
        })) => assert_eq!(diffs[0].key, "description"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn o6_references_to_other_origins_schemes_and_authorities_send_no_request() {
    let f = fixture();
    let other = Arc::new(Double::new());
    let (e2, files2) = common::skill("secrets", &[("key.txt", b"hunter2")]);
    other.publish(&e2, &files2);
    f.cache
        .connect(Origin::new("other-server").expect("label"), other.clone());
    let skill = f.cache.load(&f.origin, &f.entry).await.expect("load");
    let before = f.double.requests();
    for r in [
        "skill://secrets/key.txt",
        "skill://secrets/SKILL.md",
        "https://pdf/references/FORMS.md",
        "//secrets/key.txt",
        "file:///etc/passwd",
        "../secrets/key.txt",
    ] {
        assert!(skill.read(r).await.is_err(), "{r}");
    }
    assert_eq!(
        (f.double.requests(), other.requests()),
        (before, 0),
        "no request to any server"
    );
}

#[tokio::test]
async fn o1_same_uri_from_two_origins_are_two_skills() {
    let f = fixture();
    let twin = Arc::new(Double::new());
    let (e2, files2) = common::skill(
        "pdf",
        &[("references/FORMS.md", b"a different server's forms")],
    );
    twin.publish(&e2, &files2);
    let o2 = Origin::new("twin").expect("label");
    f.cache.connect(o2.clone(), twin.clone());
    let a = f
        .cache
        .load(
            &f.origin,
            &f.cache.entry(&f.origin, &uri(&f)).await.expect("a").entry,
        )
        .await
        .expect("load a");
    let b = f
        .cache
        .load(&o2, &f.cache.entry(&o2, &uri(&f)).await.expect("b").entry)
        .await
        .expect("load b");
    assert_eq!(
        a.read("references/FORMS.md").await.expect("a").bytes(),
        b"the forms reference"
    );
    assert_eq!(
        b.read("references/FORMS.md").await.expect("b").bytes(),
        b"a different server's forms"
    );
    assert_eq!(
        (f.double.reads(), twin.reads()),
        (2, 2),
        "each origin read only through its own source"
    );
}

#[tokio::test]
async fn v7_dynamic_skills_are_declined_by_default_and_unverified_when_allowed() {
    let dynamic = json!({"uri": "skill://live/SKILL.md", "frontmatter": {"name": "live", "description": "Live."}, "resources": "dynamic"});
    let md = common::skill_md("name: live\ndescription: Live.");
    let f = fixture();
    f.double
        .publish_json("skill://live/SKILL.md", dynamic.clone());
    f.double.serve_bytes("skill://live/SKILL.md", &md);
    let live = SkillUri::parse("skill://live/SKILL.md").expect("uri");
    let e = f.cache.entry(&f.origin, &live).await.expect("entry").entry;
    assert!(matches!(
        f.cache.load(&f.origin, &e).await,
        Err(Error::Declined {
            reason: Declined::Dynamic,
            ..
        })
    ));
    assert_eq!(f.double.reads(), 0);
    assert!(f.cache.approve(&f.origin, &e, None).await.is_err(), "A3");

    let g = fixture_with(Isolation::Rehash, DynamicPolicy::AllowUnverified);
    g.double.publish_json("skill://live/SKILL.md", dynamic);
    g.double.serve_bytes("skill://live/SKILL.md", &md);
    g.double
        .serve_bytes("skill://live/big.bin", &vec![b'x'; 16 * 1024 * 1024]);
    let e = g.cache.entry(&g.origin, &live).await.expect("entry").entry;
    let skill = g.cache.load(&g.origin, &e).await.expect("allowed");
    assert!(!skill.skill_md().stored());
    assert_eq!(
        skill.skill_md().verification(),
        skillcache::Verification::Unverified
    );
    // The 16 MiB budget counts bytes received: SKILL.md plus 16 MiB is over.
    assert!(matches!(
        skill.read("big.bin").await,
        Err(Error::Entry(
            skillcache::error::EntryError::LimitExceeded { .. }
        ))
    ));
    assert!(
        g.cache
            .core()
            .store()
            .blobs(None)
            .expect("walk")
            .0
            .is_empty(),
        "never stored as verified content"
    );
}

#[tokio::test]
async fn v6_dynamic_skill_md_still_gets_the_frontmatter_check() {
    let g = fixture_with(Isolation::Rehash, DynamicPolicy::AllowUnverified);
    g.double.publish_json("skill://live/SKILL.md", json!({"uri": "skill://live/SKILL.md", "frontmatter": {"name": "live", "description": "Live."}, "resources": "dynamic"}));
    g.double.serve_bytes(
        "skill://live/SKILL.md",
        &common::skill_md("name: live\ndescription: Something else."),
    );
    let e = g
        .cache
        .entry(
            &g.origin,
            &SkillUri::parse("skill://live/SKILL.md").expect("uri"),
        )
        .await
        .expect("entry")
        .entry;
    assert!(matches!(
        g.cache.load(&g.origin, &e).await,
        Err(Error::Verify(skillcache::error::VerifyError {
            mismatch: Mismatch::Frontmatter { .. },
            ..
        }))
    ));
}

#[tokio::test]
async fn w7_over_limit_skills_are_declined_from_the_entry_before_any_fetch() {
    let f = fixture();
    let big: Vec<(String, Vec<u8>)> = (0..513)
        .map(|i| (format!("f/{i}.md"), vec![b'x']))
        .collect();
    let refs: Vec<(&str, &[u8])> = big
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let (e, files) = {
        // Built under raised limits, as a lenient host would have accepted it.
        let (e, files) = common::skill("huge", &refs[..10]);
        let mut v = e.to_json();
        let resources = v["resources"].as_array_mut().expect("array");
        for i in 10..513 {
            resources.push(json!({"uri": format!("skill://huge/f/{i}.md"), "digest": Digest::of(b"x").to_string(), "size": 1}));
        }
        let raised = skillcache::entry::Validation::default()
            .limits(Limits::new(1024, 1 << 30).expect("raised"));
        (
            SkillEntry::from_json(&v, &raised).expect("valid under raised limits"),
            files,
        )
    };
    f.double.publish(&e, &files);
    match f.cache.load(&f.origin, &e).await {
        Err(err @ Error::Entry(skillcache::error::EntryError::LimitExceeded { .. })) => {
            assert!(err.to_string().contains("number of files"));
        }
        other => panic!("{other:?}"),
    }
    let listed = f.cache.list(&f.origin).await.expect("list");
    assert!(listed.iter().any(|r| matches!(
        r,
        Err(Error::Entry(
            skillcache::error::EntryError::LimitExceeded { .. }
        ))
    )));
    assert_eq!(f.double.reads(), 0, "declined before any file is fetched");
}

#[tokio::test]
async fn c6_a_fresh_entry_is_used_without_asking_the_server() {
    let f = fixture();
    f.double
        .set_hints(json!({"ttlMs": 600_000, "cacheScope": "public"}));
    let first = f.cache.entry(&f.origin, &uri(&f)).await.expect("entry");
    assert!(!first.from_cache);
    let second = f.cache.entry(&f.origin, &uri(&f)).await.expect("entry");
    assert!(second.from_cache);
    assert_eq!(f.double.gets.load(std::sync::atomic::Ordering::SeqCst), 1);
    f.double.set_hints(json!({}));
    f.cache.refresh(&f.origin, &uri(&f)).await.expect("refresh");
    let third = f.cache.entry(&f.origin, &uri(&f)).await.expect("entry");
    assert!(!third.from_cache, "missing ttlMs is 0: stale, asked again");
}

#[tokio::test]
async fn c7_files_whose_digest_did_not_change_are_served_from_the_cache_after_a_refresh() {
    let f = fixture();
    let skill = f.cache.load(&f.origin, &f.entry).await.expect("load");
    skill.read("references/FORMS.md").await.expect("read");
    let (newer, newer_files) = common::skill(
        "pdf",
        &[
            ("references/FORMS.md", b"the forms reference"),
            ("scripts/x.py", b"print('changed')"),
        ],
    );
    f.double.publish(&newer, &newer_files);
    let info = f.cache.refresh(&f.origin, &uri(&f)).await.expect("refresh");
    let reads = f.double.reads();
    let skill = f.cache.load(&f.origin, &info.entry).await.expect("load");
    let forms = skill.read("references/FORMS.md").await.expect("read");
    assert_eq!(
        (skill.skill_md().provenance(), forms.provenance()),
        (Provenance::Cache, Provenance::Cache)
    );
    assert_eq!(f.double.reads(), reads, "unchanged files: no new fetch");
    assert_eq!(
        skill.read("scripts/x.py").await.expect("read").provenance(),
        Provenance::Server
    );
}

#[tokio::test]
async fn concurrent_reads_of_one_missing_file_fetch_it_once() {
    let f = fixture();
    let skill = Arc::new(f.cache.load(&f.origin, &f.entry).await.expect("load"));
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let s = Arc::clone(&skill);
            tokio::spawn(async move {
                s.read("references/FORMS.md")
                    .await
                    .map(|f| f.bytes().to_vec())
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(
            t.await.expect("join").expect("read"),
            b"the forms reference"
        );
    }
    assert_eq!(f.double.reads(), 2, "SKILL.md once, FORMS.md once");
}

#[tokio::test]
async fn a5_requested_tools_are_reported_never_applied_and_a_grant_is_bound() {
    let f = fixture();
    let mut v = f.entry.to_json();
    v["frontmatter"]["allowed-tools"] = json!("Bash(rm:*)");
    let md = common::skill_md("name: pdf\ndescription: The pdf skill.\nallowed-tools: Bash(rm:*)");
    v["resources"][0]["digest"] = json!(Digest::of(&md).to_string());
    v["resources"][0]["size"] = json!(md.len());
    f.double.publish_json(f.entry.uri().as_str(), v);
    f.double.serve_bytes(f.entry.uri().as_str(), &md);
    let e = f
        .cache
        .entry(&f.origin, &uri(&f))
        .await
        .expect("entry")
        .entry;
    let skill = f.cache.load(&f.origin, &e).await.expect("load");
    assert_eq!(skill.entry().requested_tools(), Some(&json!("Bash(rm:*)")));
    assert!(
        f.cache
            .core()
            .approval(&f.origin, &uri(&f), "")
            .expect("read")
            .is_none(),
        "nothing granted implicitly"
    );
    f.cache
        .approve(&f.origin, &e, skill.entry().requested_tools().cloned())
        .await
        .expect("explicit grant");
    assert_eq!(
        f.cache
            .core()
            .approval(&f.origin, &uri(&f), "")
            .expect("read")
            .expect("approved")
            .granted_tools,
        Some(json!("Bash(rm:*)"))
    );
}

#[tokio::test]
async fn guaranteed_isolation_serves_hits_without_rehashing_and_still_catches_tampering() {
    // The disk path alone: with the memory tier on, the second load would not read the disk.
    let f = fixture_memory(Isolation::Guaranteed, DynamicPolicy::Decline, 0);
    f.cache.load(&f.origin, &f.entry).await.expect("load");
    // On disk before the hit, so that the hit is the disk's (not the bytes on their way there).
    f.cache.flush().await;
    let hit = f.cache.load(&f.origin, &f.entry).await.expect("hit");
    assert_eq!(hit.skill_md().provenance(), Provenance::Cache);
    tamper_blob(&blob_path(&f));
    let healed = f.cache.load(&f.origin, &f.entry).await.expect("healed");
    assert!(healed.skill_md().retried());
    assert_eq!(f.double.reads(), 2);
}

#[tokio::test]
async fn memory_tier_serves_verified_bytes_after_the_disk_copy_is_tampered_with() {
    for isolation in [Isolation::Rehash, Isolation::Guaranteed] {
        let f = fixture_memory(isolation, DynamicPolicy::Decline, 1 << 20);
        f.cache.load(&f.origin, &f.entry).await.expect("load");
        // On disk first: the warm load is then a disk hit, which the memory tier keeps.
        f.cache.flush().await;
        let warm = f.cache.load(&f.origin, &f.entry).await.expect("hit");
        let want = warm.skill_md().bytes().to_vec();
        // Bytes verified in this process are right for the digest whatever happens on disk
        // later: the memory hit serves them, from the cache, with no server read.
        tamper_blob(&blob_path(&f));
        let hit = f.cache.load(&f.origin, &f.entry).await.expect("memory hit");
        assert_eq!(hit.skill_md().bytes(), want.as_slice(), "{isolation:?}");
        assert_eq!(
            hit.skill_md().provenance(),
            Provenance::Cache,
            "{isolation:?}"
        );
        assert!(!hit.skill_md().retried(), "{isolation:?}");
        assert_eq!(
            f.double.reads(),
            1,
            "{isolation:?}: SKILL.md fetched once, cold"
        );
    }
}

#[tokio::test]
async fn not_connected_origins_are_an_error_not_a_fallback() {
    let f = fixture();
    let stranger = Origin::new("nobody").expect("label");
    assert!(matches!(
        f.cache.entry(&stranger, &uri(&f)).await,
        Err(Error::Source(
            skillcache::error::SourceError::NotConnected { .. }
        ))
    ));
    assert_eq!(f.double.requests(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_all_verifies_every_listed_file_and_retries_a_failed_copy_once() {
    let f = fixture();
    let skill = f.cache.load(&f.origin, &f.entry).await.expect("load");
    let cold = skill.read_all().await.expect("read all");
    f.cache.flush().await;
    assert_eq!(cold.len(), 3);
    assert!(
        cold.iter()
            .all(|f| matches!(f.verification(), skillcache::Verification::Verified(_)))
    );
    let reads = f.double.reads();
    let forms = f
        .entry
        .manifest()
        .expect("m")
        .files()
        .iter()
        .find(|x| x.uri().as_str().ends_with("FORMS.md"))
        .expect("listed")
        .clone();
    tamper_blob(
        &f.cache
            .core()
            .store()
            .layout()
            .blob_path(&f.origin, &forms.digest()),
    );
    let warm = skill.read_all().await.expect("read all");
    let by_uri = |u: &str| {
        warm.iter()
            .find(|x| x.uri().as_str().ends_with(u))
            .expect("present")
    };
    assert!(by_uri("FORMS.md").retried());
    assert_eq!(by_uri("x.py").provenance(), Provenance::Cache);
    assert_eq!(
        f.double.reads(),
        reads + 1,
        "exactly one extra fetch, for the tampered file"
    );
}

// ---- R-H11: principals, through the SkillCache ----

/// Two caches on one root, for principals alice and bob, and one counting double.
struct TwoPrincipals {
    _dir: common::Scratch,
    alice: SkillCache,
    bob: SkillCache,
    double: Arc<Double>,
    origin: Origin,
    entry: SkillEntry,
}

fn two_principals(scope: &str) -> TwoPrincipals {
    let dir = common::scratch();
    let double = Arc::new(Double::new());
    double.set_hints(json!({"ttlMs": 3_600_000, "cacheScope": scope}));
    let (entry, files) = common::skill("pdf", &[("references/FORMS.md", b"forms")]);
    double.publish(&entry, &files);
    let origin = Origin::new("docs-server").expect("label");
    let open = |principal: &str| {
        let c = SkillCache::builder()
            .approval(ApprovalPolicy::NotRequired)
            .root(dir.path().join("root"))
            .key_file(dir.path().join("host.key"))
            .principal(principal)
            .open()
            .expect("open");
        c.connect(origin.clone(), double.clone());
        c
    };
    let (alice, bob) = (open("alice"), open("bob"));
    TwoPrincipals {
        _dir: dir,
        alice,
        bob,
        double,
        origin,
        entry,
    }
}

fn gets(d: &Double) -> usize {
    d.gets.load(std::sync::atomic::Ordering::SeqCst)
}

#[tokio::test]
async fn h11_a_private_entry_fetched_for_one_principal_is_never_served_to_another() {
    let t = two_principals("private");
    let a = t
        .alice
        .entry(&t.origin, t.entry.uri())
        .await
        .expect("alice");
    assert!(!a.from_cache);
    assert_eq!(gets(&t.double), 1);
    let b = t.bob.entry(&t.origin, t.entry.uri()).await.expect("bob");
    assert!(!b.from_cache, "bob's entry() goes to the server");
    assert_eq!(gets(&t.double), 2);
    let a_again = t
        .alice
        .entry(&t.origin, t.entry.uri())
        .await
        .expect("alice");
    let b_again = t.bob.entry(&t.origin, t.entry.uri()).await.expect("bob");
    assert!(
        a_again.from_cache && b_again.from_cache,
        "each has its own copy"
    );
    assert_eq!(gets(&t.double), 2);
}

#[tokio::test]
async fn h11_one_principals_approval_is_not_anothers() {
    let t = two_principals("public");
    let e = t
        .alice
        .entry(&t.origin, t.entry.uri())
        .await
        .expect("alice");
    t.alice
        .approve(&t.origin, &e.entry, None)
        .await
        .expect("alice approves");
    assert!(
        t.alice
            .is_approved(&t.origin, &e.entry)
            .await
            .expect("check")
    );
    assert!(
        !t.bob.is_approved(&t.origin, &e.entry).await.expect("check"),
        "alice's approval is not bob's"
    );
    assert!(
        t.bob
            .core()
            .approval(&t.origin, t.entry.uri(), "bob")
            .expect("read")
            .is_none()
    );
}

#[tokio::test]
async fn h11_one_principals_refresh_does_not_revoke_anothers_approval() {
    let t = two_principals("public");
    let approved = t
        .alice
        .entry(&t.origin, t.entry.uri())
        .await
        .expect("alice");
    t.alice
        .approve(&t.origin, &approved.entry, None)
        .await
        .expect("alice approves");
    t.bob
        .approve(&t.origin, &approved.entry, None)
        .await
        .expect("bob approves");
    // The server changes a file; bob refreshes the public entry.
    let (changed, files) = common::skill("pdf", &[("references/FORMS.md", b"forms, changed")]);
    t.double.publish(&changed, &files);
    let bobs = t
        .bob
        .refresh(&t.origin, t.entry.uri())
        .await
        .expect("bob refreshes");
    assert!(bobs.revoked, "bob's own approval is revoked by his refresh");
    let alices_row = t
        .alice
        .core()
        .approval(&t.origin, t.entry.uri(), "alice")
        .expect("read")
        .expect("alice's approval row is still there");
    assert_eq!(
        Some(alices_row.binding),
        approved.entry.binding(),
        "still bound to what alice approved"
    );
    assert!(
        !t.alice
            .is_approved(&t.origin, &bobs.entry)
            .await
            .expect("check"),
        "it does not cover the changed content"
    );
    // Alice's own refresh revokes hers.
    let alices = t
        .alice
        .refresh(&t.origin, t.entry.uri())
        .await
        .expect("alice refreshes");
    assert_eq!(alices.entry, changed);
    assert!(alices.revoked);
    assert!(
        t.alice
            .core()
            .approval(&t.origin, t.entry.uri(), "alice")
            .expect("read")
            .is_none()
    );
}
