//! The one place this crate uses `unsafe`: a read-only map of a large blob, handed out on an
//! [`Isolation::Guaranteed`](super::Isolation::Guaranteed) hit whose evidence holds (issue 12),
//! instead of a private copy. Everything else in the crate denies `unsafe_code`.

use std::fs::File;
use std::io;

/// Maps all `len` bytes of `file` read-only, as shared bytes that unmap when the last clone
/// drops.
///
/// The caller must have checked, on this very handle, that the file is a blob the crate
/// published and that nobody may write: see the `SAFETY` argument below, which holds only under
/// those checks. The store calls this from one place, [`BlobStore::read`](super::BlobStore::read),
/// after the `Guaranteed` evidence checks, and re-checks the evidence after mapping.
pub(super) fn map_read_only(file: &File, len: u64) -> io::Result<bytes::Bytes> {
    let len = usize::try_from(len).map_err(|_| io::Error::other("a blob too large to map"))?;
    // SAFETY: `memmap2::Mmap::map` is unsafe because the mapped file may change while the map
    // is alive, which would change bytes behind a `&[u8]`. The caller hands us only a blob for
    // which all of this held just before the call (and re-checks it just after):
    // - the host guarantees write isolation (`Isolation::Guaranteed`): nobody but this host's
    //   user writes under the root, and the root and every folder below it are owner-only;
    // - the file is a regular file opened without following links, owned by the root's owner,
    //   mode without any write bit (0444), one link (no other name to write it through), with
    //   the length the entry lists and the inode and change time recorded at publish and
    //   confirmed by a hashed read (R-H4);
    // - this crate never writes, truncates or reopens for writing a published blob: publish
    //   links a new inode under a new name, quarantine renames, gc and purge unlink — none of
    //   which changes the bytes of an inode that is already mapped.
    // So the bytes under the map cannot change while it lives, unless the guarantee is broken
    // (root, or our own user with `chmod` first); that residual risk (a truncation then faults
    // with SIGBUS on access) is stated in docs/design.md, "Zero-copy hits".
    let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
    Ok(bytes::Bytes::from_owner(map))
}
