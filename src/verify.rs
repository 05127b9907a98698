//! [`VerifiedBytes`]: bytes that matched an entry's size and digest, and the one comparison that
//! says whether they do (R-V2, R-V3). Every path that checks bytes — a fetched file, a re-hashed
//! hit, a publish into the store, an object from the shared tier — ends in [`expect`].

use std::fmt;
use std::io::{self, Read};

use sha2::{Digest as _, Sha256};

use crate::digest::Digest;
use crate::mismatch::Mismatch;

/// What a file's bytes were checked against. A type, not a flag: a host that wants the digest
/// has to say what it does with a dynamic skill's file, which has none (R-V7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// The bytes matched the size and digest the held entry lists — and, for a `SKILL.md`, its
    /// frontmatter — on this access (R-V2, R-V6).
    Verified(Digest),
    /// A dynamic skill's file: its server publishes no digest, so there was nothing to check it
    /// against. Served only when the host accepts dynamic skills (R-V7); never cached.
    Unverified,
}

/// The one size-then-digest comparison (R-V3: a length that differs is a failure whatever the
/// digest): `len` bytes were seen, hashing to `actual`; the entry promised `size` bytes hashing
/// to `digest`.
///
/// # Errors
/// The first difference: [`Mismatch::Size`], else [`Mismatch::Digest`].
pub(crate) fn expect(size: u64, digest: Digest, len: u64, actual: Digest) -> Result<(), Mismatch> {
    if len != size {
        return Err(Mismatch::Size {
            expected: size,
            actual: len,
        });
    }
    if actual != digest {
        return Err(Mismatch::Digest {
            expected: digest,
            actual,
        });
    }
    Ok(())
}

/// Bytes that matched an expected size and digest at the moment they were checked.
///
/// There is no public constructor: the only ways to get one are the verified read of the store
/// and the verification of fetched bytes, so a value of this type *is* the proof (R-V2).
#[derive(Clone, PartialEq, Eq)]
pub struct VerifiedBytes {
    /// Shared: a clone (a memory-tier hit, a `SkillFile`) copies no byte, and nobody can write
    /// through it, so bytes that were verified stay verified.
    bytes: bytes::Bytes,
    digest: Digest,
    rehashed: bool,
    /// A read-only map of the blob rather than a private copy (a large `Guaranteed` hit).
    mapped: bool,
}

impl VerifiedBytes {
    /// Checks size first, then digest (R-V3).
    pub(crate) fn check(
        bytes: Vec<u8>,
        size: u64,
        digest: Digest,
    ) -> Result<VerifiedBytes, Mismatch> {
        // Size first: a wrong length is known without hashing (R-V3).
        if bytes.len() as u64 != size {
            return Err(Mismatch::Size {
                expected: size,
                actual: bytes.len() as u64,
            });
        }
        expect(size, digest, size, Digest::of(&bytes))?;
        Ok(VerifiedBytes {
            bytes: bytes.into(),
            digest,
            rehashed: true,
            mapped: false,
        })
    }

    /// Reads at most `size + 1` bytes of `reader` into one buffer, hashing each chunk as it
    /// arrives while it is still in the CPU cache, then checks size first, then digest (R-V3).
    /// One pass over the bytes instead of a read then a hash: what a re-hashed hit of a large
    /// blob costs is the hash and little more (issue 12). The bound of `size + 1` bytes means a
    /// file that is too long is known to be, without reading it all.
    ///
    /// # Errors
    /// The reader's errors; a mismatch is the inner `Err`.
    pub(crate) fn read_checked(
        reader: impl Read,
        size: u64,
        digest: Digest,
    ) -> io::Result<Result<VerifiedBytes, Mismatch>> {
        /// Small enough to stay in a core's cache between the copy and the hash.
        const CHUNK: u64 = 256 * 1024;
        let cap = usize::try_from(size.saturating_add(1))
            .unwrap_or(usize::MAX)
            .min(64 << 20);
        // Not zeroed: `read_to_end` fills the spare capacity directly (a zeroed buffer would
        // cost a pass over 16 MiB whenever the allocator recycles memory instead of mapping it).
        let mut buf = Vec::with_capacity(cap);
        let mut hasher = Sha256::new();
        let mut rest = reader.take(size.saturating_add(1));
        loop {
            let start = buf.len();
            (&mut rest).take(CHUNK).read_to_end(&mut buf)?;
            if buf.len() == start {
                break;
            }
            hasher.update(&buf[start..]);
        }
        let actual = Digest::from_bytes(hasher.finalize().into());
        if let Err(m) = expect(size, digest, buf.len() as u64, actual) {
            return Ok(Err(m));
        }
        Ok(Ok(VerifiedBytes {
            bytes: buf.into(),
            digest,
            rehashed: true,
            mapped: false,
        }))
    }

    /// Accepts bytes without hashing, on the host's guarantee of write isolation and the store's
    /// evidence checks (R-C2(b)). The size is still checked.
    pub(crate) fn by_isolation(
        bytes: Vec<u8>,
        size: u64,
        digest: Digest,
    ) -> Result<VerifiedBytes, Mismatch> {
        VerifiedBytes::unhashed(bytes.into(), size, digest, false)
    }

    /// [`VerifiedBytes::by_isolation`] for a read-only map of the blob (zero-copy, issue 12):
    /// only the store makes one, on a `Guaranteed` hit whose evidence held before and after the
    /// map was made. The size is still checked.
    pub(crate) fn mapped(
        bytes: bytes::Bytes,
        size: u64,
        digest: Digest,
    ) -> Result<VerifiedBytes, Mismatch> {
        VerifiedBytes::unhashed(bytes, size, digest, true)
    }

    /// The one rule of both unhashed paths: no hash, but the size is still checked (R-C2(b)).
    fn unhashed(
        bytes: bytes::Bytes,
        size: u64,
        digest: Digest,
        mapped: bool,
    ) -> Result<VerifiedBytes, Mismatch> {
        if bytes.len() as u64 != size {
            return Err(Mismatch::Size {
                expected: size,
                actual: bytes.len() as u64,
            });
        }
        Ok(VerifiedBytes {
            bytes,
            digest,
            rehashed: false,
            mapped,
        })
    }

    /// The bytes.
    #[must_use]
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes
    }

    internal_pub! {
        /// The bytes, owned. Copies only when the bytes are shared (held by the memory tier or
        /// another clone); a sole owner gets the allocation back.
        #[must_use]
        fn into_vec(self) -> Vec<u8> {
            Vec::from(self.bytes)
        }
    }

    /// The bytes as a shared handle: cloning it copies nothing.
    #[must_use]
    pub fn into_shared(self) -> bytes::Bytes {
        self.bytes
    }

    /// A copy of these verified bytes served from process memory (the memory tier): process
    /// memory is write-isolated by construction, so no re-hash is needed or reported.
    pub(crate) fn memory_hit(&self) -> VerifiedBytes {
        VerifiedBytes {
            bytes: self.bytes.clone(),
            digest: self.digest,
            rehashed: false,
            mapped: self.mapped,
        }
    }

    /// Whether the bytes are a read-only map of the blob file, not a private copy. A map is only
    /// as isolated as the file under it, so the memory tier never keeps one.
    pub(crate) fn is_mapped(&self) -> bool {
        self.mapped
    }

    /// The digest they matched.
    #[must_use]
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// Whether they were re-hashed on this access (false: accepted on write-isolation evidence,
    /// or served from the memory tier of bytes this process verified earlier).
    #[must_use]
    pub fn rehashed(&self) -> bool {
        self.rehashed
    }
}

impl fmt::Debug for VerifiedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifiedBytes")
            .field("len", &self.bytes.len())
            .field("digest", &self.digest)
            .field("rehashed", &self.rehashed)
            .field("mapped", &self.mapped)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per call and counts what it gave: proves the
    /// one-pass read stops at `size + 1` bytes however long the source is (R-V3).
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
        given: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.step).min(self.bytes.len() - self.given);
            buf[..n].copy_from_slice(&self.bytes[self.given..self.given + n]);
            self.given += n;
            Ok(n)
        }
    }

    #[test]
    fn v3_read_checked_accepts_exact_bytes_read_in_any_pieces() {
        let bytes: Vec<u8> = (0..700_000u32).map(|i| (i % 253) as u8).collect();
        let digest = Digest::of(&bytes);
        let mut r = Trickle {
            bytes: &bytes,
            step: 4099,
            given: 0,
        };
        let v = VerifiedBytes::read_checked(&mut r, bytes.len() as u64, digest)
            .expect("no i/o error")
            .expect("verified");
        assert_eq!(v.as_slice(), bytes.as_slice());
        assert!(v.rehashed() && !v.is_mapped());
    }

    #[test]
    fn v3_read_checked_stops_one_byte_past_the_size_and_says_so() {
        let long = vec![1u8; 1 << 20];
        let mut r = Trickle {
            bytes: &long,
            step: 1 << 16,
            given: 0,
        };
        let got = VerifiedBytes::read_checked(&mut r, 1000, Digest::of(&long[..1000])).expect("io");
        assert_eq!(
            got.err(),
            Some(crate::mismatch::Mismatch::Size {
                expected: 1000,
                actual: 1001
            })
        );
        assert_eq!(r.given, 1001, "never more than size + 1 bytes are read");
    }

    #[test]
    fn v2_read_checked_refuses_bytes_of_the_right_size_and_the_wrong_digest() {
        let bytes = vec![7u8; 300_000];
        let mut wrong = bytes.clone();
        wrong[299_999] = 8;
        let got = VerifiedBytes::read_checked(&wrong[..], 300_000, Digest::of(&bytes)).expect("io");
        assert!(matches!(got, Err(crate::mismatch::Mismatch::Digest { .. })));
    }
}
