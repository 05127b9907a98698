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

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    const ABC: &str = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

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
