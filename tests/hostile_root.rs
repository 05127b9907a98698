//! The cache root is hostile territory (R-H1, R-H2, R-H4, R-H7…R-H13): whoever can write under
//! the root plants links, special files and garbage; the cache must never follow them out, never
//! hang on them, never serve them, and never take a folder that is not its own.
#![allow(clippy::result_large_err)]

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::double::Double;
use skillcache::core::{Cache, CachedRead};
use skillcache::entry::{CacheHints, Scope};
use skillcache::error::Mismatch;
use skillcache::store::{Isolation, LockMode};
use skillcache::{ApprovalPolicy, SkillCache};
use skillcache::{Error, Origin, SkillEntry};

fn origin(s: &str) -> Origin {
    Origin::new(s).expect("valid label")
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Makes every folder below `p` writable (blob folders are 0555) so a test can plant things.
fn open_up(p: &Path) {
    if fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
        fs::set_permissions(p, fs::Permissions::from_mode(0o755)).expect("chmod");
        for e in fs::read_dir(p).expect("list") {
            open_up(&e.expect("entry").path());
        }
    }
}

/// Replaces whatever is at `p` (a folder tree or a file) with what `plant` makes there.
fn replace(p: &Path, plant: impl FnOnce(&Path)) {
    if let Some(parent) = p.parent() {
        fs::set_permissions(parent, fs::Permissions::from_mode(0o755)).expect("chmod parent");
    }
    if fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
        open_up(p);
        fs::remove_dir_all(p).expect("remove");
    } else {
        let _ = fs::remove_file(p);
    }
    plant(p);
}

fn mkfifo(p: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .expect("mkfifo");
    assert!(ok.success(), "mkfifo {}", p.display());
}

/// A socket at `p`. A socket's path must fit in `sun_path` (108 bytes), and a blob's path under a
/// temporary folder may not (`TMPDIR` set to a longer folder, as `.ci/run`'s normal-user pass
/// does): the socket is bound under a short name in the same folder, then renamed into place.
fn socket(p: &Path) -> std::os::unix::net::UnixListener {
    let short = p.with_file_name("s");
    let listener = std::os::unix::net::UnixListener::bind(&short).expect("bind a socket");
    fs::rename(&short, p).expect("rename the socket into place");
    listener
}

/// Every regular file under `dir`, with its bytes (links are not followed).
fn all_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.expect("entry").path();
        let m = fs::symlink_metadata(&p).expect("stat");
        if m.is_dir() {
            out.extend(all_files(&p));
        } else if m.is_file() {
            out.push((p.clone(), fs::read(&p).unwrap_or_default()));
        }
    }
    out
}

fn stored(cache: &Cache, o: &Origin) -> (SkillEntry, common::Files) {
    let (e, files) = common::skill("notes", &[("templates/a.md", b"MARKER-the-template-bytes")]);
    cache
        .put_entry(o, "", &e, CacheHints::new(60_000, Scope::Public))
        .expect("put");
    common::store_all(cache, o, &e, &files);
    (e, files)
}

fn assert_hit(cache: &Cache, o: &Origin, e: &SkillEntry, files: &common::Files) {
    for (f, (_, bytes)) in e.manifest().expect("manifest").files().iter().zip(files) {
        match cache.read_file(o, f).expect("read") {
            CachedRead::Hit(v) => assert_eq!(v.as_slice(), bytes.as_slice()),
            other => panic!("expected a verified hit for {}, got {other:?}", f.uri()),
        }
    }
}

#[test]
fn h1_a_link_where_a_store_folder_belongs_is_replaced_and_nothing_outside_the_root_changes() {
    for at in ["origins", "origin", "sha256", "aa"] {
        let (dir, cache) = common::cache(Isolation::Rehash);
        let o = origin("docs");
        let (e, files) = stored(&cache, &o);
        let layout = cache.store().layout();
        let md = &e.manifest().expect("manifest").files()[0];
        let aa = layout.blob_dir(&o, &md.digest());
        let target = match at {
            "origins" => layout.origins(),
            "origin" => layout.origin_dir(&o),
            "sha256" => layout.origin_dir(&o).join("sha256"),
            _ => aa.clone(),
        };
        // A skill-discovery path, say, that the attacker wants written into.
        let victim = dir.path().join("victim");
        fs::create_dir(&victim).expect("victim");
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::write(victim.join("sentinel"), b"mine").expect("sentinel");
        replace(&target, |p| {
            std::os::unix::fs::symlink(&victim, p).expect("symlink");
        });
        drop(cache);

        let cache = Cache::builder()
            .root(dir.path().join("root"))
            .open()
            .expect("reopen");
        // The planted link is never followed for a read: a failed or missing blob, then healed by
        // publishing again, which replaces the link with a real folder.
        assert!(
            !matches!(cache.read_file(&o, md).expect("read"), CachedRead::Hit(_)),
            "{at}: a hit through a planted link"
        );
        common::store_all(&cache, &o, &e, &files);
        assert_hit(&cache, &o, &e, &files);
        let meta = fs::symlink_metadata(&target).expect("stat");
        assert!(
            meta.is_dir() && !meta.file_type().is_symlink(),
            "{at}: a real folder now"
        );
        let mut inside: Vec<_> = fs::read_dir(&victim)
            .expect("victim")
            .map(|e| e.expect("entry").file_name())
            .collect();
        inside.sort();
        assert_eq!(
            inside,
            ["sentinel"],
            "{at}: nothing written outside the root"
        );
        assert_eq!(
            fs::metadata(&victim).expect("stat").mode() & 0o777,
            0o755,
            "{at}: nothing chmodded outside the root"
        );
    }
}

#[test]
fn h1_a_file_fifo_or_socket_where_a_folder_belongs_is_replaced() {
    for kind in ["file", "fifo", "socket"] {
        let (dir, cache) = common::cache(Isolation::Rehash);
        let o = origin("docs");
        let (e, files) = stored(&cache, &o);
        let md = &e.manifest().expect("manifest").files()[0];
        let aa = cache.store().layout().blob_dir(&o, &md.digest());
        let mut keep = None;
        replace(&aa, |p| match kind {
            "file" => fs::write(p, b"junk").expect("file"),
            "fifo" => mkfifo(p),
            _ => keep = Some(socket(p)),
        });
        drop(cache);
        let cache = Cache::builder()
            .root(dir.path().join("root"))
            .open()
            .expect("reopen");
        common::store_all(&cache, &o, &e, &files);
        assert_hit(&cache, &o, &e, &files);
        assert!(fs::symlink_metadata(&aa).expect("stat").is_dir(), "{kind}");
        drop(keep);
    }
}

#[test]
fn h2_a_missing_root_is_created_0700_and_marked() {
    let dir = common::scratch();
    let root = dir.path().join("a/b/root");
    Cache::builder().root(&root).open().expect("open");
    assert_eq!(fs::metadata(&root).expect("stat").mode() & 0o777, 0o700);
    let tag = fs::read_to_string(root.join("CACHEDIR.TAG")).expect("tag");
    assert!(tag.starts_with("Signature: 8a477f597d28d172789f06886806bc55"));
}

#[test]
fn h2_a_shared_world_writable_folder_is_refused_untouched() {
    let dir = common::scratch();
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).expect("mkdir");
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).expect("chmod");
    let err = Cache::builder().root(&shared).open().expect_err("refused");
    assert!(
        matches!(
            err,
            Error::Store(skillcache::error::StoreError::RootRefused { .. })
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("writable by group or others"),
        "{err}"
    );
    assert_eq!(
        fs::metadata(&shared).expect("stat").mode() & 0o7777,
        0o1777,
        "never chmodded"
    );
    assert_eq!(
        fs::read_dir(&shared).expect("list").count(),
        0,
        "nothing written"
    );
}

#[test]
fn h2_a_folder_that_is_not_ours_is_refused_untouched() {
    let dir = common::scratch();
    let home = dir.path().join("documents");
    fs::create_dir(&home).expect("mkdir");
    fs::set_permissions(&home, fs::Permissions::from_mode(0o750)).expect("chmod");
    fs::write(home.join("thesis.txt"), b"years of work").expect("file");
    let err = Cache::builder().root(&home).open().expect_err("refused");
    assert!(err.to_string().contains("not a skillcache root"), "{err}");
    let names: Vec<_> = fs::read_dir(&home)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["thesis.txt"], "nothing added");
    assert_eq!(fs::metadata(&home).expect("stat").mode() & 0o777, 0o750);
}

#[test]
fn h2_an_empty_folder_of_ours_is_adopted_marked_and_never_chmodded() {
    let dir = common::scratch();
    let root = dir.path().join("empty");
    fs::create_dir(&root).expect("mkdir");
    fs::set_permissions(&root, fs::Permissions::from_mode(0o750)).expect("chmod");
    Cache::builder().root(&root).open().expect("adopted");
    assert!(root.join("CACHEDIR.TAG").is_file());
    assert_eq!(fs::metadata(&root).expect("stat").mode() & 0o777, 0o750);
    // Marked, it stays ours after it fills up.
    Cache::builder().root(&root).open().expect("ours");
}

#[test]
fn h2_a_folder_owned_by_someone_else_is_refused() {
    if !is_root() {
        eprintln!("skipped: giving a folder to another user needs root (chown)");
        return;
    }
    let dir = common::scratch();
    let theirs = dir.path().join("theirs");
    fs::create_dir(&theirs).expect("mkdir");
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
    let err = Cache::builder().root(&theirs).open().expect_err("refused");
    assert!(err.to_string().contains("owned by another user"), "{err}");
    assert_eq!(fs::read_dir(&theirs).expect("list").count(), 0);
}

/// A skill cache over a counting double, for the loading-path tests below.
fn loading(isolation: Isolation) -> (common::Scratch, SkillCache, Arc<Double>, Origin, SkillEntry) {
    let dir = common::scratch();
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(dir.path().join("root"))
        .isolation(isolation)
        .open()
        .expect("open");
    let double = Arc::new(Double::new());
    let (entry, files) = common::skill("notes", &[("templates/a.md", b"MARKER-template")]);
    double.publish(&entry, &files);
    let o = origin("docs");
    cache.connect(o.clone(), double.clone());
    (dir, cache, double, o, entry)
}

/// Under a deadline: a FIFO opened without `O_NONBLOCK` would hang the load, and the test must
/// fail rather than hang the suite.
#[test]
fn h7_a_fifo_socket_folder_or_device_under_a_blob_name_is_a_failed_blob_fetched_once() {
    let done = common::within(Duration::from_secs(120), || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(each_special_file_under_a_blob_name_is_fetched_once());
    });
    assert!(
        done.is_some(),
        "a special file under a blob name hung the load"
    );
}

async fn each_special_file_under_a_blob_name_is_fetched_once() {
    for kind in ["fifo", "socket", "folder", "device"] {
        if kind == "device" && !is_root() {
            eprintln!("skipped the device case: mknod needs root");
            continue;
        }
        let (_dir, cache, double, o, entry) = loading(Isolation::Rehash);
        cache.load(&o, &entry).await.expect("cold load");
        // The load's files reach the disk behind it: wait for them before replacing one.
        cache.flush().await;
        let md = entry.file(entry.uri().file()).expect("listed");
        let blob = cache.core().store().layout().blob_path(&o, &md.digest());
        let mut keep = None;
        replace(&blob, |p| match kind {
            "fifo" => mkfifo(p),
            "socket" => keep = Some(socket(p)),
            "folder" => fs::create_dir(p).expect("mkdir"),
            _ => {
                let ok = std::process::Command::new("mknod")
                    .arg(p)
                    .args(["c", "1", "3"]) // /dev/null's numbers
                    .status()
                    .expect("mknod");
                assert!(ok.success());
            }
        });
        let reads = double.reads();
        let skill = cache.load(&o, &entry).await.expect("healed");
        assert!(skill.skill_md().retried(), "{kind}: fetched once more");
        assert_eq!(double.reads(), reads + 1, "{kind}: exactly one extra read");
        assert_eq!(cache.core().store().quarantined(), 1, "{kind}: quarantined");
        cache.flush().await;
        assert!(
            fs::symlink_metadata(&blob).expect("stat").is_file(),
            "{kind}: a real blob again"
        );
        drop(keep);
    }
}

/// Under a deadline, like the test above: `verify` and `gc` meet FIFOs.
#[test]
fn h7_verify_reports_and_gc_removes_what_is_not_a_blob() {
    let done = common::within(Duration::from_secs(120), verify_and_gc_meet_fifos);
    assert!(done.is_some(), "verify or gc hung on a FIFO");
}

fn verify_and_gc_meet_fifos() {
    let (_dir, cache) = common::cache(Isolation::Rehash);
    let o = origin("docs");
    let (e, _) = stored(&cache, &o);
    let md = &e.manifest().expect("manifest").files()[0];
    let layout = cache.store().layout();
    let blob = layout.blob_path(&o, &md.digest());
    replace(&blob, mkfifo);
    let report = cache.verify(None, |_, _| {}).expect("verify returns");
    assert_eq!(report.corrupt, [(o.clone(), md.digest())]);
    // An unreferenced name that is not a blob: gc removes it.
    let stray = layout.blob_path(&o, &skillcache::Digest::of(b"nobody lists this"));
    open_up(&layout.origins());
    fs::create_dir_all(stray.parent().expect("parent")).expect("mkdir");
    open_up(&layout.origins());
    mkfifo(&stray);
    let gc = cache.gc(None).expect("gc");
    assert_eq!(gc.not_blobs, 1, "{gc:?}");
    assert!(fs::symlink_metadata(&stray).is_err());
}

#[test]
fn h7_a_quarantine_path_that_is_not_a_folder_is_replaced() {
    let (_dir, cache) = common::cache(Isolation::Rehash);
    let o = origin("docs");
    let (e, _) = stored(&cache, &o);
    let md = &e.manifest().expect("manifest").files()[0];
    let layout = cache.store().layout();
    let q = layout.quarantine(&o);
    let victim = common::scratch();
    replace(&q, |p| {
        std::os::unix::fs::symlink(victim.path(), p).expect("link");
    });
    let blob = layout.blob_path(&o, &md.digest());
    replace(&blob, |p| fs::write(p, b"tampered").expect("write"));
    assert!(matches!(
        cache.read_file(&o, md).expect("read"),
        CachedRead::Failed(_)
    ));
    assert_eq!(
        fs::read_dir(victim.path()).expect("list").count(),
        0,
        "nothing moved out"
    );
    assert!(fs::symlink_metadata(&q).expect("stat").is_dir());
    assert_eq!(cache.store().quarantined(), 1);
}

#[test]
fn h9_purge_leaves_no_byte_of_the_origin_anywhere_under_the_root() {
    let (dir, cache) = common::cache(Isolation::Rehash);
    let o = origin("docs");
    let keep = origin("other");
    let (e, _) = stored(&cache, &o);
    let (ek, fk) = common::skill("kept", &[("k.md", b"KEEP-other-origin")]);
    cache
        .put_entry(&keep, "", &ek, CacheHints::new(60_000, Scope::Public))
        .expect("put");
    common::store_all(&cache, &keep, &ek, &fk);
    let layout = cache.store().layout();
    // A quarantined copy (tampered, then caught) and a crashed publisher's temporary.
    let md = &e.manifest().expect("manifest").files()[1];
    let blob = layout.blob_path(&o, &md.digest());
    replace(&blob, |p| fs::write(p, b"MARKER-tampered").expect("write"));
    assert!(matches!(
        cache.read_file(&o, md).expect("read"),
        CachedRead::Failed(_)
    ));
    fs::write(layout.tmp(&o).join("999-0-leftover.tmp"), b"MARKER-partial").expect("tmp");
    cache.purge(&o).expect("purge");
    let root = dir.path().join("root");
    for (path, bytes) in all_files(&root) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("MARKER-"),
            "{} still holds the origin's bytes",
            path.display()
        );
    }
    assert!(
        all_files(&root)
            .iter()
            .any(|(_, b)| b.as_slice() == b"KEEP-other-origin"),
        "another origin is untouched"
    );
}

#[tokio::test]
async fn h10_a_skill_md_that_fails_the_frontmatter_check_is_never_stored() {
    let (_dir, cache, double, o, _) = loading(Isolation::Rehash);
    // The server's entry says one description; the SKILL.md it serves (with an honest digest
    // and size in the manifest) says another.
    let md = common::skill_md("name: liar\ndescription: What the file really says.");
    let wire = serde_json::json!({
        "uri": "skill://liar/SKILL.md",
        "frontmatter": {"name": "liar", "description": "What the entry claims."},
        "resources": [{"uri": "skill://liar/SKILL.md", "digest": skillcache::Digest::of(&md).to_string(), "size": md.len()}],
    });
    double.publish_json("skill://liar/SKILL.md", wire.clone());
    double.serve_bytes("skill://liar/SKILL.md", &md);
    let uri = skillcache::SkillUri::parse("skill://liar/SKILL.md").expect("uri");
    let entry = cache.entry(&o, &uri).await.expect("entry").entry;
    let err = cache.load(&o, &entry).await.expect_err("refused");
    assert!(
        matches!(
            err,
            Error::Verify(skillcache::error::VerifyError {
                mismatch: Mismatch::Frontmatter { .. },
                ..
            })
        ),
        "{err}"
    );
    let blob = cache
        .core()
        .store()
        .layout()
        .blob_path(&o, &skillcache::Digest::of(&md));
    assert!(fs::symlink_metadata(&blob).is_err(), "never stored");
}

#[test]
fn h11_waiting_for_the_lock_is_bounded_and_names_the_holder() {
    let dir = common::scratch();
    let root = dir.path().join("root");
    let holder = Cache::builder().root(&root).open().expect("open");
    let _held = holder
        .store()
        .lock(LockMode::Exclusive, "a long gc")
        .expect("exclusive");
    let waiter = Cache::builder()
        .root(&root)
        .lock_timeout(std::time::Duration::from_millis(300))
        .open()
        .expect("open");
    let o = origin("docs");
    let (e, files) = common::skill("notes", &[]);
    let md = &e.manifest().expect("manifest").files()[0];
    for result in [
        waiter.store_file(&o, md, &files[0].1),
        waiter.gc(None).map(|_| ()),
        waiter.purge(&o),
    ] {
        match result {
            Err(Error::Store(skillcache::error::StoreError::LockTimeout { holder, .. })) => {
                let holder = holder.expect("the holder said who it is");
                assert!(holder.contains("a long gc"), "{holder}");
                assert!(holder.contains(&std::process::id().to_string()), "{holder}");
            }
            other => panic!("expected a lock timeout, got {other:?}"),
        }
    }
}

#[test]
fn h13_labels_that_differ_only_in_case_never_share_a_folder_even_when_case_folds() {
    let labels = [
        "Docs",
        "docs",
        "DOCS",
        "dOcS",
        "Ünïcode",
        "ünïcode",
        "A-b_c.D",
    ];
    let mut folded = std::collections::HashSet::new();
    for l in labels {
        let c = origin(l).path_component().to_ascii_lowercase();
        assert!(
            folded.insert(c.clone()),
            "{l} folds onto another label's folder: {c}"
        );
        assert_eq!(
            Origin::from_path_component(origin(l).path_component()).map(|o| o.as_str().to_owned()),
            Some(l.to_owned())
        );
    }
}

/// Runs in a child process (see below): verifies a root holding a planted 2 GiB sparse file
/// under a blob name, then prints its own peak memory.
#[test]
fn h8_child_verify_large_planted_file() {
    let Some(root) = std::env::var_os("SKILLCACHE_H8_ROOT") else {
        return; // only meaningful as the child of the test below
    };
    let cache = Cache::builder().root(&root).open().expect("open");
    let report = cache.verify(None, |_, _| {}).expect("verify");
    let status = fs::read_to_string("/proc/self/status").expect("status");
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM");
    println!("CORRUPT={} {hwm}", report.corrupt.len());
}

#[test]
fn h8_verify_of_a_planted_huge_file_streams_in_bounded_memory() {
    let (dir, cache) = common::cache(Isolation::Rehash);
    let o = origin("docs");
    let (e, _) = stored(&cache, &o);
    let layout = cache.store().layout().clone();
    // One planted under a recorded blob's name (caught by size before any read), one under a
    // name nobody recorded (hashed by streaming).
    let recorded = layout.blob_path(&o, &e.manifest().expect("manifest").files()[0].digest());
    let unrecorded = layout.blob_path(&o, &skillcache::Digest::of(b"planted"));
    drop(cache);
    open_up(&layout.origins());
    for p in [&recorded, &unrecorded] {
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        let _ = fs::remove_file(p);
        let f = fs::File::create(p).expect("plant");
        f.set_len(2 << 30).expect("2 GiB, sparse");
    }
    let out = std::process::Command::new(std::env::current_exe().expect("self"))
        .args([
            "--exact",
            "h8_child_verify_large_planted_file",
            "--nocapture",
        ])
        .env("SKILLCACHE_H8_ROOT", dir.path().join("root"))
        .output()
        .expect("child");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("CORRUPT="))
        .expect("the child's report");
    assert!(line.starts_with("CORRUPT=2 "), "{line}");
    let kib: u64 = line
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .expect("a number of kB");
    assert!(
        kib < 64 * 1024,
        "peak memory {kib} kB for a 2 GiB planted file"
    );
}

/// Stops a writer thread however the reader ends (a failed assertion must not hang the test).
struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn h4_guaranteed_never_returns_bytes_that_changed_while_it_read() {
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_dir, cache) = common::cache(Isolation::Guaranteed);
    let o = origin("docs");
    let body: Vec<u8> = (0..512 * 1024_u32).map(|i| (i % 251) as u8).collect();
    let (e, files) = common::skill("big", &[("data.bin", &body)]);
    cache
        .put_entry(&o, "", &e, CacheHints::new(60_000, Scope::Public))
        .expect("put");
    common::store_all(&cache, &o, &e, &files);
    let f = &e.manifest().expect("manifest").files()[0];
    let f = if f.uri().as_str().ends_with("data.bin") {
        f.clone()
    } else {
        e.manifest().expect("manifest").files()[1].clone()
    };
    let blob = cache.store().layout().blob_path(&o, &f.digest());
    let stop = AtomicBool::new(false);
    let (mut hits, mut caught) = (0, 0);
    std::thread::scope(|s| {
        let _stop = Stop(&stop);
        // A writer with our uid (the root user ignores the 0444 mode) flips a byte in the middle
        // of the blob and puts it back, over and over, while we read.
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(w) = fs::OpenOptions::new().write(true).open(&blob) {
                    let _ = w.write_at(b"\xff", 300_000);
                    let _ = w.write_at(&body[300_000..300_001], 300_000);
                }
            }
        });
        for _ in 0..400 {
            match cache.read_file(&o, &f).expect("read") {
                CachedRead::Hit(v) => {
                    assert!(
                        v.as_slice() == body.as_slice(),
                        "altered bytes returned as verified"
                    );
                    hits += 1;
                }
                CachedRead::Failed(_) | CachedRead::Miss => {
                    caught += 1;
                    cache.store_file(&o, &f, &body).expect("store again");
                }
            }
        }
    });
    eprintln!("h4: {hits} verified hits, {caught} changed reads caught");
    assert!(hits + caught == 400);
}

/// A root on its own small tmpfs, populated with one loaded skill through a counting double.
async fn populated_tmpfs(
    dir: &Path,
    size: &str,
) -> Option<(common::Tmpfs, Arc<Double>, Origin, SkillEntry)> {
    let mnt = match common::Tmpfs::mount(dir.join("mnt"), size) {
        Ok(m) => m,
        Err(why) => {
            eprintln!("skipped: {why}");
            return None;
        }
    };
    let double = Arc::new(Double::new());
    double.set_hints(serde_json::json!({"ttlMs": 3_600_000, "cacheScope": "public"}));
    let (entry, files) = common::skill("notes", &[("templates/a.md", b"MARKER-template")]);
    double.publish(&entry, &files);
    let o = origin("docs");
    let cache = SkillCache::builder()
        .root(mnt.path().join("root"))
        .open()
        .expect("open");
    cache.connect(o.clone(), double.clone());
    let e = cache.entry(&o, entry.uri()).await.expect("entry").entry;
    cache.approve(&o, &e, None).await.expect("approve");
    let skill = cache.load(&o, &e).await.expect("cold load");
    skill.read_all().await.expect("every file");
    Some((mnt, double, o, entry))
}

#[tokio::test]
async fn h5_a_pre_populated_cache_on_a_read_only_mount_serves_warm_loads() {
    let dir = common::scratch();
    let Some((mnt, double, o, entry)) = populated_tmpfs(dir.path(), "8m").await else {
        return;
    };
    mnt.remount_read_only();
    // A container image: nothing under the root can be written, and nothing needs to be.
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(mnt.path().join("root"))
        .open()
        .expect("opens on a read-only mount");
    cache.connect(o.clone(), double.clone());
    let before = double.requests();
    let e = cache.entry(&o, entry.uri()).await.expect("warm entry");
    assert!(e.from_cache);
    assert!(
        cache
            .is_approved(&o, &e.entry)
            .await
            .expect("approval read")
    );
    let skill = cache.load(&o, &e.entry).await.expect("warm load");
    let files = skill.read_all().await.expect("every file");
    assert!(files.iter().all(|f| matches!(
        f.verification(),
        skillcache::Verification::Verified(_)
    ) && f.provenance() == skillcache::Provenance::Cache));
    assert_eq!(
        double.requests(),
        before,
        "no request: everything was served from the cache"
    );
    // Maintenance with nothing to remove needs no write; one that must write says so clearly
    // instead of half-working.
    cache
        .core()
        .gc(None)
        .expect("nothing to collect: no write needed");
    let err = cache.core().purge(&o).expect_err("purge must write");
    assert!(err.to_string().contains("read-only"), "{err}");
    let again = cache
        .load(&o, &e.entry)
        .await
        .expect("still served after the refused purge");
    assert!(matches!(
        again.skill_md().verification(),
        skillcache::Verification::Verified(_)
    ));
}

#[tokio::test]
async fn h5_gc_and_purge_work_on_a_full_disk_and_free_it() {
    let dir = common::scratch();
    let Some((mnt, _double, o, entry)) = populated_tmpfs(dir.path(), "4m").await else {
        return;
    };
    let cache = Cache::builder()
        .root(mnt.path().join("root"))
        .open()
        .expect("open");
    // An orphan that gc must remove, then a disk with no byte left.
    let orphan = skillcache::Digest::of(b"nobody lists this");
    let (oe, of) = common::skill("orphan", &[("x.md", b"nobody lists this")]);
    let ox = oe
        .manifest()
        .expect("manifest")
        .files()
        .iter()
        .find(|f| f.digest() == orphan)
        .expect("file")
        .clone();
    cache.store_file(&o, &ox, &of[1].1).expect("orphan stored");
    mnt.fill();
    let report = cache.gc(None).expect("gc on a full disk");
    assert!(report.unreferenced >= 1, "{report:?}");
    assert!(!cache.store().layout().blob_path(&o, &orphan).exists());
    cache.purge(&o).expect("purge on a full disk");
    assert!(
        cache.entries(Some(&o)).expect("entries").is_empty(),
        "rows gone"
    );
    assert!(
        !cache.store().layout().origin_dir(&o).exists(),
        "blobs gone"
    );
    let md = entry.file(entry.uri().file()).expect("listed");
    assert!(!cache.store().layout().blob_path(&o, &md.digest()).exists());
}

/// SQLite opens the index by path: a folder above the root that another user can rename
/// entries in lets that user swap the path for a link into a skill discovery path while the
/// cache opens (round 21 of review). Such a root is refused and nothing is made; a sticky
/// folder (`/tmp`) is not such a folder.
#[test]
fn h2_a_root_below_a_folder_others_can_rename_in_is_refused_and_nothing_is_made() {
    let dir = common::scratch();
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).expect("mkdir");
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o775)).expect("chmod");
    let root = shared.join("mine/cache");
    let err = Cache::builder().root(&root).open().expect_err("refused");
    assert!(
        matches!(
            err,
            Error::Store(skillcache::error::StoreError::RootRefused { .. })
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("a folder above it is writable by group or others"),
        "{text}"
    );
    assert!(
        text.contains(&shared.display().to_string()),
        "names the folder: {text}"
    );
    assert!(
        !shared.join("mine").exists(),
        "the folders it made are removed"
    );

    // The sticky bit lets only an entry's owner rename it: the root is taken.
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).expect("chmod");
    Cache::builder()
        .root(&root)
        .open()
        .expect("below a sticky folder");
    assert_eq!(fs::metadata(&root).expect("stat").mode() & 0o777, 0o700);
}

#[test]
fn h2_a_root_below_a_folder_of_another_user_is_refused() {
    if !is_root() {
        eprintln!("skipped: giving a folder to another user needs root");
        return;
    }
    let dir = common::scratch();
    let theirs = dir.path().join("theirs");
    fs::create_dir(&theirs).expect("mkdir");
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
    let err = Cache::builder()
        .root(theirs.join("cache"))
        .open()
        .expect_err("refused");
    assert!(err.to_string().contains("belongs to another user"), "{err}");
    assert!(!theirs.join("cache").exists(), "nothing made");
}
