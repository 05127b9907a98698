//! Local skill folders: the entry a server would publish for a folder on disk.
//!
//! Skill authors use it (through `skillcache inspect`) to check a skill before publishing, and
//! the bundled server (`skillcache serve`) uses it to publish a folder of skills. The entry is
//! built the way a server must build it — every file with its real digest and size, the
//! frontmatter rendered verbatim as JSON — and then validated by the same rules that apply to
//! any server's entry, so a folder that passes here passes in every skillcache host.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::digest::Digest;
use crate::entry::{SkillEntry, Validation};
use crate::error::Error;
use crate::frontmatter;
use crate::uri::{FileUri, SKILL_MD, SkillUri};

/// One file of a local skill and where it lies on disk.
#[derive(Debug, Clone)]
pub struct LocalFile {
    /// The file's URI in the published skill.
    pub uri: FileUri,
    /// Its path on disk.
    pub path: PathBuf,
    /// Its digest.
    pub digest: Digest,
    /// Its size.
    pub size: u64,
}

/// A validated local skill: its entry and its files.
#[derive(Debug, Clone)]
pub struct LocalSkill {
    /// The entry a server would publish.
    pub entry: SkillEntry,
    /// Every file, in canonical URI order.
    pub files: Vec<LocalFile>,
}

/// Builds and validates the entry for the skill folder `dir`, published with root URI `root`
/// (for example `skill://pdf-processing`, no trailing slash).
///
/// Nested skills' files are ordinary supporting files of the enclosing skill (they are listed
/// too). Symbolic links are refused: a published skill is the folder's own bytes.
///
/// # Errors
/// Every reason the folder is not a valid skill, not just the first.
pub fn inspect(dir: &Path, root: &str, validation: &Validation) -> Result<LocalSkill, Vec<Error>> {
    let mut problems = Vec::new();
    let skill_uri_text = format!("{root}/{SKILL_MD}");
    let skill_uri = match SkillUri::parse(&skill_uri_text) {
        Ok(u) => Some(u),
        Err(e) => {
            problems.push(e);
            None
        }
    };
    let mut paths = Vec::new();
    walk(dir, &mut Vec::new(), &mut paths, &mut problems);

    let mut files = Vec::with_capacity(paths.len());
    let mut resources = Vec::with_capacity(paths.len());
    let mut fm = None;
    for (segments, path) in paths {
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(source) => {
                problems.push(Error::Io {
                    op: "read",
                    path,
                    source,
                });
                continue;
            }
        };
        let uri_text = format!("{root}/{}", segments.join("/"));
        let uri = match FileUri::parse(&uri_text) {
            Ok(u) => u,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        if skill_uri.as_ref().is_some_and(|s| s.file() == &uri) {
            match frontmatter::parse(&bytes) {
                Ok(map) => fm = Some(map),
                Err(e) => problems.push(e),
            }
        }
        let digest = Digest::of(&bytes);
        let size = bytes.len() as u64;
        resources.push(json!({"uri": uri_text, "digest": digest.to_string(), "size": size}));
        files.push(LocalFile {
            uri,
            path,
            digest,
            size,
        });
    }
    if !dir.join(SKILL_MD).is_file() {
        problems.push(Error::InvalidSkillFolder {
            path: dir.join(SKILL_MD),
            why: "is missing",
        });
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let Some(fm) = fm else { return Err(problems) };
    let value =
        json!({"uri": skill_uri_text, "frontmatter": Value::Object(fm), "resources": resources});
    match SkillEntry::from_json(&value, validation) {
        Ok(entry) => {
            files.sort_by(|a, b| a.uri.cmp(&b.uri));
            Ok(LocalSkill { entry, files })
        }
        Err(e) => Err(vec![e]),
    }
}

/// Every folder under `root` (itself included) that holds a `SKILL.md`, as path segments relative
/// to `root`, in sorted order. Nested skills are found too.
#[must_use]
pub fn find_skills(root: &Path) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut paths = Vec::new();
    walk(root, &mut Vec::new(), &mut paths, &mut Vec::new());
    for (segments, _) in paths {
        if segments.last().map(String::as_str) == Some(SKILL_MD) {
            out.push(segments[..segments.len() - 1].to_vec());
        }
    }
    out
}

/// Collects regular files as (percent-encoded segments, path); reports links and oddities.
fn walk(
    dir: &Path,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, PathBuf)>,
    problems: &mut Vec<Error>,
) {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(source) => {
            problems.push(Error::Io {
                op: "read directory",
                path: dir.to_owned(),
                source,
            });
            return;
        }
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(fs::DirEntry::file_name);
    for e in entries {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        prefix.push(encode_segment(&e.file_name()));
        if kind.is_symlink() {
            problems.push(Error::InvalidSkillFolder {
                path,
                why: "is a symbolic link",
            });
        } else if kind.is_dir() {
            walk(&path, prefix, out, problems);
        } else if kind.is_file() {
            out.push((prefix.clone(), path));
        } else {
            problems.push(Error::InvalidSkillFolder {
                path,
                why: "is not a regular file or folder",
            });
        }
        prefix.pop();
    }
}

/// A file name as one URI path segment, in the canonical encoding.
fn encode_segment(name: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    crate::uri::encode_segment(name.as_bytes())
}
