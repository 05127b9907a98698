//! Shared fixture vocabulary for the integration tests.
#![allow(dead_code, missing_docs)]

pub mod double;
pub mod peers;
mod scratch;

pub use scratch::{Scratch, scratch};

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The test data kept in the repository (`tests/data/`, see its `PROVENANCE.md`): a bare clone
/// has everything the suite reads (N1).
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The corpus of real published skills the sweeps read: `tests/data/corpus/skills`, or the folder
/// `$SKILLCACHE_CORPUS` names (CI points it at the workplace's reference copy, so the sweeps run
/// against both and a drift between the two fails).
pub fn corpus_skills() -> PathBuf {
    std::env::var_os("SKILLCACHE_CORPUS")
        .map_or_else(|| data_dir().join("corpus/skills"), PathBuf::from)
}

/// A `SKILL.md` with the given frontmatter lines and a small body.
pub fn skill_md(frontmatter: &str) -> Vec<u8> {
    format!("---\n{frontmatter}\n---\n\n# Body\n").into_bytes()
}

use serde_json::json;
use skillcache::core::Cache;
use skillcache::entry::Validation;
use skillcache::store::Isolation;
use skillcache::{Digest, SkillEntry};

/// A server command for `McpSource::stdio` from a test's shell-quoted line: `sh -c "exec LINE"`,
/// so the server is the child itself (killed with the source). Tests only: a host builds its
/// `tokio::process::Command` directly.
pub fn sh(line: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(format!("exec {line}"));
    command
}

/// Runs `f` on its own thread; `None` if it has not finished after `bound`: a test of something
/// that could hang (a FIFO opened without `O_NONBLOCK`, a hostile view) fails instead of hanging
/// the suite. A hung thread is left behind; the test binary's exit ends it.
pub fn within<T: Send + 'static>(
    bound: std::time::Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(bound).ok()
}

/// A skill's files: (URI, bytes).
pub type Files = Vec<(String, Vec<u8>)>;

/// A skill `name` of `n` distinct files (`refs/00.md`, …) besides its `SKILL.md`.
#[allow(dead_code)]
pub fn many(name: &str, n: usize) -> (SkillEntry, Files) {
    let bodies: Vec<(String, Vec<u8>)> = (0..n)
        .map(|i| {
            (
                format!("refs/{i:02}.md"),
                format!("reference {i}\n").into_bytes(),
            )
        })
        .collect();
    let files: Vec<(&str, &[u8])> = bodies
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    skill(name, &files)
}

/// A skill named `name` whose files are (relative path, bytes); the `SKILL.md` is generated.
pub fn skill(name: &str, files: &[(&str, &[u8])]) -> (SkillEntry, Files) {
    let md = skill_md(&format!("name: {name}\ndescription: The {name} skill."));
    let mut all: Vec<(String, Vec<u8>)> = vec![(format!("skill://{name}/SKILL.md"), md)];
    all.extend(
        files
            .iter()
            .map(|(p, b)| (format!("skill://{name}/{p}"), b.to_vec())),
    );
    let resources: Vec<_> = all
        .iter()
        .map(|(u, b)| json!({"uri": u, "digest": Digest::of(b).to_string(), "size": b.len()}))
        .collect();
    let v = json!({
        "uri": format!("skill://{name}/SKILL.md"),
        "frontmatter": {"name": name, "description": format!("The {name} skill.")},
        "resources": resources,
    });
    (
        SkillEntry::from_json(&v, &Validation::default()).expect("fixture entry is valid"),
        all,
    )
}

/// A cache under a fresh temporary folder.
pub fn cache(isolation: Isolation) -> (Scratch, Cache) {
    let dir = scratch();
    let cache = Cache::builder()
        .root(dir.path().join("root"))
        .isolation(isolation)
        .open()
        .expect("cache opens");
    (dir, cache)
}

/// The `skillcache` binary the suite runs: the file `$SKILLCACHE_BIN` names, or else the one
/// beside the folder of the test binaries (`target/debug/skillcache`). The command line is its own
/// crate (`cli/`), which the root's plain `cargo test` builds with the suite, as a default member
/// of the workspace. A run that builds the library's tests alone (`cargo test -p skillcache`)
/// runs the binary built last; with none there, the test fails and says how to build it.
pub fn bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(named) = std::env::var_os("SKILLCACHE_BIN").filter(|v| !v.is_empty()) {
            return PathBuf::from(named);
        }
        let exe = std::env::current_exe().expect("test binary");
        let path = exe
            .parent()
            .and_then(Path::parent)
            .expect("target dir")
            .join(format!("skillcache{}", std::env::consts::EXE_SUFFIX));
        assert!(
            path.is_file(),
            "no skillcache binary at {}: build it with `cargo build -p skillcache-cli` (the root's \
             plain `cargo test` builds it too), or name one in SKILLCACHE_BIN",
            path.display()
        );
        path
    })
}

/// The path of an example binary, built on demand: a full `cargo test` builds examples already;
/// a filtered run (`--test cli`) has not.
pub fn example_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let path = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target dir")
        .join("examples")
        .join(name);
    if !path.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "--example", name])
            .status()
            .expect("run cargo");
        assert!(status.success(), "cargo build --example {name}");
    }
    assert!(path.exists(), "{} exists", path.display());
    path
}

/// Stores every listed file of `entry` from `files` (the bytes a server would serve).
pub fn store_all(
    cache: &Cache,
    origin: &skillcache::Origin,
    entry: &SkillEntry,
    files: &[(String, Vec<u8>)],
) {
    for f in entry.manifest().expect("a manifest").files() {
        let bytes = &files
            .iter()
            .find(|(u, _)| u == f.uri().as_str())
            .expect("the fixture has the file")
            .1;
        cache.store_file(origin, f, bytes).expect("stored");
    }
}

/// A tmpfs mounted for one test and always unmounted, read-only remounts included. Mounting
/// needs root (`CAP_SYS_ADMIN`); `mount` says why it cannot, and the test prints that and skips.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    pub fn mount(at: PathBuf, size: &str) -> Result<Tmpfs, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("needs root to mount a tmpfs".into());
        }
        std::fs::create_dir_all(&at).map_err(|e| e.to_string())?;
        let status = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(&at)
            .status()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !status.success() {
            return Err(format!(
                "mount -t tmpfs failed ({status}): no CAP_SYS_ADMIN?"
            ));
        }
        Ok(Tmpfs(at))
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    pub fn remount_read_only(&self) {
        let status = std::process::Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.0)
            .status()
            .expect("run mount");
        assert!(status.success(), "remount read-only");
    }

    /// Writes a filler file until the disk takes no more.
    pub fn fill(&self) {
        let mut file = std::fs::File::create(self.0.join("filler")).expect("filler");
        let chunk = vec![0u8; 1 << 16];
        while std::io::Write::write(&mut file, &chunk).is_ok_and(|n| n > 0) {}
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Prints an interop report (a markdown table and its notes) and keeps it in
/// `target/tmp/interop-report/NAME.md`, so CI shows the tables from the suite's own run instead
/// of running the interop tests a second time to print them.
pub fn report(name: &str, text: &str) {
    println!("{text}");
    // Best effort: a run that cannot write there (CI's pass as a normal user over a root-owned
    // target folder) still tests; CI counts the reports of its own run and fails if one is missing.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("interop-report");
    if let Err(e) = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join(format!("{name}.md")), text))
    {
        eprintln!("the report {name} was not kept: {e}");
    }
}

/// The hash part of the label a Claude Code project's server gets (`NAME@FOLDER#HASH`): the
/// first 160 bits of the SHA-256 of the project's path, in lower-case base32 (RFC 4648),
/// computed here from the digest's text, apart from the library's own encoder.
pub fn project_label_hash(project: &str) -> String {
    let digest = skillcache::Digest::of(project.as_bytes()).to_string();
    let hex = digest.trim_start_matches("sha256:");
    let bits: String = hex[..40].chars().fold(String::new(), |mut bits, c| {
        let nibble = c.to_digit(16).expect("hex");
        bits.extend(
            (0..4)
                .rev()
                .map(|i| if nibble >> i & 1 == 1 { '1' } else { '0' }),
        );
        bits
    });
    bits.as_bytes()
        .chunks(5)
        .map(|c| {
            let v = c.iter().fold(0, |acc, b| acc * 2 + usize::from(b - b'0'));
            char::from(b"abcdefghijklmnopqrstuvwxyz234567"[v])
        })
        .collect()
}
