//! The host API as a host uses it (issue 11): the approval gate in the library (R-P1),
//! per-principal handles, and the cache's counters (R-P4). Only the public surface a host would
//! touch: `SkillCache`, its builder and handles, `LoadedSkill`, `SkillFile`, the error types, and
//! sources (the counting double, or an in-process `SkillServer` over a folder).

mod common;

use std::sync::Arc;

use common::double::Double;
use serde_json::{Value, json};
use skillcache::DynamicPolicy;
use skillcache::entry::Validation;
use skillcache::error::Declined;
use skillcache::local::SkillServer;
use skillcache::{
    ApprovalPolicy, Counter, Digest, Error, Origin, SkillCache, SkillEntry, SkillUri,
};

fn origin(label: &str) -> Origin {
    Origin::new(label).expect("a valid label")
}

/// A cache under `dir` with every default: approval required.
fn open(dir: &common::Scratch) -> SkillCache {
    SkillCache::builder()
        .root(dir.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .open()
        .expect("cache opens")
}

/// A skill at `skill://{root}/SKILL.md` whose frontmatter holds `extra` besides name and
/// description, with supporting files (relative path, bytes).
fn skill_at(root: &str, extra: &str, files: &[(&str, &[u8])]) -> (SkillEntry, common::Files) {
    let name = root.rsplit('/').next().expect("a name");
    let md = format!("---\nname: {name}\ndescription: The {name} skill.\n{extra}---\n# {name}\n");
    let mut all: common::Files = vec![(format!("skill://{root}/SKILL.md"), md.into_bytes())];
    all.extend(
        files
            .iter()
            .map(|(p, b)| (format!("skill://{root}/{p}"), b.to_vec())),
    );
    let mut frontmatter = json!({"name": name, "description": format!("The {name} skill.")});
    if let Some(tools) = extra.strip_prefix("allowed-tools: ") {
        frontmatter["allowed-tools"] = Value::String(tools.trim_end().to_owned());
    }
    let resources: Vec<Value> = all
        .iter()
        .map(|(u, b)| json!({"uri": u, "digest": Digest::of(b).to_string(), "size": b.len()}))
        .collect();
    let wire = json!({
        "uri": format!("skill://{root}/SKILL.md"),
        "frontmatter": frontmatter,
        "resources": resources,
    });
    let entry = SkillEntry::from_json(&wire, &Validation::default()).expect("fixture is valid");
    (entry, all)
}

fn declined(result: Result<skillcache::LoadedSkill, Error>) -> Declined {
    match result {
        Err(Error::Declined { reason, .. }) => reason,
        Err(e) => panic!("expected a decline, got {e}"),
        Ok(s) => panic!("expected a decline, loaded {}", s.entry().uri()),
    }
}

// ---- 1. The approval gate (R-P1) ------------------------------------------------------------

#[tokio::test]
async fn p1_unapproved_skill_is_declined_by_default_before_any_read() {
    let dir = common::scratch();
    let cache = open(&dir);
    let double = Arc::new(Double::new());
    let (entry, files) = common::skill("notes", &[("a.md", b"A")]);
    double.publish(&entry, &files);
    let o = origin("docs");
    cache.connect(o.clone(), double.clone());

    let held = cache.entry(&o, entry.uri()).await.expect("entry").entry;
    assert_eq!(declined(cache.load(&o, &held).await), Declined::NotApproved);
    assert_eq!(double.reads(), 0, "the gate sends no resources/read");
    assert!(!cache.is_approved(&o, &held).await.expect("index"));

    cache.approve(&o, &held, None).await.expect("approve");
    let skill = cache.load(&o, &held).await.expect("approved: loads");
    assert_eq!(skill.skill_md().bytes(), files[0].1.as_slice());
    assert_eq!(double.reads(), 1, "only SKILL.md once approved");
}

/// The README's host example with its `approve` line removed: `load` fails.
#[tokio::test]
async fn p1_readme_example_without_the_approve_line_fails_to_load() {
    let tmp = common::scratch();
    let skills = tmp.path().join("skills/release-notes");
    std::fs::create_dir_all(skills.join("templates")).expect("mkdir");
    std::fs::write(
        skills.join("SKILL.md"),
        "---\nname: release-notes\ndescription: Drafts release notes.\n---\nUse templates/notes.md.\n",
    )
    .expect("write");
    std::fs::write(skills.join("templates/notes.md"), "# {{version}}\n").expect("write");
    let cache = SkillCache::builder()
        .root(tmp.path().join("cache"))
        .key_file(tmp.path().join("host.key"))
        .open()
        .expect("open");
    let origin = origin("docs-server");
    cache.connect(
        origin.clone(),
        Arc::new(SkillServer::new(tmp.path().join("skills"))),
    );
    let uri = SkillUri::parse("skill://release-notes/SKILL.md").expect("uri");
    let entry = cache.entry(&origin, &uri).await.expect("entry").entry;
    // (no `cache.approve(&origin, &entry, None)` here)
    let err = cache.load(&origin, &entry).await.expect_err("declined");
    assert!(
        matches!(
            &err,
            Error::Declined { origin: o, skill, reason: Declined::NotApproved }
                if o.as_str() == "docs-server" && skill.as_str() == "skill://release-notes/SKILL.md"
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "skill skill://release-notes/SKILL.md from origin docs-server declined: it has not been approved"
    );
}

#[tokio::test]
async fn p1_a2_revoked_approval_is_declined_naming_what_changed() {
    let dir = common::scratch();
    let cache = open(&dir);
    let double = Arc::new(Double::new());
    let (v1, files1) = common::skill("notes", &[("a.md", b"A"), ("b.md", b"B")]);
    double.publish(&v1, &files1);
    let o = origin("docs");
    cache.connect(o.clone(), double.clone());
    let held = cache.entry(&o, v1.uri()).await.expect("entry").entry;
    cache.approve(&o, &held, None).await.expect("approve");
    cache.load(&o, &held).await.expect("approved");

    // The server changes a.md and adds c.md; a refresh revokes the approval.
    let (v2, files2) = common::skill("notes", &[("a.md", b"A2"), ("b.md", b"B"), ("c.md", b"C")]);
    double.publish(&v2, &files2);
    let info = cache.refresh(&o, v1.uri()).await.expect("refresh");
    assert!(info.revoked);
    let reads = double.reads();
    let Declined::Revoked { changes } = declined(cache.load(&o, &info.entry).await) else {
        panic!("expected Revoked");
    };
    assert_eq!(double.reads(), reads, "the gate sends no resources/read");
    let uris =
        |v: &[skillcache::FileUri]| v.iter().map(|u| u.as_str().to_owned()).collect::<Vec<_>>();
    assert_eq!(uris(&changes.added), ["skill://notes/c.md"]);
    assert!(changes.removed.is_empty());
    assert_eq!(
        changes
            .changed
            .iter()
            .map(|c| c.uri.as_str())
            .collect::<Vec<_>>(),
        ["skill://notes/a.md"]
    );

    // Approving the new file set admits it again.
    cache
        .approve(&o, &info.entry, None)
        .await
        .expect("approve again");
    cache.load(&o, &info.entry).await.expect("approved again");
}

#[tokio::test]
async fn p1_a3_dynamic_skill_is_declined_under_required_even_when_dynamic_is_allowed() {
    let dir = common::scratch();
    let cache = SkillCache::builder()
        .root(dir.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .dynamic(DynamicPolicy::AllowUnverified)
        .open()
        .expect("open");
    let double = Arc::new(Double::new());
    let uri = "skill://live/SKILL.md";
    double.publish_json(
        uri,
        json!({"uri": uri, "frontmatter": {"name": "live", "description": "Live."}, "resources": "dynamic"}),
    );
    double.serve_bytes(uri, b"---\nname: live\ndescription: Live.\n---\n");
    let o = origin("docs");
    cache.connect(o.clone(), double.clone());
    let held = cache
        .entry(&o, &SkillUri::parse(uri).expect("uri"))
        .await
        .expect("entry")
        .entry;
    assert!(cache.approve(&o, &held, None).await.is_err(), "R-A3");
    assert_eq!(declined(cache.load(&o, &held).await), Declined::NotApproved);
    assert_eq!(double.reads(), 0);
}

#[tokio::test]
async fn p1_not_required_is_the_explicit_opt_out_and_grants_nothing() {
    let dir = common::scratch();
    let cache = SkillCache::builder()
        .root(dir.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .approval(ApprovalPolicy::NotRequired)
        .open()
        .expect("open");
    let double = Arc::new(Double::new());
    let (entry, files) = skill_at("tools", "allowed-tools: Bash Read\n", &[]);
    double.publish(&entry, &files);
    let o = origin("docs");
    cache.connect(o.clone(), double.clone());
    let held = cache.entry(&o, entry.uri()).await.expect("entry").entry;
    let skill = cache.load(&o, &held).await.expect("no gate");
    assert!(matches!(
        skill.skill_md().verification(),
        skillcache::Verification::Verified(_)
    ));
    assert_eq!(skill.entry().requested_tools(), Some(&json!("Bash Read")));
    assert_eq!(skill.granted_tools(), None, "requested is never granted");
}

#[tokio::test]
async fn p1_a5_nested_skill_needs_its_own_approval_and_gets_no_grant_through_its_parent() {
    let dir = common::scratch();
    let cache = open(&dir);
    let double = Arc::new(Double::new());
    // The nested skill's files are also files of the parent (its folder lies inside).
    let (nested, nested_files) = skill_at(
        "parent/deploy",
        "allowed-tools: Bash\n",
        &[("run.sh", b"echo hi\n")],
    );
    let inner: Vec<(&str, &[u8])> = vec![
        ("deploy/SKILL.md", nested_files[0].1.as_slice()),
        ("deploy/run.sh", nested_files[1].1.as_slice()),
    ];
    let (parent, parent_files) = skill_at("parent", "allowed-tools: Read\n", &inner);
    double.publish(&parent, &parent_files);
    double.publish(&nested, &nested_files);
    let o = origin("docs");
    cache.connect(o.clone(), double.clone());

    let p = cache.entry(&o, parent.uri()).await.expect("entry").entry;
    let granted = p.requested_tools().cloned();
    assert_eq!(granted, Some(json!("Read")));
    cache
        .approve(&o, &p, granted)
        .await
        .expect("approve parent with its grant");
    let parent_skill = cache.load(&o, &p).await.expect("parent loads");
    assert_eq!(parent_skill.granted_tools(), Some(&json!("Read")));
    // Through the parent, the nested SKILL.md is only a file: its request grants nothing.
    let as_file = parent_skill
        .read("deploy/SKILL.md")
        .await
        .expect("a listed file");
    assert_eq!(as_file.bytes(), nested_files[0].1.as_slice());

    // Loaded as its own skill, the parent's approval does not cover it.
    let n = cache.entry(&o, nested.uri()).await.expect("entry").entry;
    let reads = double.reads();
    assert_eq!(declined(cache.load(&o, &n).await), Declined::NotApproved);
    assert_eq!(double.reads(), reads, "declined before any read");

    // Its own approval, without a grant: it loads, and nothing of the parent's grant reaches it.
    cache.approve(&o, &n, None).await.expect("approve nested");
    let nested_skill = cache.load(&o, &n).await.expect("nested loads");
    assert_eq!(nested_skill.entry().requested_tools(), Some(&json!("Bash")));
    assert_eq!(nested_skill.granted_tools(), None);
    // And the parent's grant is still the parent's alone.
    assert_eq!(
        cache.load(&o, &p).await.expect("parent").granted_tools(),
        Some(&json!("Read"))
    );
}

/// The entry `entry` as the server would claim it with another `allowed-tools` (the files, and so
/// the binding, unchanged).
fn claiming_tools(entry: &SkillEntry, tools: &str) -> SkillEntry {
    let mut wire = entry.to_json();
    wire["frontmatter"]["allowed-tools"] = json!(tools);
    SkillEntry::from_json(&wire, &Validation::default()).expect("still a valid entry")
}

fn revoked_naming(reason: Declined, key: &str) {
    match reason {
        Declined::Revoked { changes } => assert!(
            changes.frontmatter.iter().any(|d| d.key == key),
            "the revocation names {key}: {changes}"
        ),
        other => panic!("expected a revocation naming {key}, got {other}"),
    }
}

/// E7: a server inflates `allowed-tools` only in the `skills/get` answered while the host
/// approves with a grant, then answers honestly under the same files. The approval recorded
/// what the skill asked for; the verified `SKILL.md` asks for less, so the load is refused as
/// revoked, naming `allowed-tools`, before any file is read — never loaded with the inflated
/// grant.
#[tokio::test]
async fn e7_a_grant_made_on_an_inflated_claim_is_revoked_when_the_skill_md_asks_otherwise() {
    let dir = common::scratch();
    let cache = open(&dir);
    let double = Arc::new(Double::new());
    let (honest, files) = skill_at("notes", "allowed-tools: Read\n", &[("a.md", b"A")]);
    let inflated = claiming_tools(&honest, "Bash(*) Read Write WebFetch");
    assert_eq!(inflated.binding(), honest.binding(), "the same files");
    double.publish(&inflated, &files);
    let o = origin("docs");
    cache.connect(o.clone(), double.clone());

    let shown = cache.entry(&o, honest.uri()).await.expect("entry").entry;
    cache
        .approve(&o, &shown, shown.requested_tools().cloned())
        .await
        .expect("approve with the grant the entry asks for");
    double.publish(&honest, &files);
    let now = cache.entry(&o, honest.uri()).await.expect("entry");
    assert!(
        now.revoked,
        "the honest entry revokes the approval of the claim"
    );
    assert!(!cache.is_approved(&o, &now.entry).await.expect("query"));
    let reads = double.reads();
    revoked_naming(declined(cache.load(&o, &now.entry).await), "allowed-tools");
    assert_eq!(double.reads(), reads, "refused before any read");

    // Approved as it now is, the grant is what the SKILL.md asks for.
    cache
        .approve(&o, &now.entry, now.entry.requested_tools().cloned())
        .await
        .expect("approve again");
    let skill = cache.load(&o, &now.entry).await.expect("loads");
    assert_eq!(skill.granted_tools(), Some(&json!("Read")));
}

/// E7, the other way round: an approval of the honest entry does not hold for a claim of wider
/// tools under the same files — neither for an entry the cache refreshed nor for one the host
/// holds and passes in itself (the gate compares the held entry with what was approved).
#[tokio::test]
async fn e7_an_approval_never_holds_for_another_allowed_tools_under_the_same_files() {
    let dir = common::scratch();
    let cache = open(&dir);
    let double = Arc::new(Double::new());
    let (honest, files) = skill_at("notes", "allowed-tools: Read\n", &[("a.md", b"A")]);
    let inflated = claiming_tools(&honest, "Bash(*)");
    double.publish(&honest, &files);
    let o = origin("docs");
    cache.connect(o.clone(), double.clone());
    let shown = cache.entry(&o, honest.uri()).await.expect("entry").entry;
    cache
        .approve(&o, &shown, Some(json!("Read")))
        .await
        .expect("approve");

    // A held entry that claims more, never stored: refused at the gate, no request.
    let requests = double.requests();
    revoked_naming(declined(cache.load(&o, &inflated).await), "allowed-tools");
    assert!(!cache.is_approved(&o, &inflated).await.expect("query"));
    assert_eq!(double.requests(), requests, "the gate sends nothing");
    cache
        .load(&o, &shown)
        .await
        .expect("the approved entry still loads");

    // The server starts claiming more: the refresh revokes, and the load says why.
    double.publish(&inflated, &files);
    let now = cache.entry(&o, honest.uri()).await.expect("entry");
    assert!(now.revoked);
    revoked_naming(declined(cache.load(&o, &now.entry).await), "allowed-tools");
}

// ---- 2. One cache, several principals (R-C6, R-H11) -----------------------------------------

#[tokio::test]
async fn c6_private_entry_of_one_handle_is_never_served_to_another() {
    let dir = common::scratch();
    let cache = open(&dir);
    let double = Arc::new(Double::new());
    double.set_hints(json!({"ttlMs": 600_000, "cacheScope": "private"}));
    let (v1, files1) = common::skill("payroll", &[("a.md", b"for alice")]);
    double.publish(&v1, &files1);
    let o = origin("hr");
    cache.connect(o.clone(), double.clone());
    let (alice, bob) = (
        cache.for_principal("alice").expect("a visible principal"),
        cache.for_principal("bob").expect("a visible principal"),
    );
    assert_eq!((alice.principal(), bob.principal()), ("alice", "bob"));

    let a = alice.entry(&o, v1.uri()).await.expect("alice's entry");
    assert!(!a.from_cache);
    assert!(
        alice.entry(&o, v1.uri()).await.expect("again").from_cache,
        "fresh for alice"
    );
    let gets = double.gets.load(std::sync::atomic::Ordering::SeqCst);

    // The server now answers differently: bob must get the server's answer, not alice's row.
    let (v2, files2) = common::skill("payroll", &[("a.md", b"for bob")]);
    double.publish(&v2, &files2);
    let b = bob.entry(&o, v1.uri()).await.expect("bob's entry");
    assert!(!b.from_cache, "alice's private row is not bob's");
    assert_eq!(
        double.gets.load(std::sync::atomic::Ordering::SeqCst),
        gets + 1
    );
    assert_eq!(b.entry.binding(), v2.binding());
    // Alice still holds her own private, fresh copy.
    let again = alice.entry(&o, v1.uri()).await.expect("alice again");
    assert!(again.from_cache);
    assert_eq!(again.entry.binding(), v1.binding());
}

#[tokio::test]
async fn h11_approvals_are_per_handle_and_sources_and_bytes_are_shared() {
    let dir = common::scratch();
    let cache = open(&dir);
    let double = Arc::new(Double::new());
    let (v1, files1) = common::skill("notes", &[("a.md", b"A")]);
    double.publish(&v1, &files1);
    let o = origin("docs");
    // Bound once, on the default handle: every handle reads through it.
    cache.connect(o.clone(), double.clone());
    let (alice, bob) = (
        cache.for_principal("alice").expect("a visible principal"),
        cache.for_principal("bob").expect("a visible principal"),
    );

    let e = alice.entry(&o, v1.uri()).await.expect("entry").entry;
    alice.approve(&o, &e, None).await.expect("alice approves");
    let loaded = alice.load(&o, &e).await.expect("alice loads");
    assert_eq!(loaded.skill_md().provenance().as_str(), "server");
    assert!(!bob.is_approved(&o, &e).await.expect("index"));
    assert!(
        !cache.is_approved(&o, &e).await.expect("index"),
        "nor the default principal"
    );
    assert_eq!(declined(bob.load(&o, &e).await), Declined::NotApproved);

    bob.approve(&o, &e, None).await.expect("bob approves");
    let reads = double.reads();
    let bobs = bob.load(&o, &e).await.expect("bob loads");
    assert_eq!(
        bobs.skill_md().provenance().as_str(),
        "cache",
        "one store for all handles"
    );
    assert_eq!(double.reads(), reads);

    // The server changes a file; alice's refresh revokes alice's approval only. Bob's still
    // names the old file set, so the new entry is declined for him as revoked, with the diff.
    let (v2, files2) = common::skill("notes", &[("a.md", b"A2")]);
    double.publish(&v2, &files2);
    let refreshed = alice.refresh(&o, v1.uri()).await.expect("refresh");
    assert!(refreshed.revoked);
    assert!(matches!(
        declined(alice.load(&o, &refreshed.entry).await),
        Declined::Revoked { .. }
    ));
    let Declined::Revoked { changes } = declined(bob.load(&o, &refreshed.entry).await) else {
        panic!("bob's approval was of the old file set");
    };
    assert_eq!(changes.changed.len(), 1);
    assert_eq!(changes.changed[0].uri.as_str(), "skill://notes/a.md");
    // Bob's approval of what he approved still holds.
    assert!(bob.is_approved(&o, &e).await.expect("index"));
}

#[tokio::test]
async fn h11_the_builder_principal_is_the_default_handle() {
    let dir = common::scratch();
    let cache = SkillCache::builder()
        .root(dir.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .principal("carol")
        .open()
        .expect("open");
    assert_eq!(cache.principal(), "carol");
    assert_eq!(
        cache.clone().principal(),
        "carol",
        "a clone keeps its principal"
    );
    let double = Arc::new(Double::new());
    let (entry, files) = common::skill("notes", &[]);
    double.publish(&entry, &files);
    let o = origin("docs");
    cache.connect(o.clone(), double.clone());
    let e = cache.entry(&o, entry.uri()).await.expect("entry").entry;
    cache.approve(&o, &e, None).await.expect("approve");
    assert!(
        cache
            .for_principal("carol")
            .expect("a visible principal")
            .is_approved(&o, &e)
            .await
            .expect("index")
    );
    assert!(
        !cache
            .for_principal("")
            .expect("the default principal")
            .is_approved(&o, &e)
            .await
            .expect("index")
    );
}

// ---- 3. Observability (R-P4) ----------------------------------------------------------------

/// Every tracing event of this test binary, as formatted lines: one global subscriber, since
/// the cache logs from blocking-pool threads too. Each test looks only at its own origin.
fn events() -> &'static std::sync::Mutex<Vec<u8>> {
    static LOG: std::sync::OnceLock<&'static std::sync::Mutex<Vec<u8>>> =
        std::sync::OnceLock::new();
    LOG.get_or_init(|| {
        let log: &'static std::sync::Mutex<Vec<u8>> =
            Box::leak(Box::new(std::sync::Mutex::new(Vec::new())));
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || Log(log))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        log
    })
}

struct Log(&'static std::sync::Mutex<Vec<u8>>);

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The logged lines that name `origin`, without quotes (fields are logged as strings or as
/// `Display`).
fn lines_of(origin: &str) -> Vec<String> {
    let needle = format!("origin={origin} ");
    String::from_utf8_lossy(&events().lock().expect("lock"))
        .lines()
        .map(|l| format!("{} ", l.replace('"', "")))
        .filter(|l| l.contains(&needle))
        .collect()
}

fn has(lines: &[String], parts: &[&str]) -> bool {
    lines.iter().any(|l| parts.iter().all(|p| l.contains(p)))
}

/// Every regular file under `dir` whose bytes are `bytes` (the cached blobs of a file).
fn blobs_holding(dir: &std::path::Path, bytes: &[u8]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let t = e.file_type().expect("type");
            if t.is_dir() {
                todo.push(e.path());
            } else if t.is_file() && std::fs::read(e.path()).is_ok_and(|b| b == bytes) {
                out.push(e.path());
            }
        }
    }
    out
}

/// What a writer under the root does: make the blob writable, change one byte, put modes back.
fn tamper(blob: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = blob.parent().expect("a folder");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(blob, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let mut bytes = std::fs::read(blob).expect("read");
    bytes[0] ^= 0x20;
    std::fs::write(blob, &bytes).expect("write");
    std::fs::set_permissions(blob, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
}

/// The events `p4_stats_and_events_follow_misses_hits_bytes_and_a_quarantine` logged for
/// `origin`: every step, with origin and URI.
fn every_step_was_logged(origin: &str) {
    let log = lines_of(origin);
    let a = "uri=skill://stats/a.md";
    assert!(has(&log, &["origin bound to a source"]), "{log:#?}");
    assert!(
        has(
            &log,
            &["request sent", "skills/get", "uri=skill://stats/SKILL.md"]
        ),
        "{log:#?}"
    );
    assert!(
        has(&log, &["request sent", "resources/read", a]),
        "{log:#?}"
    );
    assert!(has(&log, &["cache miss", a]), "{log:#?}");
    assert!(has(&log, &["cache hit", a, "mode=hashed"]), "{log:#?}");
    assert!(
        has(&log, &["a cached copy failed verification", a]),
        "{log:#?}"
    );
    assert!(
        has(&log, &["quarantined; fetching it once more", a]),
        "{log:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4_stats_and_events_follow_misses_hits_bytes_and_a_quarantine() {
    events();
    let dir = common::scratch();
    // The disk path is what this test counts: the in-memory tier would serve the tampered file's
    // bytes as verified a moment ago, without a quarantine or a retry.
    let cache = SkillCache::builder()
        .root(dir.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .memory_tier(0)
        .open()
        .expect("cache opens");
    assert_eq!(cache.stats(), skillcache::Stats::default());
    let double = Arc::new(Double::new());
    let (entry, files) = common::skill("stats", &[("a.md", b"AAAA"), ("b.md", b"BBBBBB")]);
    double.publish(&entry, &files);
    let o = origin("p4-stats");
    cache.connect(o.clone(), double.clone());
    let md_len = files[0].1.len() as u64;
    let e = cache.entry(&o, entry.uri()).await.expect("entry").entry;
    cache.approve(&o, &e, None).await.expect("approve");

    // Cold: SKILL.md and a.md are misses, fetched and served.
    let skill = cache.load(&o, &e).await.expect("load");
    skill.read("a.md").await.expect("a.md");
    let s = cache.stats();
    assert_eq!(
        (
            s[Counter::Misses],
            s[Counter::HitsHashed] + s[Counter::HitsEvidence]
        ),
        (2, 0)
    );
    assert_eq!(s[Counter::BytesFetched], md_len + 4);
    assert_eq!(s[Counter::BytesServed], md_len + 4);

    // Warm: every file through read_all; b.md is the only miss left.
    let all = skill.read_all().await.expect("read_all");
    assert_eq!(all.len(), 3);
    let s = cache.stats();
    assert_eq!(
        (
            s[Counter::HitsHashed],
            s[Counter::HitsEvidence],
            s[Counter::Misses]
        ),
        (2, 0, 3),
        "Rehash hashes every hit"
    );
    assert_eq!(s[Counter::BytesFetched], md_len + 4 + 6);
    assert_eq!(s[Counter::BytesServed], 2 * (md_len + 4 + 6) - 6);

    // A tampered cached copy: quarantined, one retry, served from the server. The loads' files
    // reach the disk behind them: wait for them first.
    cache.flush().await;
    let blobs = blobs_holding(&dir.path().join("root"), b"AAAA");
    assert_eq!(blobs.len(), 1, "one blob holds a.md");
    tamper(&blobs[0]);
    let again = skill.read("a.md").await.expect("healed");
    assert!(again.retried());
    let s = cache.stats();
    assert_eq!(
        (
            s[Counter::Quarantines],
            s[Counter::Retries],
            s[Counter::Misses]
        ),
        (1, 1, 4)
    );
    assert_eq!(s[Counter::BytesFetched], md_len + 4 + 6 + 4);
    assert_eq!(
        (
            s[Counter::StoreFailures],
            s[Counter::Timeouts],
            s[Counter::SealFailures]
        ),
        (0, 0, 0)
    );

    // Every step was said, with origin and URI.
    every_step_was_logged("p4-stats");
}

/// `resources/read` never answers; everything else is the double's.
struct Silent(Double);

impl skillcache::source::SkillSource for Silent {
    fn list_skills<'a>(&'a self, cursor: Option<&'a str>) -> skillcache::source::SourceFuture<'a> {
        self.0.list_skills(cursor)
    }
    fn get_skill<'a>(&'a self, uri: &'a str) -> skillcache::source::SourceFuture<'a> {
        self.0.get_skill(uri)
    }
    fn read_resource<'a>(&'a self, _uri: &'a str) -> skillcache::source::SourceFuture<'a> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4_b1_a_missed_deadline_is_counted_and_said() {
    events();
    let dir = common::scratch();
    let cache = SkillCache::builder()
        .root(dir.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .approval(ApprovalPolicy::NotRequired)
        .request_timeout(std::time::Duration::from_millis(200))
        .open()
        .expect("open");
    let silent = Arc::new(Silent(Double::new()));
    let (entry, files) = common::skill("silent", &[]);
    silent.0.publish(&entry, &files);
    let o = origin("p4-silent");
    cache.connect(o.clone(), silent.clone());
    let e = cache.entry(&o, entry.uri()).await.expect("entry").entry;
    let err = cache.load(&o, &e).await.expect_err("no answer");
    assert!(
        matches!(
            err,
            Error::Source(skillcache::error::SourceError::Timeout { .. })
        ),
        "{err}"
    );
    let s = cache.stats();
    assert_eq!(
        (
            s[Counter::Timeouts],
            s[Counter::Misses],
            s[Counter::BytesFetched],
            s[Counter::BytesServed]
        ),
        (1, 1, 0, 0)
    );
    let log = lines_of("p4-silent");
    assert!(
        has(
            &log,
            &[
                "did not answer in time",
                "resources/read",
                "uri=skill://silent/SKILL.md"
            ]
        ),
        "{log:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4_h5_a_failed_store_is_counted_and_reported_never_swallowed() {
    events();
    let dir = common::scratch();
    let mnt = match common::Tmpfs::mount(dir.path().join("mnt"), "4m") {
        Ok(m) => m,
        Err(why) => {
            eprintln!("skipped: {why} (a full disk is made by filling a small tmpfs)");
            return;
        }
    };
    let cache = SkillCache::builder()
        .root(mnt.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .open()
        .expect("open");
    let double = Arc::new(Double::new());
    let (entry, files) = common::skill("unkept", &[]);
    double.publish(&entry, &files);
    let o = origin("p4-unkept");
    cache.connect(o.clone(), double.clone());
    let e = cache.entry(&o, entry.uri()).await.expect("entry").entry;
    cache.approve(&o, &e, None).await.expect("approve");
    // The disk fills under the running cache: nothing more can be kept.
    mnt.fill();
    let skill = cache.load(&o, &e).await.expect("served all the same");
    assert!(!skill.skill_md().stored());
    let s = cache.stats();
    assert_eq!((s[Counter::StoreFailures], s[Counter::Misses]), (1, 1));
    assert_eq!(s[Counter::BytesServed], files[0].1.len() as u64);
    let log = lines_of("p4-unkept");
    assert!(
        has(
            &log,
            &["WARN", "store failed", "uri=skill://unkept/SKILL.md"]
        ),
        "{log:#?}"
    );
}

// ---- 4. Sources that fit rmcp hosts (issue 11, item 6) --------------------------------------

/// One skill in a folder, served by `SkillServer` (fresh for an hour).
fn served_folder(dir: &common::Scratch) -> (std::path::PathBuf, SkillUri) {
    let skills = dir.path().join("skills");
    std::fs::create_dir_all(skills.join("notes")).expect("mkdir");
    std::fs::write(
        skills.join("notes/SKILL.md"),
        "---\nname: notes\ndescription: Takes notes.\n---\n# Notes\n",
    )
    .expect("write");
    (
        skills,
        SkillUri::parse("skill://notes/SKILL.md").expect("uri"),
    )
}

/// `server` answering newline-delimited JSON-RPC on one end of an in-process pipe.
fn serve_pipe(server: SkillServer, end: tokio::io::DuplexStream) -> tokio::task::JoinHandle<()> {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    tokio::spawn(async move {
        let (read, mut write) = tokio::io::split(end);
        let mut lines = tokio::io::BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let message: Value = serde_json::from_str(&line).expect("JSON-RPC from the client");
            if let Some(reply) = server.handle(&message) {
                let mut out = serde_json::to_vec(&reply).expect("serialise");
                out.push(b'\n');
                if write.write_all(&out).await.is_err() {
                    break;
                }
            }
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b4_mcp_source_over_a_hosts_transport_runs_initialize_on_first_use() {
    use skillcache::source::McpSource;
    let dir = common::scratch();
    let (skills, uri) = served_folder(&dir);
    let (client, server) = tokio::io::duplex(1 << 16);
    let task = serve_pipe(SkillServer::new(skills), server);
    let source = Arc::new(McpSource::from_transport(client));
    assert!(
        source.protocol_version().is_none(),
        "nothing runs before a request"
    );
    let cache = open(&dir);
    let o = origin("piped");
    cache.connect(o.clone(), source.clone());
    let e = cache
        .entry(&o, &uri)
        .await
        .expect("skills/get over the pipe")
        .entry;
    assert!(source.protocol_version().is_some());
    cache.approve(&o, &e, None).await.expect("approve");
    let skill = cache.load(&o, &e).await.expect("load over the pipe");
    assert!(skill.skill_md().bytes().starts_with(b"---\nname: notes"));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b5_mcp_source_from_a_hosts_peer_reuses_its_session_and_takes_forwarded_changes() {
    use rmcp::ServiceExt as _;
    use skillcache::source::{Change, McpSource};
    let dir = common::scratch();
    let (skills, uri) = served_folder(&dir);
    let (client, server) = tokio::io::duplex(1 << 16);
    let _task = serve_pipe(SkillServer::new(skills).ttl_ms(3_600_000), server);
    // The host's own session, initialised by the host.
    let session = ().serve(client).await.expect("the host's session initialises");
    let source = Arc::new(McpSource::from_peer(session.peer().clone()));
    let cache = open(&dir);
    let o = origin("peer");
    cache.connect(o.clone(), source.clone());
    let first = cache
        .entry(&o, &uri)
        .await
        .expect("skills/get through the peer");
    assert!(!first.from_cache);
    assert!(
        cache.entry(&o, &uri).await.expect("again").from_cache,
        "fresh for an hour"
    );
    // The host's handler got a change notification and forwards it: the entry is stale.
    source.notify(Change::ListChanged);
    assert!(!cache.entry(&o, &uri).await.expect("asked again").from_cache);
    cache
        .approve(&o, &first.entry, None)
        .await
        .expect("approve");
    let skill = cache
        .load(&o, &first.entry)
        .await
        .expect("load through the peer");
    assert!(matches!(
        skill.skill_md().verification(),
        skillcache::Verification::Verified(_)
    ));
    session.cancel().await.expect("the host ends its session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b4_mcp_source_stdio_spawns_the_command_the_host_built_with_its_environment() {
    use skillcache::source::McpSource;
    let dir = common::scratch();
    let (skills, uri) = served_folder(&dir);
    // The program and folder reach the server only through the environment the host set.
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(r#"exec "$SKILLCACHE_BIN" serve "$SERVED""#)
        .env("SKILLCACHE_BIN", common::bin())
        .env("SERVED", &skills)
        .current_dir(dir.path());
    let cache = open(&dir);
    let o = origin("spawned");
    cache.connect(o.clone(), Arc::new(McpSource::stdio(command)));
    let e = cache.entry(&o, &uri).await.expect("skills/get").entry;
    cache.approve(&o, &e, None).await.expect("approve");
    let skill = cache.load(&o, &e).await.expect("load");
    assert_eq!(
        skill.skill_md().bytes(),
        std::fs::read(skills.join("notes/SKILL.md"))
            .expect("read")
            .as_slice()
    );
}
