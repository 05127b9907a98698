//! The shared tier of a fleet (feature `l2`, issue 14), through the host API only: a counting
//! object store around `object_store`'s in-memory store for the trust and scope rules, closed and
//! black-hole ports for an unreachable tier, and a real S3-compatible server (moto, started on
//! loopback from a pinned virtualenv) for the S3 client, conditional creates and the CLI.
//!
//! The store failing (G3) is a fault-injecting proxy in front of moto (`common/fault_proxy.rs`):
//! throttling, an outage, a silent store, truncated, cut-off and altered bodies, and an object
//! that vanishes after it was listed.
//!
//! The moto tests run when `SKILLCACHE_INTEROP=1` (as `.ci/run` sets it); otherwise they say why
//! they skip.

mod common;
#[path = "common/fault_proxy.rs"]
mod fault_proxy;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::double::Double;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt as _, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use serde_json::json;
use skillcache::Provenance;
use skillcache::{ApprovalPolicy, Counter, Digest, Error, L2, Origin, SkillCache, SkillEntry};

// ---- fixtures -------------------------------------------------------------------------------

/// An object store that counts every get and put, and can hide what it holds from gets (so a
/// put meets an object a get did not see: a lost create race).
#[derive(Debug, Default)]
struct Counting {
    inner: InMemory,
    gets: AtomicUsize,
    puts: AtomicUsize,
    hide_from_gets: std::sync::atomic::AtomicBool,
    /// Gets per key.
    gets_of: Mutex<BTreeMap<String, usize>>,
    /// When non-zero, a get's body arrives one byte at a time, this many ms apart: a tier that
    /// answers every chunk just inside the deadline and never finishes the object.
    drip_ms: std::sync::atomic::AtomicU64,
}

impl fmt::Display for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Counting {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.puts.fetch_add(1, Ordering::SeqCst);
        self.inner.put_opts(location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.puts.fetch_add(1, Ordering::SeqCst);
        self.inner.put_multipart_opts(location, opts).await
    }
    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        *self
            .gets_of
            .lock()
            .expect("lock")
            .entry(location.to_string())
            .or_default() += 1;
        if self.hide_from_gets.load(Ordering::SeqCst) {
            return Err(object_store::Error::NotFound {
                path: location.to_string(),
                source: "hidden by the test".into(),
            });
        }
        let found = self.inner.get_opts(location, options).await?;
        let drip = self.drip_ms.load(Ordering::SeqCst);
        if drip == 0 {
            return Ok(found);
        }
        let (meta, range, attributes, extensions) = (
            found.meta.clone(),
            found.range.clone(),
            found.attributes.clone(),
            found.extensions.clone(),
        );
        let body = found.bytes().await?;
        let bytes: Vec<object_store::Result<bytes::Bytes>> =
            (0..body.len()).map(|i| Ok(body.slice(i..=i))).collect();
        let stream = futures_util::stream::iter(bytes)
            .then(move |b| async move {
                tokio::time::sleep(Duration::from_millis(drip)).await;
                b
            })
            .boxed();
        Ok(GetResult {
            payload: object_store::GetResultPayload::Stream(stream),
            meta,
            range,
            attributes,
            extensions,
        })
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.puts.fetch_add(1, Ordering::SeqCst);
        self.inner.copy_opts(from, to, options).await
    }
}

impl Counting {
    fn gets(&self) -> usize {
        self.gets.load(Ordering::SeqCst)
    }
    fn puts(&self) -> usize {
        self.puts.load(Ordering::SeqCst)
    }
    fn gets_of(&self, key: &str) -> usize {
        self.gets_of
            .lock()
            .expect("lock")
            .get(key)
            .copied()
            .unwrap_or(0)
    }
    /// Every key and its bytes, read from the inner store (not counted).
    async fn objects(&self) -> BTreeMap<String, Vec<u8>> {
        use futures_util::StreamExt as _;
        let metas: Vec<ObjectMeta> = self
            .inner
            .list(None)
            .map(|m| m.expect("list"))
            .collect()
            .await;
        let mut out = BTreeMap::new();
        for m in metas {
            let bytes = self
                .inner
                .get(&m.location)
                .await
                .expect("get")
                .bytes()
                .await
                .expect("bytes");
            out.insert(m.location.to_string(), bytes.to_vec());
        }
        out
    }
    /// Puts `bytes` under `key` directly (not counted): what another host, or an attacker, left.
    async fn plant(&self, key: &str, bytes: &[u8]) {
        self.inner
            .put(
                &Path::parse(key).expect("key"),
                PutPayload::from(bytes.to_vec()),
            )
            .await
            .expect("plant");
    }
}

/// One host of the fleet: its own root and key, the shared double as its server, `tier` as L2.
struct Host {
    _dir: common::Scratch,
    cache: SkillCache,
}

fn host(tier: L2) -> Host {
    let dir = common::scratch();
    let cache = SkillCache::builder()
        .root(dir.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .approval(ApprovalPolicy::NotRequired)
        .l2(tier)
        .open()
        .expect("cache opens");
    Host { _dir: dir, cache }
}

fn origin(label: &str) -> Origin {
    Origin::new(label).expect("a valid label")
}

fn in_memory(store: &Arc<Counting>, prefix: &str) -> L2 {
    L2::new(Arc::clone(store) as Arc<dyn ObjectStore>, prefix).expect("tier")
}

/// The key of a blob under `prefix`, spelled out as issue 14 specifies it.
fn key(prefix: &str, encoded_origin: &str, bytes: &[u8]) -> String {
    let hex = Digest::of(bytes).to_string()["sha256:".len()..].to_owned();
    format!(
        "{prefix}/origins/{encoded_origin}/sha256/{}/{}",
        &hex[..2],
        &hex[2..]
    )
}

/// The claim marker of a blob: `<prefix>/claims/` and the blob's key below the prefix.
fn claim_key(prefix: &str, encoded_origin: &str, bytes: &[u8]) -> String {
    let k = key(prefix, encoded_origin, bytes);
    format!("{prefix}/claims/{}", &k[prefix.len() + 1..])
}

/// Loads `entry` through `cache` from `double` under `o` and reads every file: each as its first
/// read in this load found it (the `SKILL.md` from `load`, the others from `read_all`).
async fn load_all(
    cache: &SkillCache,
    o: &Origin,
    double: &Arc<Double>,
    entry: &SkillEntry,
) -> Result<Vec<skillcache::SkillFile>, Error> {
    cache.connect(o.clone(), double.clone());
    let held = cache.entry(o, entry.uri()).await?.entry;
    let skill = cache.load(o, &held).await?;
    let md = skill.skill_md().clone();
    let mut all = vec![md.clone()];
    all.extend(
        skill
            .read_all()
            .await?
            .into_iter()
            .filter(|f| f.uri() != md.uri()),
    );
    Ok(all)
}

fn notes() -> (SkillEntry, common::Files) {
    common::skill("notes", &[("a.md", b"alpha"), ("b/c.txt", b"charlie")])
}

/// A double serving `notes()` (public, TTL 0 unless a test sets other hints), and the skill.
fn served_notes() -> (Arc<Double>, SkillEntry, common::Files) {
    let double = Arc::new(Double::new());
    let (entry, files) = notes();
    double.publish(&entry, &files);
    (double, entry, files)
}

/// The fixture file whose URI ends with `name`.
fn file<'a>(files: &'a common::Files, name: &str) -> &'a (String, Vec<u8>) {
    files
        .iter()
        .find(|(u, _)| u.ends_with(name))
        .unwrap_or_else(|| panic!("{name} is a fixture file"))
}

/// The loaded file whose URI ends with `name`.
fn got_file<'a>(got: &'a [skillcache::SkillFile], name: &str) -> &'a skillcache::SkillFile {
    got.iter()
        .find(|f| f.uri().as_str().ends_with(name))
        .unwrap_or_else(|| panic!("{name} was loaded"))
}

// ---- 1. scope: private content never touches L2 ---------------------------------------------

#[tokio::test]
async fn l2_private_entry_sends_no_get_and_no_put() {
    let store = Arc::new(Counting::default());
    let (double, entry, _) = served_notes();
    double.set_hints(json!({"ttlMs": 0, "cacheScope": "private"}));
    let h = host(in_memory(&store, "fleet"));

    let got = load_all(&h.cache, &origin("docs"), &double, &entry)
        .await
        .expect("a private skill loads from the server");

    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|f| f.provenance() == Provenance::Server));
    assert_eq!(
        (store.gets(), store.puts()),
        (0, 0),
        "not one request to L2"
    );
    assert!(store.objects().await.is_empty());
    let s = h.cache.stats();
    assert_eq!(
        (
            s[Counter::L2Hits],
            s[Counter::L2Misses],
            s[Counter::L2Puts],
            s[Counter::L2Rejected],
            s[Counter::L2Unavailable]
        ),
        (0, 0, 0, 0, 0)
    );
}

#[tokio::test]
async fn l2_entry_without_cache_scope_is_private_and_never_shared() {
    let store = Arc::new(Counting::default());
    let (double, entry, _) = served_notes();
    // No cacheScope at all: the spec's default is private (R-W8).
    double.set_hints(json!({"ttlMs": 0}));
    let h = host(in_memory(&store, "fleet"));

    load_all(&h.cache, &origin("docs"), &double, &entry)
        .await
        .expect("loads");

    assert_eq!((store.gets(), store.puts()), (0, 0));
}

#[tokio::test]
async fn l2_an_entry_the_index_does_not_hold_as_public_is_treated_as_private() {
    // The host hands `load` an entry it built itself (never stored as public): no L2 traffic,
    // even though the server's hints would say public.
    let store = Arc::new(Counting::default());
    let (double, entry, _) = served_notes();
    let h = host(in_memory(&store, "fleet"));
    let o = origin("docs");
    h.cache.connect(o.clone(), double.clone());

    let skill = h.cache.load(&o, &entry).await.expect("loads");
    skill.read_all().await.expect("reads");

    assert_eq!((store.gets(), store.puts()), (0, 0));
}

// ---- 2. a fleet shares public blobs ---------------------------------------------------------

#[tokio::test]
async fn l2_public_blobs_published_by_one_host_serve_a_cold_second_host() {
    let store = Arc::new(Counting::default());
    let (double, entry, files) = served_notes();
    let o = origin("Docs");

    let first = host(in_memory(&store, "fleet/skills"));
    let got = load_all(&first.cache, &o, &double, &entry)
        .await
        .expect("first host loads");
    assert!(got.iter().all(|f| f.provenance() == Provenance::Server));
    assert_eq!(double.reads(), 3);
    let s = first.cache.stats();
    assert_eq!((s[Counter::L2Misses], s[Counter::L2Puts]), (3, 3));

    // Keys mirror the local store's layout under the prefix, with the origin's path encoding
    // (`Docs` → `%44ocs`): nothing crosses origins.
    let objects = store.objects().await;
    let expected: BTreeMap<String, Vec<u8>> = files
        .iter()
        .map(|(_, b)| (key("fleet/skills", "%44ocs", b), b.clone()))
        .collect();
    assert_eq!(objects, expected);

    let second = host(in_memory(&store, "fleet/skills"));
    let got = load_all(&second.cache, &o, &double, &entry)
        .await
        .expect("second host loads");
    assert!(got.iter().all(|f| f.provenance() == Provenance::L2
        && f.verification() != skillcache::Verification::Unverified));
    assert!(
        got.iter().all(skillcache::SkillFile::stored),
        "kept in the local store"
    );
    assert_eq!(double.reads(), 3, "the server was not read again");
    let s = second.cache.stats();
    assert_eq!(
        (s[Counter::L2Hits], s[Counter::L2Misses], s[Counter::L2Puts]),
        (3, 0, 0)
    );

    // And the second host's own store now answers: no L2, no server.
    let gets = store.gets();
    let got = load_all(&second.cache, &o, &double, &entry)
        .await
        .expect("warm");
    assert!(got.iter().all(|f| f.provenance() == Provenance::Cache));
    assert_eq!((store.gets(), double.reads()), (gets, 3));
}

#[tokio::test]
async fn l2_blobs_of_one_origin_are_never_read_for_another() {
    let store = Arc::new(Counting::default());
    let (double, entry, _) = served_notes();

    let a = host(in_memory(&store, "fleet"));
    load_all(&a.cache, &origin("alpha"), &double, &entry)
        .await
        .expect("loads");
    let b = host(in_memory(&store, "fleet"));
    let got = load_all(&b.cache, &origin("beta"), &double, &entry)
        .await
        .expect("loads");

    assert!(got.iter().all(|f| f.provenance() == Provenance::Server));
    assert_eq!(double.reads(), 6);
    assert_eq!(b.cache.stats()[Counter::L2Misses], 3);
}

#[tokio::test]
async fn l2_a_lost_create_race_is_not_an_error() {
    let store = Arc::new(Counting::default());
    let (double, entry, files) = served_notes();
    // Another host created every object between this host's get and its put.
    for (_, b) in &files {
        store.plant(&key("fleet", "docs", b), b).await;
    }
    store.hide_from_gets.store(true, Ordering::SeqCst);
    // Claims off: only the creates of objects are counted here.
    let h = host(in_memory(&store, "fleet").claim_wait(Duration::ZERO));

    let got = load_all(&h.cache, &origin("docs"), &double, &entry)
        .await
        .expect("a create that finds the object is not an error");

    assert_eq!(got.len(), 3);
    assert_eq!(store.puts(), 3, "each create was tried, and refused");
    let s = h.cache.stats();
    assert_eq!(
        (
            s[Counter::L2Misses],
            s[Counter::L2Puts],
            s[Counter::L2Unavailable]
        ),
        (3, 0, 0)
    );
}

#[tokio::test]
async fn l2_a_host_waits_for_a_file_another_host_claimed_instead_of_asking_the_server() {
    let store = Arc::new(Counting::default());
    let (double, entry, files) = served_notes();
    let (a_uri, a) = file(&files, "a.md");
    // Another host claimed a.md and is fetching it: it publishes the object once this host
    // has polled for it at least twice (the first get, then a poll after seeing the claim).
    store
        .plant(&claim_key("fleet", "docs", a), b"claimed")
        .await;
    let publisher = {
        let (store, k, a) = (Arc::clone(&store), key("fleet", "docs", a), a.clone());
        tokio::spawn(async move {
            while store.gets_of(&k) < 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            store.plant(&k, &a).await;
        })
    };
    // A wait long enough that only a lost object, never a slow machine, could end it.
    let h = host(in_memory(&store, "fleet").claim_wait(Duration::from_secs(120)));

    let got = load_all(&h.cache, &origin("docs"), &double, &entry)
        .await
        .expect("loads");
    publisher.await.expect("published");

    let a_file = got
        .iter()
        .find(|f| f.uri().as_str() == a_uri)
        .expect("a.md");
    assert_eq!(
        (a_file.provenance(), a_file.bytes()),
        (Provenance::L2, a.as_slice())
    );
    let log = double.read_log.lock().expect("lock").clone();
    assert!(
        !log.contains(a_uri),
        "a.md was not read from the server: {log:?}"
    );
    assert_eq!(double.reads(), 2);
    let s = h.cache.stats();
    assert_eq!(
        (s[Counter::L2Misses], s[Counter::L2Hits], s[Counter::L2Puts]),
        (3, 1, 2)
    );
}

#[tokio::test]
async fn l2_a_claim_nobody_honours_costs_one_wait_then_the_server_serves_and_it_is_cleared() {
    let store = Arc::new(Counting::default());
    let (double, entry, files) = served_notes();
    let (_, a) = file(&files, "a.md");
    // A host claimed a.md and died.
    store
        .plant(&claim_key("fleet", "docs", a), b"claimed")
        .await;
    let h = host(in_memory(&store, "fleet").claim_wait(Duration::from_millis(200)));

    let got = load_all(&h.cache, &origin("docs"), &double, &entry)
        .await
        .expect("a dead claim never fails a load");

    assert!(got.iter().all(|f| f.provenance() == Provenance::Server));
    assert_eq!(double.reads(), 3);
    let objects = store.objects().await;
    assert!(
        objects.keys().all(|k| !k.contains("/claims/")),
        "every claim is cleared once its object exists: {objects:?}"
    );
    assert_eq!(objects.get(&key("fleet", "docs", a)), Some(a));
    assert_eq!(h.cache.stats()[Counter::L2Puts], 3);
}

#[tokio::test]
async fn l2_claims_planted_for_every_blob_cost_one_wait_not_one_per_blob() {
    let store = Arc::new(Counting::default());
    let (double, entry, files) = served_notes();
    // A writer with access to the bucket (or a fleet of crashed hosts) left a claim marker for
    // every blob of the skill: no object will ever come for any of them.
    for (_, bytes) in &files {
        store
            .plant(&claim_key("fleet", "docs", bytes), b"claimed")
            .await;
    }
    let wait = Duration::from_secs(3);
    let h = host(in_memory(&store, "fleet").claim_wait(wait));
    let o = origin("docs");
    h.cache.connect(o.clone(), double.clone());
    let held = h.cache.entry(&o, entry.uri()).await.expect("entry").entry;

    // One file at a time, so waits could only add up: three blobs, three claims.
    let started = std::time::Instant::now();
    let skill = h
        .cache
        .load(&o, &held)
        .await
        .expect("a dead claim never fails a load");
    for name in ["a.md", "b/c.txt"] {
        let f = skill.read(name).await.expect("served");
        assert_eq!(f.provenance(), Provenance::Server);
    }
    let took = started.elapsed();

    // The first claim is waited out; after it the host stops waiting on claims for a while, so
    // the load costs about one wait (3 s), not one per blob (9 s and more).
    assert!(
        took < wait * 2 + wait / 2,
        "planted claims cost a wait per blob: {took:?} for {} files",
        files.len()
    );
    assert_eq!(double.reads(), 3);
}

// ---- 3. L2 bytes are untrusted ----------------------------------------------------------------

#[tokio::test]
async fn l2_tampered_object_is_rejected_and_the_server_serves_it_once() {
    let store = Arc::new(Counting::default());
    let (double, entry, files) = served_notes();
    // Same length, one byte changed: only the digest can tell.
    let (_, a) = file(&files, "a.md");
    store.plant(&key("fleet", "docs", a), b"alphA").await;
    let h = host(in_memory(&store, "fleet"));

    let got = load_all(&h.cache, &origin("docs"), &double, &entry)
        .await
        .expect("the server's bytes are served");

    let a_file = got_file(&got, "a.md");
    assert_eq!(
        (a_file.bytes(), a_file.provenance()),
        (&b"alpha"[..], Provenance::Server)
    );
    assert_eq!(double.reads(), 3, "one server read per file, no more");
    let s = h.cache.stats();
    assert_eq!((s[Counter::L2Rejected], s[Counter::L2Misses]), (1, 2));
    // The bad object was not replaced (never clobber) nor used.
    assert_eq!(
        store.objects().await.get(&key("fleet", "docs", a)),
        Some(&b"alphA".to_vec())
    );
}

#[tokio::test]
async fn l2_object_of_another_size_is_rejected_before_its_body_is_read() {
    let store = Arc::new(Counting::default());
    let (double, entry, files) = served_notes();
    let (_, c) = file(&files, "c.txt");
    // 1 MiB under a 7-byte file's key.
    store
        .plant(&key("fleet", "docs", c), &vec![b'x'; 1 << 20])
        .await;
    let h = host(in_memory(&store, "fleet"));

    let got = load_all(&h.cache, &origin("docs"), &double, &entry)
        .await
        .expect("loads");

    let c_file = got_file(&got, "c.txt");
    assert_eq!(c_file.bytes(), b"charlie");
    assert_eq!(h.cache.stats()[Counter::L2Rejected], 1);
    assert_eq!(double.reads(), 3);
}

#[tokio::test]
async fn l2_skill_md_whose_frontmatter_differs_from_the_entry_is_rejected_and_never_kept() {
    // The entry lists a SKILL.md (digest and all) whose frontmatter disagrees with the entry's:
    // the L2 copy has the right digest, so only the frontmatter check can refuse it (R-V6).
    let store = Arc::new(Counting::default());
    let double = Arc::new(Double::new());
    let md = common::skill_md("name: notes\ndescription: Something else.");
    let wire = json!({
        "uri": "skill://notes/SKILL.md",
        "frontmatter": {"name": "notes", "description": "The notes skill."},
        "resources": [{"uri": "skill://notes/SKILL.md", "digest": Digest::of(&md).to_string(), "size": md.len()}],
    });
    let entry = SkillEntry::from_json(&wire, &skillcache::entry::Validation::default())
        .expect("valid entry");
    double.publish(
        &entry,
        &vec![("skill://notes/SKILL.md".to_owned(), md.clone())],
    );
    store.plant(&key("fleet", "docs", &md), &md).await;
    let h = host(in_memory(&store, "fleet"));
    let o = origin("docs");
    h.cache.connect(o.clone(), double.clone());
    let held = h.cache.entry(&o, entry.uri()).await.expect("entry").entry;

    let err = h.cache.load(&o, &held).await.expect_err("refused");

    assert!(
        matches!(err, Error::Verify(_)),
        "the server's copy fails the same check: {err}"
    );
    let s = h.cache.stats();
    assert_eq!(
        (
            s[Counter::L2Rejected],
            s[Counter::L2Hits],
            s[Counter::L2Puts]
        ),
        (1, 0, 0)
    );
    assert_eq!(
        double.reads(),
        1,
        "one server read after the rejected object"
    );
}

#[tokio::test]
async fn l2_a_failed_local_copy_then_a_bad_object_costs_one_server_read() {
    // R-V9 with the tier: the local copy fails (quarantined), L2's is bad too, and the server
    // is asked once — the same budget as without L2.
    let store = Arc::new(Counting::default());
    let (double, entry, files) = served_notes();
    let dir = common::scratch();
    let open = || {
        SkillCache::builder()
            .root(dir.path().join("root"))
            .key_file(dir.path().join("host.key"))
            .approval(ApprovalPolicy::NotRequired)
            .memory_tier(0)
            .l2(in_memory(&store, "fleet"))
            .open()
            .expect("opens")
    };
    let o = origin("docs");
    load_all(&open(), &o, &double, &entry)
        .await
        .expect("warm up");
    let (_, a) = file(&files, "a.md");
    let k = key("fleet", "docs", a);
    // Tamper both copies: the local blob (as root or owner, whatever the modes) and L2's.
    let local = dir.path().join("root").join(k.trim_start_matches("fleet/"));
    tamper(&local);
    store
        .inner
        .delete(&Path::parse(&k).expect("key"))
        .await
        .expect("delete");
    store.plant(&k, b"alphA").await;
    let reads = double.reads();

    let cache = open();
    let got = load_all(&cache, &o, &double, &entry).await.expect("served");

    let a_file = got_file(&got, "a.md");
    assert_eq!(a_file.bytes(), b"alpha");
    assert!(a_file.retried());
    assert_eq!(double.reads() - reads, 1, "exactly one extra server read");
    let s = cache.stats();
    assert_eq!((s[Counter::Quarantines], s[Counter::L2Rejected]), (1, 1));
}

/// Flips the first byte of a read-only blob in place (its folder and itself made writable
/// first, so this works as a normal user too).
fn tamper(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let folder = path.parent().expect("a folder");
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let mut bytes = std::fs::read(path).expect("read blob");
    bytes[0] ^= 0x20;
    std::fs::write(path, bytes).expect("write blob");
}

// ---- 4. an unreachable tier degrades to the server -----------------------------------------

/// An S3 tier at `endpoint` with dummy credentials, and a short deadline for the tests.
fn s3(endpoint: &str, url: &str, timeout: Duration) -> L2 {
    L2::from_url_with(
        url,
        [
            ("aws_endpoint_url", endpoint),
            ("aws_allow_http", "true"),
            ("aws_region", "us-east-1"),
            ("aws_access_key_id", "testing"),
            ("aws_secret_access_key", "testing"),
        ],
    )
    .expect("an S3 tier")
    .timeout(timeout)
}

#[tokio::test]
async fn l2_on_a_port_nobody_listens_on_falls_through_to_the_server() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let (double, entry, _) = served_notes();
    let h = host(s3(
        &format!("http://127.0.0.1:{port}"),
        "s3://fleet/skills",
        Duration::from_secs(2),
    ));

    let got = load_all(&h.cache, &origin("docs"), &double, &entry)
        .await
        .expect("an unreachable tier never fails a load");

    assert!(got.iter().all(|f| f.provenance() == Provenance::Server));
    assert_eq!(double.reads(), 3);
    // The first get fails and the tier is left alone: every later get and put is skipped.
    let s = h.cache.stats();
    assert_eq!(
        (
            s[Counter::L2Unavailable],
            s[Counter::L2Hits],
            s[Counter::L2Puts]
        ),
        (6, 0, 0)
    );
}

#[tokio::test]
async fn l2_a_black_hole_listener_costs_one_deadline_then_is_skipped() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    // Accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    {
        let (accepted, held) = (Arc::clone(&accepted), Arc::clone(&held));
        std::thread::spawn(move || {
            for s in listener.incoming().flatten() {
                accepted.fetch_add(1, Ordering::SeqCst);
                held.lock().expect("lock").push(s);
            }
        });
    }
    let (double, entry, _) = served_notes();
    let h = host(s3(
        &format!("http://127.0.0.1:{port}"),
        "s3://fleet/skills",
        Duration::from_millis(300),
    ));

    let got = load_all(&h.cache, &origin("docs"), &double, &entry)
        .await
        .expect("a silent tier never fails a load");

    assert!(got.iter().all(|f| f.provenance() == Provenance::Server));
    assert_eq!(double.reads(), 3);
    let s = h.cache.stats();
    assert_eq!(
        (
            s[Counter::L2Unavailable],
            s[Counter::L2Hits],
            s[Counter::L2Puts]
        ),
        (6, 0, 0)
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "one connection: the first get waited out its deadline, the rest were skipped"
    );
}

#[test]
fn l2_urls_other_than_s3_and_bad_prefixes_are_configuration_errors() {
    for bad in ["gs://bucket/p", "s3://", "s3:///prefix", "bucket/prefix"] {
        let err = L2::from_url(bad).expect_err(bad);
        assert!(matches!(err, Error::L2Config { .. }), "{bad}: {err}");
    }
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    for bad in ["a//b", "a/../b", "a/./b"] {
        let err = L2::new(Arc::clone(&store), bad).expect_err(bad);
        assert!(matches!(err, Error::L2Config { .. }), "{bad}: {err}");
    }
    assert_eq!(
        L2::new(store, "/fleet/skills/").expect("ok").prefix(),
        "fleet/skills"
    );
}

#[test]
fn l2_cli_refuses_a_bad_l2_url_as_a_usage_error_and_reports_the_counters() {
    let home = common::scratch();
    let cli = |args: &[&str]| {
        std::process::Command::new(common::bin())
            .env("SKILLCACHE_ROOT", home.path().join("root"))
            .env("SKILLCACHE_KEY_FILE", home.path().join("host.key"))
            .args(args)
            .output()
            .expect("run the CLI")
    };
    // Refused before any server is started: the `--stdio` command does not exist.
    let bad = cli(&[
        "load",
        "--l2",
        "gs://bucket/prefix",
        "--origin",
        "docs",
        "--stdio",
        "/nonexistent/server",
        "skill://notes/SKILL.md",
    ]);
    assert_eq!(bad.status.code(), Some(2), "exit 2: usage");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("shared tier"), "{stderr}");
    // `--l2` is an option of the commands that fetch files, and of no other.
    let stats = cli(&["stats", "--l2", "s3://bucket/prefix"]);
    assert_eq!(stats.status.code(), Some(2), "stats takes no --l2");

    let ok = cli(&["stats", "--json"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).expect("json");
    // `stats` takes no `--l2`, so its cache has no shared tier, and a snapshot lists a tier's
    // counters only for a cache that has one (with one, `l2_cli_hosts_share_blobs_…` reads
    // them); the cache's own counters are there.
    assert_eq!(v["counters"]["misses"], 0, "{v}");
    for k in [
        "l2_hits",
        "l2_misses",
        "l2_puts",
        "l2_rejected",
        "l2_unavailable",
    ] {
        assert!(v["counters"].get(k).is_none(), "{k}: {v}");
    }
}

#[tokio::test]
async fn f4_a_tier_that_drips_its_body_just_inside_each_deadline_cannot_hang_a_load() {
    let store = Arc::new(Counting::default());
    let (double, entry, _) = served_notes();
    // Another host published the skill; this tier then answers each byte of a body 400 ms
    // after the last, inside a 500 ms deadline every time: a whole SKILL.md would take ~20 s.
    let publisher = host(in_memory(&store, "fleet"));
    load_all(&publisher.cache, &origin("docs"), &double, &entry)
        .await
        .expect("published");
    store.drip_ms.store(400, Ordering::SeqCst);
    let h = host(in_memory(&store, "fleet").timeout(Duration::from_millis(500)));

    let (cache, d, e) = (h.cache.clone(), Arc::clone(&double), entry.clone());
    let got = common::within(Duration::from_secs(12), move || {
        tokio::runtime::Runtime::new()
            .expect("runtime")
            .block_on(async move { load_all(&cache, &origin("docs"), &d, &e).await })
    })
    .expect("one operation on the tier is bounded by its timeout, body included (F4)")
    .expect("a slow tier never fails a load");

    assert!(got.iter().all(|f| f.provenance() == Provenance::Server));
    assert_eq!(h.cache.stats()[Counter::L2Hits], 0);
    assert!(h.cache.stats()[Counter::L2Unavailable] >= 1);
}

#[tokio::test]
async fn l2_offline_mode_never_touches_the_shared_tier() {
    let store = Arc::new(Counting::default());
    let (double, entry, _) = served_notes();
    double.set_hints(json!({"ttlMs": 3_600_000, "cacheScope": "public"}));
    let o = origin("docs");
    // One host of the fleet published every file of the skill to the tier.
    let publisher = host(in_memory(&store, "fleet"));
    load_all(&publisher.cache, &o, &double, &entry)
        .await
        .expect("published");
    // This host holds the (fresh, public) entry but none of the files.
    let dir = common::scratch();
    let builder = || {
        SkillCache::builder()
            .root(dir.path().join("root"))
            .key_file(dir.path().join("host.key"))
            .approval(ApprovalPolicy::NotRequired)
            .l2(in_memory(&store, "fleet"))
    };
    let online = builder().open().expect("open");
    online.connect(o.clone(), double.clone());
    online.entry(&o, entry.uri()).await.expect("entry");
    drop(online);
    let (gets, puts) = (store.gets(), store.puts());

    // Offline (R-L2): only what is in this host's cache is used; the tier is a network
    // service like the server, so it is neither read nor written (no get, no claim, no put).
    let offline = builder().offline(true).open().expect("open offline");
    let held = offline.entry(&o, entry.uri()).await.expect("cached entry");
    let got = offline.load(&o, &held.entry).await;

    assert!(
        matches!(
            got,
            Err(Error::Offline {
                missing: skillcache::error::OfflineMiss::File,
                ..
            })
        ),
        "{got:?}"
    );
    assert_eq!(
        (store.gets(), store.puts()),
        (gets, puts),
        "the tier was contacted"
    );
    let objects = store.objects().await;
    assert!(
        objects.keys().all(|k| !k.contains("/claims/")),
        "an offline host left a claim other hosts would wait on: {objects:?}"
    );
}

// ---- 5. a real S3-compatible server (moto) ----------------------------------------------------

mod moto {
    //! moto's server mode on a free loopback port, from a pinned virtualenv that is created
    //! when absent (`target/venv-moto`, git-ignored), and always stopped.

    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    /// A running moto with bucket `name`; `None`, with why the test skips printed, when the moto
    /// tests do not run.
    pub fn with_bucket(name: &str) -> Option<Moto> {
        if let Some(why) = skip_reason() {
            eprintln!("skipped: {why}");
            return None;
        }
        let moto = Moto::start();
        moto.bucket(name);
        Some(moto)
    }

    /// Why the moto tests skip, or `None` when they run.
    pub fn skip_reason() -> Option<&'static str> {
        (std::env::var("SKILLCACHE_INTEROP").as_deref() != Ok("1")).then_some(
            "set SKILLCACHE_INTEROP=1 to run the tests against a real S3-compatible server \
             (moto, installed pinned from scripts/moto-requirements.txt into target/venv-moto)",
        )
    }

    pub struct Moto {
        child: Child,
        pub endpoint: String,
    }

    fn venv() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/venv-moto")
    }

    /// Creates the virtualenv and installs the pinned moto, once; fails loudly if it cannot.
    fn ensure_installed() -> PathBuf {
        let venv = venv();
        let server = venv.join("bin/moto_server");
        // A virtualenv is tied to the path it was made at (its scripts name their interpreter
        // by absolute path): one that was moved or broken is made again, not trusted.
        let works = Command::new(&server)
            .arg("--help")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if server.exists() && works {
            return server;
        }
        let requirements =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/moto-requirements.txt");
        let ok = Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success())
            && Command::new(venv.join("bin/pip"))
                .args(["install", "-q", "-r"])
                .arg(&requirements)
                .status()
                .is_ok_and(|s| s.success());
        assert!(
            ok && server.exists(),
            "could not install moto into {}",
            venv.display()
        );
        server
    }

    impl Moto {
        /// Starts moto on a free port and waits until it answers (at most 60 s).
        pub fn start() -> Moto {
            let server = ensure_installed();
            let port = {
                let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
                l.local_addr().expect("addr").port()
            };
            let mut command = if std::path::Path::new("/usr/bin/setpriv").exists() {
                // Killed with the test thread that started it, even if the test process dies.
                let mut c = Command::new("setpriv");
                c.args(["--pdeathsig", "KILL", "--"]).arg(&server);
                c
            } else {
                Command::new(&server)
            };
            let child = command
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start moto_server");
            let mut moto = Moto {
                child,
                endpoint: format!("http://127.0.0.1:{port}"),
            };
            let started = Instant::now();
            while request(port, "GET", "/").is_none() {
                if let Ok(Some(status)) = moto.child.try_wait() {
                    panic!("moto_server exited before answering ({status})");
                }
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "moto did not answer on port {port}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            moto
        }

        fn port(&self) -> u16 {
            self.endpoint
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .expect("a port")
        }

        /// An S3 client of `bucket` straight to moto, past the tier, with the dummy credentials.
        pub fn raw_client(&self, bucket: &str) -> object_store::aws::AmazonS3 {
            object_store::aws::AmazonS3Builder::new()
                .with_bucket_name(bucket)
                .with_endpoint(&self.endpoint)
                .with_allow_http(true)
                .with_region("us-east-1")
                .with_access_key_id("testing")
                .with_secret_access_key("testing")
                .build()
                .expect("raw client")
        }

        /// Creates a bucket (moto takes unsigned requests).
        pub fn bucket(&self, name: &str) {
            let status = request(self.port(), "PUT", &format!("/{name}")).expect("moto answers");
            assert!(
                status.starts_with("HTTP/1.1 200"),
                "create bucket: {status}"
            );
        }
    }

    impl Drop for Moto {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// One HTTP/1.1 request; the status line, or `None` if nothing answers.
    fn request(port: u16, verb: &str, path: &str) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        write!(
            s,
            "{verb} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        out.lines().next().map(str::to_owned)
    }
}

#[tokio::test]
async fn l2_real_s3_two_hosts_share_public_blobs_and_creates_never_clobber() {
    let Some(moto) = moto::with_bucket("fleet") else {
        return;
    };
    let (double, entry, files) = served_notes();
    let o = origin("docs");
    let tier = || s3(&moto.endpoint, "s3://fleet/skills", Duration::from_secs(5));

    let first = host(tier());
    load_all(&first.cache, &o, &double, &entry)
        .await
        .expect("first host");
    let s = first.cache.stats();
    assert_eq!(
        (
            s[Counter::L2Misses],
            s[Counter::L2Puts],
            s[Counter::L2Unavailable]
        ),
        (3, 3, 0)
    );

    let second = host(tier());
    let got = load_all(&second.cache, &o, &double, &entry)
        .await
        .expect("second host");
    assert!(got.iter().all(|f| f.provenance() == Provenance::L2));
    assert_eq!(double.reads(), 3, "the server served each blob once");

    // PutMode::Create on real S3: an existing object is never replaced, so what the first host
    // verified is what a third host reads.
    let raw = moto.raw_client("fleet");
    let k = Path::parse(key("skills", "docs", &files[0].1)).expect("key");
    let err = raw
        .put_opts(
            &k,
            PutPayload::from(b"clobber".to_vec()),
            PutOptions {
                mode: object_store::PutMode::Create,
                ..PutOptions::default()
            },
        )
        .await
        .expect_err("moto refuses to create over an existing object");
    assert!(
        matches!(err, object_store::Error::AlreadyExists { .. }),
        "{err}"
    );
    let third = host(tier());
    let got = load_all(&third.cache, &o, &double, &entry)
        .await
        .expect("third host");
    assert!(got.iter().all(|f| f.provenance() == Provenance::L2));
    assert_eq!(got[0].bytes(), files[0].1.as_slice());
    assert_eq!(double.reads(), 3);
}

#[tokio::test]
async fn l2_real_s3_private_entries_leave_the_bucket_empty() {
    let Some(moto) = moto::with_bucket("fleet") else {
        return;
    };
    let (double, entry, _) = served_notes();
    double.set_hints(json!({"ttlMs": 0, "cacheScope": "private"}));
    let h = host(s3(
        &moto.endpoint,
        "s3://fleet/skills",
        Duration::from_secs(5),
    ));

    load_all(&h.cache, &origin("docs"), &double, &entry)
        .await
        .expect("loads");

    let raw = moto.raw_client("fleet");
    let listed: Vec<_> = futures_util::StreamExt::collect(raw.list(None)).await;
    assert!(listed.is_empty(), "{listed:?}");
    let s = h.cache.stats();
    assert_eq!((s[Counter::L2Misses], s[Counter::L2Puts]), (0, 0));
}

#[test]
fn l2_cli_hosts_share_blobs_through_real_s3_with_the_l2_option() {
    let Some(moto) = moto::with_bucket("fleet") else {
        return;
    };
    let corpus = common::scratch();
    let skill = corpus.path().join("notes");
    std::fs::create_dir(&skill).expect("mkdir");
    std::fs::write(
        skill.join("SKILL.md"),
        common::skill_md("name: notes\ndescription: The notes skill."),
    )
    .expect("write");
    let bin = common::bin();
    let serve = format!("{} serve {}", bin.display(), corpus.path().display());
    let run = |home: &std::path::Path| {
        let out = std::process::Command::new(bin)
            .env("SKILLCACHE_ROOT", home.join("root"))
            .env("SKILLCACHE_KEY_FILE", home.join("host.key"))
            .args([
                "load",
                "--l2",
                "s3://fleet/cli",
                "--json",
                "skill://notes/SKILL.md",
            ])
            .args(["--origin", "docs", "--stdio", &serve])
            .env("AWS_ENDPOINT_URL", &moto.endpoint)
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .output()
            .expect("run the CLI");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json")
    };
    let (a, b) = (common::scratch(), common::scratch());
    let first = run(a.path());
    assert_eq!(first["source"], "server");
    assert_eq!(first["counters"]["l2_puts"], 1);
    let second = run(b.path());
    assert_eq!(second["source"], "l2");
    assert_eq!(second["counters"]["l2_hits"], 1);
}

// ---- 6. the store failing (G3): a fault-injecting proxy in front of moto -------------------

use fault_proxy::{Fault, FaultProxy, Rule};

/// moto with bucket `fleet`, a fault proxy in front of it (passing everything until a test
/// scripts it), a runtime, and skills published to the tier under `skills/` by one host that
/// talked to moto directly. `None` when the moto tests skip.
struct Faulty {
    _moto: moto::Moto,
    proxy: FaultProxy,
    rt: tokio::runtime::Runtime,
    double: Arc<Double>,
    skills: Vec<(SkillEntry, common::Files)>,
    /// Server reads spent publishing: a test's own reads are counted from here.
    published_reads: usize,
}

fn faulty(count: usize) -> Option<Faulty> {
    let moto = moto::with_bucket("fleet")?;
    let proxy = FaultProxy::start(&moto.endpoint);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let double = Arc::new(Double::new());
    let mut skills = vec![notes()];
    for i in 1..count {
        // Bytes of their own: one digest per file, so no file is a local hit for another.
        let (a, c) = (format!("alpha {i}"), format!("charlie {i}"));
        skills.push(common::skill(
            &format!("skill-{i}"),
            &[("a.md", a.as_bytes()), ("b/c.txt", c.as_bytes())],
        ));
    }
    for (entry, files) in &skills {
        double.publish(entry, files);
    }
    let publisher = host(s3(
        &moto.endpoint,
        "s3://fleet/skills",
        Duration::from_secs(5),
    ));
    rt.block_on(async {
        for (entry, _) in &skills {
            load_all(&publisher.cache, &origin("docs"), &double, entry)
                .await
                .expect("published");
        }
    });
    assert_eq!(
        publisher.cache.stats()[Counter::L2Unavailable],
        0,
        "moto took every put"
    );
    Some(Faulty {
        _moto: moto,
        proxy,
        rt,
        published_reads: double.reads(),
        double,
        skills,
    })
}

impl Faulty {
    /// A cold host whose tier is the proxy, with `timeout` as its deadline.
    fn host(&self, timeout: Duration) -> Host {
        host(s3(&self.proxy.endpoint, "s3://fleet/skills", timeout))
    }

    /// Every skill loaded and read whole by `h`, on a thread of its own: a fault that made a
    /// load wait without end fails the test (the bound is minutes: a hang detector, not a
    /// measure of time).
    fn load_every_skill(&self, h: &Host) -> Vec<skillcache::SkillFile> {
        let (cache, double, skills) = (
            h.cache.clone(),
            Arc::clone(&self.double),
            self.skills.clone(),
        );
        common::within(Duration::from_secs(120), move || {
            tokio::runtime::Runtime::new()
                .expect("runtime")
                .block_on(async move {
                    let mut all = Vec::new();
                    for (entry, _) in &skills {
                        all.extend(load_all(&cache, &origin("docs"), &double, entry).await?);
                    }
                    Ok::<_, Error>(all)
                })
        })
        .expect("no fault makes a load wait past its deadlines")
        .expect("no fault fails a load")
    }

    /// Server reads since the skills were published.
    fn server_reads(&self) -> usize {
        self.double.reads() - self.published_reads
    }

    /// Every file of every skill: (URI, bytes).
    fn files(&self) -> Vec<(String, Vec<u8>)> {
        self.skills.iter().flat_map(|(_, f)| f.clone()).collect()
    }

    /// The key of `bytes` as the proxy sees it in a request's path.
    fn key_of(bytes: &[u8]) -> String {
        key("skills", "docs", bytes)
    }
}

/// Every loaded file holds exactly the bytes its URI was published with: no wrong byte.
fn assert_every_byte_right(got: &[skillcache::SkillFile], files: &[(String, Vec<u8>)]) {
    assert_eq!(got.len(), files.len());
    for f in got {
        let (_, want) = files
            .iter()
            .find(|(u, _)| u == f.uri().as_str())
            .unwrap_or_else(|| panic!("{} was published", f.uri()));
        assert_eq!(f.bytes(), want.as_slice(), "{}", f.uri());
    }
}

/// Every file came from the shared tier except `uri`, which the server served.
fn assert_only_this_file_came_from_the_server(got: &[skillcache::SkillFile], uri: &str) {
    for g in got {
        let want = if g.uri().as_str() == uri {
            Provenance::Server
        } else {
            Provenance::L2
        };
        assert_eq!(g.provenance(), want, "{}", g.uri());
    }
}

fn counters(h: &Host) -> [u64; 6] {
    let s = h.cache.stats();
    [
        s[Counter::L2Hits],
        s[Counter::L2Misses],
        s[Counter::L2Puts],
        s[Counter::L2Rejected],
        s[Counter::L2Unavailable],
        s[Counter::L2Retries],
    ]
}

#[test]
fn g3_a_503_slow_down_is_retried_after_a_jittered_pause_and_the_object_comes_from_l2() {
    let Some(f) = faulty(1) else { return };
    // The store asks the first two gets to slow down.
    f.proxy
        .script(vec![Rule::all(Fault::SlowDown).method("GET").times(2)]);
    let h = f.host(Duration::from_secs(2));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    assert!(got.iter().all(|g| g.provenance() == Provenance::L2));
    assert_eq!(f.server_reads(), 0, "the server was not asked");
    // hits, misses, puts, rejected, unavailable, retries
    assert_eq!(counters(&h), [3, 0, 0, 0, 0, 2]);
    assert_eq!(f.proxy.count(Fault::SlowDown), 2);
}

#[test]
fn g3_throttling_past_the_retry_budget_falls_through_to_the_server_within_the_deadline() {
    let Some(f) = faulty(1) else { return };
    // Every get is throttled, for good.
    f.proxy
        .script(vec![Rule::all(Fault::TooManyRequests).method("GET")]);
    let h = f.host(Duration::from_secs(2));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    assert!(got.iter().all(|g| g.provenance() == Provenance::Server));
    assert_eq!(f.server_reads(), 3, "one server read per file");
    // The first get is sent 1 + 3 times (the pauses fit well inside 2 s), then the tier is
    // left alone: the two other gets and the three puts are skipped, not sent.
    assert_eq!(counters(&h), [0, 0, 0, 0, 6, 3]);
    assert_eq!(f.proxy.count(Fault::TooManyRequests), 4);
    assert_eq!(f.proxy.seen().len(), 4, "{:?}", f.proxy.seen());
}

#[test]
fn g3_a_retry_never_pauses_past_the_deadline() {
    let Some(f) = faulty(1) else { return };
    f.proxy
        .script(vec![Rule::all(Fault::SlowDown).method("GET")]);
    // A deadline shorter than the first pause can be: no retry fits, so none is made.
    let h = f.host(Duration::from_millis(20));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    assert_eq!(h.cache.stats()[Counter::L2Retries], 0);
    assert!(f.proxy.count(Fault::SlowDown) <= 1);
    assert_eq!(f.server_reads(), 3);
}

#[test]
fn g3_an_outage_mid_sweep_fails_no_load_and_the_rest_comes_from_the_server() {
    let Some(f) = faulty(4) else { return };
    // Five gets are answered, then the store goes away: that connection hangs up, the port
    // refuses every later one.
    f.proxy.script(vec![Rule::all(Fault::Outage).after(5)]);
    let h = f.host(Duration::from_secs(2));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    assert!(f.proxy.is_down());
    let from_l2 = got
        .iter()
        .filter(|g| g.provenance() == Provenance::L2)
        .count();
    assert_eq!(from_l2, 5, "the five answered gets were used");
    assert_eq!(f.server_reads(), f.files().len() - 5);
    let [hits, misses, puts, rejected, unavailable, retries] = counters(&h);
    assert_eq!((hits, misses, puts, rejected), (5, 0, 0, 0));
    assert!(unavailable >= 1, "the outage is counted: {unavailable}");
    // A dropped or refused connection is tried again a few times, within the deadline, before
    // the tier is left alone: at most 3 retries for each request in flight when it went.
    assert!(retries <= 3 * 2, "{retries} retries");
}

#[test]
fn g3_a_store_that_stops_answering_costs_one_deadline_then_is_skipped() {
    let Some(f) = faulty(1) else { return };
    f.proxy.script(vec![Rule::all(Fault::Silent).method("GET")]);
    let h = f.host(Duration::from_millis(500));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    assert!(got.iter().all(|g| g.provenance() == Provenance::Server));
    assert_eq!(f.server_reads(), 3);
    assert_eq!(counters(&h), [0, 0, 0, 0, 6, 0]);
    assert_eq!(
        f.proxy.seen().len(),
        1,
        "one request waited out its deadline; the rest were skipped"
    );
}

#[test]
fn g3_one_late_answer_from_a_store_that_answers_others_costs_only_its_own_file() {
    let Some(f) = faulty(4) else { return };
    // A crowded store: one get is never answered while the gets around it are.
    let (late_uri, late) = file(&f.skills[1].1, "a.md").clone();
    f.proxy.script(vec![
        Rule::all(Fault::Silent)
            .method("GET")
            .path(Faulty::key_of(&late)),
    ]);
    let h = f.host(Duration::from_millis(500));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    assert_only_this_file_came_from_the_server(&got, &late_uri);
    assert_eq!(
        f.server_reads(),
        1,
        "only the late file was asked of the server"
    );
    // hits, misses, puts, rejected, unavailable, retries: the tier stayed in use.
    assert_eq!(counters(&h), [11, 0, 0, 0, 1, 0]);
    assert_eq!(f.proxy.count(Fault::Silent), 1);
}

#[test]
fn g3_a_store_that_stops_answering_mid_sweep_costs_at_most_two_deadlines_then_is_skipped() {
    let Some(f) = faulty(4) else { return };
    // The first skill's three gets are answered; then no request is, ever.
    f.proxy.script(vec![Rule::all(Fault::Silent).after(3)]);
    let h = f.host(Duration::from_millis(500));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    let from_l2 = got
        .iter()
        .filter(|g| g.provenance() == Provenance::L2)
        .count();
    assert_eq!(from_l2, 3, "the answered gets were used");
    assert_eq!(f.server_reads(), f.files().len() - 3);
    // The second skill's `SKILL.md`: its get waits out one deadline (the store had just
    // answered: it may only be crowded), and the put of the server's bytes a second (the last
    // answer is now two deadlines old): the tier is left alone, and nothing else is sent.
    assert_eq!(f.proxy.count(Fault::Silent), 2, "{:?}", f.proxy.seen());
    assert_eq!(f.proxy.seen().len(), 3 + 2);
    // A get and a put for each file not from the tier.
    assert_eq!(counters(&h)[4], 2 * (f.files().len() - 3) as u64);
}

#[test]
fn g3_a_truncated_object_is_refused_by_its_size_and_the_server_serves_that_file() {
    let Some(f) = faulty(1) else { return };
    let (a_uri, a) = file(&f.skills[0].1, "a.md").clone();
    f.proxy.script(vec![
        Rule::all(Fault::Truncate)
            .method("GET")
            .path(Faulty::key_of(&a)),
    ]);
    let h = f.host(Duration::from_secs(2));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    assert_only_this_file_came_from_the_server(&got, &a_uri);
    assert_eq!(f.server_reads(), 1);
    // The put of the server's bytes finds the object there: never replaced, not counted.
    assert_eq!(counters(&h), [2, 0, 0, 1, 0, 0]);
}

#[test]
fn g3_a_body_cut_off_in_transit_is_never_used_and_the_server_serves_that_file() {
    let Some(f) = faulty(1) else { return };
    let (a_uri, a) = file(&f.skills[0].1, "a.md").clone();
    f.proxy.script(vec![
        Rule::all(Fault::CutBody)
            .method("GET")
            .path(Faulty::key_of(&a)),
    ]);
    let h = f.host(Duration::from_secs(2));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    let a_file = got_file(&got, "a.md");
    assert_eq!(
        (a_file.uri().as_str(), a_file.provenance()),
        (a_uri.as_str(), Provenance::Server)
    );
    assert_eq!(f.proxy.count(Fault::CutBody), 1);
    // The cut body fails the get: the tier is left alone for a while, so the file read with
    // a.md may come from either side; each file came from exactly one.
    let [hits, _, _, rejected, unavailable, _] = counters(&h);
    assert!(hits >= 1, "SKILL.md came from L2 before the cut");
    assert_eq!(rejected, 0);
    assert!(unavailable >= 1);
    assert_eq!(usize::try_from(hits).expect("small") + f.server_reads(), 3);
}

#[test]
fn g3_an_altered_object_is_refused_by_its_digest_and_the_server_serves_that_file_once() {
    let Some(f) = faulty(1) else { return };
    let (a_uri, a) = file(&f.skills[0].1, "a.md").clone();
    f.proxy.script(vec![
        Rule::all(Fault::Alter)
            .method("GET")
            .path(Faulty::key_of(&a)),
    ]);
    let h = f.host(Duration::from_secs(2));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    assert_eq!(
        got_file(&got, "a.md").provenance(),
        Provenance::Server,
        "{a_uri}"
    );
    assert_eq!(f.server_reads(), 1);
    assert_eq!(counters(&h), [2, 0, 0, 1, 0, 0]);
}

#[test]
fn g3_an_object_listed_a_moment_before_then_not_found_is_a_miss_the_server_answers() {
    let Some(f) = faulty(1) else { return };
    let (_, a) = file(&f.skills[0].1, "a.md").clone();
    // Listed through the proxy: the object is there.
    let client = moto_client_at(&f.proxy.endpoint);
    let listed: Vec<String> = f.rt.block_on(async {
        client
            .list(Some(&Path::from("skills")))
            .map(|m| m.expect("list").location.to_string())
            .collect()
            .await
    });
    assert!(listed.contains(&Faulty::key_of(&a)), "{listed:?}");
    // And gone when it is asked for.
    f.proxy.script(vec![
        Rule::all(Fault::NotFound)
            .method("GET")
            .path(Faulty::key_of(&a)),
    ]);
    let h = f.host(Duration::from_secs(2));

    let got = f.load_every_skill(&h);

    assert_every_byte_right(&got, &f.files());
    assert_eq!(got_file(&got, "a.md").provenance(), Provenance::Server);
    assert_eq!(f.server_reads(), 1);
    // A miss; this host claims the file, looks once more (still not found), reads the server;
    // its put meets the object moto still holds (not replaced, not counted), and its claim is
    // cleared.
    assert_eq!(counters(&h), [2, 1, 0, 0, 0, 0]);
    let left: Vec<String> = f.rt.block_on(async {
        client
            .list(Some(&Path::from("skills")))
            .map(|m| m.expect("list").location.to_string())
            .collect()
            .await
    });
    assert!(left.iter().all(|k| !k.contains("/claims/")), "{left:?}");
}

/// An S3 client of bucket `fleet` at `endpoint` (moto, or the proxy in front of it).
fn moto_client_at(endpoint: &str) -> object_store::aws::AmazonS3 {
    object_store::aws::AmazonS3Builder::new()
        .with_bucket_name("fleet")
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_access_key_id("testing")
        .with_secret_access_key("testing")
        .build()
        .expect("client")
}

// ---- 7. a fleet starting cold at once (G2; the small version of examples/fleet.rs) ----------

/// `count` skills named `<stem>-N` of `files` files each besides `SKILL.md`, every file with
/// bytes of its own (one blob per file).
fn many_skills(stem: &str, count: usize, files: usize) -> Vec<(SkillEntry, common::Files)> {
    (0..count)
        .map(|i| {
            let bodies: Vec<(String, Vec<u8>)> = (0..files)
                .map(|f| {
                    (
                        format!("ref/part-{f}.md"),
                        format!("{stem} {i} part {f}\n").into_bytes(),
                    )
                })
                .collect();
            let named: Vec<(&str, &[u8])> = bodies
                .iter()
                .map(|(p, b)| (p.as_str(), b.as_slice()))
                .collect();
            common::skill(&format!("{stem}-{i}"), &named)
        })
        .collect()
}

/// Every object under `prefix` in `store`: its key and the digest of its bytes.
async fn digests_under(store: &dyn ObjectStore, prefix: &str) -> BTreeMap<String, String> {
    let metas: Vec<ObjectMeta> = store
        .list(Some(&Path::from(prefix)))
        .map(|m| m.expect("list"))
        .collect()
        .await;
    let mut out = BTreeMap::new();
    for m in metas {
        let bytes = store
            .get(&m.location)
            .await
            .expect("get")
            .bytes()
            .await
            .expect("bytes");
        out.insert(m.location.to_string(), Digest::of(&bytes).to_string());
    }
    out
}

/// Every file of `skills`, by digest.
fn blobs_of(skills: &[(SkillEntry, common::Files)]) -> BTreeMap<String, Vec<u8>> {
    skills
        .iter()
        .flat_map(|(_, f)| f.iter())
        .map(|(_, b)| (Digest::of(b).to_string(), b.clone()))
        .collect()
}

/// The bucket's `objects` (key to digest) are the public blobs and nothing else: no key of the
/// private origin, no object with a private file's bytes, no claim left behind.
fn holds_exactly_the_public_blobs(
    objects: &BTreeMap<String, String>,
    public_blobs: &BTreeMap<String, Vec<u8>>,
    private_blobs: &BTreeMap<String, Vec<u8>>,
) {
    assert!(
        objects
            .iter()
            .all(|(k, d)| !k.contains("/origins/private/") && !private_blobs.contains_key(d)),
        "a private file reached L2: {objects:?}"
    );
    assert_eq!(
        objects.values().cloned().collect::<BTreeSet<_>>(),
        public_blobs.keys().cloned().collect::<BTreeSet<_>>(),
        "exactly the public blobs, no claim left: {objects:?}"
    );
    assert_eq!(objects.len(), public_blobs.len());
}

#[test]
fn g2_eight_cold_hosts_at_once_read_each_public_blob_once_and_put_no_private_file_in_l2() {
    const HOSTS: usize = 8;
    let Some(moto) = moto::with_bucket("fleet") else {
        return;
    };
    let (public, private) = (Arc::new(Double::new()), Arc::new(Double::new()));
    private.set_hints(json!({"ttlMs": 0, "cacheScope": "private"}));
    let public_skills = many_skills("open", 6, 5);
    let private_skills = many_skills("secret", 2, 3);
    for (entry, files) in &public_skills {
        public.publish(entry, files);
    }
    for (entry, files) in &private_skills {
        private.publish(entry, files);
    }
    let (public_blobs, private_blobs) = (blobs_of(&public_skills), blobs_of(&private_skills));
    // Deadlines and claim waits long enough that only a lost request, never a slow machine,
    // could end one: this test counts server reads, it does not time anything.
    let hosts: Vec<Host> = (0..HOSTS)
        .map(|_| {
            host(
                s3(&moto.endpoint, "s3://fleet/g2", Duration::from_secs(30))
                    .claim_wait(Duration::from_secs(120)),
            )
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("runtime");

    // Every host cold, all at once: each lists and loads every skill of both origins.
    let loaded = rt.block_on(futures_util::future::join_all(hosts.iter().map(|h| {
        let (public, private) = (Arc::clone(&public), Arc::clone(&private));
        let (public_skills, private_skills) = (&public_skills, &private_skills);
        async move {
            let mut got = Vec::new();
            for (o, double, skills) in [
                (origin("docs"), &public, public_skills),
                (origin("private"), &private, private_skills),
            ] {
                h.cache
                    .connect(o.clone(), Arc::clone(double) as Arc<Double>);
                for (entry, _) in skills {
                    let held = h.cache.entry(&o, entry.uri()).await?.entry;
                    let skill = h.cache.load(&o, &held).await?;
                    got.extend(skill.read_all().await?);
                }
            }
            Ok::<_, Error>(got)
        }
    })));

    for got in loaded {
        let got = got.expect("no host failed a load");
        assert_eq!(got.len(), public_blobs.len() + private_blobs.len());
        for f in &got {
            let digest = Digest::of(f.bytes()).to_string();
            assert!(
                public_blobs.contains_key(&digest) || private_blobs.contains_key(&digest),
                "{} holds bytes nobody published",
                f.uri()
            );
        }
    }
    // The server read each public blob once for the whole fleet (≤ 1.05 × on average is the
    // target; claims and the look after a won claim make it exactly once here), and each
    // private file once per host: private files are never shared.
    assert!(
        public.reads() * 100 <= public_blobs.len() * 105,
        "{} server reads for {} public blobs",
        public.reads(),
        public_blobs.len()
    );
    assert_eq!(private.reads(), HOSTS * private_blobs.len());
    let hits: u64 = hosts.iter().map(|h| h.cache.stats()[Counter::L2Hits]).sum();
    assert_eq!(
        usize::try_from(hits).expect("small") + public.reads(),
        HOSTS * public_blobs.len(),
        "every public file came from L2 or the server, once"
    );
    let objects = rt.block_on(digests_under(&moto.raw_client("fleet"), "g2"));
    holds_exactly_the_public_blobs(&objects, &public_blobs, &private_blobs);
}
