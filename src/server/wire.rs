//! The JSON the skills server answers with, built from the catalog: entries, resource listings,
//! directory listings and resource contents, and the pages and cursors of the listings.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};

use super::catalog::Built;
use super::inspect::LocalSkill;
use super::{INVALID_PARAMS, RpcError};
use crate::uri::SKILL_MD;

/// How much one page of a listing may hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageBound {
    /// At most this many items...
    pub entries: usize,
    /// ...and at most this many bytes of them as JSON, unless one item alone is larger (an entry
    /// is never split, SEP-2640).
    pub bytes: usize,
}

/// A `skills/list` page: well under the 1 MiB one SSE event may hold in the Python SDK, so
/// every client can read every page (R-E8).
pub(crate) const SKILLS_PAGE: PageBound = PageBound {
    entries: 100,
    bytes: 256 << 10,
};

/// A `resources/list` page.
pub(crate) const RESOURCES_PAGE: PageBound = PageBound {
    entries: 500,
    bytes: 256 << 10,
};

/// One page of a listing: its items, and the cursor of the next page if there is one.
pub(crate) struct Page<'a> {
    pub items: Vec<&'a Arc<Built>>,
    pub next: Option<String>,
}

/// Takes the first page of `items` within `bound`, each weighing `len` bytes.
pub(crate) fn page<'a>(
    items: impl Iterator<Item = &'a Arc<Built>>,
    bound: PageBound,
    len: impl Fn(&Built) -> usize,
) -> Page<'a> {
    let mut out: Vec<&'a Arc<Built>> = Vec::new();
    let mut bytes = 0usize;
    for item in items {
        let weight = len(item);
        if let Some(last) = out.last()
            && (out.len() >= bound.entries || bytes.saturating_add(weight) > bound.bytes)
        {
            let next = Some(cursor(&last.rel));
            return Page { items: out, next };
        }
        bytes = bytes.saturating_add(weight);
        out.push(item);
    }
    Page {
        items: out,
        next: None,
    }
}

/// What every cursor this server gives out starts with, before encoding: a cursor from anyone
/// else, or from another version of this server, is refused instead of misread.
const CURSOR_PREFIX: &str = "skillcache-serve/1:";

/// The opaque cursor of the page that starts after the skill at `rel` (its URI path: a key that
/// stays meaningful when skills are added or removed between pages).
pub(crate) fn cursor(rel: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{rel}"))
}

/// `params.cursor`, decoded to the key it stands for; `-32602` for anything this server did not
/// give out (the message does not quote it).
pub(crate) fn cursor_param(params: &Value) -> Result<Option<String>, RpcError> {
    let bad = || {
        (
            INVALID_PARAMS,
            "params.cursor is not a cursor this server gave out".to_owned(),
        )
    };
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.len() <= 8192 => {
            let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(text)
                .map_err(|_| bad())?;
            let text = String::from_utf8(bytes).map_err(|_| bad())?;
            let rel = text.strip_prefix(CURSOR_PREFIX).ok_or_else(bad)?;
            if rel.is_empty() || !rel.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(bad());
            }
            Ok(Some(rel.to_owned()))
        }
        Some(_) => Err(bad()),
    }
}

/// The length of a skill's `resources/list` item as JSON, near enough to page by.
pub(crate) fn resource_len(skill: &LocalSkill) -> usize {
    let uri = skill.entry.uri().as_str();
    json_len(uri) + json_len(skill.entry.name()) + json_len(skill.entry.description()) + 96
}

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
    // A table rather than a `match` per byte: the sum then runs over whole vectors of bytes
    // (this was a tenth of `serve`'s time answering a sweep's reads).
    text.bytes()
        .map(|b| usize::from(ESCAPED_LEN[usize::from(b)]))
        .sum::<usize>()
        + 2
}

/// How many bytes each byte takes inside a JSON string.
const ESCAPED_LEN: [u8; 256] = {
    let mut t = [1u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = 6;
        b += 1;
    }
    let mut i = 0;
    let short = [b'"', b'\\', b'\n', b'\r', b'\t', 0x08, 0x0c];
    while i < short.len() {
        t[short[i] as usize] = 2;
        i += 1;
    }
    t
};

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
