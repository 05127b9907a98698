//! `resources/read`: the bytes `serve` published, and nothing else (R-E1).
//!
//! A request names a file URI; the snapshot says which file of which skill that is, with the
//! digest and size the catalog published for it. The file is opened from the served folder's
//! descriptor with the crate's one opener ([`crate::beneath`]): no link anywhere on the way, no
//! magic link, non-blocking, a regular file no longer than the published size. Its bytes are
//! read (at most one past the size) and hashed, and answered only if they are the published
//! ones. Anything else — the file swapped for a link to a file outside the folder, for a link to
//! `/dev/zero` or to a FIFO, edited, grown, removed — is an error answer, and the skill's folder
//! is scanned again so the next `skills/get` publishes it as it now is.
//!
//! A watched server answers a file its scan held ([`super::held`]) from those bytes — the ones
//! hashed into the published digest — without touching the folder.

use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::catalog::Snapshot;
use super::inspect::LocalFile;
use crate::platform::BorrowedFd;
use super::{INTERNAL_ERROR, INVALID_PARAMS, RpcError, SkillServer, wire};
use crate::beneath::{self, Refused};
use crate::digest::Digest;
use crate::uri::FileUri;

/// Why a served file's bytes are not the published ones.
#[derive(Debug, thiserror::Error)]
enum Changed {
    #[error("{0}")]
    Refused(#[from] Refused),
    #[error("its length is {actual}, not the {expected} bytes published")]
    Length { expected: u64, actual: u64 },
    #[error("its digest is not the one published")]
    Digest,
    #[error("it cannot be read")]
    Read(#[source] std::io::Error),
}

/// The `resources/read` content item for `uri`: the published bytes of the published file, or
/// an error answer (R-E1). A dynamic skill's file is answered as it now is once its skill was
/// scanned again (its bytes are not bound to a published digest; they are still read from the
/// folder's descriptor, bounded and without following a link).
///
/// # Errors
/// `-32602` for a URI that is not published; `-32603` for a file that changed since.
pub(super) fn published(
    server: &SkillServer,
    snap: &Arc<Snapshot>,
    uri: &FileUri,
) -> Result<Value, RpcError> {
    // Fixed words (R-E3: nothing a client sent is echoed back); the client names the URI.
    let unknown = || (INVALID_PARAMS, "no resource is served at that URI".to_owned());
    let (built, i) = snap.file(uri).ok_or_else(unknown)?;
    let entry = built.entry().ok_or_else(unknown)?;
    let file = &entry.skill.files[i];
    // A dynamic skill's files are answered as they now are: never from what the scan held.
    if let Some(held) = &file.held
        && !server.dynamic.contains(&built.rel)
    {
        return Ok(wire::content(uri.as_str(), &file.path, held.bytes().to_vec()));
    }
    let root = snap.root().ok_or_else(unknown)?;
    match read_checked(root, &built.dir.join(&file.rel), file) {
        Ok(bytes) => return Ok(wire::content(uri.as_str(), &file.path, bytes)),
        Err(why) => {
            tracing::warn!(
                path = %file.path.display(),
                %why,
                "a served file is not what was published: answered with an error, its skill is scanned again"
            );
        }
    }
    let next = server
        .shared
        .recheck(snap.clone(), built, &server.root, &server.validation());
    if server.dynamic.contains(&built.rel)
        && let Some((built, i)) = next.file(uri)
        && let (Some(entry), Some(root)) = (built.entry(), next.root())
    {
        let file = &entry.skill.files[i];
        if let Ok(bytes) = read_checked(root, &built.dir.join(&file.rel), file) {
            return Ok(wire::content(uri.as_str(), &file.path, bytes));
        }
    }
    Err((
        INTERNAL_ERROR,
        "the file changed since it was published; its skill was scanned again (get the skill again)"
            .to_owned(),
    ))
}

/// The bytes of `file` at `rel` below `root`, if they are exactly the ones published.
fn read_checked(root: BorrowedFd<'_>, rel: &Path, file: &LocalFile) -> Result<Vec<u8>, Changed> {
    let (handle, len) = beneath::open_regular(root, rel, file.size)?;
    if len != file.size {
        return Err(Changed::Length {
            expected: file.size,
            actual: len,
        });
    }
    // One byte past the published size at most: a file that grows while it is read is caught,
    // never read whole.
    let mut bytes = Vec::with_capacity(usize::try_from(file.size).unwrap_or(0));
    handle
        .take(file.size.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Changed::Read)?;
    let actual = bytes.len() as u64;
    if actual != file.size {
        return Err(Changed::Length {
            expected: file.size,
            actual,
        });
    }
    if Digest::of(&bytes) != file.digest {
        return Err(Changed::Digest);
    }
    Ok(bytes)
}
