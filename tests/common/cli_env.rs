//! The `skillcache` binary as the CLI tests run it (`cli`, `cli_config`, `transport`): one
//! scratch home per test, the command with its root in it, and what the command printed.
//!
//! Included with `#[path]` by the tests that run the binary (as `http.rs` is), beside
//! `common/mod.rs`, whose `bin()` finds the binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use crate::common::bin;

/// One test's scratch home: the cache root (`root`) and whatever the test writes beside it.
/// Each test file adds the fixtures it needs (served folders, config files) in its own
/// `impl Env`.
pub struct Env {
    dir: crate::common::Scratch,
    keyed: bool,
}

impl Env {
    /// Commands get a root only.
    pub fn new() -> Env {
        Env {
            dir: crate::common::scratch(),
            keyed: false,
        }
    }

    /// Commands also get the key file `host.key` beside the root, and run inside the home, where
    /// lock files and relative paths are looked for.
    pub fn keyed() -> Env {
        Env {
            keyed: true,
            ..Env::new()
        }
    }

    /// The home folder.
    pub fn home(&self) -> &Path {
        self.dir.path()
    }

    /// `name` inside the home.
    pub fn path(&self, name: &str) -> PathBuf {
        self.home().join(name)
    }

    /// The cache root every command is given.
    pub fn root(&self) -> PathBuf {
        self.path("root")
    }

    /// The binary with this home's cache, ready for arguments (the command first). The root
    /// and the key file are given by `SKILLCACHE_ROOT` and `SKILLCACHE_KEY_FILE`, which every
    /// command that opens the cache reads when `--root`/`--key-file` are not given, so one
    /// helper serves every command (a `serve` or `inspect` takes no `--root`).
    pub fn cli(&self) -> Command {
        let mut c = Command::new(bin());
        c.env("SKILLCACHE_ROOT", self.root());
        if self.keyed {
            c.env("SKILLCACHE_KEY_FILE", self.path("host.key"))
                .current_dir(self.home());
        } else {
            c.env_remove("SKILLCACHE_KEY_FILE");
        }
        c
    }

    /// Runs the binary with `args` to the end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cli().args(args).output().expect("run skillcache")
    }
}

/// `skillcache serve DIR` as one command line for `--stdio`.
pub fn serve_cmd(dir: &Path) -> String {
    format!("'{}' serve '{}'", bin().display(), dir.display())
}

/// The exit code (-1 for a signal).
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
