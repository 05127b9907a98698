//! Model-based: a random sequence of operations — load, read, tamper a blob, plant a link or a
//! FIFO where a folder belongs, forge an index row, gc, purge, crash at the N-th write, reopen,
//! change the server's files — run against the real cache (a real root on tmpfs, the real index,
//! the real write seam with faults injected) and a simple model of what the servers published.
//!
//! Invariants, checked after every step (issue 9, "Proof, not hope"):
//! - **No wrong byte is ever returned as verified**: every `SkillFile` the cache hands out is
//!   verified, its bytes hash to its digest, it carries the origin it was read under (R-O4), and
//!   that origin's server published that digest for that URI at some point (R-V2, R-V9, R-H3).
//! - **Nothing is ever written outside the root** (R-H1): a watched folder beside the root, that
//!   planted links point into, keeps exactly its names, kinds, modes and bytes; nothing new
//!   appears beside the root.
//! - A file the held entry does not list is never read (R-V4).
//! - At the end, the cache heals (R-H1, R-H7, R-V9): reopened on the real disk, every skill of
//!   an honest server refreshes, loads and reads in full, with the server's current bytes.
//!
//! Under `Isolation::Guaranteed` the host promises that nobody else writes the root, so the
//! target only breaks that promise in ways the evidence is documented to see (a changed size, a
//! name that is not a regular file, a second link); in-place rewrites and forged rows are
//! `Rehash`-only attacks.
//!
//! Environment (for reproducing known-open findings without stopping a long run):
//! - `MODEL_FORGE_ENTRIES=0` leaves out forging `entries.entry_json` (issue 9 item 3, sealed
//!   rows: fails until the seals land).
//! - `MODEL_LIVENESS=0` leaves out the final healing check.
#![no_main]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use skillcache::source::{SkillSource, SourceFuture};
use skillcache::store::{Fault, FaultyDisk, Isolation, Layout};
use skillcache::{Digest, Error, FileUri, LoadedSkill, Origin, SkillCache, SkillFile, SkillUri};

/// Skills per origin; both origins publish the same URIs with (usually) different bytes.
const SKILLS: usize = 2;
/// Operations per input: enough for crash-then-tamper-then-reload stories, few enough for
/// thousands of runs a minute.
const MAX_OPS: usize = 32;
/// Loaded skills kept at once (older windows are dropped).
const MAX_LOADED: usize = 4;
const ORIGINS: [&str; 2] = ["alpha", "Beta"];
const LONG_TTL_MS: u64 = 3_600_000;

static FORGE_ENTRIES: LazyLock<bool> =
    LazyLock::new(|| std::env::var("MODEL_FORGE_ENTRIES").map_or(true, |v| v != "0"));
static LIVENESS: LazyLock<bool> =
    LazyLock::new(|| std::env::var("MODEL_LIVENESS").map_or(true, |v| v != "0"));

/// Scratch roots live on tmpfs when there is one: fsync there is free, so an input stays fast.
static SCRATCH: LazyLock<PathBuf> = LazyLock::new(|| {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
});

/// The fuzz input, read a byte at a time; past the end it reads zeros.
struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn pick(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            usize::from(self.byte()) % n
        }
    }
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
}

fn skill_uri(i: usize) -> String {
    format!("skill://acme/s{i}/SKILL.md")
}

fn file_uri(i: usize, rel: &str) -> String {
    format!("skill://acme/s{i}/{rel}")
}

/// One skill as its server holds it now.
#[derive(Clone)]
struct SkillDef {
    description: String,
    body: String,
    /// Supporting files by relative path (`SKILL.md` is built from the fields above).
    files: BTreeMap<String, Vec<u8>>,
}

impl SkillDef {
    fn skill_md(&self, i: usize) -> Vec<u8> {
        format!(
            "---\nname: s{i}\ndescription: {}\n---\n{}\n",
            self.description, self.body
        )
        .into_bytes()
    }

    fn all_files(&self, i: usize) -> Vec<(String, Vec<u8>)> {
        let mut out = vec![("SKILL.md".to_owned(), self.skill_md(i))];
        out.extend(self.files.iter().map(|(k, v)| (k.clone(), v.clone())));
        out
    }

    fn entry(&self, i: usize) -> Value {
        let resources: Vec<Value> = self
            .all_files(i)
            .iter()
            .map(|(rel, b)| {
                json!({"uri": file_uri(i, rel), "digest": Digest::of(b).to_string(), "size": b.len()})
            })
            .collect();
        json!({
            "uri": skill_uri(i),
            "frontmatter": {"name": format!("s{i}"), "description": self.description},
            "resources": resources,
        })
    }
}

/// An honest in-process server: it always serves bytes that match its current entry.
struct Server {
    skills: Mutex<Vec<SkillDef>>,
    ttl_ms: u64,
}

fn not_found(method: &str, uri: &str) -> Error {
    Error::Source(skillcache::error::SourceError::Server {
        origin: None,
        uri: None,
        method: method.to_owned(),
        code: -32602,
        message: format!("nothing at {uri}"),
    })
}

impl Server {
    fn skills(&self) -> std::sync::MutexGuard<'_, Vec<SkillDef>> {
        self.skills
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    fn hints(&self, mut v: Value) -> Value {
        v["ttlMs"] = json!(self.ttl_ms);
        v["cacheScope"] = json!("public");
        v
    }
}

impl SkillSource for Server {
    fn list_skills<'a>(&'a self, _cursor: Option<&'a str>) -> SourceFuture<'a> {
        let skills: Vec<Value> = self
            .skills()
            .iter()
            .enumerate()
            .map(|(i, s)| s.entry(i))
            .collect();
        let out = self.hints(json!({"skills": skills}));
        Box::pin(async move { Ok(out) })
    }

    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        let entry = self
            .skills()
            .iter()
            .enumerate()
            .find(|(i, _)| skill_uri(*i) == uri)
            .map(|(i, s)| s.entry(i));
        let out = entry.map(|e| self.hints(json!({"skill": e})));
        Box::pin(async move { out.ok_or_else(|| not_found("skills/get", uri)) })
    }

    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        let bytes = self.skills().iter().enumerate().find_map(|(i, s)| {
            s.all_files(i)
                .into_iter()
                .find(|(rel, _)| file_uri(i, rel) == uri)
                .map(|(_, b)| b)
        });
        Box::pin(async move {
            let bytes = bytes.ok_or_else(|| not_found("resources/read", uri))?;
            let text = String::from_utf8(bytes).expect("the model serves text");
            Ok(json!({"contents": [{"uri": uri, "text": text}]}))
        })
    }
}

/// A name in the watched folder: kind, mode, bytes (or link target).
type Snapshot = BTreeMap<String, (String, u32, Vec<u8>)>;

fn snapshot(dir: &Path) -> Snapshot {
    fn walk(base: &Path, dir: &Path, out: &mut Snapshot) {
        let Ok(names) = fs::read_dir(dir) else {
            return;
        };
        for e in names.flatten() {
            let p = e.path();
            let rel = p
                .strip_prefix(base)
                .map_or_else(|_| p.display().to_string(), |r| r.display().to_string());
            let Ok(m) = fs::symlink_metadata(&p) else {
                continue;
            };
            let ft = m.file_type();
            let mode = m.permissions().mode();
            if ft.is_symlink() {
                let t = fs::read_link(&p).unwrap_or_default();
                out.insert(
                    rel,
                    ("link".into(), mode, t.display().to_string().into_bytes()),
                );
            } else if ft.is_dir() {
                out.insert(rel, ("dir".into(), mode, Vec::new()));
                walk(base, &p, out);
            } else if ft.is_file() {
                out.insert(rel, ("file".into(), mode, fs::read(&p).unwrap_or_default()));
            } else {
                out.insert(rel, ("special".into(), mode, Vec::new()));
            }
        }
    }
    let mut out = Snapshot::new();
    if let Ok(m) = fs::symlink_metadata(dir) {
        out.insert(
            ".".into(),
            ("dir".into(), m.permissions().mode(), Vec::new()),
        );
    }
    walk(dir, dir, &mut out);
    out
}

/// Makes every real folder below `dir` writable again (never through a link), so the scratch
/// folder can be removed even when not running as root.
fn unlock_tree(dir: &Path) {
    let Ok(m) = fs::symlink_metadata(dir) else {
        return;
    };
    if !m.file_type().is_dir() {
        return;
    }
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    if let Ok(names) = fs::read_dir(dir) {
        for e in names.flatten() {
            unlock_tree(&e.path());
        }
    }
}

/// Removes whatever is at `p` (a link itself, never its target).
fn remove_any(p: &Path) {
    match fs::symlink_metadata(p) {
        Ok(m) if m.file_type().is_dir() => {
            unlock_tree(p);
            let _ = fs::remove_dir_all(p);
        }
        Ok(_) => {
            if let Some(parent) = p.parent() {
                let _ = fs::set_permissions(parent, fs::Permissions::from_mode(0o700));
            }
            let _ = fs::remove_file(p);
        }
        Err(_) => {}
    }
}

fn mkfifo(p: &Path) {
    let _ = rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o444),
        0,
    );
}

/// Whether `p` is a real folder (not a link to one).
fn real_dir(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_dir())
}

/// Whether every folder from `root` down to `dir` is a real folder: the target itself must never
/// reach through a link it planted, or it would write outside the root on the cache's behalf.
fn real_chain(root: &Path, dir: &Path) -> bool {
    let Ok(rel) = dir.strip_prefix(root) else {
        return false;
    };
    let mut p = root.to_owned();
    if !real_dir(&p) {
        return false;
    }
    for c in rel.components() {
        p.push(c);
        if !real_dir(&p) {
            return false;
        }
    }
    true
}

/// Every regular blob file under the root reachable through real folders, in a stable order.
fn blob_files(root: &Path) -> Vec<PathBuf> {
    let children = |p: &Path| -> Vec<PathBuf> {
        if !real_dir(p) {
            return Vec::new();
        }
        fs::read_dir(p)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    if !real_dir(root) {
        return out;
    }
    for o in children(&root.join("origins")) {
        for aa in children(&o.join("sha256")) {
            for b in children(&aa) {
                if fs::symlink_metadata(&b).is_ok_and(|m| m.file_type().is_file()) {
                    out.push(b);
                }
            }
        }
    }
    out.sort();
    out
}

struct World {
    rt: tokio::runtime::Runtime,
    base: PathBuf,
    root: PathBuf,
    outside: PathBuf,
    watched: Snapshot,
    isolation: Isolation,
    origins: [Origin; 2],
    servers: [Arc<Server>; 2],
    /// Every digest each origin's server ever published for each (canonical) file URI.
    published: HashMap<(usize, String), HashSet<Digest>>,
    /// The bytes of every digest ever published (what a forged row can point at).
    bytes_of: BTreeMap<Digest, Vec<u8>>,
    cache: Option<SkillCache>,
    fault: Option<Arc<FaultyDisk>>,
    loaded: Vec<(usize, LoadedSkill)>,
    version: u32,
    log: Vec<String>,
}

impl World {
    fn new(config: u8) -> World {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let base = tempfile::Builder::new()
            .prefix("skillcache-model-")
            .tempdir_in(&*SCRATCH)
            .expect("a scratch folder")
            .keep();
        let outside = base.join("outside");
        fs::create_dir_all(outside.join("dir/sub")).expect("watched folder");
        fs::write(outside.join("decoy"), b"planted bytes, never verified").expect("decoy");
        fs::write(outside.join("hard"), b"hard-linked bytes").expect("hard");
        fs::write(outside.join("dir/x"), b"x").expect("x");
        fs::write(outside.join("dir/sub/y"), b"y").expect("y");
        fs::set_permissions(outside.join("dir"), fs::Permissions::from_mode(0o755)).expect("mode");
        let isolation = if config & 1 == 0 {
            Isolation::Rehash
        } else {
            Isolation::Guaranteed
        };
        let ttl_ms = if config & 2 == 0 { 0 } else { LONG_TTL_MS };
        // Bit 2: both origins publish identical bytes (same digests in two origin stores).
        let shared = config & 4 != 0;
        let servers = [0usize, 1].map(|o| {
            let tag = if shared {
                String::new()
            } else {
                format!("o{o} ")
            };
            let skills = (0..SKILLS)
                .map(|i| SkillDef {
                    description: format!("{tag}skill {i}"),
                    body: format!("{tag}body {i}"),
                    files: [
                        ("refs/a.md".to_owned(), format!("{tag}a {i}").into_bytes()),
                        ("refs/b.txt".to_owned(), format!("{tag}b").into_bytes()),
                    ]
                    .into(),
                })
                .collect();
            Arc::new(Server {
                skills: Mutex::new(skills),
                ttl_ms,
            })
        });
        let mut w = World {
            rt,
            root: base.join("root"),
            watched: snapshot(&outside),
            outside,
            base,
            isolation,
            origins: ORIGINS.map(|o| Origin::new(o).expect("a valid origin")),
            servers,
            published: HashMap::new(),
            bytes_of: BTreeMap::new(),
            cache: None,
            fault: None,
            loaded: Vec::new(),
            version: 0,
            log: Vec::new(),
        };
        for o in 0..2 {
            for i in 0..SKILLS {
                w.record(o, i);
            }
        }
        w.open(None);
        w
    }

    /// Records what origin `o`'s server publishes for skill `i` now.
    fn record(&mut self, o: usize, i: usize) {
        let files = self.servers[o].skills()[i].all_files(i);
        for (rel, bytes) in files {
            let uri = FileUri::parse(&file_uri(i, &rel)).expect("a valid file URI");
            let d = Digest::of(&bytes);
            self.published
                .entry((o, uri.canonical().to_owned()))
                .or_default()
                .insert(d);
            self.bytes_of.insert(d, bytes);
        }
    }

    /// Stops using the current instance (a dead process) and opens a new one.
    fn open(&mut self, fault: Option<Arc<FaultyDisk>>) {
        self.loaded.clear();
        self.cache = None;
        // The instance that ran on a watched disk kept the durability order (R-C3): no link
        // before its data was synced, no row before its names were durable.
        if let Some(d) = self.fault.take() {
            let violations = d.order_violations();
            assert!(
                violations.is_empty(),
                "the durability order broke: {violations:?}\n{}",
                self.ctx()
            );
        }
        let mut b = SkillCache::builder()
            .root(&self.root)
            // The host key lives beside the root, in this input's own folder, never in $HOME.
            .key_file(self.base.join("key").join("host.key"))
            // The model is about bytes, not the approval gate (tests/host_api.rs covers that).
            .approval(skillcache::ApprovalPolicy::NotRequired)
            .isolation(self.isolation)
            .lock_timeout(Duration::from_millis(200));
        if let Some(d) = &fault {
            b = b.disk(Arc::clone(d) as Arc<dyn skillcache::store::Disk>);
        }
        match b.open() {
            Ok(c) => {
                for o in 0..2 {
                    c.connect(
                        self.origins[o].clone(),
                        Arc::clone(&self.servers[o]) as Arc<dyn SkillSource>,
                    );
                }
                self.cache = Some(c);
                self.fault = fault;
            }
            Err(e) => {
                self.log.push(format!("open failed: {e}"));
                self.fault = None;
                if fault.is_some() {
                    // The "process" died while opening: the next one opens on the real disk.
                    self.open(None);
                }
            }
        }
    }

    fn ctx(&self) -> String {
        format!(
            "isolation {:?}, steps:\n  {}",
            self.isolation,
            self.log.join("\n  ")
        )
    }

    /// The oracle: a file handed out is verified, hashes to its digest, carries its origin, and
    /// that origin published that digest for that URI.
    fn check_file(&self, o: usize, f: &SkillFile) {
        let uri = f.uri().as_str();
        let skillcache::Verification::Verified(d) = f.verification() else {
            panic!("a listed file came back unverified: {uri}\n{}", self.ctx());
        };
        assert_eq!(
            Digest::of(f.bytes()),
            d,
            "WRONG BYTES returned as verified for {uri}: {:?}\n{}",
            String::from_utf8_lossy(f.bytes()),
            self.ctx()
        );
        assert_eq!(
            f.origin(),
            &self.origins[o],
            "a file of origin {} carries origin {}\n{}",
            self.origins[o],
            f.origin(),
            self.ctx()
        );
        let published = self
            .published
            .get(&(o, f.uri().canonical().to_owned()))
            .is_some_and(|s| s.contains(&d));
        assert!(
            published,
            "WRONG BYTES returned as verified: {uri} of origin {} with digest {d} ({:?}), which that server never published for it\n{}",
            self.origins[o],
            String::from_utf8_lossy(f.bytes()),
            self.ctx()
        );
    }

    /// Nothing outside the root changed; nothing new appeared beside it.
    fn check_outside(&self) {
        let now = snapshot(&self.outside);
        assert!(
            now == self.watched,
            "the watched folder outside the root changed:\nbefore {:?}\nafter  {:?}\n{}",
            self.watched,
            now,
            self.ctx()
        );
        let beside: Vec<String> = fs::read_dir(&self.base)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n != "root" && n != "outside" && n != "key")
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            beside.is_empty(),
            "written beside the root: {beside:?}\n{}",
            self.ctx()
        );
    }

    fn step(&mut self, input: &mut Input<'_>) {
        let op = input.byte() % 13;
        let faulted = self.fault.is_some();
        match op {
            0 => self.load(input),
            1 => self.read(input),
            2 => self.read_all(input),
            3 => self.tamper(input),
            4 => self.plant(input),
            5 => self.forge(input),
            6 => {
                let budget = [None, Some(0), Some(64)][input.pick(3)];
                self.log.push(format!("gc {budget:?}"));
                if let Some(c) = &self.cache {
                    let r = c.core().gc(budget);
                    self.log
                        .push(format!("  -> {:?}", r.map(|r| r.unreferenced)));
                }
            }
            7 => {
                let o = input.pick(2);
                self.log.push(format!("purge {}", self.origins[o]));
                if let Some(c) = &self.cache {
                    let r = c.core().purge(&self.origins[o]);
                    self.log.push(format!("  -> {r:?}"));
                }
            }
            8 => {
                let at = u64::from(input.byte() % 40);
                let fault = [Fault::Crash, Fault::Crash, Fault::NoSpace, Fault::Io][input.pick(4)];
                self.log.push(format!(
                    "next op on a disk that fails: {fault:?} at write {at}"
                ));
                self.open(Some(Arc::new(FaultyDisk::failing_at(at, fault))));
                return;
            }
            9 => self.change_server(input),
            10 => {
                self.log.push("reopen".into());
                self.open(None);
            }
            11 => {
                self.log.push("verify".into());
                if let Some(c) = &self.cache {
                    let r = c.core().verify(None, |_, _| {});
                    self.log.push(format!(
                        "  -> {:?}",
                        r.map(|r| (r.corrupt.len(), r.missing.len()))
                    ));
                }
            }
            _ => {
                let (o, i) = (input.pick(2), input.pick(SKILLS));
                self.log.push(format!("refresh {} s{i}", self.origins[o]));
                if let Some(c) = &self.cache {
                    let uri = SkillUri::parse(&skill_uri(i)).expect("a valid skill URI");
                    let r = self.rt.block_on(c.refresh(&self.origins[o], &uri));
                    self.log.push(format!("  -> {}", r.is_ok()));
                }
            }
        }
        if faulted {
            // The faulted instance did its one operation: the process "died" (or, for ENOSPC and
            // EIO, simply carries on); either way, reopen on the real disk.
            self.log.push("reopen after the fault".into());
            self.open(None);
        }
    }

    fn load(&mut self, input: &mut Input<'_>) {
        let (o, i) = (input.pick(2), input.pick(SKILLS));
        self.log.push(format!("load {} s{i}", self.origins[o]));
        let Some(c) = &self.cache else { return };
        let uri = SkillUri::parse(&skill_uri(i)).expect("a valid skill URI");
        let origin = &self.origins[o];
        let loaded = self.rt.block_on(async {
            let info = c.entry(origin, &uri).await?;
            c.load(origin, &info.entry).await
        });
        match loaded {
            Ok(l) => {
                self.log.push("  -> loaded".into());
                self.check_file(o, l.skill_md());
                if self.loaded.len() >= MAX_LOADED {
                    self.loaded.remove(0);
                }
                self.loaded.push((o, l));
            }
            Err(e) => self.log.push(format!("  -> {e}")),
        }
    }

    fn read(&mut self, input: &mut Input<'_>) {
        let slot = input.pick(self.loaded.len());
        let sel = input.byte();
        let form = input.byte() % 4;
        let Some((o, l)) = self.loaded.get(slot) else {
            self.log.push("read (nothing loaded)".into());
            return;
        };
        let o = *o;
        let files = l.files();
        let root = l
            .entry()
            .uri()
            .as_str()
            .trim_end_matches("SKILL.md")
            .to_owned();
        let listed = files
            .get(usize::from(sel) % files.len().max(1))
            .map(|f| f.uri().as_str().to_owned());
        let (reference, must_fail) = match (form, listed) {
            (0, Some(u)) => (u.trim_start_matches(root.as_str()).to_owned(), false),
            (1, Some(u)) => (u, false),
            // Not in the held entry (perhaps added on the server since): never read (R-V4).
            (2, _) => (format!("refs/n{sel}.md"), true),
            // Outside the skill: refused before anything is read (R-V5).
            _ => ("../s9/SKILL.md".to_owned(), true),
        };
        let must_fail = must_fail
            && !files
                .iter()
                .any(|f| f.uri().as_str() == format!("{root}{reference}"));
        self.log.push(format!("read {reference} of slot {slot}"));
        let r = self.rt.block_on(l.read(&reference));
        match r {
            Ok(f) => {
                assert!(
                    !must_fail,
                    "read {reference}, which the held entry does not list, returned {:?}\n{}",
                    String::from_utf8_lossy(f.bytes()),
                    self.ctx()
                );
                self.log.push(format!("  -> {:?}", f.provenance()));
                self.check_file(o, &f);
            }
            Err(e) => self.log.push(format!("  -> {e}")),
        }
    }

    fn read_all(&mut self, input: &mut Input<'_>) {
        let slot = input.pick(self.loaded.len());
        self.log.push(format!("read_all slot {slot}"));
        let Some((o, l)) = self.loaded.get(slot) else {
            return;
        };
        match self.rt.block_on(l.read_all()) {
            Ok(files) => {
                self.log.push(format!("  -> {} files", files.len()));
                for f in &files {
                    self.check_file(*o, f);
                }
            }
            Err(e) => self.log.push(format!("  -> {e}")),
        }
    }

    fn tamper(&mut self, input: &mut Input<'_>) {
        let blobs = blob_files(&self.root);
        let target = input.pick(blobs.len());
        let mut kind = input.byte() % 7;
        let pos = input.byte();
        if self.isolation == Isolation::Guaranteed && (kind == 0 || kind == 2) {
            // An in-place rewrite by another writer is what Guaranteed's host rules out.
            kind = 1;
        }
        let Some(p) = blobs.get(target) else {
            self.log.push("tamper (no blob)".into());
            return;
        };
        let name = p
            .strip_prefix(&self.root)
            .unwrap_or(p)
            .display()
            .to_string();
        let dir = p.parent().expect("a blob has a folder").to_owned();
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o755));
        match kind {
            0 | 1 => {
                let mut bytes = fs::read(p).unwrap_or_default();
                if kind == 0 && !bytes.is_empty() {
                    let at = usize::from(pos) % bytes.len();
                    bytes[at] ^= 1 << (pos % 8);
                    self.log.push(format!("tamper {name}: flip a bit at {at}"));
                } else if bytes.is_empty() || pos & 1 == 0 {
                    bytes.push(b'!');
                    self.log.push(format!("tamper {name}: one byte longer"));
                } else {
                    bytes.truncate(usize::from(pos) % bytes.len());
                    self.log
                        .push(format!("tamper {name}: truncated to {}", bytes.len()));
                }
                if fs::symlink_metadata(p).is_ok_and(|m| m.nlink() > 1) {
                    // A hard link planted earlier: writing in place would write outside the root
                    // ourselves. Replace the name instead.
                    let tmp = dir.join(".swap");
                    if fs::write(&tmp, &bytes).is_ok() {
                        let _ = fs::set_permissions(&tmp, fs::Permissions::from_mode(0o444));
                        let _ = fs::rename(&tmp, p);
                    }
                } else {
                    // In place: the same inode, so only the bytes (and the size) tell.
                    let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o644));
                    if let Ok(mut f) = fs::OpenOptions::new().write(true).truncate(true).open(p) {
                        let _ = f.write_all(&bytes);
                    }
                    let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o444));
                }
            }
            2 => {
                // Another published file's bytes under this name, as a fresh 0444 file.
                let other = self
                    .bytes_of
                    .values()
                    .nth(usize::from(pos) % self.bytes_of.len())
                    .cloned()
                    .unwrap_or_default();
                self.log.push(format!(
                    "tamper {name}: replaced by {:?}",
                    String::from_utf8_lossy(&other)
                ));
                let tmp = dir.join(".swap");
                if fs::write(&tmp, &other).is_ok() {
                    let _ = fs::set_permissions(&tmp, fs::Permissions::from_mode(0o444));
                    let _ = fs::rename(&tmp, p);
                }
            }
            3 => {
                self.log.push(format!("tamper {name}: a FIFO"));
                remove_any(p);
                mkfifo(p);
            }
            4 => {
                self.log
                    .push(format!("tamper {name}: a link to a file outside"));
                remove_any(p);
                let _ = std::os::unix::fs::symlink(self.outside.join("decoy"), p);
            }
            5 => {
                self.log.push(format!("tamper {name}: a folder"));
                remove_any(p);
                let _ = fs::create_dir(p);
            }
            _ => {
                self.log
                    .push(format!("tamper {name}: a hard link to a file outside"));
                remove_any(p);
                let _ = fs::hard_link(self.outside.join("hard"), p);
            }
        }
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o555));
    }

    fn plant(&mut self, input: &mut Input<'_>) {
        let o = input.pick(2);
        let place = input.byte() % 9;
        let what = input.byte() % 4;
        let layout = Layout::new(&self.root);
        let origin = &self.origins[o];
        let p = match place {
            0 => layout.origins(),
            1 => layout.origin_dir(origin),
            2 => layout.origin_dir(origin).join("sha256"),
            3 => {
                // The folder of one of this origin's published digests.
                let ds: Vec<Digest> = self
                    .published
                    .iter()
                    .filter(|((po, _), _)| *po == o)
                    .flat_map(|(_, s)| s.iter().copied())
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                let d = ds[input.pick(ds.len())];
                layout.blob_dir(origin, &d)
            }
            4 => layout.tmp(origin),
            5 => layout.quarantine(origin),
            6 => self.root.join("tmp"),
            7 => self.root.join("quarantine"),
            _ => layout.lock_file(),
        };
        let name = p
            .strip_prefix(&self.root)
            .unwrap_or(&p)
            .display()
            .to_string();
        if p.parent().is_none_or(|d| !real_chain(&self.root, d)) {
            self.log.push(format!("plant at {name}: no parent"));
            return;
        }
        let parent = p.parent().expect("checked").to_owned();
        let parent_mode = fs::symlink_metadata(&parent)
            .map(|m| m.permissions().mode())
            .unwrap_or(0o700);
        remove_any(&p);
        let _ = fs::set_permissions(&parent, fs::Permissions::from_mode(0o700));
        match what {
            0 => {
                self.log
                    .push(format!("plant at {name}: a link to the watched folder"));
                let _ = std::os::unix::fs::symlink(self.outside.join("dir"), &p);
            }
            1 => {
                self.log
                    .push(format!("plant at {name}: a dangling link outside"));
                let _ = std::os::unix::fs::symlink(self.outside.join("missing"), &p);
            }
            2 => {
                self.log.push(format!("plant at {name}: a file"));
                let _ = fs::write(&p, b"not a folder");
            }
            _ => {
                self.log.push(format!("plant at {name}: a FIFO"));
                mkfifo(&p);
            }
        }
        let _ = fs::set_permissions(&parent, fs::Permissions::from_mode(parent_mode & 0o7777));
    }

    fn forge(&mut self, input: &mut Input<'_>) {
        let table = input.byte() % 4;
        let row = input.byte();
        let how = input.byte();
        if self.isolation == Isolation::Guaranteed {
            self.log.push("forge (not under Guaranteed)".into());
            return;
        }
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let Ok(db) = rusqlite::Connection::open_with_flags(self.root.join("index.sqlite3"), flags)
        else {
            self.log.push("forge (no index)".into());
            return;
        };
        let _ = db.busy_timeout(Duration::from_millis(500));
        let digests: Vec<(Digest, usize)> =
            self.bytes_of.iter().map(|(d, b)| (*d, b.len())).collect();
        let (to, to_size) = digests[usize::from(how) % digests.len()];
        let r: rusqlite::Result<String> = (|| match table {
            0 if *FORGE_ENTRIES => {
                // Point one listed file of an entry at another published digest and make the
                // row fresh: the cache must not serve those bytes as this file (R-H3).
                let rows: Vec<(i64, String, String, String, String)> = db
                    .prepare("SELECT origin_id, skill_uri, scope, principal, entry_json FROM entries ORDER BY origin_id, skill_uri")?
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
                    .collect::<Result<_, _>>()?;
                let Some((oid, uri, scope, principal, js)) =
                    rows.get(usize::from(row) % rows.len().max(1))
                else {
                    return Ok("no entry".into());
                };
                let mut v: Value = serde_json::from_str(js).unwrap_or(Value::Null);
                let Some(res) = v.get_mut("resources").and_then(Value::as_array_mut) else {
                    return Ok("no resources".into());
                };
                let n = res.len();
                let Some(f) = res.get_mut(usize::from(row / 7) % n.max(1)) else {
                    return Ok("no file".into());
                };
                f["digest"] = json!(to.to_string());
                f["size"] = json!(to_size);
                let file = f["uri"].clone();
                db.execute(
                    "UPDATE entries SET entry_json = ?1, fetched_at_ms = ?2, ttl_ms = ?3 WHERE origin_id = ?4 AND skill_uri = ?5 AND scope = ?6 AND principal = ?7",
                    rusqlite::params![v.to_string(), now_ms(), LONG_TTL_MS as i64, oid, uri, scope, principal],
                )?;
                Ok(format!("entry {uri}: {file} now lists {to}"))
            }
            0 | 1 => {
                // Point a file row elsewhere: gc's idea of what is referenced is now wrong.
                let keys: Vec<(i64, String, String, String, String)> = db
                    .prepare("SELECT origin_id, skill_uri, scope, principal, file_uri FROM files ORDER BY 1, 2, 5")?
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
                    .collect::<Result<_, _>>()?;
                let Some(k) = keys.get(usize::from(row) % keys.len().max(1)) else {
                    return Ok("no file row".into());
                };
                let n = db.execute(
                    "UPDATE files SET digest = ?1, size = ?2 WHERE origin_id = ?3 AND skill_uri = ?4 AND scope = ?5 AND principal = ?6 AND file_uri = ?7",
                    rusqlite::params![to.as_bytes().as_slice(), to_size as i64, k.0, k.1, k.2, k.3, k.4],
                )?;
                Ok(format!("files: {n} row(s) now list {to}"))
            }
            2 => {
                let n = db.execute(
                    "DELETE FROM blobs WHERE digest = (SELECT digest FROM blobs ORDER BY origin_id, digest LIMIT 1 OFFSET ?1)",
                    [i64::from(row % 8)],
                )?;
                Ok(format!("blobs: {n} record(s) deleted"))
            }
            _ => {
                // A stale entry made fresh again, or a fresh one made stale.
                let n = db.execute(
                    "UPDATE entries SET fetched_at_ms = ?1, ttl_ms = ?2",
                    rusqlite::params![if how & 1 == 0 { now_ms() } else { 0 }, LONG_TTL_MS as i64],
                )?;
                Ok(format!("entries: {n} row(s) re-dated"))
            }
        })();
        self.log
            .push(format!("forge: {}", r.unwrap_or_else(|e| e.to_string())));
    }

    fn change_server(&mut self, input: &mut Input<'_>) {
        let (o, i) = (input.pick(2), input.pick(SKILLS));
        let kind = input.byte() % 5;
        let sel = input.byte();
        self.version += 1;
        // Few distinct contents, so different files and versions share digests now and then.
        let v = self.version % 3;
        {
            let mut skills = self.servers[o].skills();
            let s = &mut skills[i];
            let keys: Vec<String> = s.files.keys().cloned().collect();
            match kind {
                0 if !keys.is_empty() => {
                    let k = &keys[usize::from(sel) % keys.len()];
                    s.files.insert(k.clone(), format!("{k} v{v}").into_bytes());
                }
                1 => s.body = format!("body v{v}"),
                2 => s.description = format!("skill {i} v{v}"),
                3 => {
                    s.files.insert(
                        format!("refs/n{}.md", sel % 4),
                        format!("new v{v}").into_bytes(),
                    );
                }
                _ if !keys.is_empty() => {
                    s.files.remove(&keys[usize::from(sel) % keys.len()]);
                }
                _ => s.body = format!("body v{v}"),
            }
        }
        self.log
            .push(format!("server {} changes s{i} ({kind})", self.origins[o]));
        self.record(o, i);
    }

    /// After the story: reopened on the real disk, an honest server's skills all load and read
    /// in full, with the server's current bytes.
    fn heal(&mut self) {
        self.log
            .push("heal: reopen, refresh, load, read_all".into());
        self.open(None);
        let c = self.cache.clone().unwrap_or_else(|| {
            panic!("the cache does not reopen on the real disk\n{}", self.ctx())
        });
        for o in 0..2 {
            for i in 0..SKILLS {
                let uri = SkillUri::parse(&skill_uri(i)).expect("a valid skill URI");
                let origin = &self.origins[o];
                let r = self.rt.block_on(async {
                    let info = c.refresh(origin, &uri).await?;
                    let l = c.load(origin, &info.entry).await?;
                    l.read_all().await
                });
                let files = r.unwrap_or_else(|e| {
                    panic!(
                        "{origin} s{i} does not load from an honest server: {e}\n{}",
                        self.ctx()
                    )
                });
                let want = self.servers[o].skills()[i].all_files(i);
                assert_eq!(files.len(), want.len(), "{}", self.ctx());
                for (f, (rel, bytes)) in files.iter().zip(&want) {
                    self.check_file(o, f);
                    assert_eq!(
                        f.bytes(),
                        bytes.as_slice(),
                        "{origin} {rel}: not the server's current bytes\n{}",
                        self.ctx()
                    );
                }
            }
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.loaded.clear();
        self.cache = None;
        unlock_tree(&self.base);
        let _ = fs::remove_dir_all(&self.base);
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input { data, pos: 0 };
    let mut world = World::new(input.byte());
    world.check_outside();
    let mut ops = 0;
    while !input.done() && ops < MAX_OPS {
        world.step(&mut input);
        world.check_outside();
        ops += 1;
    }
    if *LIVENESS {
        world.heal();
        world.check_outside();
    }
});
