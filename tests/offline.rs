//! Offline mode (issue 13, item 4) through the host API: no source is contacted, entries and
//! bytes come only from the cache, a stale entry only when allowed (and reported stale), and
//! everything missing is an `Error::Offline` naming the origin and the URI. The cache is
//! populated online through the counting double; offline it is bound to a source that fails the
//! test if anything calls it.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::double::Double;
use skillcache::Provenance;
use skillcache::error::OfflineMiss;
use skillcache::source::{SkillSource, SourceFuture};
use skillcache::{ApprovalPolicy, Error, Origin, SkillCache, SkillEntry};

/// A source that must never be asked anything: offline mode contacts no server.
struct Unreachable;

impl SkillSource for Unreachable {
    fn list_skills<'a>(&'a self, _cursor: Option<&'a str>) -> SourceFuture<'a> {
        panic!("offline mode sent skills/list");
    }
    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        panic!("offline mode sent skills/get for {uri}");
    }
    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        panic!("offline mode sent resources/read for {uri}");
    }
    fn ready(&self) -> SourceFuture<'_, ()> {
        panic!("offline mode connected to the server");
    }
}

const HOUR_MS: u64 = 3_600_000;

struct Fixture {
    dir: common::Scratch,
    origin: Origin,
    entry: SkillEntry,
    double: Arc<Double>,
}

impl Fixture {
    /// One skill, `notes` with `templates/a.md` and `b.md`, served with `ttl_ms`.
    fn new(ttl_ms: u64) -> Fixture {
        let double = Arc::new(Double::new());
        double.set_hints(serde_json::json!({"ttlMs": ttl_ms, "cacheScope": "public"}));
        let (entry, files) = common::skill(
            "notes",
            &[("templates/a.md", b"MARKER-a"), ("b.md", b"MARKER-b")],
        );
        double.publish(&entry, &files);
        Fixture {
            dir: common::scratch(),
            origin: Origin::new("docs").expect("origin"),
            entry,
            double,
        }
    }

    fn builder(&self, root: &Path) -> skillcache::SkillCacheBuilder {
        SkillCache::builder()
            .root(root)
            .key_file(self.dir.path().join("host.key"))
            .approval(ApprovalPolicy::NotRequired)
    }

    fn root(&self) -> std::path::PathBuf {
        self.dir.path().join("root")
    }

    /// Online: the entry, and `files` of the skill read (all of them when `None`).
    async fn populate(&self, root: &Path, only_skill_md: bool) {
        let cache = self.builder(root).open().expect("open");
        cache.connect(self.origin.clone(), self.double.clone());
        let e = cache
            .entry(&self.origin, self.entry.uri())
            .await
            .expect("entry");
        let skill = cache.load(&self.origin, &e.entry).await.expect("load");
        if !only_skill_md {
            skill.read_all().await.expect("every file");
        }
    }

    fn offline(&self, root: &Path, allow_stale: bool) -> SkillCache {
        let cache = self
            .builder(root)
            .offline(true)
            .allow_stale(allow_stale)
            .open()
            .expect("open offline");
        cache.connect(self.origin.clone(), Arc::new(Unreachable));
        cache
    }
}

fn offline_miss<T: std::fmt::Debug>(r: Result<T, Error>) -> (String, String, OfflineMiss) {
    match r {
        Err(Error::Offline {
            origin,
            uri,
            missing,
            // Typed (R-O1): the origin label and the file asked for, `None` for a whole listing.
        }) => (
            origin.as_str().to_owned(),
            uri.map_or_else(String::new, |u| u.as_str().to_owned()),
            missing,
        ),
        other => panic!("expected an offline error, got {other:?}"),
    }
}

#[tokio::test]
async fn offline_serves_entries_and_verified_bytes_from_the_cache_without_contacting_the_source() {
    let f = Fixture::new(HOUR_MS);
    f.populate(&f.root(), false).await;
    let requests = f.double.requests();

    let cache = f.offline(&f.root(), false);
    let info = cache
        .entry(&f.origin, f.entry.uri())
        .await
        .expect("cached entry");
    assert!(info.from_cache && !info.stale, "{info:?}");
    assert_eq!(info.entry, f.entry);
    let skill = cache.load(&f.origin, &info.entry).await.expect("load");
    let files = skill.read_all().await.expect("every file");
    assert_eq!(files.len(), 3);
    assert!(
        files.iter().all(
            |file| file.verification() != skillcache::Verification::Unverified
                && file.provenance() == Provenance::Cache
        ),
        "every byte from the cache, verified"
    );
    let listed = cache.list(&f.origin).await.expect("offline listing");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].as_ref().expect("the cached entry").entry, f.entry);
    assert_eq!(
        f.double.requests(),
        requests,
        "the online source was not asked either"
    );
}

#[tokio::test]
async fn offline_needs_no_connected_source() {
    let f = Fixture::new(HOUR_MS);
    f.populate(&f.root(), false).await;
    let cache = f
        .builder(&f.root())
        .offline(true)
        .open()
        .expect("open offline");
    // No `connect` at all: nothing would be asked.
    let info = cache.entry(&f.origin, f.entry.uri()).await.expect("entry");
    let skill = cache.load(&f.origin, &info.entry).await.expect("load");
    assert_eq!(skill.read("b.md").await.expect("b.md").bytes(), b"MARKER-b");
}

#[tokio::test]
async fn offline_refuses_a_stale_entry_unless_allowed_and_then_reports_it_stale() {
    let f = Fixture::new(0);
    f.populate(&f.root(), false).await;

    let strict = f.offline(&f.root(), false);
    let (origin, uri, missing) = offline_miss(strict.entry(&f.origin, f.entry.uri()).await);
    assert_eq!(
        (origin.as_str(), uri.as_str()),
        ("docs", "skill://notes/SKILL.md")
    );
    assert!(matches!(missing, OfflineMiss::Stale { .. }), "{missing:?}");
    let listed = strict.list(&f.origin).await.expect("listing");
    assert!(
        matches!(
            &listed[..],
            [Err(Error::Offline {
                missing: OfflineMiss::Stale { .. },
                ..
            })]
        ),
        "a stale entry is refused in its slot: {listed:?}"
    );

    let lenient = f.offline(&f.root(), true);
    let info = lenient
        .entry(&f.origin, f.entry.uri())
        .await
        .expect("stale allowed");
    assert!(info.stale && info.from_cache, "reported stale: {info:?}");
    let skill = lenient.load(&f.origin, &info.entry).await.expect("load");
    assert!(skill.skill_md().verification() != skillcache::Verification::Unverified);
    let listed = lenient.list(&f.origin).await.expect("listing");
    assert!(listed[0].as_ref().expect("allowed").stale);
}

#[tokio::test]
async fn offline_names_the_origin_and_uri_of_whatever_is_missing() {
    let f = Fixture::new(HOUR_MS);
    // Only the SKILL.md was read online: the other files were never fetched.
    f.populate(&f.root(), true).await;
    let cache = f.offline(&f.root(), false);

    let other = skillcache::SkillUri::parse("skill://other/SKILL.md").expect("uri");
    let (origin, uri, missing) = offline_miss(cache.entry(&f.origin, &other).await);
    assert_eq!(
        (origin.as_str(), uri.as_str(), missing),
        ("docs", "skill://other/SKILL.md", OfflineMiss::Entry)
    );
    let elsewhere = Origin::new("elsewhere").expect("origin");
    let (origin, _, missing) = offline_miss(cache.entry(&elsewhere, f.entry.uri()).await);
    assert_eq!(
        (origin.as_str(), missing),
        ("elsewhere", OfflineMiss::Entry)
    );

    let info = cache.entry(&f.origin, f.entry.uri()).await.expect("entry");
    let skill = cache
        .load(&f.origin, &info.entry)
        .await
        .expect("SKILL.md cached");
    let (origin, uri, missing) = offline_miss(skill.read("templates/a.md").await);
    assert_eq!(
        (origin.as_str(), uri.as_str(), missing),
        ("docs", "skill://notes/templates/a.md", OfflineMiss::File)
    );
    let (_, uri, missing) = offline_miss(cache.refresh(&f.origin, f.entry.uri()).await);
    assert_eq!(uri, "skill://notes/SKILL.md");
    assert_eq!(
        missing,
        OfflineMiss::Server {
            method: "skills/get"
        }
    );
    let e = cache
        .refresh(&f.origin, f.entry.uri())
        .await
        .expect_err("refresh needs the server");
    assert!(matches!(e, Error::Offline { .. }), "{e:?}");
    assert!(
        e.to_string().contains("offline") && e.to_string().contains("origin docs"),
        "{e}"
    );
}

#[tokio::test]
async fn offline_a_cached_copy_that_fails_verification_is_not_served_nor_fetched_again() {
    let f = Fixture::new(HOUR_MS);
    f.populate(&f.root(), false).await;
    // Change the stored copy of b.md in place (same length): the cache must notice on access.
    let blob = find_file_holding(&f.root().join("origins"), b"MARKER-b").expect("b.md's blob");
    let mut perms = std::fs::metadata(&blob).expect("stat").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&blob, perms).expect("chmod");
    std::fs::write(&blob, b"MARKER-X").expect("tamper");

    let cache = f.offline(&f.root(), false);
    let info = cache.entry(&f.origin, f.entry.uri()).await.expect("entry");
    let skill = cache.load(&f.origin, &info.entry).await.expect("load");
    let (_, uri, missing) = offline_miss(skill.read("b.md").await);
    assert_eq!(
        (uri.as_str(), missing),
        ("skill://notes/b.md", OfflineMiss::File)
    );
    assert_eq!(
        skill.read("templates/a.md").await.expect("intact").bytes(),
        b"MARKER-a"
    );
}

fn find_file_holding(dir: &Path, bytes: &[u8]) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file_holding(&path, bytes) {
                return Some(found);
            }
        } else if std::fs::read(&path).is_ok_and(|b| b == bytes) {
            return Some(path);
        }
    }
    None
}

#[tokio::test]
async fn offline_works_on_a_read_only_pre_populated_root() {
    let f = Fixture::new(HOUR_MS);
    // `chmod -R a-w` does not stop root; a read-only mount does. Mounting needs root.
    let mnt = match common::Tmpfs::mount(f.dir.path().join("mnt"), "16m") {
        Ok(m) => m,
        Err(why) => {
            eprintln!("skipping offline_works_on_a_read_only_pre_populated_root: {why}");
            return;
        }
    };
    let root = mnt.path().join("root");
    f.populate(&root, false).await;
    mnt.remount_read_only();

    {
        let cache = f.offline(&root, false);
        let info = cache
            .entry(&f.origin, f.entry.uri())
            .await
            .expect("entry from a read-only index");
        let skill = cache
            .load(&f.origin, &info.entry)
            .await
            .expect("load from a read-only store");
        let files = skill.read_all().await.expect("every file");
        assert!(
            files
                .iter()
                .all(|f| f.verification() != skillcache::Verification::Unverified)
        );
        let missing = skillcache::SkillUri::parse("skill://absent/SKILL.md").expect("uri");
        let (_, _, why) = offline_miss(cache.entry(&f.origin, &missing).await);
        assert_eq!(why, OfflineMiss::Entry);
    }
    // Everything holding the root is gone: the mount comes off.
    drop(mnt);
}
