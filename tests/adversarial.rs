//! Findings of an adversarial review of the hostile-root and bounded-transport work (R-H1, R-H2,
//! R-H6, R-H7, R-H9, R-H11, R-B2, R-B5): each test is one way the guarantees once did not hold,
//! written to fail on the reviewed code, kept so that they never break again. Hang tests run the
//! operation in a thread and give up after a bound: the hang is the bug.
#![allow(clippy::result_large_err)]

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::double::Double;
use serde_json::json;
use skillcache::core::Cache;
use skillcache::entry::{CacheHints, Scope};
use skillcache::source::{Change, OnChange, SkillSource, SourceFuture};
use skillcache::{ApprovalPolicy, SkillCache};
use skillcache::{Error, Origin, SkillUri};

fn origin(s: &str) -> Origin {
    Origin::new(s).expect("valid label")
}

/// A temporary folder with a key file beside (never inside) the root.
struct Place {
    dir: common::Scratch,
}

impl Place {
    fn new() -> Place {
        Place {
            dir: common::scratch(),
        }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn root(&self) -> PathBuf {
        self.path().join("root")
    }
    fn key(&self) -> PathBuf {
        self.path().join("config").join("host.key")
    }
    fn open_at(&self, root: &Path) -> Result<Cache, Error> {
        Cache::builder().root(root).key_file(self.key()).open()
    }
    fn open(&self) -> Cache {
        self.open_at(&self.root()).expect("cache opens")
    }
}

fn skillcache_bin() -> PathBuf {
    common::bin().to_path_buf()
}

// ---------------------------------------------------------------------------------------------
// R-H2: adopting a root that is not ours.

/// Opens `folder`, a user's folder (mode 0755) holding `file` with `bytes`, as a root: it is
/// refused (R-H2) and `file` is still there, unchanged. `what` names the folder in messages.
fn assert_not_adopted(place: &Place, folder: &Path, file: &Path, bytes: &[u8], what: &str) {
    fs::set_permissions(folder, fs::Permissions::from_mode(0o755)).expect("chmod");

    let opened = place.open_at(folder);

    assert_eq!(
        fs::read(file).ok().as_deref(),
        Some(bytes),
        "opening {what} as a root deleted a file in it"
    );
    assert!(
        matches!(
            opened,
            Err(Error::Store(
                skillcache::error::StoreError::RootRefused { .. }
            ))
        ),
        "{what} was adopted: {opened:?}"
    );
}

/// A cargo `target/` folder: it carries the *standard* `CACHEDIR.TAG` signature (every tool that
/// follows the spec writes the same first line) and a `tmp/` folder of its own. The signature says
/// "a cache", not "skillcache's cache": adopting it makes even a read-only command (`stats`)
/// delete the user's `target/tmp` as a "legacy staging folder".
#[test]
fn h2_a_foreign_cachedir_tag_does_not_make_a_folder_ours_and_nothing_in_it_is_deleted() {
    let place = Place::new();
    let target = place.path().join("target");
    fs::create_dir_all(target.join("tmp")).expect("mkdir");
    fs::create_dir_all(target.join("debug")).expect("mkdir");
    fs::write(
        target.join("CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n\
         # This file is a cache directory tag created by cargo.\n\
         # For information about cache directory tags see https://bford.info/cachedir/\n",
    )
    .expect("tag");
    fs::write(target.join("tmp/keep.txt"), b"a user's file").expect("write");

    assert_not_adopted(
        &place,
        &target,
        &target.join("tmp/keep.txt"),
        b"a user's file",
        "a folder marked by another tool's CACHEDIR.TAG",
    );
}

/// A folder whose only name is `tmp/` (a user's scratch folder) passes as a "first-layout root"
/// and its `tmp/` is swept on open.
#[test]
fn h2_a_folder_holding_only_a_users_tmp_is_not_adopted_and_nothing_is_deleted() {
    let place = Place::new();
    let work = place.path().join("work");
    fs::create_dir_all(work.join("tmp")).expect("mkdir");
    fs::write(work.join("tmp/notes.txt"), b"a user's notes").expect("write");

    assert_not_adopted(
        &place,
        &work,
        &work.join("tmp/notes.txt"),
        b"a user's notes",
        "a user's folder holding only tmp/",
    );
}

// ---------------------------------------------------------------------------------------------
// R-H1: nothing is written outside the root — hard links are links too.

/// The lock file is opened by name and truncated by the exclusive holder (and on dropping the
/// guard). A hard link planted under `lock` made every open (its temporary sweep takes the
/// exclusive lock) truncate, and `gc` overwrite, a file outside the root. A lock file with
/// another name is locked, never written, and never removed (round 30 of review, B: removing
/// one could leave a live holder's lock on a file nobody opens again).
#[test]
fn h1_a_hard_link_planted_as_the_lock_file_never_writes_outside_the_root() {
    let place = Place::new();
    drop(place.open());
    let victim = place.path().join("victim.txt");
    fs::write(&victim, b"precious bytes outside the root").expect("victim");
    let lock = place.root().join("lock");
    let _ = fs::remove_file(&lock);
    fs::hard_link(&victim, &lock).expect("plant a hard link");

    let cache = place.open();
    cache
        .gc(None)
        .expect("gc takes a lock file with another name");
    drop(cache);

    assert!(
        fs::read(&victim).expect("victim still there") == b"precious bytes outside the root",
        "a file outside the root was written through a hard link named `lock`"
    );
    assert_eq!(
        fs::read(&lock).expect("the name stays"),
        b"precious bytes outside the root",
        "the lock file's name was removed or written"
    );
}

/// What an open says of an index file with another name, and that it is left as it was.
fn assert_refused_for_another_name(opened: Result<Cache, Error>, file: &Path) {
    let Err(e) = opened else {
        panic!("a cache opened over {} with a second name", file.display());
    };
    let text = e.to_string();
    assert!(
        matches!(
            &e,
            Error::Store(skillcache::error::StoreError::RootRefused { path, .. }) if path == file
        ) && text.contains("another name")
            && text.contains("cp -al"),
        "not a refusal naming {}: {text}",
        file.display()
    );
}

/// `SQLite` opens `index.sqlite3-shm` by path and (re)initialises it. A hard link planted there
/// to a file outside the root would have that file truncated and overwritten: the open refuses,
/// says why, and writes nothing; once the name is the cache's own again, it opens with its rows.
#[test]
fn h1_a_hard_link_planted_as_the_index_shm_never_writes_outside_the_root() {
    let place = Place::new();
    let o = origin("docs");
    let uri = SkillUri::parse("skill://notes/SKILL.md").expect("uri");
    {
        let cache = place.open();
        let (e, _) = common::skill("notes", &[]);
        cache
            .put_entry(&o, "", &e, CacheHints::new(60_000, Scope::Public))
            .expect("put");
    }
    let victim = place.path().join("victim.txt");
    let precious = vec![b'x'; 40_000];
    fs::write(&victim, &precious).expect("victim");
    let shm = place.root().join("index.sqlite3-shm");
    let _ = fs::remove_file(&shm);
    fs::hard_link(&victim, &shm).expect("plant a hard link");

    assert_refused_for_another_name(place.open_at(&place.root()), &shm);

    let after = fs::read(&victim).expect("victim still there");
    assert!(
        after == precious,
        "a file outside the root was written through a hard link named index.sqlite3-shm \
         ({} bytes before, {} after)",
        precious.len(),
        after.len()
    );
    fs::remove_file(&shm).expect("the person removes the planted name");
    let cache = place.open();
    assert!(
        cache.entry(&o, &uri, "").expect("read").is_some(),
        "the index lost its rows"
    );
}

/// A hard-link copy of a live cache (`cp -al`, a hard-link backup) gives the index a second name.
/// Opening a cache once removed the index's name while another process wrote it: that process's
/// writes (approvals among them) went to a file nobody opened again (round 30 of review, B).
/// Now the open refuses and says what to do; the cache in use goes on, and nothing is lost.
#[test]
fn h1_a_hard_link_copy_of_a_live_index_is_refused_and_loses_nothing() {
    let place = Place::new();
    let o = origin("docs");
    let live = place.open();
    let (notes, _) = common::skill("notes", &[]);
    let hints = CacheHints::new(60_000, Scope::Public);
    live.put_entry(&o, "", &notes, hints).expect("put");
    let index = place.root().join("index.sqlite3");
    let backup = place.path().join("backup");
    fs::create_dir(&backup).expect("mkdir");
    fs::hard_link(&index, backup.join("index.sqlite3")).expect("cp -al");

    assert_refused_for_another_name(place.open_at(&place.root()), &index);

    // The cache in use writes on, into the file the root names.
    let (guide, _) = common::skill("guide", &[]);
    live.put_entry(&o, "", &guide, hints)
        .expect("put after the refusal");
    drop(live);
    fs::remove_file(backup.join("index.sqlite3")).expect("the person drops the linked copy");
    let cache = place.open();
    for name in ["notes", "guide"] {
        let uri = SkillUri::parse(&format!("skill://{name}/SKILL.md")).expect("uri");
        assert!(
            cache.entry(&o, &uri, "").expect("read").is_some(),
            "{name}: written by the live cache, lost"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// R-H7: anything that is not what belongs there is replaced — the lock file too.

/// A socket under `lock` (ENXIO on open) is neither removed nor tolerated: every `gc`, `purge`,
/// `verify` and publish fails until a person removes it by hand.
#[test]
fn h7_a_socket_where_the_lock_file_belongs_does_not_break_gc_forever() {
    let place = Place::new();
    drop(place.open());
    let lock = place.root().join("lock");
    fs::remove_file(&lock).expect("rm lock");
    let _listener = std::os::unix::net::UnixListener::bind(&lock).expect("bind");

    let cache = place.open();
    let first = cache.gc(None);
    let second = cache.gc(None);
    assert!(
        first.is_ok() && second.is_ok(),
        "a socket planted as the lock file makes gc fail: {first:?} / {second:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// R-H6: a damaged index heals — damage that SQLite does not call "corrupt" included.

/// A root writer replaces a table (valid `SQLite`, `user_version` untouched). Opening succeeds,
/// then every lookup fails with "no such table" — exit 1 on every command, forever; the heal
/// only runs for `SQLITE_NOTADB`/`SQLITE_CORRUPT` at open.
#[tokio::test]
async fn h6_an_index_whose_schema_was_replaced_heals_instead_of_failing_forever() {
    let place = Place::new();
    let double = Arc::new(Double::new());
    let (entry, files) = common::skill("pdf", &[]);
    double.publish(&entry, &files);
    let o = origin("docs");
    drop(place.open());
    {
        let conn = rusqlite::Connection::open(place.root().join("index.sqlite3")).expect("open");
        conn.execute_batch("DROP TABLE files; DROP TABLE entries; CREATE TABLE entries(x);")
            .expect("attacker edits the schema");
    }
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(place.root())
        .key_file(place.key())
        .open()
        .expect("opens");
    cache.connect(o.clone(), double.clone());
    let got = cache.entry(&o, entry.uri()).await;
    assert!(
        got.is_ok(),
        "an index with a replaced table is an error on every call, not healed: {got:?}"
    );
}

/// A root writer replaces `origins` by a view that never ends (a recursive CTE). Every lookup
/// spins forever: no busy timeout, no deadline, no heal applies to a query that runs.
#[test]
fn h6_a_hostile_view_in_the_index_cannot_hang_a_lookup() {
    let place = Place::new();
    drop(place.open());
    {
        let conn = rusqlite::Connection::open(place.root().join("index.sqlite3")).expect("open");
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF;
             DROP TABLE origins;
             CREATE VIEW origins(id, label) AS
               WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
               SELECT x, printf('label-%d', x) FROM c;",
        )
        .expect("attacker plants a view");
    }
    let root = place.root();
    let key = place.key();
    let done = common::within(Duration::from_secs(20), move || {
        let cache = Cache::builder().root(root).key_file(key).open()?;
        let uri = SkillUri::parse("skill://pdf/SKILL.md").expect("uri");
        cache.entry(&origin("docs"), &uri, "").map(|e| e.is_some())
    });
    assert!(
        done.is_some(),
        "an index lookup did not finish within 20 s: a planted view hangs every command"
    );
}

// ---------------------------------------------------------------------------------------------
// R-H9 / R-H1: maintenance survives whatever tree is planted under the root.

/// Makes `depth` nested folders named `d` under `dir` (relative to descriptors, as an attacker
/// with write access would: no path length limit applies).
fn plant_deep_tree(dir: &Path, depth: usize) {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut fd = rustix::fs::open(dir, flags, Mode::empty()).expect("open");
    for _ in 0..depth {
        rustix::fs::mkdirat(&fd, "d", Mode::from_raw_mode(0o755)).expect("mkdirat");
        fd = rustix::fs::openat(&fd, "d", flags, Mode::empty()).expect("openat");
    }
}

/// `remove_tree` recurses holding one descriptor per level: a planted tree deeper than the
/// descriptor limit (or the stack) makes `gc` fail (or crash) every time, and `purge` leaves the
/// origin's folder behind. Run through the CLI, as a user would.
#[test]
fn h9_gc_and_purge_remove_a_deeply_nested_planted_tree() {
    let place = Place::new();
    let o = origin("docs");
    {
        let cache = place.open();
        let (e, files) = common::skill("notes", &[("a.md", b"a")]);
        cache
            .put_entry(&o, "", &e, CacheHints::new(60_000, Scope::Public))
            .expect("put");
        common::store_all(&cache, &o, &e, &files);
    }
    let odir = place.root().join("origins").join(o.path_component());
    let tmp = odir.join("tmp");
    fs::set_permissions(&odir, fs::Permissions::from_mode(0o755)).expect("chmod");
    fs::create_dir_all(&tmp).expect("tmp");
    fs::create_dir(tmp.join("deep")).expect("deep");
    plant_deep_tree(&tmp.join("deep"), 25_000);
    fs::set_permissions(&odir, fs::Permissions::from_mode(0o555)).expect("chmod");

    let run = |args: &[&str]| {
        std::process::Command::new(skillcache_bin())
            .env("SKILLCACHE_ROOT", place.root())
            .env("SKILLCACHE_KEY_FILE", place.key())
            .args(args)
            .output()
            .expect("run skillcache")
    };
    let gc = run(&["gc"]);
    let purge = run(&["purge", "--origin", "docs"]);
    let left = fs::symlink_metadata(&odir).is_ok();
    // Clean up with a tool that handles deep trees (std's remove_dir_all recurses too).
    let _ = std::process::Command::new("rm")
        .arg("-rf")
        .arg(place.path())
        .status();
    assert!(
        gc.status.success(),
        "gc on a root with a deep planted tree: {:?} {}",
        gc.status,
        String::from_utf8_lossy(&gc.stderr)
    );
    assert!(
        purge.status.success() && !left,
        "purge on a root with a deep planted tree: {:?} {} (origin folder left: {left})",
        purge.status,
        String::from_utf8_lossy(&purge.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// R-B5 / R-B2: change notifications are server input, and must be bounded like any other.

/// A source that hands its change callback to the test, as a server's notifications would.
#[derive(Default)]
struct Notifier {
    sink: Mutex<Option<OnChange>>,
}

impl SkillSource for Notifier {
    fn list_skills<'a>(&'a self, _cursor: Option<&'a str>) -> SourceFuture<'a> {
        Box::pin(async { Ok(json!({"skills": []})) })
    }
    fn get_skill<'a>(&'a self, _uri: &'a str) -> SourceFuture<'a> {
        Box::pin(async { Ok(json!({})) })
    }
    fn read_resource<'a>(&'a self, _uri: &'a str) -> SourceFuture<'a> {
        Box::pin(async { Ok(json!({"contents": []})) })
    }
    fn watch(&self, on_change: OnChange) {
        *self.sink.lock().expect("lock") = Some(on_change);
    }
}

/// Runs the named test alone in a fresh process of this test binary and fails if it fails there;
/// `true` inside that process, where the caller then does the work.
fn alone_in_a_process(test: &str) -> bool {
    const CHILD: &str = "SKILLCACHE_TEST_ALONE";
    if std::env::var_os(CHILD).is_some_and(|v| v == test) {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, test)
        .output()
        .expect("runs the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} alone in a process: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

fn rss_bytes() -> u64 {
    let status = fs::read_to_string("/proc/self/status").expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmRSS")
        * 1024
}

/// Every `notifications/resources/updated` keeps its URI (any string the server chooses, up to
/// the 32 MiB message bound) in a per-origin map that is never pruned: a server that keeps
/// notifying grows the host's memory without bound. 384 notifications of 1 MiB each — about 12
/// messages' worth of the bound — must not keep hundreds of MiB alive.
///
/// The resident size is the process's, so the test runs alone in a process of its own: tests on
/// other threads of this binary allocate and free at the same time and would move it.
#[test]
fn b5_change_notifications_cannot_grow_the_hosts_memory_without_bound() {
    if !alone_in_a_process("b5_change_notifications_cannot_grow_the_hosts_memory_without_bound") {
        return;
    }
    let place = Place::new();
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(place.root())
        .key_file(place.key())
        .open()
        .expect("opens");
    let source = Arc::new(Notifier::default());
    cache.connect(origin("docs"), source.clone());
    let sink = source.sink.lock().expect("lock").clone().expect("watched");

    let before = rss_bytes();
    for i in 0..384u32 {
        let mut uri = format!("skill://flood/{i:08}/");
        uri.push_str(&"x".repeat(1 << 20));
        sink(Change::Updated { uri });
    }
    let grown = rss_bytes().saturating_sub(before);
    assert!(
        grown < 64 << 20,
        "384 change notifications kept {} MiB alive in the host",
        grown >> 20
    );
    drop(cache);
}

// ---------------------------------------------------------------------------------------------
// R-H11 / R-B1: bounded time — a held lock costs one bounded wait, not one per file.

/// Whoever holds the cache's exclusive lock (a long `gc`, or a root writer who replaced `lock`
/// by a file of their own and keeps it locked) makes *every* store of a fetched file wait the
/// whole lock timeout, one file after the other: `read_all` of a skill with N files takes N lock
/// timeouts (512 files × 30 s ≈ 4 h at the defaults), although each file is verified and served.
#[tokio::test(flavor = "multi_thread")]
async fn h11_a_held_lock_costs_a_load_one_bounded_wait_not_one_per_file() {
    let place = Place::new();
    let double = Arc::new(Double::new());
    let names: Vec<String> = (0..12).map(|i| format!("refs/f{i:02}.md")).collect();
    let bodies: Vec<Vec<u8>> = (0..12).map(|i| format!("file {i}").into_bytes()).collect();
    let listed: Vec<(&str, &[u8])> = names
        .iter()
        .zip(&bodies)
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let (entry, files) = common::skill("many", &listed);
    double.publish(&entry, &files);
    let o = origin("docs");
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(place.root())
        .key_file(place.key())
        .lock_timeout(Duration::from_secs(1))
        .open()
        .expect("opens");
    cache.connect(o.clone(), double.clone());

    // Another holder of the exclusive lock (a separate open file description).
    let holder = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(place.root().join("lock"))
        .expect("open lock");
    holder.lock().expect("exclusive lock");

    let (tx, rx) = mpsc::channel();
    let task = tokio::spawn(async move {
        let loaded = cache.load(&o, &entry).await.expect("load");
        let all = loaded.read_all().await.map(|v| v.len());
        let _ = tx.send(all);
    });
    // One bounded wait takes about 1 s; one wait per file would take 13 s. The bound between them
    // is wide, so a slow machine (or the suite run as a normal user beside other tests) does not
    // turn a pass into a failure.
    let done = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(9)))
        .await
        .expect("join");
    drop(holder);
    let _ = task.await;
    assert!(
        matches!(done, Ok(Ok(13))),
        "loading 13 files while the lock is held (lock timeout 1 s) did not finish within 9 s: \
         {done:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// R-B2: bounded memory — a message inside the bound must not become gigabytes once parsed.

/// A stdio MCP server (Python, no dependencies) that declares the skills extension and answers
/// every other request with a result padded by `[0,0,0,…]` up to just under the 32 MiB bound.
const PADDING_SERVER: &str = r#"
import json, sys
# Written in 1 MiB pieces, never held whole: GNU time's peak counts a reaped child too, so the
# server's own memory must stay far below the bound this test checks on the CLI (a 30 MiB
# string, then the reply around it, then its encoding, would be 90+ MiB of the server's own).
piece = b"0," * (512 * 1024)
out = sys.stdout.buffer
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}},
                  "serverInfo": {"name": "padding", "version": "1"}}
        out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode() + b"\n")
    else:
        try:
            out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(msg["id"]).encode() + b',"result":{"pad":[')
            for _ in range(30):
                out.write(piece)
            out.write(b'0]}}\n')
        except BrokenPipeError:
            break
    out.flush()
"#;

/// The bound caps the *bytes* of a message (32 MiB + 64 KiB), but the whole message is then
/// parsed into a `serde_json::Value` (rmcp's `CustomResult`) before any of our checks look at
/// it. `[0,0,…]` costs 2 bytes a number on the wire and 32 bytes (plus `Vec` growth) in a
/// `Value`: one answer inside the bound takes the CLI's peak memory to about a gigabyte, far
/// from the README's "a 200 MB answer peaks at about 50 MB" and the 100 MB the tests assert.
#[test]
fn b2_an_answer_inside_the_message_bound_cannot_take_a_gigabyte_once_parsed() {
    let place = Place::new();
    let server = place.path().join("padding_server.py");
    fs::write(&server, PADDING_SERVER).expect("write server");
    let report = place.path().join("time-report");
    let out = std::process::Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(skillcache_bin())
        .env("SKILLCACHE_ROOT", place.root())
        .env("SKILLCACHE_KEY_FILE", place.key())
        .args([
            "entry",
            "--timeout",
            "60",
            "skill://pdf/SKILL.md",
            "--origin",
            "pad",
        ])
        .arg("--stdio")
        .arg(format!("python3 '{}'", server.display()))
        .output()
        .expect("/usr/bin/time (GNU time) runs");
    let text = fs::read_to_string(&report).expect("time wrote its report");
    let kib: u64 = text
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("a peak RSS in KiB, got {text:?}"));
    assert_eq!(
        out.status.code(),
        Some(4),
        "an invalid entry from the server is exit 4: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        kib < 100 * 1024,
        "one answer inside the message bound took the CLI to {} MiB",
        kib / 1024
    );
}

// ---------------------------------------------------------------------------------------------
// Round 31 of review: a name looked at, then acted on, by processes at once.

/// The index's files open by path live under the same names the scrub removes links from. A
/// scrub that saw a planted link removed, later, whatever was there by then: another cache's live
/// log, made since, and that cache's acknowledged writes were lost (round 31 of review). A name is
/// now removed only under the exclusive turn, looked at again there.
#[test]
fn h1_links_planted_as_the_log_while_caches_open_at_once_lose_no_write() {
    use std::sync::Barrier;
    let place = Place::new();
    let o = origin("docs");
    drop(place.open());
    let outside = place.path().join("outside");
    let threads = 6;
    for round in 0..30 {
        for suffix in ["-wal", "-shm"] {
            let planted = place.root().join(format!("index.sqlite3{suffix}"));
            let _ = fs::remove_file(&planted);
            std::os::unix::fs::symlink(&outside, &planted).expect("plant");
        }
        let start = Arc::new(Barrier::new(threads));
        let writers: Vec<_> = (0..threads)
            .map(|i| {
                let (start, o) = (Arc::clone(&start), o.clone());
                let (root, key) = (place.root(), place.key());
                std::thread::spawn(move || {
                    start.wait();
                    let cache = Cache::builder()
                        .root(&root)
                        .key_file(&key)
                        .open()
                        .expect("open");
                    let (e, _) = common::skill(&format!("r{round}w{i}"), &[]);
                    cache
                        .put_entry(&o, "", &e, CacheHints::new(600_000, Scope::Public))
                        .expect("put");
                    cache
                })
            })
            .collect();
        let caches: Vec<Cache> = writers
            .into_iter()
            .map(|w| w.join().expect("writer"))
            .collect();
        assert!(
            !outside.exists(),
            "round {round}: a file made outside the root"
        );
        drop(caches);
        let cache = place.open();
        for i in 0..threads {
            let uri = SkillUri::parse(&format!("skill://r{round}w{i}/SKILL.md")).expect("uri");
            assert!(
                cache.entry(&o, &uri, "").expect("read").is_some(),
                "round {round}: writer {i}'s acknowledged entry was lost"
            );
        }
    }
}

/// A lock file planted as a FIFO or a link is replaced. A locker that saw it removed, later,
/// the lock file another locker had made and locked since, and made a second one: two exclusive
/// holders at once, gc beside a publish (round 31 of review).
#[test]
fn h7_a_fifo_or_link_planted_as_the_lock_file_never_gives_two_exclusive_holders() {
    use skillcache::store::LockMode;
    use std::sync::Barrier;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let place = Place::new();
    let lockers = 6;
    let caches: Arc<Vec<Cache>> = Arc::new((0..lockers).map(|_| place.open()).collect());
    let lock = place.root().join("lock");
    for fifo in [true, false] {
        for round in 0..40 {
            let _ = fs::remove_file(&lock);
            if fifo {
                let made = std::process::Command::new("mkfifo")
                    .arg(&lock)
                    .status()
                    .expect("mkfifo");
                assert!(made.success());
            } else {
                std::os::unix::fs::symlink(place.path().join("nowhere"), &lock).expect("plant");
            }
            let (inside, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let start = Arc::new(Barrier::new(lockers));
            let threads: Vec<_> = (0..lockers)
                .map(|i| {
                    let (caches, start) = (Arc::clone(&caches), Arc::clone(&start));
                    let (inside, most) = (Arc::clone(&inside), Arc::clone(&most));
                    std::thread::spawn(move || {
                        start.wait();
                        let held = caches[i]
                            .store()
                            .lock(LockMode::Exclusive, "a test")
                            .expect("lock");
                        most.fetch_max(inside.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(held);
                    })
                })
                .collect();
            for t in threads {
                t.join().expect("locker");
            }
            let most = most.load(Ordering::SeqCst);
            assert_eq!(
                most, 1,
                "fifo {fifo}, round {round}: {most} exclusive holders at once"
            );
        }
    }
}

/// The scrub looks at the index's names when a cache opens; a link renamed over
/// `index.sqlite3` after that was followed by `SQLite`, which made a database outside the root
/// (round 31 of review). Every open of the index refuses a link now.
#[test]
fn h1_a_link_renamed_over_the_index_after_the_scrub_is_never_followed() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let place = Place::new();
    drop(place.open());
    let outside = place.path().join("outside.db");
    let stop = Arc::new(AtomicBool::new(false));
    let racer = {
        let (root, outside, stop) = (place.root(), outside.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let staged = root.join("planted.tmp");
            while !stop.load(Ordering::Relaxed) {
                let _ = fs::remove_file(&staged);
                if std::os::unix::fs::symlink(&outside, &staged).is_ok() {
                    let _ = fs::rename(&staged, root.join("index.sqlite3"));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };
    let began = std::time::Instant::now();
    while began.elapsed() < Duration::from_secs(5) && !outside.exists() {
        drop(place.open_at(&place.root()));
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().expect("racer");
    assert!(
        !outside.exists(),
        "SQLite followed a link planted after the scrub"
    );
}
