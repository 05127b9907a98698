//! The JSON the skills server answers with, built from the catalog: entries, resource listings,
//! directory listings and resource contents.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::local::LocalSkill;
use crate::uri::SKILL_MD;

/// The MIME type SEP-2640 gives directory resources (`resources/directory/read`).
pub(crate) const DIRECTORY_MIME: &str = "inode/directory";

/// The `resources/list` item for a skill's `SKILL.md`: named and described by its frontmatter,
/// typed `text/markdown` (SEP-2640's manifest resource).
pub(crate) fn skill_md_resource(skill: &LocalSkill) -> Value {
    let uri = skill.entry.uri().file();
    let size = skill.entry.file(uri).map(crate::entry::ManifestFile::size);
    json!({
        "uri": uri.as_str(),
        "name": skill.entry.name(),
        "description": skill.entry.description(),
        "mimeType": "text/markdown",
        "size": size,
    })
}

/// The direct children of the directory `dir` (a URI without a trailing slash) among a skill's
/// files: files with their type and size, subfolders as `inode/directory`. `None` when no file
/// lies under `dir`, so `dir` is not a directory this skill serves.
pub(crate) fn directory_children(skill: &LocalSkill, dir: &str) -> Option<Vec<Value>> {
    let prefix = format!("{dir}/");
    // Child name → Some(file index) for a file, None for a folder; sorted by name.
    let mut children: BTreeMap<&str, Option<usize>> = BTreeMap::new();
    for (i, file) in skill.files.iter().enumerate() {
        let Some(rest) = file.uri.as_str().strip_prefix(&prefix) else {
            continue;
        };
        match rest.split_once('/') {
            Some((folder, _)) => {
                children.entry(folder).or_insert(None);
            }
            None => {
                children.insert(rest, Some(i));
            }
        }
    }
    if children.is_empty() {
        return None;
    }
    Some(
        children
            .into_iter()
            .map(|(name, file)| match file {
                Some(i) => {
                    let f = &skill.files[i];
                    json!({"uri": f.uri.as_str(), "name": name, "mimeType": mime(&f.path), "size": f.size})
                }
                None => json!({"uri": format!("{prefix}{name}"), "name": name, "mimeType": DIRECTORY_MIME}),
            })
            .collect(),
    )
}

/// One `resources/read` content item for the bytes of the file at `path` served as `uri`.
///
/// Text only while its JSON form is no longer than base64 would be: text heavy in escapes
/// (`\u00XX` is six bytes) goes as a blob, so every file inside the limits fits the message
/// bound (R-B2). Bytes that are not UTF-8 always go as a blob.
pub(crate) fn content(uri: &str, path: &Path, bytes: Vec<u8>) -> Value {
    match String::from_utf8(bytes) {
        Ok(text) if json_len(&text) <= base64_len(text.len()) => {
            json!({"uri": uri, "mimeType": mime(path), "text": text})
        }
        Ok(text) => json!({"uri": uri, "mimeType": mime(path),
                           "blob": base64::engine::general_purpose::STANDARD.encode(text.as_bytes())}),
        Err(e) => json!({"uri": uri, "mimeType": "application/octet-stream",
                         "blob": base64::engine::general_purpose::STANDARD.encode(e.as_bytes())}),
    }
}

/// The length of `text` as a JSON string.
pub(crate) fn json_len(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum::<usize>()
        + 2
}

/// The length of `n` bytes in base64 as a JSON string.
pub(crate) fn base64_len(n: usize) -> usize {
    n.div_ceil(3) * 4 + 2
}

/// The MIME type by file name; `SKILL.md` is `text/markdown` (SEP-2640).
pub(crate) fn mime(path: &Path) -> &'static str {
    if path.file_name().and_then(|n| n.to_str()) == Some(SKILL_MD) {
        return "text/markdown";
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("md") => "text/markdown",
        Some("py") => "text/x-python",
        Some("json") => "application/json",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ => "text/plain",
    }
}
