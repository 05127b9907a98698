//! `Digest`: a SHA-256 content digest, and the streaming hasher — the hot path.
//!
//! The text form is exactly `sha256:` followed by 64 lowercase hex digits (R-W1); anything else
//! (upper-case hex, another algorithm, whitespace, a wrong length) is refused by [`Digest::from_str`].
//! Comparison is on the 32 raw bytes, so it can never be fooled by spelling.

use std::fmt;
use std::io::{self, Read};
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

use crate::entry::error::EntryError;
use crate::rule::Rule;

/// The text prefix of every digest.
pub const PREFIX: &str = "sha256:";

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A SHA-256 digest of a file's raw bytes.
///
/// ```
/// use skillcache::Digest;
/// let d = Digest::of(b"abc");
/// assert_eq!(
///     d.to_string(),
///     "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// assert_eq!(d.to_string().parse::<Digest>().unwrap(), d);
/// assert!("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
///     .parse::<Digest>()
///     .is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The digest of `bytes`.
    #[must_use]
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    internal_pub! {
        /// The digest and length of everything `reader` yields, read in 64 KiB chunks.
        ///
        /// # Errors
        /// Any I/O error from `reader`.
        fn of_reader(mut reader: impl Read) -> io::Result<(Digest, u64)> {
            let mut hasher = Hasher::new();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => return Ok(hasher.finish()),
                    Ok(n) => hasher.update(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }

    internal_pub! {
        /// Builds a digest from its 32 raw bytes.
        #[must_use]
        const fn from_bytes(bytes: [u8; 32]) -> Digest {
            Digest(bytes)
        }
    }

    internal_pub! {
        /// The 32 raw bytes.
        #[must_use]
        const fn as_bytes(&self) -> &[u8; 32] {
            &self.0
        }
    }

    internal_pub! {
        /// The 64 lowercase hex digits, without the `sha256:` prefix (a host that wants them
        /// strips the prefix from the `Display` form).
        #[must_use]
        fn hex(&self) -> String {
            let mut buf = [0u8; 64];
            self.write_hex(&mut buf).to_owned()
        }
    }

    internal_pub! {
        /// The 64 lowercase hex digits written into `buf`, without allocating.
        fn write_hex<'b>(&self, buf: &'b mut [u8; 64]) -> &'b str {
            for (pair, b) in buf.chunks_exact_mut(2).zip(self.0) {
                pair[0] = HEX[usize::from(b >> 4)];
                pair[1] = HEX[usize::from(b & 0x0f)];
            }
            // Every byte written is an ASCII hex digit.
            std::str::from_utf8(buf).unwrap_or_default()
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(PREFIX)?;
        f.write_str(self.write_hex(&mut [0u8; 64]))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl FromStr for Digest {
    type Err = EntryError;

    /// Strict parse (R-W1): exactly `sha256:` and 64 lowercase hex digits.
    fn from_str(text: &str) -> Result<Digest, EntryError> {
        let fail = |rule| EntryError::Digest {
            text: text.to_owned(),
            rule,
        };
        let hex = text
            .strip_prefix(PREFIX)
            .ok_or_else(|| fail(Rule::DigestPrefix))?;
        if hex.len() != 64 {
            return Err(fail(Rule::DigestLength {
                actual: hex.chars().count(),
            }));
        }
        let mut out = [0u8; 32];
        for (slot, pair) in out.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
            let hi = lower_hex_value(pair[0]).ok_or_else(|| fail(Rule::DigestCharacter))?;
            let lo = lower_hex_value(pair[1]).ok_or_else(|| fail(Rule::DigestCharacter))?;
            *slot = (hi << 4) | lo;
        }
        Ok(Digest(out))
    }
}

fn lower_hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Digest, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A streaming SHA-256 hasher that also counts the bytes it has seen.
///
/// ```
/// use skillcache::{Digest, digest::Hasher};
/// let mut h = Hasher::new();
/// h.update(b"a");
/// h.update(b"bc");
/// assert_eq!(h.finish(), (Digest::of(b"abc"), 3));
/// ```
#[derive(Clone, Default)]
pub struct Hasher {
    inner: Sha256,
    len: u64,
}

impl Hasher {
    /// A fresh hasher.
    #[must_use]
    pub fn new() -> Hasher {
        Hasher::default()
    }

    /// Feeds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.inner.update(bytes);
        self.len += bytes.len() as u64;
    }

    /// The digest and the byte count.
    #[must_use]
    pub fn finish(self) -> (Digest, u64) {
        (Digest(self.inner.finalize().into()), self.len)
    }
}

impl fmt::Debug for Hasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hasher")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
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
    ) -> Result<VerifiedBytes, crate::mismatch::Mismatch> {
        use crate::mismatch::Mismatch;
        if bytes.len() as u64 != size {
            return Err(Mismatch::Size {
                expected: size,
                actual: bytes.len() as u64,
            });
        }
        let actual = Digest::of(&bytes);
        if actual != digest {
            return Err(Mismatch::Digest {
                expected: digest,
                actual,
            });
        }
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
    ) -> io::Result<Result<VerifiedBytes, crate::mismatch::Mismatch>> {
        use crate::mismatch::Mismatch;
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
        if buf.len() as u64 != size {
            return Ok(Err(Mismatch::Size {
                expected: size,
                actual: buf.len() as u64,
            }));
        }
        let actual = Digest(hasher.finalize().into());
        if actual != digest {
            return Ok(Err(Mismatch::Digest {
                expected: digest,
                actual,
            }));
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
    ) -> Result<VerifiedBytes, crate::mismatch::Mismatch> {
        VerifiedBytes::unhashed(bytes.into(), size, digest, false)
    }

    /// [`VerifiedBytes::by_isolation`] for a read-only map of the blob (zero-copy, issue 12):
    /// only the store makes one, on a `Guaranteed` hit whose evidence held before and after the
    /// map was made. The size is still checked.
    pub(crate) fn mapped(
        bytes: bytes::Bytes,
        size: u64,
        digest: Digest,
    ) -> Result<VerifiedBytes, crate::mismatch::Mismatch> {
        VerifiedBytes::unhashed(bytes, size, digest, true)
    }

    /// The one rule of both unhashed paths: no hash, but the size is still checked (R-C2(b)).
    fn unhashed(
        bytes: bytes::Bytes,
        size: u64,
        digest: Digest,
        mapped: bool,
    ) -> Result<VerifiedBytes, crate::mismatch::Mismatch> {
        if bytes.len() as u64 != size {
            return Err(crate::mismatch::Mismatch::Size {
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

    const EMPTY: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    const ABC: &str = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

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

    #[test]
    fn w1_known_vectors() {
        assert_eq!(Digest::of(b"").to_string(), EMPTY);
        assert_eq!(Digest::of(b"abc").to_string(), ABC);
        let (d, n) = Digest::of_reader(&b"abc"[..]).expect("in-memory read");
        assert_eq!((d.to_string().as_str(), n), (ABC, 3));
    }

    #[test]
    fn w1_round_trip() {
        let d: Digest = ABC.parse().expect("valid digest");
        assert_eq!(d.to_string(), ABC);
        assert_eq!(d, Digest::of(b"abc"));
    }

    #[test]
    fn w1_refuses_every_other_spelling() {
        let upper = format!("sha256:{}", &ABC[7..].to_uppercase());
        let cases = [
            upper.as_str(),
            &ABC[7..], // no prefix
            "SHA256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "sha512:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            " sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad ",
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a",
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015add",
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ag",
            "sha256:",
            "",
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f2001éa",
        ];
        for c in cases {
            assert!(
                matches!(c.parse::<Digest>(), Err(EntryError::Digest { .. })),
                "{c:?}"
            );
        }
    }

    #[test]
    fn w1_serde_uses_the_strict_text_form() {
        let d: Digest = serde_json::from_str(&format!("\"{ABC}\"")).expect("valid");
        assert_eq!(
            serde_json::to_string(&d).expect("serialises"),
            format!("\"{ABC}\"")
        );
        assert!(serde_json::from_str::<Digest>(&format!("\"{}\"", ABC.to_uppercase())).is_err());
    }
}
