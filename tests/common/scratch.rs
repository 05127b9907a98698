//! A temporary folder that a normal user can remove after a test.
//!
//! The store seals its shard folders read-only (0555, the invariant that verified bytes sit in a
//! read-only tree). Root removes such a tree anyway, but a normal user's `remove_dir_all` cannot
//! unlink inside a folder it may not write, so a plain `tempfile::TempDir` leaks every cache a
//! test opened — thousands of folders in `/tmp` per `cargo test` run as a normal user (which is
//! how `.ci/run`'s second pass runs the suite). `Scratch` gives write permission back to the
//! folders it owns, without following symbolic links (hostile-root tests plant links that point
//! outside), and then lets `TempDir` remove the tree.
//!
//! One file, included by the integration tests (`tests/common`), the unit tests and the benches
//! through `#[path]`, so that there is one copy of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

// How a folder's owner is let back in differs by platform: the platform layer's one file that
// other crates include too (the library's unit tests load it twice: once as the platform's).
#[allow(clippy::duplicate_mod)]
#[path = "../../src/platform/named.rs"]
mod named;

/// A temporary folder removed on drop, read-only folders included.
#[derive(Debug)]
pub struct Scratch(Option<tempfile::TempDir>);

/// A new temporary folder in the system's temporary directory.
pub fn scratch() -> Scratch {
    Scratch(Some(tempfile::tempdir().expect("a temporary folder")))
}

impl Scratch {
    pub fn path(&self) -> &Path {
        self.0.as_ref().expect("present until drop").path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let Some(dir) = self.0.take() else { return };
        // Iterative, like the store's own removal: a planted tree may be deeper than the stack.
        let mut pending: Vec<PathBuf> = vec![dir.path().to_path_buf()];
        while let Some(folder) = pending.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&folder) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            let _ = named::let_owner_in(&folder, &meta);
            if let Ok(entries) = std::fs::read_dir(&folder) {
                // `file_type` does not follow links: a link to a folder is not entered.
                pending.extend(
                    entries
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path()),
                );
            }
        }
        drop(dir);
    }
}
