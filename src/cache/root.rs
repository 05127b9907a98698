//! The cache root: where it is by default, and the check that keeps it outside every
//! filesystem-skill discovery path (R-C1).

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::error::Error;

/// Agent skill folders under the home directory that hosts scan for filesystem skills.
pub const HOME_DISCOVERY_PATHS: &[&str] = &[
    ".claude/skills",
    ".agents/skills",
    ".codex/skills",
    ".cursor/skills",
    ".copilot/skills",
    ".gemini/skills",
    ".config/agents/skills",
    ".config/opencode/skills",
];

/// Project-relative skill folders (resolved against the current directory).
pub const PROJECT_DISCOVERY_PATHS: &[&str] =
    &[".claude/skills", ".agents/skills", ".github/skills"];

/// The default root: `$SKILLCACHE_ROOT`, else `$XDG_CACHE_HOME/skillcache`, else
/// `~/.cache/skillcache`.
#[must_use]
pub fn default_root() -> PathBuf {
    if let Some(r) = std::env::var_os("SKILLCACHE_ROOT").filter(|v| !v.is_empty()) {
        return PathBuf::from(r);
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(x).join("skillcache");
    }
    home().join(".cache").join("skillcache")
}

fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

/// The well-known discovery paths: the home ones and the project ones.
#[must_use]
pub fn default_discovery_paths() -> Vec<PathBuf> {
    let home = home();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    HOME_DISCOVERY_PATHS
        .iter()
        .map(|p| home.join(p))
        .chain(PROJECT_DISCOVERY_PATHS.iter().map(|p| cwd.join(p)))
        .collect()
}

/// Resolves symlinks in the longest existing prefix of `path` and appends the rest lexically, so
/// a path that does not exist yet is still compared where it would really be.
fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut existing = absolute.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = fs::canonicalize(&existing) {
            let mut out = real;
            for c in rest.iter().rev() {
                out.push(c);
            }
            return normalise(&out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent.to_owned();
            }
            _ => return normalise(&absolute),
        }
    }
}

fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Refuses a root inside, or containing, any discovery path (after resolving symlinks), then
/// creates it owner-only (0700). Returns the resolved root.
pub(crate) fn prepare(root: &Path, discovery: &[PathBuf]) -> Result<PathBuf, Error> {
    let resolved = resolve(root);
    for d in discovery {
        let dr = resolve(d);
        let why = if resolved.starts_with(&dr) {
            "it lies inside the skill discovery path"
        } else if dr.starts_with(&resolved) {
            "it contains the skill discovery path"
        } else {
            continue;
        };
        return Err(Error::RootRefused {
            root: root.to_owned(),
            why,
            path: d.clone(),
        });
    }
    match fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&resolved)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(Error::Io {
                op: "create",
                path: resolved,
                source,
            });
        }
    }
    let meta = fs::symlink_metadata(&resolved).map_err(|source| Error::Io {
        op: "stat",
        path: resolved.clone(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(Error::RootRefused {
            root: root.to_owned(),
            why: "it is not a folder:",
            path: resolved,
        });
    }
    // Owner-only, even if it existed with wider modes.
    fs::set_permissions(&resolved, fs::Permissions::from_mode(0o700)).map_err(|source| {
        Error::Io {
            op: "chmod",
            path: resolved.clone(),
            source,
        }
    })?;
    Ok(resolved)
}
