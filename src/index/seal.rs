//! Row seals (R-H3): an HMAC-SHA256 under the host key over every field of an index row that
//! matters, so that a row read back from `index.sqlite3` is believed only if this host wrote it.
//!
//! Anyone who can write the root can write the database, but only the host user can read the
//! key, which lives outside the root. A row whose seal does not verify (edited, copied from
//! another table, origin or principal, written under another key, or written by a version that
//! did not seal) is treated as absent by the callers.
//!
//! Encoding: the MAC input starts with a per-table domain tag, then each field as an 8-byte
//! little-endian length followed by its bytes. Integers are the `i64` `SQLite` stores, as 8 bytes;
//! an optional field is a 1-byte presence tag, then the field. Length prefixes make the input
//! injective: no two different rows produce the same byte string. The origin is sealed by its
//! *label*, never by its numeric id, so swapping labels in `origins` breaks every seal.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The length of a host key and of a seal.
pub const KEY_LEN: usize = 32;

/// The 32-byte host key that seals index rows. Its bytes never appear in `Debug` output.
#[derive(Clone)]
pub struct SealKey {
    /// The keyed MAC state, ready to be cloned per row (the key schedule is done once).
    mac: Hmac<Sha256>,
    /// A short public fingerprint, for diagnostics only.
    id: [u8; 4],
}

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SealKey({:02x}{:02x}{:02x}{:02x}…)",
            self.id[0], self.id[1], self.id[2], self.id[3]
        )
    }
}

impl SealKey {
    /// A key from its 32 bytes.
    #[must_use]
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> SealKey {
        // HMAC zero-pads a key shorter than the hash's 64-byte block, so padding it here gives
        // the same MAC as HMAC-SHA256 under the 32-byte key, without a fallible constructor.
        let mut block = [0u8; 64];
        block[..KEY_LEN].copy_from_slice(&bytes);
        let mac = <Hmac<Sha256> as KeyInit>::new(&block.into());
        let fingerprint = <Hmac<Sha256> as KeyInit>::new(&block.into())
            .chain_update(b"skillcache key fingerprint")
            .finalize()
            .into_bytes();
        let mut id = [0u8; 4];
        id.copy_from_slice(&fingerprint[..4]);
        SealKey { mac, id }
    }
}

/// Which table a seal is for: the domain tag keeps a row of one table from passing as another.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Table {
    Entries,
    Files,
    Approvals,
    Blobs,
}

impl Table {
    fn tag(self) -> &'static [u8] {
        match self {
            Table::Entries => b"skillcache/index/v2/entries",
            Table::Files => b"skillcache/index/v2/files",
            Table::Approvals => b"skillcache/index/v2/approvals",
            Table::Blobs => b"skillcache/index/v2/blobs",
        }
    }
}

/// A seal being computed: fields are added in a fixed order per table.
pub(crate) struct Sealer(Hmac<Sha256>);

impl Sealer {
    pub(crate) fn new(key: &SealKey, table: Table) -> Sealer {
        let mut s = Sealer(key.mac.clone());
        s.bytes(table.tag());
        s
    }

    pub(crate) fn bytes(&mut self, field: &[u8]) -> &mut Sealer {
        self.0.update(&(field.len() as u64).to_le_bytes());
        self.0.update(field);
        self
    }

    pub(crate) fn text(&mut self, field: &str) -> &mut Sealer {
        self.bytes(field.as_bytes())
    }

    pub(crate) fn int(&mut self, field: i64) -> &mut Sealer {
        self.bytes(&field.to_le_bytes())
    }

    pub(crate) fn opt(&mut self, field: Option<&[u8]>) -> &mut Sealer {
        match field {
            None => self.0.update(&[0]),
            Some(b) => {
                self.0.update(&[1]);
                self.bytes(b);
            }
        }
        self
    }

    /// The seal to store.
    pub(crate) fn seal(self) -> Vec<u8> {
        self.0.finalize().into_bytes().to_vec()
    }

    /// Whether `stored` is this row's seal (constant-time). A missing seal never verifies.
    pub(crate) fn verify(self, stored: Option<&[u8]>) -> bool {
        stored.is_some_and(|s| self.0.verify_slice(s).is_ok())
    }
}

/// The sealed fields of an `entries` row.
pub(crate) struct EntryRow<'a> {
    pub origin: &'a str,
    pub skill_uri: &'a str,
    pub scope: &'a str,
    pub principal: &'a str,
    pub entry_json: &'a str,
    pub binding: Option<&'a [u8]>,
    pub ttl_ms: i64,
    pub fetched_at_ms: i64,
}

impl EntryRow<'_> {
    pub(crate) fn sealer(&self, key: &SealKey) -> Sealer {
        let mut s = Sealer::new(key, Table::Entries);
        s.text(self.origin)
            .text(self.skill_uri)
            .text(self.scope)
            .text(self.principal)
            .text(self.entry_json)
            .opt(self.binding)
            .int(self.ttl_ms)
            .int(self.fetched_at_ms);
        s
    }
}

/// The sealed fields of a `files` row.
pub(crate) struct FileRow<'a> {
    pub origin: &'a str,
    pub skill_uri: &'a str,
    pub scope: &'a str,
    pub principal: &'a str,
    pub file_uri: &'a str,
    pub digest: &'a [u8],
    pub size: i64,
}

impl FileRow<'_> {
    pub(crate) fn sealer(&self, key: &SealKey) -> Sealer {
        let mut s = Sealer::new(key, Table::Files);
        s.text(self.origin)
            .text(self.skill_uri)
            .text(self.scope)
            .text(self.principal)
            .text(self.file_uri)
            .bytes(self.digest)
            .int(self.size);
        s
    }
}

/// The sealed fields of an `approvals` row.
pub(crate) struct ApprovalRow<'a> {
    pub origin: &'a str,
    pub skill_uri: &'a str,
    pub principal: &'a str,
    pub binding: &'a [u8],
    pub entry_json: &'a str,
    pub granted_tools: Option<&'a str>,
    pub granted_at_ms: i64,
}

impl ApprovalRow<'_> {
    pub(crate) fn sealer(&self, key: &SealKey) -> Sealer {
        let mut s = Sealer::new(key, Table::Approvals);
        s.text(self.origin)
            .text(self.skill_uri)
            .text(self.principal)
            .bytes(self.binding)
            .text(self.entry_json)
            .opt(self.granted_tools.map(str::as_bytes))
            .int(self.granted_at_ms);
        s
    }
}

/// The sealed fields of a `blobs` row. `last_access_ms` is deliberately not sealed: it is
/// rewritten on hits (best effort, R-H5) and only orders gc, which a root writer can disturb
/// anyway by deleting blobs; it never makes bytes or evidence believed.
pub(crate) struct BlobRow<'a> {
    pub origin: &'a str,
    pub digest: &'a [u8],
    pub size: i64,
    pub ino: i64,
    pub dev: i64,
    pub ctime_ns: i64,
    pub published_at_ms: i64,
}

impl BlobRow<'_> {
    pub(crate) fn sealer(&self, key: &SealKey) -> Sealer {
        let mut s = Sealer::new(key, Table::Blobs);
        s.text(self.origin)
            .bytes(self.digest)
            .int(self.size)
            .int(self.ino)
            .int(self.dev)
            .int(self.ctime_ns)
            .int(self.published_at_ms);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(origin: &'a str, json: &'a str) -> EntryRow<'a> {
        EntryRow {
            origin,
            skill_uri: "skill://a/SKILL.md",
            scope: "public",
            principal: "",
            entry_json: json,
            binding: Some(&[7; 32]),
            ttl_ms: 1,
            fetched_at_ms: 2,
        }
    }

    #[test]
    fn h3_a_seal_verifies_only_the_row_and_key_it_was_made_for() {
        let key = SealKey::from_bytes([1; KEY_LEN]);
        let seal = entry("a", "{}").sealer(&key).seal();
        assert_eq!(seal.len(), KEY_LEN);
        assert!(entry("a", "{}").sealer(&key).verify(Some(&seal)));
        assert!(
            !entry("b", "{}").sealer(&key).verify(Some(&seal)),
            "origin label"
        );
        assert!(
            !entry("a", "{ }").sealer(&key).verify(Some(&seal)),
            "content"
        );
        assert!(!entry("a", "{}").sealer(&key).verify(None), "missing seal");
        let other = SealKey::from_bytes([2; KEY_LEN]);
        assert!(!entry("a", "{}").sealer(&other).verify(Some(&seal)), "key");
    }

    #[test]
    fn h3_length_prefixes_keep_field_boundaries_apart() {
        let key = SealKey::from_bytes([1; KEY_LEN]);
        let mut a = Sealer::new(&key, Table::Files);
        a.text("ab").text("c");
        let mut b = Sealer::new(&key, Table::Files);
        b.text("a").text("bc");
        assert_ne!(a.seal(), b.seal());
    }

    #[test]
    fn h3_tables_are_domain_separated() {
        let key = SealKey::from_bytes([1; KEY_LEN]);
        let mut a = Sealer::new(&key, Table::Files);
        a.text("x");
        let mut b = Sealer::new(&key, Table::Blobs);
        b.text("x");
        assert_ne!(a.seal(), b.seal());
    }

    #[test]
    fn h3_the_padded_key_is_standard_hmac_sha256_under_the_32_byte_key() {
        let bytes = [0x5a; KEY_LEN];
        let ours = Sealer(SealKey::from_bytes(bytes).mac).seal_of(b"row");
        let standard = <Hmac<Sha256> as KeyInit>::new_from_slice(&bytes)
            .expect("hmac takes any key length")
            .chain_update(b"row")
            .finalize()
            .into_bytes()
            .to_vec();
        assert_eq!(ours, standard);
    }

    impl Sealer {
        fn seal_of(mut self, raw: &[u8]) -> Vec<u8> {
            self.0.update(raw);
            self.seal()
        }
    }

    #[test]
    fn h3_debug_never_shows_the_key() {
        let key = SealKey::from_bytes([0xab; KEY_LEN]);
        let shown = format!("{key:?}");
        assert!(!shown.contains("abab"), "{shown}");
    }
}
